"""`tangled pipeline docs`: each document of an archive woven as the node wove it: its text,
authors and blame equal what the node's `doc show` and `doc blame` read from its store;
documents it cannot read listed with a typed reason; hostile rows never a traceback
(docs/PIPELINE.md, "Documents")."""

from __future__ import annotations

import json
import subprocess
from collections import Counter

import pyarrow.parquet as pq
import pytest

from tanglenode.node.localnet import TANGLED
from tanglenode.pipeline import documents as documents_job
from tanglenode.pipeline.archive import read_messages, write
from tanglenode.pipeline.document_weave import weave_document
from tanglenode.pipeline.documents import documents
from tanglenode.pipeline.documents_report import human
from tanglenode.pipeline.export import export
from tanglenode.protocol.document import TANGLE, AtomRef, Delete, Insert, edit_content, init_content
from tanglenode.protocol.identity import message_text
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.pipeline.doc_stores import SECRET, build_documents, without_from


def node_reads(store, doc: bytes) -> dict:
    """What the node shows of `doc`: the reads `doc show` (IPC doc-show), `doc blame`
    (doc-blame), `doc list` (doc-list) and `doc log` (its set-aside edits) make."""
    _version, text, weft = store.documents.document_checkout(doc)
    [info] = [info for info in store.documents.held() if info.id == doc]
    return {
        "text": text,
        "weft": weft,
        "blame": [tuple(span) for span in store.documents.document_blame(doc)],
        "title": info.title,
        "author": info.author,
        "created": info.created,
        "versions": info.versions,
        "set_aside": len(store.documents.document_set_aside(doc)),
    }


@pytest.fixture(scope="module")
def doc_archives(tmp_path_factory):
    """Two archives and what their nodes show: `whole` (Alice's node, holding every
    message) and `partial` (a node that lacks one of Bob's edits and what Bob wrote after
    it, so later edits naming them wait on it, never woven)."""
    folder = tmp_path_factory.mktemp("docs-job")
    store, docs, withheld = build_documents(folder)
    partial = without_from(store, folder / "partial", withheld)
    try:
        shown = {}
        for name, node in (("whole", store), ("partial", partial)):
            export(node, folder / f"{name}-archive")
            held = {info.id for info in node.documents.held()}
            shown[name] = {doc: node_reads(node, doc) for doc in docs.values() if doc in held}
        # Alice reads her private document; an archive holds its sealed envelopes only.
        assert store.documents.document_text(docs["secret"]) == SECRET
    finally:
        store.close()
        partial.close()
    return folder, docs, shown


def run_job(spark, archive, out) -> dict[bytes, dict]:
    """The job over `archive`, written and read back: its rows by document root."""
    target = write(documents(read_messages(spark, [archive])), out, "docs")
    return {row["root"]: row for row in pq.read_table(target).to_pylist()}


def assert_as_the_node_shows(row: dict, shown: dict) -> None:
    assert row["unreadable"] is None and row["detail"] is None
    assert row["text"] == shown["text"] and row["length"] == len(shown["text"])
    blame = [
        (s["text"], s["author"], s["msg"], s["erased"], s["erased_atoms"]) for s in row["blame"]
    ]
    assert blame == shown["blame"]
    assert {a["author"]: a["seq"] for a in row["authors"]} == shown["weft"]
    typed = Counter()
    for text, author, *_ in shown["blame"]:
        typed[author] += len(text)
    assert [(a["author"], a["chars"]) for a in row["authors"]] == sorted(
        ((author, typed[author]) for author in shown["weft"]), key=lambda p: (-p[1], p[0])
    )
    for key in ("title", "author", "created", "versions", "set_aside"):
        assert row[key] == shown[key], key
    assert row["pending"] == 0 and row["rejected"] == 0


@pytest.mark.slow
def test_every_document_is_what_the_node_shows(spark, doc_archives, tmp_path):
    folder, docs, shown = doc_archives
    rows = run_job(spark, folder / "whole-archive", tmp_path)
    assert set(rows) == set(docs.values())
    plan = shown["whole"][docs["plan"]]
    # The document the test meant: three authors, every kind of edit, one set aside.
    assert len(plan["weft"]) == 3 and plan["set_aside"] == 1 and plan["versions"] == 9
    assert plan["text"] == "# Bob: lo there earthorl\nfirst line:  line\n-- Carol"
    for name in ("plan", "empty"):
        assert_as_the_node_shows(rows[docs[name]], shown["whole"][docs[name]])
    secret = rows[docs["secret"]]
    assert (secret["unreadable"], secret["text"], secret["title"]) == ("sealed", None, None)
    assert secret["author"] == plan["author"] and secret["messages"] == 2
    assert not any(SECRET in str(value) for row in rows.values() for value in row.values())


@pytest.mark.slow
def test_what_a_node_never_processed_is_not_woven(spark, doc_archives, tmp_path):
    folder, docs, shown = doc_archives
    rows = run_job(spark, folder / "partial-archive", tmp_path)
    partial, whole = shown["partial"], shown["whole"]
    plan = rows[docs["plan"]]
    assert partial[docs["plan"]]["text"] != whole[docs["plan"]]["text"]  # Bob's edits lack
    # Carol's last edit named Bob's, and waits on the node: neither woven nor set aside.
    node = partial[docs["plan"]]
    assert plan["pending"] == 1 == plan["messages"] - (node["versions"] + 1 + node["set_aside"])
    assert_as_the_node_shows({**plan, "pending": 0}, partial[docs["plan"]])
    assert docs["empty"] not in rows  # Bob's, and withheld: the archive holds none of it


@pytest.mark.slow
def test_hostile_rows_give_typed_reasons_never_a_traceback(
    spark, doc_archives, tmp_path, monkeypatch
):
    """Columns edited after export: a header that no longer verifies, a row without one, an
    init whose content is not its header's, rows claiming a document they are not of, a
    document above the bound of one task."""
    folder, docs, _shown = doc_archives
    table = pq.read_table(folder / "whole-archive" / "messages")
    rows = table.to_pylist()

    def doc_root(row):
        link = next((t for t in row["tangles"] if t["name"] == "doc"), None)
        return None if link is None else (link["root"] or row["id"])

    plan_rows = [r for r in rows if doc_root(r) == docs["plan"] and r["id"] != docs["plan"]]
    broken, headless = plan_rows[-1], plan_rows[-2]
    broken["header"] = broken["header"][:-1] + bytes([broken["header"][-1] ^ 1])
    headless["header"] = None
    [empty_init] = [r for r in rows if r["id"] == docs["empty"]]
    empty_init["content"] = b"\xa5other"  # a msgpack string: not the content the header signed
    # Rows claiming documents they are not of (their headers name the plan): one alone,
    # and one more than a document may hold.
    bound = len(plan_rows) + 1  # the plan's rows, its init's among them: not above it
    stray = [
        dict(plan_rows[0], id=bytes([7, n]) * 16, tangles=[{"name": "doc", "root": root}])
        for n, root in enumerate([b"\x08" * 32] + [b"\x09" * 32] * (bound + 1))
    ]
    hostile = tmp_path / "hostile"
    (hostile / "messages").mkdir(parents=True)
    pq.write_table(
        table.from_pylist([*rows, *stray], schema=table.schema), hostile / "messages" / "p.parquet"
    )
    monkeypatch.setattr(documents_job, "MAX_DOCUMENT_MESSAGES", bound)
    found = run_job(spark, hostile, tmp_path / "out")

    plan = found[docs["plan"]]
    assert plan["unreadable"] is None and plan["rejected"] == 2
    assert "rows rejected: " in plan["detail"] and "malformed 1" in plan["detail"]
    assert found[docs["empty"]]["unreadable"] == "header-only"
    assert (found[b"\x08" * 32]["unreadable"], found[b"\x08" * 32]["rejected"]) == ("no-init", 1)
    too_large = found[b"\x09" * 32]
    assert too_large["unreadable"] == "too-large" and too_large["messages"] == bound + 1
    assert too_large["detail"].startswith(f"{bound + 1} messages, ")
    assert found[docs["secret"]]["unreadable"] == "sealed"


def test_the_terminal_table_lists_readable_and_unreadable_documents():
    summary = {
        "out": "/r/docs",
        "documents": 3,
        "readable": 1,
        "unreadable": 2,
        "reasons": {"sealed": 1, "too-large": 1},
        "shown": [
            {
                "root": message_text(b"\x01" * 32),
                "title": "Plan\x1b[31m",
                "author": "@" + "A" * 43,
                "length": 43,
                "versions": 8,
                "authors": 3,
                "set_aside": 1,
                "unreadable": None,
            },
            {"root": message_text(b"\x02" * 32), "unreadable": "sealed"},
        ],
    }
    lines = human("docs", summary, 1).splitlines()
    assert (
        lines[0]
        == "docs of 1 archive: 3 documents, 1 readable, 2 unreadable (sealed 1, too-large 1)"
    )
    assert lines[3].split() == [
        "document", "title", "created", "by", "length", "versions", "authors", "set", "aside",
        "unreadable",
    ]  # fmt: skip
    assert "Plan[31m" in lines[4] and "\x1b" not in lines[4] and lines[5].endswith("sealed")
    assert lines[-1].startswith("… and 1 more")


def pipeline(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(TANGLED), "pipeline", *args], capture_output=True, text=True, timeout=120
    )


def test_argument_errors_exit_before_spark(tmp_path):
    done = pipeline("docs", "--out", str(tmp_path / "r"))
    assert done.returncode == 2 and "docs needs at least one --in ARCHIVE" in done.stderr
    done = pipeline("docs", "--in", str(tmp_path / "nowhere"), "--out", str(tmp_path / "r"))
    assert done.returncode == 4 and "no such archive" in done.stderr
    (tmp_path / "file").write_text("not an archive")
    done = pipeline("docs", "--in", str(tmp_path / "file"), "--out", str(tmp_path / "r"))
    assert done.returncode == 3 and "not an archive" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "r").exists()


@pytest.mark.slow
def test_the_command_writes_the_documents_and_a_bounded_summary(java, doc_archives, tmp_path):
    folder, docs, _shown = doc_archives
    done = pipeline(
        "docs", "--in", str(folder / "whole-archive"), "--out", str(tmp_path), "--master",
        "local[2]", "--show", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert {k: summary[k] for k in ("job", "documents", "readable", "unreadable", "reasons")} == {
        "job": "docs",
        "documents": 3,
        "readable": 2,
        "unreadable": 1,
        "reasons": {"sealed": 1},
    }
    assert summary["tasks"] >= 1 and 0 < summary["longest_task_share"] <= 1
    [first] = summary["shown"]  # the most edited first; no text in the summary
    assert first["root"] == message_text(docs["plan"]) and "text" not in first
    assert len(pq.read_table(tmp_path / "docs")) == 3


# -- one document woven alone, no Spark ----------------------------------------------------


def woven_alone(messages) -> dict:
    """`weave_document` over rows as an archive holds them, last first."""
    rows = [(m.id, m.header, m.content_bytes, False) for m in reversed(messages)]
    return weave_document(messages[0].id, rows)


def test_rows_in_any_order_are_woven_in_causal_order(open_node_store):
    """Bob's edit is stamped before Alice's edit it follows (clocks disagree): woven by
    its timeframe, not its time, as the node weaves it."""
    alice, bob = Feed("docs-alone-alice"), Feed("docs-alone-bob")
    init = alice.root(TANGLE, init_content("notes"))
    typed = alice.append(
        edit_content([Insert(AtomRef(init.id, 0), "ab")]),
        tangles={TANGLE: TangleLink(init.id, (init.id,))},
        timestamp=2_000,
    )
    bang = bob.append(
        edit_content([Insert(AtomRef(typed.id, 1), "!"), Delete(AtomRef(typed.id, 0), 1)]),
        tangles={TANGLE: TangleLink(init.id, (typed.id,))},
        timeframe={alice.public: typed},
        timestamp=1_000,
    )
    messages = [init, typed, bang]
    store = open_node_store([m.raw for m in messages])
    row = woven_alone(messages)
    assert row["text"] == store.documents.document_text(init.id) == "b!"
    assert [tuple(span.values()) for span in row["blame"]] == [
        tuple(span) for span in store.documents.document_blame(init.id)
    ]


def test_an_init_that_breaks_a_rule_is_unreadable_with_the_engines_reason(open_node_store):
    alice = Feed("docs-alone-carol")
    init = alice.root(TANGLE, {"title": "", "type": "doc/init"})
    edit = alice.append(
        edit_content([Insert(AtomRef(init.id, 0), "x")]),
        tangles={TANGLE: TangleLink(init.id, (init.id,))},
    )
    store = open_node_store([init.raw, edit.raw])
    [reason] = [
        why for msg, why, _ in store.documents.document_set_aside(init.id) if msg == init.id
    ]
    row = woven_alone([init, edit])
    assert (row["unreadable"], row.get("text"), row["author"]) == ("set-aside", None, alice.public)
    assert row["detail"].startswith(f"its doc/init is set aside: {reason} ")


@pytest.fixture
def open_node_store(tmp_path):
    """A real store holding the raws given, closed at teardown."""
    opened = []

    def opener(raws):
        store = FeedStore(tmp_path / f"node-{len(opened)}", map_size=2**24)
        opened.append(store)
        store.writes.ingest(raws)
        return store

    yield opener
    for store in opened:
        store.close()
