"""verify and linearize on Spark (local[2]) against the same work in one Python process.

Builds an archive of N signed messages directly as Parquet (the export
schema): F feeds, T tangles; each message follows its feed's previous
message, names the head of one random other feed in its timeframe (its
seq and tag), and extends one random tangle from its current tip. Then, in
the same run:

  spark   verify and linearize as `tangled pipeline` runs them (local[2]),
          each written to Parquet
  python  the same checks in one process: decode_message (signature
          included) over every row and each timeframe entry's tag against
          the message held at its place; the in-memory topological pass per
          timeline

    .venv/bin/python bench/pipeline.py [--messages 1000000] [--feeds 64] [--tangles 1000]
"""

from __future__ import annotations

import argparse
import platform
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.pipeline.archive import read_messages, write
from tanglenode.pipeline.export import message_row
from tanglenode.pipeline.linearize import _ranks_in_memory, linearize
from tanglenode.pipeline.schema import MESSAGE_SCHEMA
from tanglenode.pipeline.session import spark_session
from tanglenode.pipeline.verify import verify
from tanglenode.protocol.identity import Keypair, tag_of
from tanglenode.protocol.limits import UNLIMITED
from tanglenode.protocol.message import ROOT_LINK, Named, TangleLink, decode_message, sign_message
from tanglenode.storage.views.timelines import spacetime_ref


def build_archive(out: Path, count: int, feeds: int, tangles: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    keys = [Keypair(rng.randbytes(32)) for _ in range(feeds)]
    heads: dict[bytes, tuple[int, bytes]] = {}
    tips: dict[int, tuple[bytes, bytes]] = {}  # tangle -> (root, tip)
    rows, raws, part = [], [], 0
    (out / "messages").mkdir(parents=True)
    for n in range(count):
        author = rng.choice(keys)
        seq, prev = heads.get(author.public, (0, None))
        other = rng.choice(keys)
        timeframe = {}
        if other.public != author.public and other.public in heads:
            timeframe[other.public] = Named(heads[other.public][0], tag_of(heads[other.public][1]))
        tangle = rng.randrange(tangles)
        link = TangleLink(tips[tangle][0], (tips[tangle][1],)) if tangle in tips else ROOT_LINK
        message = sign_message(
            author,
            seq=seq + 1,
            prev=prev,
            timestamp=1_700_000_000_000 + n,
            timeframe=timeframe,
            tangles={f"t{tangle}": link},
            content={"n": n},
        )
        heads[author.public] = (seq + 1, message.id)
        tips[tangle] = (message.id if link.is_root else link.root, message.id)
        rows.append(message_row(message))
        raws.append(message.raw)
        if len(rows) == 100_000:
            pq.write_table(
                pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA),
                out / "messages" / f"p{part}.parquet",
            )
            rows, part = [], part + 1
    if rows:
        pq.write_table(
            pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA), out / "messages" / f"p{part}.parquet"
        )
    return raws


def python_verify(raws: list[bytes]) -> int:
    messages = [decode_message(raw, UNLIMITED) for raw in raws]
    held = {(m.author, m.seq): tag_of(m.id) for m in messages}
    suspects = sum(
        1
        for m in messages
        for feed, entry in m.named().items()
        if held.get((feed, entry.seq), entry.tag) != entry.tag
    )
    assert suspects == 0, f"{suspects} timeframe entries name a message not held"
    return len(raws)


def python_linearize(raws: list[bytes]) -> int:
    groups: dict[tuple, tuple[list, list]] = defaultdict(lambda: ([], []))
    for raw in raws:
        message = decode_message(raw, UNLIMITED, verify_signature=False)
        position = spacetime_ref(message.author, message.seq, message.id)
        links = [spacetime_ref(f, n.seq, n.tag) for f, n in message.named().items()]
        if message.prev is not None:
            links.append(spacetime_ref(message.author, message.seq - 1, message.prev))
        groups[("spacetime",)][0].append((position, message.id))
        groups[("spacetime",)][1].append(links)
        for name, link in message.tangles.items():
            key = (name, link.root or message.id)
            groups[key][0].append((message.id, message.id))
            groups[key][1].append(list(link.previous or ()))
    ordered = 0
    for members, links in groups.values():
        ranks = _ranks_in_memory([ref for ref, _id in members], links)
        ordered += len(sorted(zip(ranks, (i for _r, i in members), strict=True)))
    return ordered


def timed(label: str, function, *args):
    started = time.perf_counter()
    result = function(*args)
    seconds = time.perf_counter() - started
    print(f"{label:<28} {seconds:8.1f} s   ({result:,} rows)", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--feeds", type=int, default=64)
    parser.add_argument("--tangles", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    print(f"# {platform.node()} {platform.machine()} python {platform.python_version()}")
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        raws = build_archive(root / "archive", args.messages, args.feeds, args.tangles, args.seed)
        print(f"built {len(raws):,} messages in {time.perf_counter() - started:.0f} s")
        spark = spark_session(args.master, driver_memory="4g")
        messages = read_messages(spark, [root / "archive"])

        def spark_job(job, name):
            target = write(job(messages), root / "out", name)
            return spark.read.parquet(str(target)).count()

        timed("spark verify", spark_job, verify, "verify")
        timed("spark linearize", spark_job, linearize, "linearize")
        spark.stop()
        timed("python verify (1 process)", python_verify, raws)
        timed("python linearize (1 process)", python_linearize, raws)


if __name__ == "__main__":
    main()
