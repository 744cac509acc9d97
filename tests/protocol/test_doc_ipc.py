"""The document ops of the IPC protocol without a socket or a store: checks, bodies, splices."""

from types import SimpleNamespace

import pytest

from tanglenode.protocol import doc_ipc, ipc
from tanglenode.protocol.ipc import ErrorKind, RequestError
from tanglenode.protocol.limits import Limits

ID = b"\x07" * 32
FEED = b"\x09" * 32


def parse(op, **fields):
    return ipc.parse_request(op, {"op": op, "id": 1, **fields}, Limits())


def test_the_doc_ops_are_served_by_the_ipc_parser_and_doc_watch_streams():
    assert set(doc_ipc.DOC_PARSERS) <= ipc.OPS and len(doc_ipc.DOC_PARSERS) == 15
    assert all(op.startswith("doc-") for op in doc_ipc.DOC_PARSERS)
    assert doc_ipc.DOC_STREAMING <= ipc.STREAMING and "doc-watch" in doc_ipc.DOC_STREAMING


BAD_FIELDS = {
    "create: no title": ("doc-create", {}),
    "create: title of 201 bytes": ("doc-create", {"title": "é" * 101}),
    "edit: doc is short": ("doc-edit", {"doc": b"d", "splices": [["ins", 0, "a"]]}),
    "edit: no splices": ("doc-edit", {"doc": ID, "splices": []}),
    "edit: a splice of three kinds": ("doc-edit", {"doc": ID, "splices": [["mov", 0, 1]]}),
    "edit: position past 2**32-1": ("doc-edit", {"doc": ID, "splices": [["del", 2**32, 1]]}),
    "edit: delete of 0": ("doc-edit", {"doc": ID, "splices": [["del", 0, 0]]}),
    "edit: base is negative": ("doc-edit", {"doc": ID, "splices": [["del", 0, 1]], "base": -1}),
    "edit: base is text": ("doc-edit", {"doc": ID, "splices": [["del", 0, 1]], "base": "v1"}),
    "edit: base is true": ("doc-edit", {"doc": ID, "splices": [["del", 0, 1]], "base": True}),
    "edit: base is a float": ("doc-edit", {"doc": ID, "splices": [["del", 0, 1]], "base": 1.0}),
    "edit: base past the last seq": (
        "doc-edit",
        {"doc": ID, "splices": [["del", 0, 1]], "base": 2**64 - 1},
    ),
    "list: limit is text": ("doc-list", {"limit": "all"}),
    "show: at is a float": ("doc-show", {"doc": ID, "at": 1.0}),
    "log: since is negative": ("doc-log", {"doc": ID, "since": -1}),
    "diff: no from": ("doc-diff", {"doc": ID, "to": 1}),
    "blame: at is a bool": ("doc-blame", {"doc": ID, "at": True}),
    "watch: since is text": ("doc-watch", {"doc": ID, "since": "1"}),
    "link: an empty range": ("doc-link", {"doc": ID, "start": 3, "end": 3}),
    "link: end is text": ("doc-link", {"doc": ID, "start": 0, "end": "9"}),
    "resolve: not a link": ("doc-resolve", {"link": "https://example.org/"}),
    "resolve: no link": ("doc-resolve", {}),
    "comment: no text": ("doc-comment", {"doc": ID, "start": 0, "end": 1}),
    "comment: text is bytes": ("doc-comment", {"doc": ID, "start": 0, "end": 1, "text": b"x"}),
    "comment: no range": ("doc-comment", {"doc": ID, "text": "x"}),
    "comment: two forms": (
        "doc-comment",
        {"doc": ID, "start": 0, "end": 1, "reply": ID, "text": "x"},
    ),
    "comment: an empty range": ("doc-comment", {"doc": ID, "start": 2, "end": 2, "text": "x"}),
    "comment: reply is short": ("doc-comment", {"reply": b"r", "text": "x"}),
    "comment: not a link": ("doc-comment", {"link": "tangled:link/x", "text": "x"}),
    "comments: start is negative": ("doc-comments", {"doc": ID, "start": -1}),
    "include: no place": ("doc-include", {"doc": ID, "link": "tangled:link/x"}),
    "include: not a link": ("doc-include", {"doc": ID, "at": 0, "link": "x"}),
    "include: at is true": ("doc-include", {"doc": ID, "at": True, "link": "x"}),
    "render: no doc": ("doc-render", {}),
    "presence: ends before it starts": ("doc-presence", {"doc": ID, "start": 3, "end": 2}),
    "presence: start is negative": ("doc-presence", {"doc": ID, "start": -1, "end": 2}),
    "presence: no doc": ("doc-presence", {"start": 0, "end": 0}),
}


@pytest.mark.parametrize("op, fields", BAD_FIELDS.values(), ids=BAD_FIELDS.keys())
def test_each_bad_doc_field_is_a_bad_request(op, fields):
    with pytest.raises(RequestError) as refused:
        parse(op, **fields)
    assert refused.value.kind is ErrorKind.BAD_REQUEST and refused.value.reason is None


def test_every_doc_op_is_checked_by_some_bad_field():
    assert {op for op, _fields in BAD_FIELDS.values()} == set(doc_ipc.DOC_PARSERS)


def test_good_doc_requests_parse_to_their_shapes_with_defaults_and_caps():
    assert parse("doc-create", title="t") == doc_ipc.DocCreateRequest("t")
    splices = [["ins", 0, "ab"], ["del", 1, 1]]
    assert parse("doc-edit", doc=ID, splices=splices) == doc_ipc.DocEditRequest(
        ID, (("ins", 0, "ab"), ("del", 1, 1))
    )
    assert parse("doc-edit", doc=ID, splices=splices, base=None).base is None
    assert parse("doc-edit", doc=ID, splices=splices, base=0).base == 0
    assert parse("doc-edit", doc=ID, splices=splices, base=7) == doc_ipc.DocEditRequest(
        ID, (("ins", 0, "ab"), ("del", 1, 1)), 7
    )
    assert parse("doc-list", limit=10**9) == doc_ipc.DocListRequest(0, doc_ipc.MAX_DOCUMENTS_PAGE)
    assert parse("doc-show", doc=ID) == doc_ipc.DocShowRequest(ID, None)
    for at in (ID, 3, {FEED: 2}, {}):
        assert parse("doc-show", doc=ID, at=at).at == at
    assert parse("doc-log", doc=ID) == doc_ipc.DocLogRequest(ID, 0, ipc.PAGE)
    assert parse("doc-log", doc=ID, limit=10**9).limit == doc_ipc.MAX_VERSIONS_PAGE
    assert parse("doc-diff", doc=ID, **{"from": 0}) == doc_ipc.DocDiffRequest(ID, 0, None)
    assert parse("doc-blame", doc=ID, at=ID) == doc_ipc.DocBlameRequest(ID, ID)
    assert parse("doc-watch", doc=ID) == doc_ipc.DocWatchRequest(ID, None)
    assert parse("doc-watch", doc=ID, since=0).since == 0


def test_the_bodies_carry_the_records_fields():
    info = SimpleNamespace(
        id=ID, title="t", author=FEED, created=5, length=3, versions=2, set_aside=1, group=ID
    )
    assert doc_ipc.document_body(info) == {
        "doc": ID,
        "title": "t",
        "author": FEED,
        "created": 5,
        "length": 3,
        "versions": 2,
        "set_aside": 1,
        "group": ID,
    }
    entry = SimpleNamespace(version=4, msg_id=ID, splices=(("ins", 0, "a"), ("del", 1, 2)))
    assert doc_ipc.splice_entry(entry) == {
        "version": 4,
        "msg": ID,
        "splices": [["ins", 0, "a"], ["del", 1, 2]],
    }
    assert doc_ipc.set_aside_body(ID, "bad-ref", "x" * 1000)["detail"].endswith("...")


def test_a_snapshot_is_cut_in_parts_and_an_empty_text_is_one_part():
    text = "é" * (doc_ipc.SNAPSHOT_CHARS + 1)
    parts = doc_ipc.snapshot_events(7, text)
    assert [(p["version"], p["start"]) for p in parts] == [(7, 0), (7, doc_ipc.SNAPSHOT_CHARS)]
    assert "".join(p["text"] for p in parts) == text
    assert doc_ipc.snapshot_events(0, "") == [{"version": 0, "text": "", "start": 0}]


def test_splices_apply_in_order_and_one_outside_the_text_is_refused():
    assert doc_ipc.apply_splices("abc", [["del", 0, 1], ["ins", 2, "d"]]) == "bcd"
    for outside in (["ins", 4, "x"], ["del", 2, 2], ["ins", -1, "x"]):
        with pytest.raises(ValueError):
            doc_ipc.apply_splices("abc", [outside])
