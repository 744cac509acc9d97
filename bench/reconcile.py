"""What the walk that reconciles two clocks costs (protocol/reconcile.py), against telling them.

Theory of operation
-------------------
Two clocks of F feeds (random keys, random heads), D of them one message
apart (the second holds the next seq, another tag), are walked to the end
by two `Reconciliation`s, every message through msgpack as on the wire,
both openings crossing in the first flight. Each side's learned clock is
checked against the other's real one. Printed per case: one-way flights
(the openings' included: round trips are half that, rounded up; on a
connection the openings wait for the offers to cross, half a round trip
more, and fetching what differs takes one more), bytes in
all both ways (msgpack, before frame headers), the bytes of the one HELLO
clock each side sent before the walk (both ways: twice that), the time
the two sides' work took, and the issue's goals:

- 5,000 feeds, 1 differing: at most 4 round trips and 8 KiB in all (goal:
  3 and 2 KiB);
- 5,000 feeds, 100 differing: at most 64 KiB.

    .venv/bin/python bench/reconcile.py
    .venv/bin/python bench/reconcile.py --feeds 20000 --differ 0 1 10 100 1000
"""

from __future__ import annotations

import argparse
import random
import time

import msgpack

from tanglenode.protocol.reconcile import Reconciliation

GOALS = {  # (feeds, differing) -> (round trips bar, goal), (bytes bar, goal)
    (5000, 1): ((4, 3), (8 * 1024, 2 * 1024)),
    (5000, 100): ((None, None), (64 * 1024, None)),
}


def clocks(rng: random.Random, feeds: int, differ: int) -> tuple[dict, dict]:
    keys = [rng.randbytes(32) for _ in range(feeds)]
    a = {feed: (rng.randint(1, 5000), rng.randbytes(16)) for feed in keys}
    b = dict(a)
    for feed in rng.sample(keys, differ):
        b[feed] = (a[feed][0] + 1, rng.randbytes(16))
    return a, b


def walk(a: dict, b: dict, salt: bytes) -> tuple[int, int, float]:
    """(one-way flights, bytes both ways, seconds of work) of one walk to its end."""
    began = time.perf_counter()
    leader, follower = Reconciliation(a, salt, True), Reconciliation(b, salt, False)
    inbox = {
        leader: [msgpack.packb(follower.opening())],
        follower: [msgpack.packb(leader.opening())],
    }
    flights, sent = 1, sum(len(m) for messages in inbox.values() for m in messages)
    while inbox[leader] or inbox[follower]:
        outbox: dict = {leader: [], follower: []}
        for me, other in ((leader, follower), (follower, leader)):
            for message in inbox[me]:
                reply = me.receive(msgpack.unpackb(message))
                if reply is not None:
                    outbox[other].append(msgpack.packb(reply))
        flights += bool(outbox[leader] or outbox[follower])
        sent += sum(len(m) for messages in outbox.values() for m in messages)
        inbox = outbox
    seconds = time.perf_counter() - began
    if leader.peer_heads() != b or follower.peer_heads() != a:
        raise SystemExit("a side learned the other's clock wrong")
    return flights, sent, seconds


def verdict(value: float, bar: float | None, goal: float | None) -> str:
    if bar is None:
        return ""
    if value > bar:
        return "MISSED"
    if goal is None:
        return "met"
    return "goal met" if value <= goal else "bar met, goal missed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--feeds", type=int, nargs="+", default=[5000])
    parser.add_argument("--differ", type=int, nargs="+", default=[0, 1, 10, 100, 1000])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(
        f"{'feeds':>7} {'differ':>7} {'flights':>8} {'RTs':>4} {'bytes':>9} "
        f"{'HELLO x2':>9} {'ms':>7}  against the issue"
    )
    for feeds in args.feeds:
        for differ in args.differ:
            a, b = clocks(rng, feeds, differ)
            flights, sent, seconds = walk(a, b, rng.randbytes(16))
            told = 2 * len(msgpack.packb({f: [seq, tag] for f, (seq, tag) in a.items()}))
            round_trips = (flights + 1) // 2
            (rt_bar, rt_goal), (bytes_bar, bytes_goal) = GOALS.get(
                (feeds, differ), ((None, None), (None, None))
            )
            notes = [
                f"round trips {verdict(round_trips, rt_bar, rt_goal)}" if rt_bar else "",
                f"bytes {verdict(sent, bytes_bar, bytes_goal)}" if bytes_bar else "",
            ]
            print(
                f"{feeds:>7} {differ:>7} {flights:>8} {round_trips:>4} {sent:>9,} {told:>9,} "
                f"{seconds * 1000:>7.1f}  {'; '.join(n for n in notes if n)}"
            )


if __name__ == "__main__":
    main()
