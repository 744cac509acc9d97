"""Erasure across real `tangled run` processes: a post erased on its author's node is
erased on its peer within ordinary delivery, the feed still verifies and replicates past
it to a node that joins later, and after `compact` no data directory holds a byte of it."""

from __future__ import annotations

import json
from pathlib import Path

from tanglenode.node.localnet import Node
from tanglenode.protocol.identity import message_text
from tests.integration.test_cli_live import cli

SECRET = "a post to take back: 0b9e4d2c"


def on_disk(directory: Path, text: str) -> list[str]:
    needle = text.encode()
    return [str(p) for p in directory.rglob("*") if p.is_file() and needle in p.read_bytes()]


async def test_an_erased_post_is_erased_everywhere_and_leaves_no_byte(tmp_path):
    author, peer = Node(tmp_path, "author"), Node(tmp_path, "peer")
    await author.start()
    await peer.start(peers=[author])
    post = await author.publish({"type": "post", "text": SECRET})
    await peer.wait_for_size(1, spacetime=True)
    assert (await peer.request("get", message=post["id"]))["content"]["text"] == SECRET

    done = await cli(author, "delete", message_text(post["id"]), "--json")
    assert done.returncode == 0, done.stderr.decode()
    request = json.loads(done.stdout)["request"]
    await peer.wait_for_size(2, spacetime=True)  # the request arrived and was processed
    for node in (author, peer):
        held = await node.request("get", message=post["id"])
        assert not held["has_content"] and held["content"] is None
        assert message_text(held["erased_by"]) == request
    shown = await cli(peer, "show", message_text(post["id"]))
    assert f"erased   by its author's request {request}" in shown.stdout.decode()

    late = Node(tmp_path, "late")  # joins after the erasure: replicates past it
    await late.start(peers=[peer])
    await late.wait_for_size(2, spacetime=True)
    held = await late.request("get", message=post["id"])
    assert not held["has_content"] and message_text(held["erased_by"]) == request

    for node in (author, peer, late):
        assert await node.stop() == 0
        checked = await cli(node, "check")
        assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()
        compacted = await cli(node, "compact")
        assert compacted.returncode == 0, compacted.stderr.decode()
        assert on_disk(node.data_dir, SECRET) == []


async def test_an_erased_document_edit_leaves_the_same_text_on_every_node(tmp_path):
    author, peer = Node(tmp_path, "author"), Node(tmp_path, "peer")
    await author.start()
    await peer.start(peers=[author])
    doc = (await cli(author, "doc", "create", "notes")).stdout.decode().strip()
    kept = await cli(author, "doc", "insert", doc, "0", "kept words. ")
    assert kept.returncode == 0, kept.stderr.decode()
    edit = await cli(author, "doc", "insert", doc, "12", SECRET, "--json")
    assert edit.returncode == 0, edit.stderr.decode()
    edit_id = json.loads(edit.stdout)["messages"][0]["msg"]
    after = await cli(author, "doc", "insert", doc, str(12 + len(SECRET)), " and after.")
    assert after.returncode == 0, after.stderr.decode()
    await peer.wait_for_size(4, spacetime=True)

    done = await cli(author, "delete", edit_id)
    assert done.returncode == 0, done.stderr.decode()
    await peer.wait_for_size(5, spacetime=True)
    texts = [(await cli(node, "doc", "show", doc)).stdout.decode() for node in (author, peer)]
    assert texts == ["kept words.  and after."] * 2
    blame = json.loads((await cli(peer, "doc", "blame", doc, "--json")).stdout)
    assert any(span.get("erased") for span in blame["spans"])
    for node in (author, peer):
        assert await node.stop() == 0
        assert (await cli(node, "compact")).returncode == 0
        assert on_disk(node.data_dir, SECRET) == []
