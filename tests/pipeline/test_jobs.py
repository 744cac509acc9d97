"""verify and linearize on small archives exported from real stores (evaluate: test_evaluate.py)."""

import json
import random
import re
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tanglenode.node.localnet import TANGLED
from tanglenode.pipeline.archive import ArchiveError, check_archive, read_messages, read_timelines
from tanglenode.pipeline.audit import audit
from tanglenode.pipeline.export import export, message_row
from tanglenode.pipeline.linearize import linearize
from tanglenode.pipeline.schema import MESSAGE_SCHEMA
from tanglenode.pipeline.stats import stats
from tanglenode.pipeline.verify import verify
from tanglenode.protocol.erase import erase_content
from tanglenode.protocol.identity import feed_text, message_id, tag_of
from tanglenode.protocol.message import TangleLink, sign_message
from tanglenode.storage.clients.bundle import (
    ImportSummary,
    archive_parts,
    import_messages,
    read_archive,
)
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.pipeline.archives import (
    FORMAT_1_SCHEMA,
    FORMAT_2_SCHEMA,
    build_store,
    format_1_rows,
    format_2_rows,
    write_messages,
)

SPACETIME = ["timeline", "root", "position", "rank", "id"]


def flip_last(value: bytes) -> bytes:
    return value[:-1] + bytes([value[-1] ^ 1])


def test_linearize_equals_the_nodes_timelines(spark, archive):
    out, _feeds = archive
    batch = linearize(read_messages(spark, [out]))
    node = read_timelines(spark, out)
    columns = ["timeline", "root", "position", "rank", "id"]
    ours = sorted(tuple(row) for row in batch.select(*columns).collect())
    theirs = sorted(tuple(row) for row in node.select(*columns).collect())
    assert ours == theirs
    assert {row[0] for row in ours} == {"spacetime", "tangle:chat"}


def test_linearize_on_disk_agrees_with_in_memory(spark, archive):
    out, _feeds = archive
    messages = read_messages(spark, [out])
    in_memory = sorted(tuple(r) for r in linearize(messages).collect())
    on_disk = sorted(tuple(r) for r in linearize(messages, disk_threshold=0).collect())
    assert on_disk == in_memory


def test_a_clean_archive_reports_only_its_fork(spark, archive):
    out, feeds = archive
    report = verify(read_messages(spark, [out])).collect()
    assert {row.reason for row in report} == {"fork"}
    assert {bytes(row.author) for row in report} == {feeds[1].public}


def test_verify_flags_each_kind_of_bad_row(spark, archive, tmp_path):
    out, feeds = archive
    rows = pq.read_table(out / "messages").to_pylist()
    good = {(r["author"], r["seq"]): r for r in rows if not r["evidence"]}
    a, b, c = feeds
    tampered = dict(good[(a.public, 2)])
    tampered["header"] = flip_last(tampered["header"])  # a bad signature (and so another id)
    wrong_id = dict(good[(a.public, 3)])
    wrong_id["id"] = bytes(32)
    lying = dict(good[(a.public, 4)])
    lying["seq"] = 99  # the column disagrees with the signed header
    lying_size = dict(good[(b.public, 2)])
    lying_size["content_size"] += 1  # so does this one
    header_only = dict(good[(b.public, 3)], content=None)  # its content erased: no problem
    garbled = dict(good[(c.public, 2)])
    garbled["content"] = flip_last(garbled["content"])  # not the content the header hashes
    resigned = dict(good[(c.public, 3)])
    resigned["header"] = flip_last(resigned["header"])
    resigned["id"] = message_id(resigned["header"])  # the id of its header: a bad signature
    astray = sign_message(  # validly signed, but its prev is not c's previous message
        c.keypair,
        seq=len(c.messages) + 1,
        prev=bytes(32),
        timestamp=1,
        timeframe={},
        tangles={},
        content="astray",
    )
    replaced = {(a.public, seq) for seq in (2, 3, 4, 5)}  # 5 is dropped: a gap before 6
    replaced |= {(b.public, 2), (b.public, 3), (c.public, 2), (c.public, 3)}
    bad_rows = [r for k, r in good.items() if k not in replaced]
    bad_rows += [tampered, wrong_id, lying, lying_size, header_only, garbled, resigned]
    bad_rows.append(message_row(astray))
    broken = tmp_path / "broken"
    (broken / "messages").mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist(bad_rows, schema=MESSAGE_SCHEMA), broken / "messages" / "p.parquet"
    )
    report = {(bytes(r.id), r.reason) for r in verify(read_messages(spark, [broken])).collect()}
    reasons = {reason for _id, reason in report}
    assert {"id-mismatch", "column-mismatch", "missing-previous", "chain-mismatch"} <= reasons
    assert (astray.id, "chain-mismatch") in report
    assert (bytes(32), "id-mismatch") in report
    assert any(reason == "id-mismatch" for i, reason in report if i == tampered["id"])
    assert (lying_size["id"], "column-mismatch") in report
    assert (garbled["id"], "content-mismatch") in report
    assert (resigned["id"], "bad-signature") in report
    of_the_row_itself = {"id-mismatch", "column-mismatch", "content-mismatch", "bad-signature"}
    assert not {r for i, r in report if i == header_only["id"]} & (
        of_the_row_itself | {"malformed"}
    )


@pytest.mark.slow  # 18 s: a `tangled pipeline` child starts its own Spark; the jobs run in process
def test_the_cli_runs_a_job_and_writes_parquet(spark, archive, tmp_path):
    out, _feeds = archive
    done = subprocess.run(
        [
            str(TANGLED),
            "pipeline",
            "linearize",
            "--in",
            str(out),
            "--out",
            str(tmp_path),
            "--master",
            "local[1]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    written = spark.read.parquet(result["out"])
    assert result["rows"] == written.count() == read_timelines(spark, out).count()
    assert result["rounds"] == 0 and result["tasks"] >= 2  # no timeline spread: no rounds
    assert 0 < result["longest_task_share"] <= 1
    assert result["timelines"] == 2 and {row["timeline"] for row in result["shown"]} == {
        "spacetime",
        "tangle:chat",
    }


def test_audit_finds_no_difference_then_each_planted_one(spark, archive):
    from pyspark.sql import functions as F

    out, _feeds = archive
    node = read_timelines(spark, out)
    batch = linearize(read_messages(spark, [out]))
    assert audit(node, batch).count() == 0
    first, second = (
        node.where(F.col("timeline") == "spacetime").orderBy("position").limit(2).collect()
    )
    swapped = node.withColumn(
        "id",
        F.when(
            (F.col("timeline") == "spacetime") & (F.col("position") == first.position),
            F.lit(second.id),
        )
        .when(
            (F.col("timeline") == "spacetime") & (F.col("position") == second.position),
            F.lit(first.id),
        )
        .otherwise(F.col("id")),
    )
    found = audit(swapped, batch).collect()
    assert {(row.position, row.difference) for row in found} == {
        (first.position, "different-message"),
        (second.position, "different-message"),
    }
    short = node.where(~((F.col("timeline") == "tangle:chat") & (F.col("position") == 0)))
    assert [row.difference for row in audit(short, batch).collect()] == ["missing-in-node"]


def test_stats_count_feeds_messages_tangles_and_shapes(spark, archive):
    out, _feeds = archive
    messages = read_messages(spark, [out])
    rows = {row.timeline: row for row in stats(messages, linearize(messages)).collect()}
    accepted = messages.where("not evidence").count()
    assert rows["all"].messages == accepted and rows["all"].feeds == 3
    assert rows["all"].fork_evidence == 2 and rows["all"].tangles == 1  # the pair
    assert rows["spacetime"].messages == accepted and rows["spacetime"].width == 3
    assert (
        rows["tangle:chat"].messages == 40 and rows["tangle:chat"].height >= 2
    )  # 41 written, one cut by the fork


def test_archives_of_several_nodes_combine_without_duplicates(spark, archive, tmp_path):
    out, _feeds = archive
    rows = pq.read_table(out / "messages").to_pylist()
    half = tmp_path / "other-node"
    (half / "messages").mkdir(parents=True)
    pq.write_table(  # a second node holding part of the same messages
        pa.Table.from_pylist(rows[: len(rows) // 2], schema=MESSAGE_SCHEMA),
        half / "messages" / "part-00000.parquet",
    )
    combined = read_messages(spark, [out, half])
    assert combined.count() == len(rows)
    assert combined.select("id").distinct().count() == len(rows)


def test_export_wipe_import_round_trips_and_the_audit_finds_no_difference(spark, tmp_path):
    """A bundle of a store with a fork, imported into an empty store: same feeds, evidence,
    timelines; its archive audits clean against the batch linearization."""
    import io

    from tanglenode.storage.clients.bundle import (
        ImportSummary,
        import_messages,
        read_bundle,
        write_bundle,
    )
    from tests.storage.test_invalidation import state

    original, _feeds = build_store(tmp_path / "original", random.Random(9))
    try:
        bundle = io.BytesIO()
        write_bundle(original, bundle)
        before = state(original)
    finally:
        original.close()
    with FeedStore(tmp_path / "restored", map_size=2**26) as restored:
        records = read_bundle(io.BytesIO(bundle.getvalue()), 16 * 1024)
        summary = import_messages(restored, records, ImportSummary())
        assert summary.as_dict()["rejected"] == {}
        assert state(restored) == before and before["evidence"]
        export(restored, tmp_path / "archive")
    node = read_timelines(spark, tmp_path / "archive")
    batch = linearize(read_messages(spark, [tmp_path / "archive"]))
    assert node.count() == batch.count() > 0
    assert audit(node, batch).count() == 0


def test_an_entry_names_one_branch_of_a_fork_by_its_tag(spark, tmp_path):
    """x forks at seq 2: node A holds branch a, node B branch b. y names b, z a tag of neither.

    Node A, a real store: y and z are suspected forks there, their links pending, and the
    batch order is the store's. A and B together: the fork, z still suspected, and y ranked
    after b only, not after a (a ranks 3, after w's chain; b 1; y 2, where linking both
    branches would give 4).
    """
    w, x, y, z = (Feed(f"tagged-{name}") for name in "wxyz")
    w1, w2, w3 = (w.append(n) for n in range(3))
    x1 = x.append("x1")
    twin = Feed(x.keypair)
    twin.messages = [x1]
    xa = x.append("branch a", timeframe={w.public: w3})
    xb = twin.append("branch b")
    y1 = y.append("names b", timeframe={x.public: xb})
    z1 = z.append("names neither", timeframe={x.public: (2, bytes(16))})
    assert tag_of(xa.id) != tag_of(xb.id) != bytes(16)
    with FeedStore(tmp_path / "a", map_size=2**24) as store:
        for message in (w1, w2, w3, x1, xa, y1, z1):
            assert store.writes.ingest([message.raw])[0].outcome == "accepted"
        export(store, tmp_path / "archive-a")
    node_b = write_messages(tmp_path / "archive-b", [message_row(m) for m in (x1, xb, y1)])

    def problems(*archives):
        report = verify(read_messages(spark, list(archives))).collect()
        return {(bytes(row.id), row.reason) for row in report}, report

    alone, report = problems(tmp_path / "archive-a")
    assert alone == {(y1.id, "suspected-fork"), (z1.id, "suspected-fork")}
    detail = next(row.detail for row in report if bytes(row.id) == y1.id)
    assert detail.startswith(f"names {feed_text(x.public)} seq 2 by tag {tag_of(xb.id).hex()}")
    both, _report = problems(tmp_path / "archive-a", node_b)
    assert both == {(xa.id, "fork"), (xb.id, "fork"), (z1.id, "suspected-fork")}

    node = read_timelines(spark, tmp_path / "archive-a")
    batch = linearize(read_messages(spark, [tmp_path / "archive-a"]))
    assert sorted(map(tuple, batch.select(*SPACETIME).collect())) == sorted(
        map(tuple, node.select(*SPACETIME).collect())
    )
    assert {bytes(row.id): row.rank for row in batch.collect()}[y1.id] == 0  # pending

    combined = read_messages(spark, [tmp_path / "archive-a", node_b])
    ranks = {bytes(row.id): row.rank for row in linearize(combined).collect()}
    assert (ranks[xa.id], ranks[xb.id], ranks[y1.id], ranks[z1.id]) == (3, 1, 2, 0)
    on_disk = {bytes(row.id): row.rank for row in linearize(combined, 0).collect()}
    assert on_disk == ranks


@pytest.mark.parametrize(
    ("older", "schema", "says"),
    [
        (format_1_rows, FORMAT_1_SCHEMA, "an archive of format 1 (timeframe entries without tags"),
        (format_2_rows, FORMAT_2_SCHEMA, "an archive of format 2 (a `raw` column"),
    ],
)
def test_an_archive_of_an_older_format_is_refused_in_one_line(
    spark, archive, tmp_path, older, schema, says
):
    out, _feeds = archive
    rows = pq.read_table(out / "messages").to_pylist()
    old = write_messages(tmp_path / "old", older(rows), schema=schema)
    for refuse in (lambda: check_archive(old), lambda: read_messages(spark, [out, old])):
        with pytest.raises(ArchiveError, match=re.escape(says)) as refused:
            refuse()
        assert "\n" not in str(refused.value) and refused.value.exit_code == 3


def test_an_archive_holding_headers_alone_verifies_and_linearizes_as_the_node(spark, tmp_path):
    """Contents gone three ways: the tangle's root erased by its author's request, a member
    purged by the operator, and one never received (a header alone from a peer, whose
    successor links through it). The archive holds their headers with a null content;
    verify finds only the fork, the batch order is the node's (and the purge moved
    nothing), and importing the archive keeps each as a header alone."""
    store, feeds = build_store(tmp_path / "store", random.Random(5))
    try:
        a, _b, c = feeds
        root, purged = a.messages[0], c.messages[1]
        request = a.append(erase_content(root.seq, root.id))
        late = Feed("pipe-late")
        unseen = late.append("never here", tangles={"chat": TangleLink(root.id, (root.id,))})
        after = late.append("after", tangles={"chat": TangleLink(root.id, (unseen.id,))})
        for raw in (request.raw, unseen.without_content().raw, after.raw):
            assert store.writes.ingest([raw])[0].outcome == "accepted"
        assert store.feeds.erased_by(root.id) == request.id
        export(store, tmp_path / "before-purge")
        assert store.writes.purge([purged.id]) == [purged.id]
        export(store, tmp_path / "archive")
    finally:
        store.close()
    gone = (root, purged, unseen)
    rows = pq.read_table(tmp_path / "archive" / "messages").to_pylist()
    accepted = {row["id"]: row for row in rows if not row["evidence"]}
    assert {i for i, row in accepted.items() if row["content"] is None} == {m.id for m in gone}
    assert all(accepted[m.id]["header"] == m.header for m in gone)
    assert accepted[after.id]["content"] == after.content_bytes
    assert pq.read_table(tmp_path / "archive" / "timelines").equals(
        pq.read_table(tmp_path / "before-purge" / "timelines")
    )

    messages = read_messages(spark, [tmp_path / "archive"])
    assert {row.reason for row in verify(messages).collect()} == {"fork"}
    batch = sorted(map(tuple, linearize(messages).select(*SPACETIME).collect()))
    node = read_timelines(spark, tmp_path / "archive").select(*SPACETIME).collect()
    assert batch == sorted(map(tuple, node))
    chat = {bytes(row[4]): row[3] for row in batch if row[0] == "tangle:chat"}
    assert chat[root.id] == 0 and chat[unseen.id] == 1 and chat[after.id] == 2

    with FeedStore(tmp_path / "restored", map_size=2**26) as restored:
        records = read_archive(archive_parts(tmp_path / "archive"), 16 * 1024)
        assert import_messages(restored, records, ImportSummary()).rejected == {}
        held = {m.id: restored.feeds.get(m.id) for m in (*gone, after)}
        assert [held[m.id].has_content for m in gone] == [False, False, False]
        assert all(held[m.id].header == m.header for m in gone)
        assert held[after.id].content == "after"
