"""`make demo`: four real nodes on 127.0.0.1 hold a conversation through a partition.

1. alice, bob, carol and dave start (each a `tangled run` process with its
   own data directory) and learn the conversation's root from alice;
2. the network splits into {alice, carol} and {bob, dave}; each node writes
   into the thread, and each side sees only its own half;
3. the network heals (alice dials bob, carol dials dave); every node ends
   with the same timeline, printed for each, with its status;
4. alice starts a private group with bob and carol, then excludes carol:
   carol keeps what she could read, and cannot read what follows; dave
   replicates everything and reads nothing.

Commands shown with `$` are the real CLI; the rest is the IPC client.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import trio

from tanglenode.node.localnet import TANGLED, Node
from tanglenode.protocol.identity import message_text, parse_message_id

LINES = {
    "alice": ["Shall we meet on Friday?", "Friday it is, then."],
    "bob": ["Friday works for me.", "I'll book the table."],
    "carol": ["Could we make it Saturday?", "Or Friday after 7."],
    "dave": ["Either day is fine.", "See you all there."],
}


def cli(node: Node, *args: str) -> str:
    shown = " ".join(shlex.quote(a) for a in ("tangled", "--data-dir", str(node.data_dir), *args))
    print(f"$ {shown}", flush=True)
    done = subprocess.run(
        [str(TANGLED), "--data-dir", str(node.data_dir), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "TANGLED_LOG_LEVEL": "warning"},
    )
    print(done.stdout, end="", flush=True)
    return done.stdout


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


async def say(node: Node, root: bytes, line: str) -> None:
    await node.publish({"type": "post", "text": line}, {"thread": root})


async def converse(root_dir: Path) -> None:
    alice, bob, carol, dave = nodes = [Node(root_dir, name) for name in LINES]
    by_id = {node.feed_id: node.name for node in nodes}

    heading("four nodes start; alice opens a thread")
    await alice.start()
    await bob.start([alice])
    await carol.start([alice])
    await dave.start([bob])
    root = (await alice.publish({"type": "thread", "title": "dinner"}, {"thread": None}))["id"]
    thread = {"tangle": "thread", "root": root}
    for node in nodes:
        await node.wait_for_size(1, **thread)
    for node in nodes:
        await node.stop()

    heading("partition: {alice, carol} | {bob, dave}; everyone writes")
    await alice.start()
    await carol.start([alice])
    await bob.start()
    await dave.start([bob])
    for turn in range(2):
        async with trio.open_nursery() as nursery:
            for node in nodes:
                nursery.start_soon(say, node, root, LINES[node.name][turn])
    for node in nodes:
        await node.wait_for_size(5, **thread)
    spec = f"thread/{message_text(root)}"
    for node in (alice, bob):
        print(f"-- {node.name}'s side:")
        _print_thread(node, spec, by_id)

    heading("heal: alice dials bob, carol dials dave")
    async with await alice.client() as client:
        await client.connect_peer(bob.listen, bob.key)
    async with await carol.client() as client:
        await client.connect_peer(dave.listen, dave.key)
    for node in nodes:
        await node.wait_for_size(9, **thread)

    heading("every node's converged timeline")
    timelines = []
    for node in nodes:
        print(f"-- {node.name}:")
        timelines.append(_print_thread(node, spec, by_id))
    assert all(timeline == timelines[0] for timeline in timelines), "timelines differ"
    print("all four timelines are identical")

    heading("status of each node")
    for node in nodes:
        cli(node, "status")

    await private_group(alice, bob, carol, dave)
    for node in nodes:
        await node.stop()


async def private_group(alice: Node, bob: Node, carol: Node, dave: Node) -> None:
    heading("a private group: alice adds bob and carol; dave only replicates")
    group = cli(alice, "group", "create", "book club").strip()
    root = parse_message_id(group)
    chat = {"tangle": "group", "root": root}
    cli(alice, "group", "add", group, bob.feed_id, carol.feed_id)
    cli(alice, "group", "post", group, '{"text": "First meeting on Friday."}')
    await bob.wait_for_size(3, **chat)
    cli(bob, "group", "post", group, '{"text": "I will bring the book."}')
    for node in (alice, carol, dave):
        await node.wait_for_size(4, **chat)
    cli(carol, "group", "timeline", group)
    cli(dave, "group", "timeline", group)

    heading("alice excludes carol: a new epoch, with a key carol never receives")
    cli(alice, "group", "exclude", group, carol.feed_id)
    cli(alice, "group", "post", group, '{"text": "Carol cannot read this."}')
    for node in (bob, carol):
        await node.wait_for_size(7, **chat)
    print("-- bob reads everything:")
    cli(bob, "group", "timeline", group)
    print("-- carol keeps what she could read, and no more:")
    cli(carol, "group", "timeline", group)
    cli(bob, "group", "members", group)
    cli(bob, "group", "epochs", group)


def _print_thread(node: Node, spec: str, names: dict[str, str]) -> list[str]:
    """Print the thread as "position rank author: text" lines; returns the ids in order."""
    done = subprocess.run(
        [str(TANGLED), "--data-dir", str(node.data_dir), "timeline", spec, "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    entries = [json.loads(line) for line in done.stdout.splitlines()]
    ids = []
    for entry in entries:
        shown = subprocess.run(
            [str(TANGLED), "--data-dir", str(node.data_dir), "show", entry["id"], "--json"],
            check=True,
            capture_output=True,
            text=True,
        )
        message = json.loads(shown.stdout)
        content = message["content"]
        text = content.get("text") or f"[{content.get('type')}: {content.get('title')}]"
        print(
            f"  {entry['position']:>2}  rank {entry['rank']}  {names[message['author']]:<5}  {text}"
        )
        ids.append(entry["id"])
    return ids


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tangled-demo-") as tmp:
        trio.run(converse, Path(tmp))
    print("\ndemo finished", flush=True)


if __name__ == "__main__":
    sys.exit(main())
