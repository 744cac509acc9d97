"""Reading a long document's comments and its rendering with inclusions.

A store holds a document of `--chars` code points typed as one paste and
`--comments` comments whose ranges span most of it (each starting one
further in and ending one sooner: the widest ranges a crafted feed could
ask for), and a second document including `--includes` ranges of the first.
The bench times `store.documents.comments.comments(doc)` (every comment
placed and quoted, what `doc-comments` and the web margin ask every few
seconds) and `store.documents.transclusion.render(doc)`, the median of
`--rounds` reads each.

Goal (docs/BENCHMARKS.md): each read at most 1 s for 200 comments over a
document of a million code points (one walk over the weave, not one a
comment), and the memory it holds bounded by the quotes kept (4,000 code
points each), not by the ranges' lengths.

    .venv/bin/python bench/doc_notes.py [--chars 1000000] [--comments 200] [--rounds 5]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tanglenode.protocol.identity import Keypair
from tanglenode.storage.documents import revisions
from tanglenode.storage.documents.rows import docno_of
from tanglenode.storage.feeds.layout import U32
from tanglenode.storage.store import FeedStore

GOAL_SECONDS = 1.0


def timed(read, rounds: int) -> tuple[float, int]:
    """The median seconds of `read()` and the peak bytes it allocated."""
    seconds = []
    for _ in range(rounds):
        started = time.perf_counter()
        read()
        seconds.append(time.perf_counter() - started)
    tracemalloc.start()
    read()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return statistics.median(seconds), peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=1_000_000)
    parser.add_argument("--comments", type=int, default=200)
    parser.add_argument("--includes", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = FeedStore(Path(folder) / "store", keypair=Keypair.generate(), map_size=2**32)
        docs = store.documents
        doc = docs.create_document("long").id
        for start in range(0, args.chars, 200_000):  # pastes within one edit's bounds
            chunk = min(200_000, args.chars - start)
            docs.edit_document(doc, [("ins", start, "abcdefghij" * (chunk // 10))])
        for n in range(args.comments):
            docs.comments.comment(doc, n, args.chars - n, f"note {n}")
        host = docs.create_document("host").id
        docs.edit_document(host, [("ins", 0, "x" * args.includes)])
        for n in range(args.includes):
            docs.transclusion.include(host, n, docs.document_link(doc, n, args.chars - n))
        comments_s, comments_peak = timed(lambda: docs.comments.comments(doc), args.rounds)
        # The reference, in the same run: one walk a comment (`revisions.between`, as the
        # reads did before `revisions.locate`), timed on one and counted for all.
        tables = store.ctx.document_tables
        with store.ctx.read() as txn:
            docno = docno_of(txn, tables, doc)
            atoms = revisions.visible_atoms(txn, tables, docno, None)
            ends = [
                (U32.unpack(txn.get(atoms[i][0], db=tables.ids)[4:8])[0], atoms[i][1])
                for i in (0, -1)
            ]
            started = time.perf_counter()
            revisions.between(txn, tables, docno, ends[0], ends[1], None)
            per_walk = time.perf_counter() - started
        render_s, render_peak = timed(lambda: docs.transclusion.render(host), args.rounds)
        store.close()
    print(
        f"machine: {platform.machine()}, {platform.python_implementation()} "
        f"{platform.python_version()}; median of {args.rounds}"
    )
    print(
        f"{args.comments} comments over {args.chars:,} code points: {comments_s:.3f} s "
        f"(goal <= {GOAL_SECONDS} s: {'met' if comments_s <= GOAL_SECONDS else 'MISSED'}), "
        f"peak {comments_peak / 2**20:.1f} MiB"
    )
    print(
        f"reference, one walk a comment: {per_walk:.3f} s a comment, "
        f"{per_walk * args.comments:.1f} s for all ({per_walk * args.comments / comments_s:.0f}x)"
    )
    print(
        f"{args.includes} inclusions of it rendered: {render_s:.3f} s "
        f"(goal <= {GOAL_SECONDS} s: {'met' if render_s <= GOAL_SECONDS else 'MISSED'}), "
        f"peak {render_peak / 2**20:.1f} MiB"
    )


if __name__ == "__main__":
    main()
