"""verify and linearize on small archives exported from real stores (evaluate: test_evaluate.py)."""

import json
import random
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
from tanglenode.protocol.identity import feed_text, tag_of
from tanglenode.protocol.message import sign_message
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.pipeline.archives import FORMAT_1_SCHEMA, build_store, format_1_rows, write_messages

SPACETIME = ["timeline", "root", "position", "rank", "id"]


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
    a = feeds[0]
    tampered = dict(good[(a.public, 2)])
    raw = bytearray(tampered["raw"])
    raw[-1] ^= 1
    tampered["raw"] = bytes(raw)  # a bad signature (and so a different id)
    wrong_id = dict(good[(a.public, 3)])
    wrong_id["id"] = bytes(32)
    lying = dict(good[(a.public, 4)])
    lying["seq"] = 99  # the column disagrees with the signed bytes
    c = feeds[2]
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
    bad_rows = [r for k, r in good.items() if k not in replaced] + [tampered, wrong_id, lying]
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


def test_an_archive_of_format_1_is_refused_in_one_line(spark, archive, tmp_path):
    out, _feeds = archive
    rows = pq.read_table(out / "messages").to_pylist()
    old = write_messages(tmp_path / "old", format_1_rows(rows), schema=FORMAT_1_SCHEMA)
    for refuse in (lambda: check_archive(old), lambda: read_messages(spark, [out, old])):
        with pytest.raises(ArchiveError, match="an archive of format 1 ") as refused:
            refuse()
        assert "\n" not in str(refused.value) and refused.value.exit_code == 3
