"""Chaos: real `tangled run` nodes, random partitions and heals, kill -9, a hostile peer.

Every honest node is a real process (tanglenode.node.localnet). Nodes never dial each
other directly: each pair has a TCP proxy in this process (`Fabric`), so a
partition is the proxy cutting the pair's connections and holding new ones
until the pair may talk again (a heal then takes milliseconds, not a
dialer's backoff). Honest nodes publish throughout, half into one shared
tangle, while a seeded schedule partitions them at random, kills one with
SIGKILL (and restarts it), and a hostile peer in this process, speaking the
real protocol with the node's real network key, sends:

- a framing attempt: alice signs two seq 2s, and bob's seq 2 names the
  first by its tag; one node gets alice's first branch and bob, another
  the second branch and bob (bob then names what it does not hold: a
  suspected fork, fetched), a third bob alone;
- the two branches of a fork (forker, equal up to seq 2) to two nodes in
  different partitions, both branches in the shared tangle;
- honest-looking messages of its own (mallory), in the tangle, naming
  honest messages in their timeframes.

After the final heal every honest node must hold the same feeds, the same
evidence and the same timelines, with alice invalid from 2 and bob whole,
the forker invalid from 3, every acknowledged publish in its author's feed,
and every node up. The seed is printed; `CHAOS_SEED=N` replays a schedule
(the choices, not the exact timings).
"""

from __future__ import annotations

import json
import os
import random
import signal
from collections.abc import Callable
from contextlib import aclosing, suppress

import pytest
import trio

from tanglenode.node.ipc.client import NodeError, NodeNotRunning
from tanglenode.node.localnet import TANGLED, Node
from tanglenode.protocol.evidence import check_proof
from tanglenode.protocol.identity import Keypair, feed_text, message_text
from tanglenode.protocol.message import Message, TangleLink
from tests.factories import Feed, keypair
from tests.integration.test_cluster import _network_key_hex
from tests.node.test_hostile_peers import gossip_to, push

WAIT = 30  # seconds any one step may take
CONVERGE = 90  # seconds the nodes may take to agree after the final heal
PACE = 0.05  # an honest node publishes at most every PACE seconds (the workload's rate)


def chaos_seed() -> int:
    seed = int(os.environ.get("CHAOS_SEED", random.SystemRandom().randrange(2**32)))
    print(f"chaos seed: {seed} (replay with CHAOS_SEED={seed})")
    return seed


class Fabric:
    """Who may talk to whom: partition groups and nodes that are down; proxies obey it."""

    def __init__(self, nodes: list[Node]) -> None:
        self.nodes = nodes
        self.group = dict.fromkeys(range(len(nodes)), 0)
        self.down: set[int] = set(range(len(nodes)))  # none started yet
        self.published = [0] * len(nodes)  # acknowledged publishes per node
        self._changed = trio.Event()

    def touch(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def until(self, condition: Callable[[], bool]) -> None:
        while not condition():
            await self._changed.wait()

    def open(self, i: int, j: int) -> bool:
        return i not in self.down and j not in self.down and self.group[i] == self.group[j]

    def partition(self, groups: list[list[int]]) -> None:
        self.group = {index: number for number, group in enumerate(groups) for index in group}
        self.touch()

    def up(self, index: int) -> bool:
        return index not in self.down

    async def serve_link(self, nursery, i: int, j: int) -> str:
        """A proxy through which node i dials node j; returns its address."""
        (listener,) = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listener.socket.getsockname()[1]

        async def forward(client: trio.SocketStream) -> None:
            async with client:
                await self.until(lambda: self.open(i, j))  # held while partitioned or down
                host, target_port = self.nodes[j].listen.rsplit(":", 1)
                try:
                    server = await trio.open_tcp_stream(host, int(target_port))
                except OSError:
                    return
                async with server, trio.open_nursery() as pipes:

                    async def pump(source, sink) -> None:
                        with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                            while data := await source.receive_some(65536):
                                await sink.send_all(data)
                        pipes.cancel_scope.cancel()

                    async def cut() -> None:
                        await self.until(lambda: not self.open(i, j))
                        pipes.cancel_scope.cancel()

                    pipes.start_soon(pump, client, server)
                    pipes.start_soon(pump, server, client)
                    pipes.start_soon(cut)

        nursery.start_soon(trio.serve_listeners, forward, [listener])
        return f"127.0.0.1:{port}"


def hostile(target: Node, me: Keypair):
    """A handshaken gossip connection to a real node, HELLO exchanged."""
    network = bytes.fromhex(_network_key_hex(target))
    return gossip_to(target.listen, network, target.key, me)


async def status(node: Node) -> dict:
    """`status`, with the node's whole clock (which `status` summarises) read page by page."""
    with trio.fail_after(WAIT):
        async with await node.client() as client:
            found = await client.status()
            clock: dict[bytes, int] = {}
            start = 0
            while start is not None:
                page = await client.request("clock", start=start)
                clock.update((feed, seq) for feed, seq in page["entries"])
                start = page["next"]
            found["clock"] = clock
            return found


async def poll(node: Node, condition: Callable[[dict], bool]) -> dict:
    """Poll `status` until `condition` holds: a message pushed by a peer, or a proof, has no
    event of its own that a client can await."""
    with trio.fail_after(WAIT):
        while not condition(found := await status(node)):
            await trio.sleep(0.02)
    return found


def invalid(found: dict) -> dict[bytes, int]:
    return {author: seq for author, seq in found["forks"]}


async def send(target: Node, me: Keypair, messages: list[Message], done: Callable[[dict], bool]):
    """Push `messages` to `target` as a peer, then wait until its status shows `done`."""
    async with hostile(target, me) as (secure, gossip):
        await push(secure, gossip, messages)
        await poll(target, done)


class Attacker:
    """The hostile peer's feeds, all built up front from the seed."""

    def __init__(self, seed: int, root: bytes) -> None:
        self.root = root
        self.me = keypair(f"chaos-{seed}-sender")  # its connection identity
        self.rng = random.Random(seed + 1)  # its own, so the schedule does not hang on timing
        self.alice, self.bob = Feed(f"chaos-{seed}-alice"), Feed(f"chaos-{seed}-bob")
        self.alice.append({"n": 1})
        self.bob.append({"n": 1})
        named = self.alice.append({"n": 2})
        self.twin = Feed(self.alice.keypair)
        self.twin.messages = self.alice.messages[:1]
        self.twin.append({"n": "2, again"})
        self.bob.append({"n": 2}, timeframe={self.alice.public: named})
        chat = TangleLink(root, (root,))
        self.one = Feed(f"chaos-{seed}-forker")
        first = self.one.append({"n": 1}, tangles={"chat": chat})
        self.one.append({"n": 2})
        self.two = Feed(self.one.keypair)
        self.two.messages = self.one.messages[:]
        for number, branch in enumerate((self.one, self.two), start=1):
            previous = first.id
            for n in range(3, 6):
                link = TangleLink(root, (previous,))
                previous = branch.append({"branch": number, "n": n}, tangles={"chat": link}).id
        self.mallory = Feed(f"chaos-{seed}-mallory")

    @property
    def framing_proof(self):
        return check_proof([self.alice.messages[1], self.twin.messages[1]])

    @property
    def fork_proof(self):
        return check_proof([self.one.messages[2], self.two.messages[2]])

    async def framing(self, x: Node, y: Node, z: Node | None) -> None:
        """alice's first branch and bob to x, her second branch and bob to y; bob to z."""
        alice, bob = self.alice, self.bob
        for target, branch in ((x, alice), (y, self.twin)):
            held = (await status(target))["clock"]
            assert alice.public not in held and bob.public not in held, "the partition leaked"
            await send(
                target,
                self.me,
                branch.messages,
                lambda s: s["clock"].get(alice.public) == 2 or alice.public in invalid(s),
            )
            await send(target, self.me, bob.messages, lambda s: s["clock"].get(bob.public) == 2)
        if z is not None:
            await send(z, self.me, bob.messages, lambda s: s["clock"].get(bob.public, 0) >= 1)

    async def fork(self, p: Node, q: Node) -> None:
        author = self.one.public

        def done(found: dict) -> bool:
            return found["clock"].get(author) == 5 or author in invalid(found)

        await send(p, self.me, self.one.messages, done)
        assert author not in (await status(q))["clock"], "the partition leaked"
        await send(q, self.me, self.two.messages, done)

    async def honest_looking(self, target: Node) -> None:
        """One more message of mallory's own, in the tangle, naming what target holds."""
        # It names the attacker's own first messages by their tags (an honest message's tag
        # is not in a status reply); which one comes from the seeded choice.
        own = [self.bob.messages[0], self.one.messages[0]]
        pick = self.rng.choice(own)
        timeframe = {pick.author: pick}
        self.mallory.append(
            {"looks": "honest", "n": len(self.mallory.messages) + 1},
            tangles={"chat": TangleLink(self.root, (self.root,))},
            timeframe=timeframe,
        )
        seq = len(self.mallory.messages)
        await send(
            target,
            self.me,
            self.mallory.messages,
            lambda s: s["clock"].get(self.mallory.public, 0) >= seq,
        )


class Honest:
    """The honest side: nodes behind the fabric, their publishers, what each acknowledged."""

    def __init__(self, nodes: list[Node], fabric: Fabric, seed: int) -> None:
        self.nodes, self.fabric = nodes, fabric
        self.rngs = [random.Random(seed * 1000 + index) for index in range(len(nodes))]
        self.acked: list[dict[bytes, int]] = [{} for _ in nodes]  # id -> seq
        self.chat_ids: set[bytes] = set()
        self.addresses: dict[tuple[int, int], str] = {}
        self.stopping = False
        self.root: bytes | None = None

    def peers_env(self, index: int) -> dict[str, str]:
        peers = [
            {"address": address, "key": self.nodes[j].feed_id}
            for (i, j), address in self.addresses.items()
            if i == index
        ]
        return {"TANGLED_PEERS": json.dumps(peers)}

    async def start(self, index: int) -> None:
        await self.nodes[index].start(extra_env=self.peers_env(index))
        self.fabric.down.discard(index)
        self.fabric.touch()

    async def kill(self, index: int) -> None:
        self.fabric.down.add(index)  # before the kill: a publish failing from now on is expected
        self.fabric.touch()
        await self.nodes[index].kill()

    async def publisher(self, index: int) -> None:
        node, rng, fabric = self.nodes[index], self.rngs[index], self.fabric
        count = 0
        while not self.stopping:
            await fabric.until(lambda: fabric.up(index) or self.stopping)
            if self.stopping:
                return
            in_chat = rng.random() < 0.5
            try:
                with trio.fail_after(WAIT):
                    async with await node.client() as client:
                        body = await client.publish(
                            {"from": node.name, "n": count},
                            {"chat": self.root} if in_chat else None,
                        )
            except (NodeError, NodeNotRunning, trio.BrokenResourceError, OSError):
                if fabric.up(index):
                    raise  # it failed while the node was meant to be up
                continue
            assert body["author"] == node.key
            self.acked[index][body["id"]] = body["seq"]
            if in_chat:
                self.chat_ids.add(body["id"])
            count += 1
            fabric.published[index] += 1
            fabric.touch()
            await trio.sleep(rng.uniform(0, PACE))  # the workload's rate, not a wait for an event

    async def publishes(self, per_node: int) -> None:
        """Until each node that is up published `per_node` more messages."""
        fabric = self.fabric
        target = [count + per_node for count in fabric.published]
        with trio.fail_after(WAIT):
            await fabric.until(
                lambda: all(
                    fabric.published[i] >= target[i] for i in range(len(self.nodes)) if fabric.up(i)
                )
            )


def random_partition(rng: random.Random, size: int) -> list[list[int]]:
    """Two or three non-empty groups."""
    while True:
        count = rng.choice([2, 3]) if size > 2 else 2
        groups: list[list[int]] = [[] for _ in range(count)]
        for index in range(size):
            groups[rng.randrange(count)].append(index)
        if all(groups):
            return groups


def apart(rng: random.Random, fabric: Fabric, size: int) -> tuple[int, int, int | None]:
    """Two up nodes in different groups, and a third up node if there is one."""
    up = [i for i in range(size) if fabric.up(i)]
    pairs = [(i, j) for i in up for j in up if fabric.group[i] != fabric.group[j]]
    x, y = rng.choice(pairs)
    rest = [i for i in up if i not in (x, y)]
    return x, y, rng.choice(rest) if rest else None


async def cli_json(node: Node, *args: str) -> list[dict]:
    with trio.fail_after(WAIT):
        done = await trio.run_process(
            [str(TANGLED), "--data-dir", str(node.data_dir), *args, "--json"], capture_stdout=True
        )
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


async def cli_state(nodes: list[Node]) -> list[tuple[list[dict], dict]]:
    """(`feeds --json`, proof id -> (kind, invalid, message ids) of `forks --json`) per node."""
    results: list = [None] * len(nodes)

    async def one(index: int) -> None:
        listed = await cli_json(nodes[index], "feeds")  # `ours` differs by node: left out
        feeds = sorted(
            ({k: v for k, v in f.items() if k != "ours"} for f in listed), key=lambda f: f["feed"]
        )
        proofs = {
            p["proof"]: (p["kind"], p["invalid"], sorted(m["id"] for m in p["messages"]))
            for p in await cli_json(nodes[index], "forks")
        }
        results[index] = (feeds, proofs)

    async with trio.open_nursery() as nursery:
        for index in range(len(nodes)):
            nursery.start_soon(one, index)
    return results


def describe_difference(name_a: str, a, name_b: str, b) -> str:
    return f"{name_a}: {a!r}\n{name_b}: {b!r}"


async def chaos(tmp_path, *, size: int, rounds: int, per_round: int, kills: int) -> None:
    seed = chaos_seed()
    rng = random.Random(seed)
    nodes = [Node(tmp_path, f"n{index}") for index in range(size)]
    fabric = Fabric(nodes)
    honest = Honest(nodes, fabric, seed)
    # The schedule: which round each hostile act (and the kill) happens in.
    events: dict[int, list[str]] = {}
    acts = ["framing", "fork"] + ["kill"] * kills
    for act in acts:
        events.setdefault(rng.randrange(rounds), []).append(act)
    print(f"schedule: {events}")
    try:
        async with trio.open_nursery() as proxies:
            for i in range(size):
                for j in range(i + 1, size):
                    honest.addresses[i, j] = await fabric.serve_link(proxies, i, j)
            for index in range(size):
                await honest.start(index)
            honest.root = (await nodes[0].publish({"type": "chat"}, {"chat": None}))["id"]
            chat = {"tangle": "chat", "root": honest.root}
            with trio.fail_after(WAIT):
                for node in nodes:  # no removal yet: the subscription is safe
                    await node.wait_for_size(1, **chat)
            attacker = Attacker(seed, honest.root)

            async with trio.open_nursery() as publishers:
                for index in range(size):
                    publishers.start_soon(honest.publisher, index)
                victims: list[int] = []  # killed, restarted when the next round begins
                for number in range(rounds):
                    groups = random_partition(rng, size)
                    fabric.partition(groups)
                    while victims:
                        await restart_and_check(honest, victims.pop())
                    print(f"round {number}: partition {groups}, {events.get(number, [])}")
                    for act in events.get(number, []):
                        if act == "framing":
                            x, y, z = apart(rng, fabric, size)
                            print(f"  framing: a branch each to n{x} and n{y}, bob to n{z}")
                            await attacker.framing(
                                nodes[x], nodes[y], None if z is None else nodes[z]
                            )
                        elif act == "fork":
                            p, q, _ = apart(rng, fabric, size)
                            print(f"  fork: branch one to n{p}, branch two to n{q}")
                            await attacker.fork(nodes[p], nodes[q])
                        elif act == "kill":
                            await honest.publishes(rng.randrange(1, per_round))  # mid-round
                            victim = rng.choice([i for i in range(size) if fabric.up(i)])
                            print(f"  kill -9 n{victim}")
                            await honest.kill(victim)
                            victims.append(victim)
                    await attacker.honest_looking(
                        nodes[rng.choice([i for i in range(size) if fabric.up(i)])]
                    )
                    await honest.publishes(per_round)
                while victims:
                    await restart_and_check(honest, victims.pop())
                honest.stopping = True
                fabric.touch()

            # The final heal: one group, every link open.
            fabric.partition([list(range(size))])
            await converge(nodes, attacker)
            await check_outcome(nodes, honest, attacker)
            proxies.cancel_scope.cancel()
    finally:
        for node in nodes:
            if node.process is not None:
                with suppress(ProcessLookupError):
                    node.process.send_signal(signal.SIGKILL)
    print(f"chaos seed: {seed}")


async def restart_and_check(honest: Honest, index: int) -> None:
    """Restart a killed node; it must hold every message it acknowledged."""
    node = honest.nodes[index]
    acked = dict(honest.acked[index])  # acknowledged before the kill
    await honest.start(index)
    own = (await status(node))["clock"].get(node.key, 0)
    assert own >= max(acked.values(), default=0), f"{node.name} restarted at seq {own}"
    with trio.fail_after(WAIT):
        async with await node.client() as client:
            for msg_id, seq in acked.items():
                assert (await client.get(msg_id))["seq"] == seq


async def converge(nodes: list[Node], attacker: Attacker) -> None:
    """Wait until every node reports the same heads (ids, not just seqs) and evidence."""
    last = None
    try:
        with trio.fail_after(CONVERGE):
            while True:
                found = [await status(node) for node in nodes]
                views = [(f["clock"], sorted(f["forks"]), f["stalls"]) for f in found]
                if all(view == views[0] for view in views):
                    last = await cli_state(nodes)
                    if all(state == last[0] for state in last):
                        return
                await trio.sleep(0.1)
    except trio.TooSlowError:
        last = last or await cli_state(nodes)
        report = []
        for index, (feeds, proofs) in enumerate(last):
            report.append(f"{nodes[index].name}: feeds {feeds}\n  proofs {proofs}")
            report.append(f"  status {await status(nodes[index])}")
        raise AssertionError(
            f"no convergence in {CONVERGE} s (attacker feeds: alice "
            f"{feed_text(attacker.alice.public)}, bob {feed_text(attacker.bob.public)}, "
            f"forker {feed_text(attacker.one.public)})\n" + "\n".join(report)
        ) from None


async def check_outcome(nodes: list[Node], honest: Honest, attacker: Attacker) -> None:
    states = await cli_state(nodes)
    feeds, proofs = states[0]
    for node, (other_feeds, other_proofs) in zip(nodes, states, strict=True):
        assert other_feeds == feeds, describe_difference(
            nodes[0].name, feeds, node.name, other_feeds
        )
        assert other_proofs == proofs, describe_difference(
            nodes[0].name, proofs, node.name, other_proofs
        )

    # The evidence: exactly the two forks, cutting the forkers only, at the right seqs.
    alice, bob, forker = (feed_text(f.public) for f in (attacker.alice, attacker.bob, attacker.one))
    framing, fork = attacker.framing_proof, attacker.fork_proof
    assert proofs == {
        message_text(framing.id): (
            "fork",
            {alice: 2},
            sorted(message_text(m.id) for m in framing.messages),
        ),
        message_text(fork.id): (
            "fork",
            {forker: 3},
            sorted(message_text(m.id) for m in fork.messages),
        ),
    }
    by_feed = {f["feed"]: f for f in feeds}
    assert (by_feed[alice]["seq"], by_feed[alice]["invalid_from"]) == (1, 2)
    assert (by_feed[bob]["seq"], by_feed[bob]["invalid_from"]) == (2, None)  # never framed
    assert (by_feed[forker]["seq"], by_feed[forker]["invalid_from"]) == (2, 3)
    assert by_feed[forker]["head"] == message_text(attacker.one.messages[1].id)
    mallory = by_feed[feed_text(attacker.mallory.public)]
    assert (mallory["seq"], mallory["invalid_from"]) == (len(attacker.mallory.messages), None)
    for node in nodes:
        assert by_feed[node.feed_id]["invalid_from"] is None

    # The timelines: the same on every node, holding every stored message.
    chat = {"tangle": "chat", "root": honest.root}
    spacetimes = [await node.timeline(spacetime=True) for node in nodes]
    tangles = [await node.timeline(**chat) for node in nodes]
    for node, spacetime, tangle in zip(nodes, spacetimes, tangles, strict=True):
        assert spacetime == spacetimes[0], f"{node.name}'s spacetime differs from n0's"
        assert tangle == tangles[0], f"{node.name}'s chat timeline differs from n0's"
    in_spacetime = {msg_id for _rank, msg_id in spacetimes[0]}
    in_chat = {msg_id for _rank, msg_id in tangles[0]}
    assert len(in_spacetime) == len(spacetimes[0]) == sum(f["seq"] for f in feeds)
    removed = {m.id for m in attacker.one.messages[2:] + attacker.two.messages[2:]}
    removed |= {attacker.alice.messages[1].id, attacker.twin.messages[1].id}
    assert attacker.bob.messages[1].id in in_spacetime  # bob named one branch: never framed
    assert not removed & in_spacetime and not removed & in_chat

    # No acknowledged publish is lost: each is in its author's feed, the spacetime, its tangle.
    for index, node in enumerate(nodes):
        acked = honest.acked[index]
        assert acked, f"{node.name} published nothing"
        assert max(acked.values()) <= by_feed[node.feed_id]["seq"]
        assert set(acked) <= in_spacetime, f"{node.name} lost acknowledged messages"
    assert honest.chat_ids <= in_chat
    assert {m.id for m in attacker.mallory.messages} <= in_chat

    # Every node is up, answers status, stalls on nothing, and never hit an internal error
    # or dropped an honest peer but for a cut connection.
    keys = {node.key.hex()[:16] for node in nodes}
    for node in nodes:
        assert node.process is not None and node.process.returncode is None
        found = await status(node)
        assert found["stalls"] == []
        for line in node.log_lines():
            event = line.get("event")
            assert event not in ("ipc client failed", "peer connection failed"), line
            if event == "peer dropped" and line.get("peer") in keys:
                assert "unexpected hangup" in line["reason"], line  # a cut, never misbehaviour
    for node in nodes:
        assert await node.stop() == 0


@pytest.mark.slow  # 14 s; the three-node case runs in `make test`
async def test_five_nodes_partitions_a_kill_and_a_hostile_peer_converge(tmp_path):
    await chaos(tmp_path, size=5, rounds=6, per_round=10, kills=1)


@pytest.mark.slow
async def test_a_longer_campaign_with_two_kills_converges(tmp_path):
    await chaos(tmp_path, size=5, rounds=14, per_round=20, kills=2)


async def test_three_nodes_one_partition_and_a_hostile_peer_converge(tmp_path):
    await chaos(tmp_path, size=3, rounds=1, per_round=10, kills=0)


async def test_a_subscriber_sees_a_message_removed_by_a_proof(tmp_path):
    node = Node(tmp_path, "n")
    await node.start()
    try:
        one = Feed("removed-one")
        for n in range(3):
            one.append({"n": n})
        two = Feed(one.keypair)
        two.messages = one.messages[:1]
        two.append({"other": 2})
        me = Keypair.generate()
        await send(node, me, one.messages, lambda s: s["clock"].get(one.public) == 3)
        async with (
            await node.client() as client,
            aclosing(client.subscribe(since=None, spacetime=True)) as events,
        ):
            with trio.fail_after(WAIT):
                assert "started" in await anext(events)
                assert len((await anext(events))["snapshot"]) == 3
            await send(node, me, two.messages[1:], lambda s: one.public in invalid(s))
            removed = 0
            with trio.fail_after(WAIT):
                async for event in events:
                    removed += sum("del" in command for command in event.get("commands", ()))
                    if removed == 2:  # seqs 2 and 3 left the spacetime
                        break
        assert len(await node.timeline(spacetime=True)) == 1
    finally:
        await node.stop()
