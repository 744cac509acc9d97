"""Private documents: what sealing costs, beside the same trace replayed as a public document.

In each round, back to back, for each editing trace, into fresh on-disk stores:

  public      `trace_replay.replay`, as bench/doc.py times it (the reference)
  private     the same messages sealed in a group epoch whose key the store
              holds before the first one arrives: each is opened, checked and
              woven as it is processed (docs/DOCUMENTS.md, "Private documents")
  key late    the sealed messages ingested into a store without the key
              (every message waits), then the time `store.documents.set_keys`
              takes to weave them all when the key arrives

and prints each time with its ratio to the public replay of the same round
(the machine's speed drifts; the ratio is the figure). The goal: sealing
costs at most 10 % of the public replay; the late key no more than the
public replay itself.

    .venv/bin/python bench/doc_private.py [--rounds 3] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.protocol.groups import new_epoch_key
from tanglenode.storage.clients.trace_replay import load_trace, replay
from tanglenode.storage.store import FeedStore

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "tests" / "data" / "editing-traces"
KEY = new_epoch_key()
GOAL_SEALED, GOAL_LATE = 1.10, 1.0


def one_round(trace, name: str) -> dict[str, float]:
    times: dict[str, float] = {}
    texts = []
    with tempfile.TemporaryDirectory() as scratch:
        raws: list[bytes] = []
        for kind in ("public", "private"):
            with FeedStore(Path(scratch) / kind, map_size=2**31) as store:
                started = time.perf_counter()
                key = None if kind == "public" else KEY  # the replay hands the store the key
                report = replay(trace, store, title=name, group_key=key)
                times[kind] = time.perf_counter() - started
                texts.append(store.documents.document_text(report.doc))
                raws = list(store.feeds.iter_raw())
                if kind == "private":  # the group the replay opened: its id is its epoch's
                    epoch = store.feeds.get(report.doc).content["epoch"]
        with FeedStore(Path(scratch) / "late", map_size=2**31) as store:
            started = time.perf_counter()
            for at in range(0, len(raws), 256):  # every message waits for the key
                store.writes.ingest(raws[at : at + 256])
            times["key late"] = time.perf_counter() - started
            started = time.perf_counter()
            store.documents.set_keys({epoch: (epoch, KEY)}, {})
            times["weave on key"] = time.perf_counter() - started
            texts.append(store.documents.document_text(report.doc))
    if len(set(texts)) != 1:
        raise SystemExit(f"{name}: the private replay's text is not the public one's")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--only", action="append", help="a trace's name (repeatable)")
    args = parser.parse_args()
    paths = sorted(args.traces.glob("*.json*"))
    traces = {path.name.split(".json")[0]: path for path in paths}
    if args.only:
        traces = {name: path for name, path in traces.items() if name in args.only}
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, one process")
    print(
        "| trace | public s | private s | private / public | key late s"
        " | weave on key s | weave on key / public |"
    )
    print("|---|---|---|---|---|---|---|")
    worst_sealed = worst_late = 0.0
    for name, path in traces.items():
        trace = load_trace(path)
        rounds = [one_round(trace, name) for _ in range(args.rounds)]
        median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        sealed = statistics.median(r["private"] / r["public"] for r in rounds)
        late = statistics.median(r["weave on key"] / r["public"] for r in rounds)
        worst_sealed, worst_late = max(worst_sealed, sealed), max(worst_late, late)
        print(
            f"| {name} | {median['public']:.2f} | {median['private']:.2f} | {sealed:.2f}"
            f" | {median['key late']:.2f} | {median['weave on key']:.2f} | {late:.2f} |"
        )
    print(
        f"\nsealing: worst {worst_sealed:.2f}x the public replay (goal <= {GOAL_SEALED:.2f}x): "
        + ("met" if worst_sealed <= GOAL_SEALED else "MISSED")
    )
    print(
        f"the key late: worst {worst_late:.2f}x the public replay (goal <= {GOAL_LATE:.2f}x): "
        + ("met" if worst_late <= GOAL_LATE else "MISSED")
    )


if __name__ == "__main__":
    main()
