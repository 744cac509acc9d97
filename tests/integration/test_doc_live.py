"""One document edited by real nodes through a partition and a heal, followed live by
`doc-watch` on a fourth: real `tangled run` processes, real sockets, no sleeps.

Topology: b listens and dials no one; a, c and d each dial b (a star around b).
The partition restarts a without peers, so nobody dials it and it dials nobody
(peers are dialed only from settings or `connect`): {a} alone, {b, c, d}
together, d a watcher that never edits and is never restarted. The heal is a
`connect` from a to b.
"""

from contextlib import aclosing
from typing import Any

import trio

from tanglenode.node.localnet import CONVERGE_SECONDS, REQUEST_SECONDS, Node
from tanglenode.protocol.doc_ipc import apply_splices

BASE = "alpha beta gamma"


async def request(node: Node, op: str, **arguments: Any) -> Any:
    with trio.fail_after(REQUEST_SECONDS):
        async with await node.client() as client:
            return await client.request(op, **arguments)


async def edit(node: Node, doc: bytes, *splices: list) -> bytes:
    """Apply `splices` on `node`; the id of the one edit message it published."""
    (published,) = (await request(node, "doc-edit", doc=doc, splices=list(splices)))["messages"]
    return published["msg"]


async def show(node: Node, doc: bytes, at: Any = None) -> dict:
    """`doc-show`'s version and text (its weft, the text's name, is checked elsewhere)."""
    shown = await request(node, "doc-show", doc=doc, at=at)
    return {key: value for key, value in shown.items() if key != "weft"}


class Replica:
    """A `doc-watch` client's copy of the text: every snapshot part and splice, in order."""

    def __init__(self) -> None:
        self.started: dict | None = None
        self.version: int | None = None
        self.text = ""
        self.snapshots: list[int] = []  # the version of each snapshot received
        self._changed = trio.Event()

    def apply(self, event: dict) -> None:
        if "started" in event:
            self.started = event["started"]
            # with a snapshot, the text is not there before its events
            self.version = None if self.started["snapshot"] else self.started["version"]
        elif "text" in event:
            if event["start"] == 0:
                self.text = event["text"]
                self.snapshots.append(event["version"])
            else:
                self.text += event["text"]
            self.version = event["version"]
        elif "entries" in event:
            for entry in event["entries"]:
                assert entry["version"] == self.version + 1, (entry, self.version)
                self.text = apply_splices(self.text, entry["splices"])
                self.version = entry["version"]
        else:
            raise AssertionError(f"an unexpected doc-watch event: {event}")
        self._changed.set()
        self._changed = trio.Event()

    async def wait_version(self, version: int) -> None:
        with trio.fail_after(CONVERGE_SECONDS):
            while self.version is None or self.version < version:
                await self._changed.wait()


async def follow(
    node: Node,
    doc: bytes,
    replica: Replica,
    since: int | None = None,
    *,
    task_status=trio.TASK_STATUS_IGNORED,
) -> None:
    """Keep `replica` up to date through `doc-watch` until cancelled; starts once the
    node answered, handing back the cancel scope that stops this watch alone."""
    with trio.CancelScope() as scope:
        async with (
            await node.client() as client,
            aclosing(client.doc_watch(doc, since=since)) as events,
        ):
            with trio.fail_after(REQUEST_SECONDS):
                replica.apply(await anext(events))
            task_status.started(scope)
            async for event in events:
                replica.apply(event)
        raise AssertionError("the node ended the watch")


async def converged(node: Node, doc: bytes, version: int) -> Replica:
    """Follow `doc` on `node` until it holds `version`; that replica."""
    replica = Replica()
    with trio.fail_after(CONVERGE_SECONDS):
        async with (
            await node.client() as client,
            aclosing(client.doc_watch(doc)) as events,
        ):
            async for event in events:
                replica.apply(event)
                if replica.version is not None and replica.version >= version:
                    return replica
    raise AssertionError("the node ended the watch")


async def weft1(node: Node, doc: bytes, *messages: bytes) -> list[tuple[int, ...]]:
    """Each message's weft as a weft1 vector (docs/DOCUMENTS.md), over the feeds of
    all of them in ascending key order. A weft is read from its definition: the message's
    own feed at its seq, joined with the weft of its author's last document message before
    it and, for each timeframe entry (F, s), of F's last document message at or below s."""
    log = await request(node, "doc-log", doc=doc)
    bodies = {row["msg"]: await request(node, "get", message=row["msg"]) for row in log["versions"]}
    wefts: dict[bytes, dict[bytes, int]] = {}

    def last(feed: bytes, upto: int) -> bytes | None:
        found = [
            (b["seq"], m) for m, b in bodies.items() if b["author"] == feed and b["seq"] <= upto
        ]
        return max(found)[1] if found else None

    def weft(msg: bytes) -> dict[bytes, int]:
        if msg not in wefts:
            body = bodies[msg]
            joined = {body["author"]: body["seq"]}
            entries = {feed: entry[0] for feed, entry in body["timeframe"].items()}
            for feed, upto in [(body["author"], body["seq"] - 1), *entries.items()]:
                before = last(feed, upto)
                for author, seq in ({} if before is None else weft(before)).items():
                    joined[author] = max(joined.get(author, 0), seq)
            wefts[msg] = joined
        return wefts[msg]

    chosen = [weft(msg) for msg in messages]
    feeds = sorted(set().union(*chosen))
    return [tuple(w.get(feed, 0) for feed in feeds) for w in chosen]


async def frontier_weft(node: Node) -> dict[bytes, int]:
    return dict((await request(node, "clock", start=0, limit=20_000))["entries"])


async def test_three_writers_through_a_partition_and_a_heal_and_a_live_watcher(tmp_path):
    a, b, c, d = (Node(tmp_path, name) for name in "abcd")
    await b.start()
    for node in (a, c, d):
        await node.start([b])
    doc = (await request(a, "doc-create", title="Live"))["doc"]
    await edit(a, doc, ["ins", 0, BASE])
    for node in (a, b, c, d):  # the init and the base text
        await node.wait_for_size(2, tangle="doc", root=doc)
        listed = (await request(node, "doc-list", start=0, limit=10))["documents"]
        assert [(row["doc"], row["title"], row["versions"]) for row in listed] == [(doc, "Live", 1)]

    async with trio.open_nursery() as nursery:
        live = Replica()  # d's watch from before the partition to the end
        await nursery.start(follow, d, doc, live)
        resumed = Replica()  # d's second watch: stopped mid-way, resumed after the heal
        first_watch = await nursery.start(follow, d, doc, resumed)
        await live.wait_version(1)
        assert (live.text, live.snapshots) == (BASE, [1])

        # Partition: a restarts with no peers; b, c and d stay up together.
        assert await a.stop() == 0
        await a.start()
        red = await edit(a, doc, ["ins", 5, " RED"])  # after "alpha", as b and c will
        assert (await show(a, doc))["text"] == "alpha RED beta gamma"
        await edit(a, doc, ["del", 14, 6])  # " gamma", which c will type after
        blue = await edit(b, doc, ["ins", 5, " BLUE"])
        await resumed.wait_version(2)
        first_watch.cancel()
        stopped_at = resumed.version
        assert (stopped_at, resumed.text) == (2, "alpha BLUE beta gamma")
        await converged(c, doc, 2)
        cyan = await edit(c, doc, ["ins", 5, " CYAN"])  # c saw " BLUE": it goes first
        await edit(c, doc, ["ins", len("alpha CYAN BLUE beta gamma"), " GREEN"])

        split = "alpha CYAN BLUE beta gamma GREEN"
        await live.wait_version(4)
        for node in (b, c):
            assert (await converged(node, doc, 4)).text == split
        assert await show(d, doc) == {"version": 4, "text": split}
        assert live.text == split
        assert await show(a, doc) == {"version": 3, "text": "alpha RED beta"}
        assert (await request(a, "status"))["peers_connected"] == 0  # the partition held

        # Heal: a dials b; every node weaves the six edits.
        await request(a, "connect", address=b.listen, key=b.key)
        for node in (a, b, c):
            await converged(node, doc, 6)
        await live.wait_version(6)

        # The concurrent inserts after "alpha" go in descending weft1 order.
        red_weft, blue_weft, cyan_weft = await weft1(d, doc, red, blue, cyan)
        assert cyan_weft > blue_weft  # c had seen b's edit
        words = sorted([(red_weft, " RED"), (blue_weft, " BLUE"), (cyan_weft, " CYAN")])
        final = "alpha" + "".join(word for _weft, word in reversed(words)) + " beta GREEN"
        for node in (a, b, c, d):
            assert await show(node, doc) == {"version": 6, "text": final}
            assert (await show(node, doc, at=await frontier_weft(node)))["text"] == final
            log = await request(node, "doc-log", doc=doc)
            assert ([row["version"] for row in log["versions"]], log["set_aside_total"]) == (
                list(range(7)),
                0,
            )
        assert all(final.count(word) == 1 for word in (" RED", " BLUE", " CYAN", " GREEN"))
        assert "gamma" not in final

        # d's live watch applied every splice: one snapshot at the start, then entries only.
        assert (live.text, live.version, live.snapshots) == (final, 6, [1])

        # Resumed from where the first watch stopped: entries only, no snapshot.
        await nursery.start(follow, d, doc, resumed, stopped_at)
        assert resumed.started == {"version": stopped_at, "snapshot": False}
        await resumed.wait_version(6)
        assert (resumed.text, resumed.version, resumed.snapshots) == (final, 6, [1])
        nursery.cancel_scope.cancel()

    for node in (a, b, c, d):
        assert await node.stop() == 0
