"""Ingest throughput against the physical limit: bare Ed25519 verification.

Builds N pre-signed messages from F feeds (random interleaving; every
message's timeframe is the frontier of the other feeds, as a node writes
it; each message sits in one of T tangles with `previous` = that tangle's
tips), then, in the same run and alternating, times:

  verify  nacl.bindings.crypto_sign_open over the same messages
          (signature + payload extracted beforehand, outside the timer)
  ingest  store.writes.ingest in batches into a fresh LMDB store on disk
          (decode, canonical check, signature, chain, indexes, commit)

  ingest, two cores
          the same through `storage.feeds.ingest_pipeline.ingest_batches`: a worker
          process verifies batch N+1 while this process stores batch N
  ingest, verify in a thread
          the same with a worker thread (it shares the GIL with the writer)
  import  `tangled import`'s path: a bundle file read and ingested by
          `storage.clients.bundle.import_messages` (two cores, its own batch size)

and prints one row per measure with its goal: msgs/s (median
over the rounds) and the ratio to bare verify (median of the per-round
ratios: the machine's speed drifts, and within a round all are timed back to
back), and the store's size over the raw message bytes. Sparse timeframes
(`--timeframe-feeds 4`) and the full frontier (the default) have their own
goals. Then where the compacted store of the last round's one-core ingest
goes: each named database's rows and pages (LMDB's own counts, 4 KiB a
page; overflow pages hold values too big for a leaf), over the raw bytes.
The stores keep what a node keeps by default: no optional view (`--views
causal-time,joined-order` keeps them) and command logs of 4,096 commands
(`--keep-commands`, 0 keeps every command).

    .venv/bin/python bench/ingest.py --messages 50000 --timeframe-feeds 4
    .venv/bin/python bench/ingest.py --messages 50000
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import lmdb
import msgpack
from nacl.bindings import crypto_sign_open

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.protocol.identity import Keypair, tag_of
from tanglenode.protocol.limits import TIMEFRAME_CAP
from tanglenode.protocol.message import ROOT_LINK, TangleLink, decode_message, sign_message
from tanglenode.protocol.wire import split_wire
from tanglenode.storage.clients.bundle import MAGIC, ImportSummary, import_messages, read_bundle
from tanglenode.storage.engine.command_log import DEFAULT_KEEP_COMMANDS, LogRetention
from tanglenode.storage.feeds.ingest_pipeline import Worker, ingest_batches
from tanglenode.storage.feeds.layout import MAX_NAMED_DATABASES
from tanglenode.storage.store import DEFAULT_MAP_SIZE, FeedStore
from tanglenode.storage.tools.compact import compact

# issue 14's table: (goal, at least) of ingest / bare verify, and of store size / raw bytes
# The storage diet's goals (goal, at least): one-core ingest / verify, sparse and full
# frontier; store / raw bytes. Two cores (`tangled import`) aim at 80 %, at least 40 %.
SPARSE_GOAL, FULL_GOAL, SIZE_GOAL = (0.50, 0.30), (0.50, 0.30), (1.5, 3.0)
IMPORT_GOAL = (0.80, 0.40)


def build_messages(
    count: int,
    feeds: int,
    tangles: int,
    seed: int,
    timeframe_feeds: int | None = None,
    heads_only: bool = False,
    text_bytes: tuple[int, int] = (20, 200),
) -> list[bytes]:
    """`timeframe_feeds` caps each timeframe at that many other feeds (None: all of them);
    each post's text is `text_bytes` long (low, high: drawn from low up to high - 1);
    `heads_only` names what a node that processed every earlier message names (format 2's
    rule, storage/feeds/timeframe.py): the heads, newest first, at most TIMEFRAME_CAP."""
    unnamed: dict[bytes, tuple[int, bytes]] = {}  # heads: latest messages nobody named yet
    rng = random.Random(seed)
    keys = [Keypair(rng.randbytes(32)) for _ in range(feeds)]
    heads: dict[bytes, tuple[int, bytes]] = {}
    tips: dict[int, tuple[bytes, set[bytes]]] = {}  # tangle -> (root id, tips)
    raws = []
    for _ in range(count):
        author = rng.choice(keys)
        seq, prev = heads.get(author.public, (0, None))
        tangle = rng.randrange(tangles)
        if tangle in tips:
            root, current = tips[tangle]
            link = TangleLink(root, tuple(sorted(current)[:16]))
        else:
            link = ROOT_LINK
        timeframe = {
            feed: (s, tag_of(head)) for feed, (s, head) in heads.items() if feed != author.public
        }
        if heads_only:
            unnamed.pop(author.public, None)  # our prev names it
            newest = [feed for feed in reversed(unnamed)][:TIMEFRAME_CAP]
            timeframe = {feed: (unnamed[feed][0], tag_of(unnamed[feed][1])) for feed in newest}
            for feed in newest:
                del unnamed[feed]
        elif timeframe_feeds is not None and len(timeframe) > timeframe_feeds:
            kept = rng.sample(sorted(timeframe), timeframe_feeds)
            timeframe = {feed: timeframe[feed] for feed in kept}
        message = sign_message(
            author,
            seq=seq + 1,
            prev=prev,
            timestamp=1_700_000_000_000 + len(raws),
            timeframe=timeframe,
            tangles={f"t{tangle}": link},
            content={"type": "post", "text": "x" * rng.randrange(*text_bytes)},
        )
        heads[author.public] = (seq + 1, message.id)
        unnamed[author.public] = (seq + 1, message.id)
        if link.is_root:
            tips[tangle] = (message.id, {message.id})
        else:
            tips[tangle] = (link.root, (tips[tangle][1] - set(link.previous)) | {message.id})
        raws.append(message.raw)
    return raws


def time_bare_verify(raws: list[bytes]) -> float:
    """Seconds of Ed25519 alone over each message's signed payload: its header's first nine
    fields (format 3 signs the header, which holds the content's hash, not the content)."""
    jobs = []  # (signature + payload, author), prepared outside the timer
    for raw in raws:
        header, _content = split_wire(raw)
        fields = msgpack.unpackb(header)
        jobs.append((fields[9] + msgpack.packb(fields[:9]), fields[1]))
    started = time.perf_counter()
    for signed, author in jobs:
        crypto_sign_open(signed, author)
    return time.perf_counter() - started


def time_decode(raws: list[bytes]) -> float:
    """Full validation, signature included, with no store: ingest minus storage."""
    started = time.perf_counter()
    for raw in raws:
        decode_message(raw)
    return time.perf_counter() - started


@dataclass(frozen=True, slots=True)
class TableSize:
    """One named database as LMDB counts it."""

    name: str
    rows: int
    pages: int  # branch and leaf pages
    overflow: int  # overflow pages: values too big for a leaf, a whole page or more each


def table_sizes(store: Path) -> list[TableSize]:
    """Every named database of the store at `store`, largest first."""
    env = lmdb.open(str(store), readonly=True, lock=False, max_dbs=MAX_NAMED_DATABASES)
    try:
        with env.begin() as txn:
            names = [bytes(name) for name in txn.cursor().iternext(values=False)]
            found = []
            for name in names:
                stat = txn.stat(env.open_db(name, txn=txn, create=False))
                pages = stat["branch_pages"] + stat["leaf_pages"]
                found.append(
                    TableSize(name.decode(), stat["entries"], pages, stat["overflow_pages"])
                )
    finally:
        env.close()
    return sorted(found, key=lambda table: (-(table.pages + table.overflow), table.name))


def time_ingest(
    raws: list[bytes], batch: int, worker: Worker, retention: LogRetention, views: list[str]
) -> tuple[float, int, int, list[TableSize]]:
    """Seconds to ingest `raws` in batches into a fresh store, the store's bytes on disk, its
    bytes after `tangled compact` (storage/tools/compact.py, outside the timer) and the
    compacted store's tables."""
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        with FeedStore(
            Path(tmp) / "store", map_size=DEFAULT_MAP_SIZE, retention=retention, views=views
        ) as store:
            batches = (raws[start : start + batch] for start in range(0, len(raws), batch))
            started = time.perf_counter()
            accepted = 0
            for results in ingest_batches(store, batches, worker=worker):
                accepted += sum(r.outcome == "accepted" for r in results)
            elapsed = time.perf_counter() - started
            size = store.feeds.statistics()["bytes_on_disk"]
        compacted = compact(Path(tmp) / "store", DEFAULT_MAP_SIZE).after
        tables = table_sizes(Path(tmp) / "store")
    if accepted != len(raws):
        raise SystemExit(f"only {accepted} of {len(raws)} messages were accepted")
    return elapsed, size, compacted, tables


def print_tables(tables: list[TableSize], raw_bytes: int, page: int = 4096) -> None:
    """Each table's rows and bytes (its pages), bytes per row and share of the raw bytes."""
    print(f"\nthe compacted store by table (pages of {page} bytes; overflow pages included)")
    print(f"  {'table':<18}{'rows':>10}{'MiB':>9}{'overflow':>10}{'B/row':>8}{'x raw':>7}")
    total = 0
    for table in tables:
        if not table.rows:
            continue
        size = (table.pages + table.overflow) * page
        total += size
        per_row = f"{size / table.rows:.0f}" if table.rows else "-"
        print(
            f"  {table.name:<18}{table.rows:>10,}{size / 2**20:>9.1f}"
            f"{table.overflow * page / 2**20:>10.1f}{per_row:>8}{size / raw_bytes:>7.2f}"
        )
    share = total / raw_bytes
    print(f"  {'all tables':<28}{total / 2**20:>9.1f}{share:>25.2f}")
    empty = [table.name for table in tables if not table.rows]
    if empty:
        print(f"  empty: {', '.join(empty)}")


def time_import(bundle: Path, count: int, retention: LogRetention, views: list[str]) -> float:
    """Seconds for `tangled import`'s path: read the bundle file, ingest it (two cores)."""
    with (
        tempfile.TemporaryDirectory(prefix="bench-import-") as tmp,
        FeedStore(Path(tmp) / "store", retention=retention, views=views) as store,
        bundle.open("rb") as source,
    ):
        started = time.perf_counter()
        summary = import_messages(
            store, read_bundle(source, store.limits.max_message_bytes), ImportSummary()
        )
        elapsed = time.perf_counter() - started
    if summary.as_dict()["accepted"] != count:
        raise SystemExit(f"import accepted {summary.as_dict()['accepted']} of {count} messages")
    return elapsed


def write_bundle_file(raws: list[bytes], path: Path) -> None:
    with path.open("wb") as out:
        out.write(MAGIC)
        for raw in raws:
            out.write(struct.pack(">I", len(raw)) + raw)


def goal_text(value: float, goal: tuple[float, float], *, at_most: bool = False) -> str:
    sign, fmt = ("<=", "{:.1f}x") if at_most else (">=", "{:.0%}")
    met = value <= goal[0] if at_most else value >= goal[0]
    floor = value <= goal[1] if at_most else value >= goal[1]
    verdict = "met" if met else ("at least met" if floor else "SHORT")
    return f"goal {sign} {fmt.format(goal[0])} (at least {fmt.format(goal[1])}): {verdict}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--feeds", type=int, default=64)
    parser.add_argument("--tangles", type=int, default=256)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--timeframe-feeds",
        type=int,
        default=None,
        help="cap each timeframe at this many feeds (default: the full frontier, feeds - 1)",
    )
    parser.add_argument(
        "--heads",
        action="store_true",
        help="name the heads, as a node writes since format 2 (instead of a crafted timeframe)",
    )
    parser.add_argument(
        "--views",
        default="",
        help="the optional views to keep, comma-separated (default: none, as a node by default)",
    )
    parser.add_argument(
        "--keep-commands",
        type=int,
        default=DEFAULT_KEEP_COMMANDS,
        help="commands each timeline's log keeps, as `[timelines] keep_commands` (0: all)",
    )
    args = parser.parse_args()
    views = [name for name in args.views.split(",") if name]
    try:
        retention = LogRetention.keeping(args.keep_commands)
    except ValueError as error:
        parser.error(str(error))

    started = time.perf_counter()
    raws = build_messages(
        args.messages, args.feeds, args.tangles, args.seed, args.timeframe_feeds, args.heads
    )
    raw_bytes = sum(map(len, raws))
    sparse = args.heads or (
        args.timeframe_feeds is not None and args.timeframe_feeds < args.feeds - 1
    )
    workload = "sparse timeframes" if sparse else "full-frontier timeframes"
    if args.heads:
        workload = "heads-only timeframes"
    goal = SPARSE_GOAL if sparse else FULL_GOAL
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, 2 cores at most")
    print(
        f"built {len(raws)} messages from {args.feeds} feeds in "
        f"{time.perf_counter() - started:.1f}s"
        f" ({workload}: at most {args.timeframe_feeds or args.feeds - 1} feeds; mean "
        f"{raw_bytes / len(raws):.0f} bytes); batches of {args.batch}; {args.rounds} rounds; "
        f"optional views kept: {', '.join(views) or 'none'}; command logs keep "
        f"{args.keep_commands or 'every'} command" + ("s" if args.keep_commands else "")
    )
    rates: dict[str, list[float]] = {
        name: [] for name in ("verify", "decode", "one core", "two cores", "thread", "import")
    }
    sizes, compacted_sizes = [], []
    tables: list[TableSize] = []
    with tempfile.TemporaryDirectory(prefix="bench-bundle-") as tmp:
        bundle = Path(tmp) / "bundle"
        write_bundle_file(raws, bundle)
        for round_number in range(1, args.rounds + 1):
            rates["verify"].append(len(raws) / time_bare_verify(raws))
            rates["decode"].append(len(raws) / time_decode(raws))
            elapsed, size, compacted, tables = time_ingest(
                raws, args.batch, Worker.INLINE, retention, views
            )
            rates["one core"].append(len(raws) / elapsed)
            sizes.append(size)
            compacted_sizes.append(compacted)
            elapsed, *_sizes = time_ingest(raws, args.batch, Worker.PROCESS, retention, views)
            rates["two cores"].append(len(raws) / elapsed)
            elapsed, *_sizes = time_ingest(raws, args.batch, Worker.THREAD, retention, views)
            rates["thread"].append(len(raws) / elapsed)
            rates["import"].append(len(raws) / time_import(bundle, len(raws), retention, views))
            print(
                f"round {round_number}: "
                + ", ".join(f"{name} {values[-1]:,.0f}/s" for name, values in rates.items())
                + f"; store {size / 2**20:.1f} MiB"
            )

    def ratio(name: str) -> float:
        return statistics.median(r / v for r, v in zip(rates[name], rates["verify"], strict=True))

    median = {name: statistics.median(values) for name, values in rates.items()}
    print(f"\n{workload}, {len(raws)} messages (medians of {args.rounds} rounds; ratios per round)")
    print(f"  bare Ed25519 verify, one core   {median['verify']:>9,.0f} msgs/s  (the anchor)")
    print(
        f"  {'decode_message (no store)':<32}{median['decode']:>9,.0f} msgs/s  "
        f"{ratio('decode'):6.1%}"
    )
    for name, label, wanted in (
        ("one core", "ingest, one core", goal),
        ("two cores", "ingest, two cores (process)", IMPORT_GOAL),
        ("thread", "ingest, verify in a thread", None),
        ("import", "tangled import of a bundle", IMPORT_GOAL),
    ):
        print(
            f"  {label:<32}{median[name]:>9,.0f} msgs/s  {ratio(name):6.1%}  "
            + (goal_text(ratio(name), wanted) if wanted else "")
        )
    size_ratio = statistics.median(sizes) / raw_bytes
    print(
        f"  {'store size / raw message bytes':<32}{statistics.median(sizes) / 2**20:>9,.1f} MiB"
        f"   {size_ratio:5.2f}x  "
        + goal_text(size_ratio, SIZE_GOAL, at_most=True)
        + f"  (raw {raw_bytes / 2**20:.1f} MiB)"
    )
    compact_ratio = statistics.median(compacted_sizes) / raw_bytes
    print(
        f"  {'... after `tangled compact`':<32}"
        f"{statistics.median(compacted_sizes) / 2**20:>9,.1f} MiB   {compact_ratio:5.2f}x  "
        + goal_text(compact_ratio, SIZE_GOAL, at_most=True)
    )
    print_tables(tables, raw_bytes)


if __name__ == "__main__":
    main()
