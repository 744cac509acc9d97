"""`tangled pipeline generate` (docs/PIPELINE.md, "Generated archives"): the archive
verifies, linearizes, and a node that imports it holds and orders it as Spark does; the
shape is Pareto's and social; a seed gives the same bytes; bad requests are refused
before Spark."""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from pathlib import Path

import msgpack
import pyarrow.parquet as pq
import pytest

from tanglenode.node.localnet import TANGLED
from tanglenode.pipeline.archive import check_archive, read_messages, read_timelines
from tanglenode.pipeline.audit import audit
from tanglenode.pipeline.export import export
from tanglenode.pipeline.generate import generate
from tanglenode.pipeline.generate_plan import Shape, deal_groups, feed_sizes
from tanglenode.pipeline.linearize import linearize
from tanglenode.pipeline.verify import verify
from tanglenode.protocol.identity import tag_of
from tanglenode.storage.clients.bundle import (
    ImportSummary,
    archive_parts,
    import_messages,
    read_archive,
)
from tanglenode.storage.store import FeedStore

MESSAGES, FEEDS, SEED = 2_000, 50, 3


@pytest.fixture(scope="module")
def generated(spark, tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("generated") / "archive"
    summary = generate(spark, out, MESSAGES, FEEDS, SEED)
    return out, summary


def rows_of(archive: Path) -> list[dict]:
    return pq.read_table(archive / "messages").to_pylist()


def files_of(archive: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(archive)): path.read_bytes()
        for path in sorted(archive.rglob("*"))
        if path.is_file()
    }


def test_feed_sizes_follow_pareto_and_sum_to_the_messages():
    sizes = feed_sizes(MESSAGES, FEEDS)
    assert sum(sizes) == MESSAGES and min(sizes) >= 1
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[0] / MESSAGES > 0.15  # one feed writes a sixth
    assert sum(sizes[: FEEDS // 5]) / MESSAGES > 0.5  # the largest fifth, most
    assert feed_sizes(7, 7) == [1] * 7
    big = feed_sizes(200_000, 2_000)
    assert sum(big) == 200_000 and big[0] > 100 * big[-1]


def test_groups_share_the_work_and_the_round_plan_depends_on_nothing_else():
    groups = deal_groups([50, 20, 20, 5, 5], 2)
    assert sorted(feed for group in groups for feed in group) == [0, 1, 2, 3, 4]
    assert groups == [[0], [1, 2, 3, 4]]
    shape = Shape.of(MESSAGES, FEEDS, SEED)
    steps = [step for number in range(shape.rounds) for step in shape.round_steps(number)]
    assert steps == list(range(MESSAGES)) and shape.rounds >= 8 and len(shape.groups) >= 2


def test_the_archive_verifies_and_has_the_shape_of_social_feeds(spark, generated):
    out, summary = generated
    assert check_archive(out) == MESSAGES
    messages = read_messages(spark, [out])
    assert verify(messages).count() == 0  # every id, signature, chain and tag
    rows = rows_of(out)
    sizes = Counter(row["author"] for row in rows)
    assert len(sizes) == FEEDS and sum(sizes.values()) == MESSAGES
    assert max(sizes.values()) / MESSAGES == summary["largest_feed_share"] > 0.15
    kinds = Counter()
    for row in rows:
        content = msgpack.unpackb(row["content"])
        tangles = {tangle["name"]: tangle for tangle in row["tangles"]}
        if "thread" in tangles:
            kinds["reply" if tangles["thread"]["root"] else "post"] += 1
        else:
            kinds[content["type"]] += 1
    assert kinds["about"] >= FEEDS  # each feed names itself first
    assert kinds["post"] == summary["threads"] and kinds["reply"] > kinds["post"] > 100
    assert kinds["contact"] > 100 and kinds["doc/init"] == summary["documents"] >= 1
    assert kinds["doc/edit"] > 10
    by_place = {(row["author"], row["seq"]): row["id"] for row in rows}
    entries = [(row, entry) for row in rows for entry in row["timeframe"]]
    assert len(entries) > MESSAGES  # cross-feed edges: more than one a message
    for row, entry in entries:  # each names a message the archive holds, written before
        named = by_place[(entry["feed"], entry["seq"])]
        assert tag_of(named) == entry["tag"] and entry["feed"] != row["author"]


def test_a_node_holds_it_all_and_orders_it_as_spark_does(spark, generated, tmp_path):
    """Imported into a real store: every message accepted and processed (so every tag and
    link resolved), every tangle member joined, every document edit woven; the node's
    timelines, exported, agree with the batch linearization of the generated archive."""
    out, summary = generated
    with FeedStore(tmp_path / "store", map_size=2**28) as store:
        records = read_archive(archive_parts(out), 16 * 1024)
        done = import_messages(store, records, ImportSummary())
        assert done.as_dict()["accepted"] == MESSAGES and done.rejected == {}
        assert len(store.feeds.processed(0, 10 * MESSAGES)) == MESSAGES
        assert store.feeds.stalls() == [] and store.feeds.suspected_forks() == []
        tangles, cursor = store.tangles.tangle_page(None, 1_000)
        while cursor is not None:
            page, cursor = store.tangles.tangle_page(cursor, 1_000)
            tangles += page
        assert len(tangles) == summary["threads"] + summary["documents"]
        assert sum(info.pending for info in tangles) == 0
        documents = store.documents.held()
        assert len(documents) == summary["documents"]
        assert all(doc.set_aside == 0 and doc.versions > 0 for doc in documents)
        assert len(store.feeds.about_names()) == FEEDS
        export(store, tmp_path / "node")
    node = read_timelines(spark, tmp_path / "node")
    batch = linearize(read_messages(spark, [out]))
    assert node.count() == batch.count() > MESSAGES
    assert audit(node, batch).count() == 0


def test_a_seed_gives_the_same_bytes_and_force_replaces_an_archive(spark, generated, tmp_path):
    out, _summary = generated
    again = tmp_path / "again"
    (again / "messages").mkdir(parents=True)
    (again / "messages" / "part-99999-00000.parquet").write_bytes(b"stale")
    generate(spark, again, MESSAGES, FEEDS, SEED, force=True)
    assert files_of(again) == files_of(out)
    other = tmp_path / "other"
    generate(spark, other, MESSAGES, FEEDS, SEED + 1)
    theirs = {row["id"] for row in rows_of(other)}
    assert not theirs & {row["id"] for row in rows_of(out)}
    assert json.loads((other / "archive.json").read_text())["generated"]["seed"] == SEED + 1


def refused(*args: str) -> subprocess.CompletedProcess:
    started = time.monotonic()
    done = subprocess.run(
        [str(TANGLED), "pipeline", "generate", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert time.monotonic() - started < 10  # refused before Spark would have started
    assert "Traceback" not in done.stderr and "starting Spark" not in done.stderr
    assert done.stdout == ""
    return done


def test_bad_numbers_are_refused_as_bad_usage(tmp_path):
    out = str(tmp_path / "out")
    cases = [
        (["--messages", "10", "--feeds", "11"], "every feed writes a message"),
        (["--messages", "0", "--feeds", "1"], "0 is not in the range"),
        (["--messages", "10"], "needs --messages N and --feeds F"),
        (["--messages", str(10**10), "--feeds", "5"], "--messages 10000000000: from 1 to"),
        (["--messages", "10", "--feeds", "ten"], "'ten' is not a valid integer"),
        (["--messages", "10", "--feeds", "2", "--seed", "-1"], "-1 is not in the range"),
        (["--messages", "10", "--feeds", "2", "--in", out], "generate reads no --in"),
    ]
    for args, says in cases:
        done = refused(*args, "--out", out)
        assert done.returncode == 2, (args, done.stderr)
        assert says in " ".join(done.stderr.split()), (args, done.stderr)
    assert not Path(out).exists()


def test_an_out_that_may_not_be_written_is_refused(generated, tmp_path):
    out, _summary = generated
    before = files_of(out)
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    other = tmp_path / "other"
    (other / "messages").mkdir(parents=True)
    (other / "notes.txt").write_text("mine")
    cases = [
        ([str(out)], 3, "holds an archive; --force replaces it"),
        ([str(other), "--force"], 3, "holds no archive alone (notes.txt)"),
        ([str(other)], 3, "holds no archive alone (notes.txt)"),
        ([str(a_file), "--force"], 2, "is a file"),
        ([str(a_file / "archive")], 3, "archive: cannot create it (Not a directory)"),
    ]
    for args, code, says in cases:
        done = refused("--messages", "10", "--feeds", "2", "--out", *args)
        assert done.returncode == code, (args, done.stderr)
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("tangled: ") and says in last, (args, last)
    assert files_of(out) == before and a_file.read_text() == "mine"
    assert (other / "notes.txt").read_text() == "mine"


@pytest.mark.slow  # 40 s: two `tangled pipeline` children, each starting its own Spark
def test_the_command_writes_an_archive_pipeline_verify_accepts(spark, tmp_path):
    """On one core, the same bytes as on two (the suite's session), and verify accepts it."""
    out = tmp_path / "archive"
    argv = ["--messages", "300", "--feeds", "12", "--seed", "9", "--out", str(out)]
    done = subprocess.run(
        [str(TANGLED), "pipeline", "generate", *argv, "--master", "local[1]"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert (summary["job"], summary["messages"], summary["feeds"]) == ("generate", 300, 12)
    assert "round 8/8" in done.stderr
    generate(spark, tmp_path / "in-process", 300, 12, 9)
    assert files_of(out) == files_of(tmp_path / "in-process")
    checked = subprocess.run(
        [str(TANGLED), "pipeline", "verify", "--in", str(out), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert json.loads(checked.stdout)["problems"] == 0
