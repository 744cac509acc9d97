"""Documents: editing traces replayed end to end, against pycrdt (Yrs) and loro.

In each round, back to back:

  pycrdt, loro  apply the automerge-paper trace one op per edit to an
                in-memory text (the references of the issue; same round)
  doc replay    `storage.clients.trace_replay.replay` of every trace in the folder into
                a fresh on-disk store: messages built and signed per agent,
                then `store.writes.ingest` (verify, store, process, weave)

and prints each time with its ratio to pycrdt's time of the same round (the
machine's speed drifts; the ratio is the figure). After each round's replay,
in the same store: the time to read the revision at the middle version
(`document_revision`) and to dye version ~10 % against ~90 %
(`document_dye`), each the median of 5 calls. Once per trace, a fresh
subprocess replays it and reports its resident memory after the replay
(VmRSS, the trace freed, the store still open) and its peak (VmHWM).

    .venv/bin/python bench/doc.py [--rounds 3] [--traces DIR] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.storage.clients.trace_replay import Trace, load_trace, replay
from tanglenode.storage.store import FeedStore

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "data" / "editing-traces"  # sources and licences: its README
REFERENCE = "automerge-paper"
READS = 5  # calls per read figure (median)
MEMORY = {"after": "VmRSS", "peak": "VmHWM"}  # /proc/self/status, kB


def patches(trace: Trace) -> list[tuple[int, int, str]]:
    """Every edit in order: what a sequential trace's one author typed."""
    return list(zip(trace.patch_pos, trace.patch_del, trace.patch_ins, strict=True))


def time_pycrdt(edits: list[tuple[int, int, str]]) -> tuple[float, str]:
    from pycrdt import Doc, Text

    started = time.perf_counter()
    text = Doc().get("text", type=Text)
    for position, deleted, inserted in edits:
        if deleted:
            del text[position : position + deleted]
        if inserted:
            text.insert(position, inserted)
    return time.perf_counter() - started, str(text)


def time_loro(edits: list[tuple[int, int, str]]) -> tuple[float, str]:
    from loro import LoroDoc

    started = time.perf_counter()
    doc = LoroDoc()
    text = doc.get_text("text")
    for position, deleted, inserted in edits:
        if deleted:
            text.delete(position, deleted)
        if inserted:
            text.insert(position, inserted)
    doc.commit()
    return time.perf_counter() - started, text.to_string()


def engine_alone(trace: Trace) -> float | None:
    """Seconds for the document engine alone to weave `trace`'s messages.

    The trace is replayed once (not timed) to get its signed messages in
    processed order; they are stored in a fresh LMDB environment's feed
    tables (the engine reads older wefts from there). Timed: a
    `DocumentEngine` applying every message in that order, 256 messages per
    write transaction as a replay's ingest batches them, commits included;
    no signing, verifying, chain checks, timelines or causal processor.
    """
    import lmdb

    from tanglenode.storage.documents.engine import DocumentEngine
    from tanglenode.storage.documents.rows import DocumentTables
    from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES, Tables, feed_key

    with tempfile.TemporaryDirectory() as source_dir, tempfile.TemporaryDirectory() as target:
        source = FeedStore(source_dir, map_size=2**31)
        replay(trace, source)
        messages = []
        start = 0
        while page := source.feeds.processed(start, 10_000):
            messages += [source.feeds.get_by_seq(feed, seq) for _index, feed, seq in page]
            start = page[-1][0] + 1
        source.close()
        env = lmdb.open(target, map_size=2**31, max_dbs=MAX_NAMED_DATABASES)
        tables = DocumentTables.open(env)
        feed_tables = Tables.open(env)
        with env.begin(write=True) as txn:
            bodies = feed_tables.bodies.writer(txn)
            for message in messages:
                position = feed_key(message.author, message.seq)
                bodies.put(position, message)
                feed_tables.ids.place(
                    txn, message.id, bodies.number_of(message.author), message.seq
                )
        gc.collect()
        started = time.perf_counter()
        for first in range(0, len(messages), 256):
            with env.begin(write=True) as txn:
                engine = DocumentEngine(txn, tables, feed_tables.bodies, feed_tables.ids)
                for message in messages[first : first + 256]:
                    engine.apply(message)
                engine.finish()
        seconds = time.perf_counter() - started
        env.close()
    return seconds


@dataclass
class Replayed:
    seconds: float
    messages: int
    matches: bool | None
    store_bytes: int
    revision: float  # seconds, median of READS
    dye: float


def median_call(function, *args) -> float:
    times = []
    for _ in range(READS):
        started = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def time_replay(trace: Trace, name: str) -> Replayed:
    with (
        tempfile.TemporaryDirectory(prefix="bench-doc-") as tmp,
        FeedStore(Path(tmp) / "store") as store,
    ):
        report = replay(trace, store, title=name)
        head, _text = store.documents.document_snapshot(report.doc)
        revision = median_call(store.documents.document_revision, report.doc, head // 2)
        dye = median_call(store.documents.document_dye, report.doc, head // 10, head * 9 // 10)
        size = store.feeds.statistics()["bytes_on_disk"]
    return Replayed(report.seconds, report.messages, report.matches, size, revision, dye)


def memory_of(path: Path) -> dict[str, float]:
    """In this (fresh) process: replay the trace at `path`; resident memory, MiB."""
    trace = load_trace(path)
    with (
        tempfile.TemporaryDirectory(prefix="bench-doc-mem-") as tmp,
        FeedStore(Path(tmp) / "store") as store,
    ):
        report = replay(trace, store)
        del trace, report
        gc.collect()
        status = dict(
            line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines()
        )
    # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's size when forked
    return {key: int(status[field].split()[0]) / 1024 for key, field in MEMORY.items()}


def measure_memory(path: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, "--memory-of", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--only", action="append", help="a trace's name (repeatable)")
    parser.add_argument("--memory-of", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_of:
        print(json.dumps(memory_of(args.memory_of)))
        return

    paths = sorted(args.traces.glob("*.json*"))
    names = [path.name.split(".json")[0] for path in paths]
    if args.only:
        paths = [p for p, n in zip(paths, names, strict=True) if n in args.only]
        names = [n for n in names if n in args.only]
    traces = {name: load_trace(path) for name, path in zip(names, paths, strict=True)}
    reference = traces.get(REFERENCE) or load_trace(args.traces / f"{REFERENCE}.json.gz")
    edits = patches(reference)
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, one process")
    for name, trace in traces.items():
        kind = f"{trace.agents} agents" if trace.concurrent else "sequential"
        print(f"{name}: {len(trace):,} txns, {trace.edits:,} edits, {kind}")

    pycrdt_times, loro_times = [], []
    runs: dict[str, list[Replayed]] = {name: [] for name in traces}
    for round_number in range(1, args.rounds + 1):
        seconds, text = time_pycrdt(edits)
        assert text == reference.end, "pycrdt did not reproduce endContent"
        pycrdt_times.append(seconds)
        seconds, text = time_loro(edits)
        assert text == reference.end, "loro did not reproduce endContent"
        loro_times.append(seconds)
        shown = [f"pycrdt {pycrdt_times[-1]:.2f}s", f"loro {loro_times[-1]:.2f}s"]
        for name, trace in traces.items():
            run = time_replay(trace, name)
            if run.matches is False:
                raise SystemExit(f"{name}: the replay did not reproduce endContent")
            runs[name].append(run)
            shown.append(f"{name} {run.seconds:.2f}s ({run.seconds / pycrdt_times[-1]:.2f}x)")
        print(f"round {round_number}: " + ", ".join(shown))

    pycrdt = statistics.median(pycrdt_times)
    print(f"\npycrdt (Yrs), {REFERENCE}, one op per edit (median): {pycrdt:.2f}s")
    print(f"loro, {REFERENCE}, one op per edit (median): {statistics.median(loro_times):.2f}s")
    alone = engine_alone(reference)
    print(
        "engine alone, edit by edit: "
        + ("not measured" if alone is None else f"{alone:.2f}s ({alone / pycrdt:.2f}x pycrdt)")
    )
    print(
        "\n| trace | messages | replay s | / pycrdt (median of rounds) | store MiB"
        " | RSS after MiB (peak) | revision ms | dye ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, path in zip(names, paths, strict=True):
        mine = runs[name]
        ratios = [r.seconds / p for r, p in zip(mine, pycrdt_times, strict=True)]
        memory = measure_memory(path)
        print(
            f"| {name} | {mine[0].messages:,} | {statistics.median(r.seconds for r in mine):.2f}"
            f" | {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
            f" | {mine[0].store_bytes / 2**20:.1f}"
            f" | {memory['after']:.0f} ({memory['peak']:.0f})"
            f" | {statistics.median(r.revision for r in mine) * 1000:.1f}"
            f" | {statistics.median(r.dye for r in mine) * 1000:.1f} |"
        )


if __name__ == "__main__":
    main()
