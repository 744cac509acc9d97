"""`make demo`: four real nodes on 127.0.0.1 hold a conversation through a partition.

1. alice, bob, carol and dave start (each a `tangled run` process with its
   own data directory and the default `[replication] hops = 2`, which
   carries only the feeds a node follows and theirs), follow each other,
   name themselves, and learn the thread's root from alice;
   alice also serves the web view (`run --web`, on a free port of 127.0.0.1),
   whose URL, token included, is shown each time she starts;
2. the network splits into {alice, carol} and {bob, dave}; each node writes
   into the thread, and each side sees only its own half;
3. the network heals (alice dials bob, carol dials dave); every node ends
   with the same timeline: one digest line per node shows it; dave replies,
   and `tangled show` prints what its timeframe names: the heads dave had
   processed, each by seq and the tag of its id;
4. alice starts a private group with bob and carol, then excludes carol:
   carol keeps what she could read, and cannot read what follows; dave
   replicates everything and reads nothing.

Every step is narrated as it starts, with the time since the demo began.
Commands shown with `$` are the real CLI; the rest is the IPC client. The
data directories are removed at the end unless `--keep` (`make demo KEEP=1`)
is given; then the nodes are stopped and three commands to try on them end
the demo, with the one that starts alice again and her web view's URL (the
token is kept in her data directory, so the URL stays good). The kept config
files give each node a port of its own and the peers it dialed (`KEPT_PORT`,
`KEPT_PEERS`), so the four run again side by side and reconnect; their
follows are in their stores, so they replicate as they did in the demo.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import trio

from tanglenode.config.settings import load_settings
from tanglenode.node.localnet import REQUEST_SECONDS, TANGLED, Node
from tanglenode.node.web.token import read_token
from tanglenode.protocol.identity import message_text, parse_message_id

LINES = {
    "alice": ["Shall we meet on Friday?", "Friday it is, then."],
    "bob": ["Friday works for me.", "I'll book the table."],
    "carol": ["Could we make it Saturday?", "Or Friday after 7."],
    "dave": ["Either day is fine.", "See you all there."],
}
WEB_PORT = 8080  # of alice's web view after `--keep`, when free (else any free port)
KEPT_PORT = 8008  # where alice accepts peers when started again after `--keep`, the others
# on the next ports (each when free, else any free one), so the four can run side by side
KEPT_PEERS = {"bob": ["alice"], "carol": ["alice"], "dave": ["bob"]}  # whom each dials then
_STARTED = time.monotonic()


def say(text: str) -> None:
    """One narration line, stamped with the seconds since the demo began."""
    print(f"[{time.monotonic() - _STARTED:5.1f} s] {text}", flush=True)


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


def cli(node: Node, *args: str) -> str:
    """Run a real `tangled` command on `node`'s data directory, showing it and its output."""
    shown = " ".join(shlex.quote(a) for a in ("tangled", "--data-dir", str(node.data_dir), *args))
    print(f"$ {shown}", flush=True)
    done = subprocess.run(
        [str(TANGLED), "--data-dir", str(node.data_dir), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "TANGLED_LOG_LEVEL": "warning", "COLUMNS": "100"},
    )
    print(done.stdout, end="", flush=True)
    return done.stdout


async def start(node: Node, peers: Sequence[Node] = (), *, web: bool = False) -> None:
    """Start `node` dialing `peers`; with `web`, its web view too, on a free port."""
    dials = f", dialing {', '.join(peer.name for peer in peers)}" if peers else ""
    say(f"starting {node.name}{dials} ...")
    web_env = {"TANGLED_WEB__LISTEN": "127.0.0.1:0"} if web else None
    await node.start(list(peers), web_env, hops=None)  # the config's: as a user's node runs
    say(f"{node.name} is up: {node.feed_id[:12]}…, accepting peers on {node.listen}")
    if web:
        with trio.fail_after(REQUEST_SECONDS):
            async with await node.client() as client:
                base = (await client.status())["web"]
        say(f"{node.name}'s web view, while she runs: {web_url(node, base)}")


def web_url(node: Node, base: str) -> str:
    """The web view's address with the token of `node`'s data directory (`tangled status`'s)."""
    return f"{base}?token={read_token(node.data_dir / 'web-token')}"


async def follow_each_other(nodes: list[Node]) -> None:
    """Each of the running `nodes` follows every other: `tangled follow` for the first (shown),
    the IPC `follow` op for the rest. Each carries the others' feeds from then on."""
    first, *rest = nodes
    for other in rest:
        cli(first, "follow", other.feed_id)
    for node in rest:
        for other in nodes:
            if other is not node:
                await node.request("follow", feed=other.key)


async def post(node: Node, root: bytes, line: str) -> None:
    await node.publish({"type": "post", "text": line}, {"thread": root})
    say(f"{node.name} wrote {line!r}")


def create_nodes(root_dir: Path) -> list[Node]:
    """The four nodes' data directories (`tangled init`). Their config files give each a
    port of its own (from `KEPT_PORT`) and the peers of `KEPT_PEERS`: what a node kept by
    `--keep` uses when started again (the demo itself runs them on free ports)."""
    nodes: dict[str, Node] = {}
    listen: dict[str, str] = {}
    for offset, name in enumerate(LINES):
        listen[name] = f"127.0.0.1:{free_port(KEPT_PORT + offset, taken=listen.values())}"
        args = ["--listen", listen[name]]
        for peer in KEPT_PEERS.get(name, ()):
            args += ["--peer", f"{listen[peer]}@{nodes[peer].feed_id}"]
        nodes[name] = Node(root_dir, name, args)
    return list(nodes.values())


async def converse(root_dir: Path) -> tuple[list[Node], str]:
    say(f"creating four nodes (tangled init) under {root_dir}")
    alice, bob, carol, dave = nodes = create_nodes(root_dir)

    heading("four nodes start, follow each other, name themselves; alice opens a thread")
    await start(alice, web=True)
    await start(bob, [alice])
    await start(carol, [alice])
    await start(dave, [bob])
    say("a node carries only the feeds it follows (and theirs): each follows the other three")
    await follow_each_other(nodes)
    say("alice was never shown dave (he dials bob, not her), and her follow says so;")
    say("his feed reaches her through bob, who carries it now that he follows dave too")
    for node in nodes:
        cli(node, "about", node.name)
    root = (await alice.publish({"type": "thread", "title": "dinner"}, {"thread": None}))["id"]
    spec = f"thread/{message_text(root)}"
    say(f"alice opened the thread {spec}; waiting for every node to hold it and the names")
    thread = {"tangle": "thread", "root": root}
    follows, names = len(nodes) * (len(nodes) - 1), len(nodes)
    for node in nodes:
        await node.wait_for_size(1, **thread)
        await node.wait_for_size(follows + names + 1, spacetime=True)
    say("every node holds the thread's root; stopping all four to split the network")
    for node in nodes:
        await node.stop()

    heading("partition: {alice, carol} | {bob, dave}; everyone writes")
    await start(alice, web=True)
    await start(carol, [alice])
    await start(bob)
    await start(dave, [bob])
    for turn in range(2):
        async with trio.open_nursery() as nursery:
            for node in nodes:
                nursery.start_soon(post, node, root, LINES[node.name][turn])
    say("waiting for each side to hold its own half (1 + 4 messages)")
    for node in nodes:
        await node.wait_for_size(5, **thread)
    for node in (alice, bob):
        print(f"-- {node.name}'s side:")
        cli(node, "timeline", spec)

    heading("heal: alice dials bob, carol dials dave")
    cli(alice, "connect", bob.listen, bob.feed_id)
    cli(carol, "connect", dave.listen, dave.feed_id)
    say("waiting for every node to hold all 9 messages")
    for node in nodes:
        await node.wait_for_size(9, **thread)
        say(f"{node.name} holds all 9")

    heading("convergence at a glance: one digest of the thread's order per node")
    digests = {node.name: cli(node, "timeline", spec, "--digest").split() for node in nodes}
    assert len({tuple(words) for words in digests.values()}) == 1, f"digests differ: {digests}"
    say("the four digests are identical: the four timelines are the same order")
    cli(dave, "timeline", spec)

    heading("what a message names: the heads its author had processed, by seq and tag")
    reply = await dave.publish({"type": "post", "text": "Booked for eight."}, {"thread": root})
    say("dave replies; its timeframe names only what no message dave processed names yet")
    cli(dave, "show", message_text(reply["id"]))

    heading("status of each node")
    for node in nodes:
        cli(node, "status")

    await private_group(alice, bob, carol, dave)
    say("stopping the four nodes")
    for node in nodes:
        await node.stop()
    return nodes, spec


async def private_group(alice: Node, bob: Node, carol: Node, dave: Node) -> str:
    heading("a private group: alice adds bob and carol; dave only replicates")
    group = cli(alice, "group", "create", "book club").strip()
    root = parse_message_id(group)
    chat = {"tangle": "group", "root": root}
    cli(alice, "group", "add", group, bob.feed_id, carol.feed_id)
    cli(alice, "group", "post", group, '{"text": "First meeting on Friday."}')
    say("waiting for bob to receive the group (creation, add, first post)")
    await bob.wait_for_size(3, **chat)
    cli(bob, "group", "list")
    cli(bob, "group", "post", group, '{"text": "I will bring the book."}')
    say("waiting for alice, carol and dave to hold bob's post")
    for node in (alice, carol, dave):
        await node.wait_for_size(4, **chat)
    cli(carol, "group", "timeline", group)
    print("-- dave holds the same messages and can open none:")
    cli(dave, "group", "timeline", group)

    heading("alice excludes carol: a new epoch, with a key carol never receives")
    cli(alice, "group", "exclude", group, carol.feed_id)
    cli(alice, "group", "post", group, '{"text": "Carol cannot read this."}')
    say("waiting for bob and carol to hold the exclusion and the post after it")
    for node in (bob, carol):
        await node.wait_for_size(7, **chat)
    print("-- bob reads everything:")
    cli(bob, "group", "timeline", group)
    print("-- carol keeps what she could read, and no more:")
    cli(carol, "group", "timeline", group)
    cli(bob, "group", "members", group)
    cli(bob, "group", "epochs", group)
    return group


def runnable_tangled() -> str:
    """The CLI as the user can type it from here: `.venv/bin/tangled`, not a bare `tangled`."""
    try:
        return str(TANGLED.relative_to(Path.cwd()))
    except ValueError:
        return str(TANGLED)


def next_steps(nodes: list[Node], spec: str) -> list[str]:
    """Three commands to try on the kept data directories (their nodes are stopped)."""
    alice, bob = nodes[0], nodes[1]

    def command(node: Node, *args: str) -> str:
        words = (runnable_tangled(), "--data-dir", str(node.data_dir), *args)
        return " ".join(shlex.quote(word) for word in words)

    return [
        command(bob, "timeline", spec),
        command(alice, "tangles"),
        command(bob, "group", "list"),
    ]


def free_port(preferred: int, taken: Iterable[str] = ()) -> int:
    """`preferred` if nothing listens there on 127.0.0.1, else a port the system says is
    free; never one of the `taken` addresses (HOST:PORT)."""
    busy = {int(address.rpartition(":")[2]) for address in taken}
    for port in (preferred, 0, 0, 0):
        if port in busy:
            continue
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            if probe.getsockname()[1] not in busy:
                return probe.getsockname()[1]
    raise OSError("no free port on 127.0.0.1")


def kept_listen(node: Node) -> str:
    """Where `node` accepts peers when started from its config file (`create_nodes`'s)."""
    return load_settings(node.data_dir / "tangled.toml", environ={}).listen


def web_steps(alice: Node) -> list[str]:
    """How to see alice's web view again: the command that starts her, with `--web`, and the
    URL to open then."""
    address = f"127.0.0.1:{free_port(WEB_PORT)}"
    return [
        f"(`{runnable_tangled()} --data-dir {alice.data_dir} run` starts alice again.)",
        f"Her web view: add `--web {address}` to that `run`, then open",
        f"  {web_url(alice, f'http://{address}/')}",
    ]


def network_steps(nodes: list[Node]) -> list[str]:
    """How the kept nodes run again side by side: each on its own port, dialing its peers."""
    lines = ["The others start again the same way, side by side: each has a port of its own"]
    lines.append("and dials whom it dialed at the demo's start (their config files say so):")
    for node in nodes:
        dials = " and ".join(KEPT_PEERS.get(node.name, ()))
        lines.append(f"  {node.name:6} {kept_listen(node):16} {'dials ' + dials if dials else ''}")
    lines.append("A node started in the background (`run &`) answers after about a second;")
    lines.append("`status --wait 10` waits for it.")
    return [line.rstrip() for line in lines]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make demo", description=__doc__.split("\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the nodes' data directories")
    options = parser.parse_args(argv)
    root_dir = Path(tempfile.mkdtemp(prefix="tangled-demo-"))
    try:
        nodes, spec = trio.run(converse, root_dir)
    finally:
        if not options.keep:
            shutil.rmtree(root_dir, ignore_errors=True)
    print("\ndemo finished", flush=True)
    if options.keep:
        print(f"\nThe four data directories are kept under {root_dir}. Try next:")
        for line in next_steps(nodes, spec):
            print(f"  {line}")
        for line in web_steps(nodes[0]) + network_steps(nodes):
            print(line)
    else:
        print("\nThe nodes' data directories are gone. Try next:")
        for line in own_node_steps():
            print(f"  {line}")
    return 0


def own_node_steps() -> list[str]:
    """`make demo KEEP=1`, then a node of one's own: made, started in the background, waited
    for (the node takes about a second to answer), named."""
    tangled = f"{runnable_tangled()} --data-dir ~/tn"
    width = len(tangled) + 19
    return [
        f"{'make demo KEEP=1':{width}}# keep them, and explore (alice's web view too)",
        f"{tangled + ' init':{width}}# a node of your own (peers on 127.0.0.1:8008)",
        f"{tangled + ' run &':{width}}# start it, in the background",
        f"{tangled + ' status --wait 10':{width}}# wait until it answers (about a second)",
        f"{tangled + ' about me':{width}}# then name yourself through it",
    ]


if __name__ == "__main__":
    sys.exit(main())
