"""A document's weave5c (storage/documents/weave_export.py), read with regular expressions alone
(protocol/weave_regex.py), agrees with the engine: on every shipped editing trace, at every
hundredth version, the text and the dyeing."""

from __future__ import annotations

import pytest

from tanglenode.protocol import weave_regex as wr
from tanglenode.protocol.weave_file import BACKSPACE, WeaveFile, parse_file, validate
from tanglenode.storage.clients.trace_replay import load_trace, replay
from tanglenode.storage.documents.weave_export import Unexportable
from tests.storage.test_trace_replay import TRACES

EVERY = 100


@pytest.mark.parametrize(
    "name",
    [
        "friendsforever_flat",
        pytest.param("friendsforever_concurrent", marks=pytest.mark.slow),  # 30 s to replay
        pytest.param("automerge-paper", marks=pytest.mark.slow),
        pytest.param("seph-blog1", marks=pytest.mark.slow),
    ],
)
def test_the_regex_revision_is_the_engines_at_every_hundredth_version(open_store, name):
    store = open_store(map_size=2**30)
    report = replay(load_trace(TRACES / f"{name}.json.gz"), store, title=name)
    docs = store.documents
    exported = docs.document_weave(report.doc)
    assert validate(exported.weave, exported.frame).atoms == len(exported.weave) // 5
    assert wr.revision(exported.weave) == report.text == docs.document_text(report.doc)
    versions = next(info.versions for info in docs.held() if info.id == report.doc)
    checked = 0
    for version in [*range(0, versions, EVERY), versions]:
        weft = wr.weft2(exported.weft2(docs.base_weft(report.doc, version)))
        assert wr.revision(exported.weave, weft) == docs.document_revision(report.doc, version)
        checked += 1
    assert checked == len(range(0, versions, EVERY)) + 1 > 2
    data = WeaveFile("weave5c", report.doc, exported.frame, exported.weave).render()
    assert parse_file(data).body == exported.weave  # the file round trip


def test_hili3_dyes_as_the_engine_does(open_store):
    store = open_store(map_size=2**30)
    report = replay(load_trace(TRACES / "friendsforever_flat.json.gz"), store)
    docs = store.documents
    exported = docs.document_weave(report.doc)
    versions = next(info.versions for info in docs.held() if info.id == report.doc)
    frame = exported.frame
    for old, new in ((0, versions), (versions // 3, versions // 2), (versions - 40, versions)):

        def weft(version: int) -> str:
            return wr.weft2(exported.weft2(docs.base_weft(report.doc, version)))

        dyed = wr.hili3(exported.weave, weft(old), weft(new))
        expected = [
            (char, span.inserted_by, span.removed_by)
            for span in docs.document_dye(report.doc, old, new)
            for char in span.text
        ]
        got = [
            (
                dyed[at],
                frame[ord(dyed[at + 1]) - 1] if dyed[at + 1] != "\x00" else None,
                frame[ord(dyed[at + 2]) - 1] if dyed[at + 2] != "\x00" else None,
            )
            for at in range(0, len(dyed), 3)
        ]
        assert got == expected and any(row[2] for row in got[:-1]) | (old == 0)


def test_a_text_atom_u0008_cannot_be_exported(store):
    doc = store.documents.create_document("bs").id
    store.documents.edit_document(doc, [("ins", 0, "a" + BACKSPACE + "b")])
    with pytest.raises(Unexportable):
        store.documents.document_weave(doc)
