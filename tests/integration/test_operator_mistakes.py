"""Operator mistakes against real `tangled` processes: each one refused with one clear line.

A second node on the same data, an offline write beside a running node, a
store cut short, emptied or with bytes flipped, a store restored from an old
copy, hostile bundles; and backups that restore exactly.
"""

import json
import os
import shutil
import signal
import struct

import pytest
import trio

from tanglenode.node.ipc.client import NodeError
from tanglenode.node.localnet import TANGLED, Node
from tanglenode.protocol.identity import feed_text
from tanglenode.storage.clients.bundle import MAGIC
from tanglenode.storage.feeds.metapage import check_data_file
from tanglenode.storage.store import FeedStore
from tests.node.test_bundle import snapshot

COMMAND_SECONDS = 60  # one `tangled` command, start to exit


async def tangled(data_dir, *args, stdin: bytes = b"", env: dict | None = None):
    with trio.fail_after(COMMAND_SECONDS):
        return await trio.run_process(
            [str(TANGLED), "--data-dir", str(data_dir), *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            stdin=stdin,
            env={
                **os.environ,
                "TANGLED_LOG_FORMAT": "json",
                "TANGLED_LISTEN": "127.0.0.1:0",
                **(env or {}),
            },
        )


def one_error_line(done) -> str:
    """The process failed with exactly one line on stderr, no traceback, not by a signal."""
    lines = done.stderr.decode().splitlines()
    assert done.returncode > 0 and done.returncode != 128 + signal.SIGBUS, done
    assert len(lines) == 1 and lines[0].startswith("tangled: "), lines
    assert b"Traceback" not in done.stderr
    return lines[0]


async def publish_offline(node: Node, count: int, pad: int = 0) -> list[str]:
    ids = []
    for number in range(count):
        content = json.dumps({"n": number, "pad": "p" * pad})
        done = await tangled(node.data_dir, "publish", content)  # stopped: into the store
        assert done.returncode == 0, done.stderr
        ids.append(done.stdout.decode().strip())
    return ids


async def test_a_second_node_or_offline_write_is_refused_and_the_first_keeps_running(tmp_path):
    node = Node(tmp_path, "solo")
    await node.start()
    pid = node.process.pid
    second = await tangled(node.data_dir, "run")
    line = one_error_line(second)
    assert f"in use by process {pid} (tangled run)" in line and second.returncode == 1
    # a write from this process (the socket looked for elsewhere) never goes behind its back
    elsewhere = {"TANGLED_IPC_SOCKET": str(tmp_path / "elsewhere.sock")}
    offline = await tangled(node.data_dir, "publish", '"x"', env=elsewhere)
    assert f"the node is running (process {pid})" in one_error_line(offline)
    bundle = tmp_path / "b.bundle"
    bundle.write_bytes(b"")
    imported = await tangled(node.data_dir, "import", str(bundle))
    assert f"process {pid}" in one_error_line(imported)
    assert "stop it first" in imported.stderr.decode()

    assert node.socket_path.is_socket()  # not taken over, not deleted
    status = await tangled(node.data_dir, "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["feed"] == node.feed_id
    assert (await node.publish({"still": "writing"}))["seq"] == 1

    await node.kill()  # SIGKILL: no stale lock may block the next start
    await node.start()
    assert (await node.publish({"after": "kill -9"}))["seq"] == 2
    assert await node.stop() == 0


DAMAGES = ["truncated", "emptied"]


@pytest.mark.parametrize("damage", DAMAGES)
async def test_a_damaged_store_is_named_by_every_command(tmp_path, damage):
    node = Node(tmp_path, "hurt")
    await publish_offline(node, 3, pad=400)
    data = node.data_dir / "store" / "data.mdb"
    with data.open("r+b") as file:
        file.truncate(data.stat().st_size // 2 if damage == "truncated" else 0)
    words = "is truncated" if damage == "truncated" else "is empty (0 bytes)"
    commands = (["run"], ["log"], ["feeds"], ["publish", '"x"'], ["show", "%x"])
    for command in commands:
        line = one_error_line(await tangled(node.data_dir, *command))
        assert words in line and "tangled import" in line, (command, line)
    checked = await tangled(node.data_dir, "check")
    assert checked.returncode == 5 and words in checked.stdout.decode()
    assert b"Traceback" not in checked.stderr
    imported = await tangled(node.data_dir, "import", "-", stdin=b"")
    assert words in one_error_line(imported)


def flip(path, start: int, count: int = 200) -> None:
    data = bytearray(path.read_bytes())
    for index in range(start, start + count):
        data[index] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["inside a message", "at a page head"])
async def test_flipped_bytes_are_a_check_finding(tmp_path, where):
    node = Node(tmp_path, "flipped")
    await publish_offline(node, 6, pad=600)
    data = node.data_dir / "store" / "data.mdb"
    with FeedStore(data.parent, create=False) as store:
        raw = store.feeds.get_by_seq(node.key, 4).raw
    stored = raw[-400:]  # the padded content, stored verbatim last (storage/feeds/stored_form.py)
    page_size = check_data_file(data.parent).page_size
    content = data.read_bytes()
    offsets = [i for i in range(len(content)) if content.startswith(stored, i)]
    assert offsets  # the live copy, and copies in pages freed since (copy on write)
    for offset in offsets:
        flip(data, offset + 20 if where == "inside a message" else offset - offset % page_size)
    checked = await tangled(node.data_dir, "check")
    out = checked.stdout.decode()
    assert checked.returncode == 5 and out.startswith("problem: ") and " problem(s)" in out, out
    if where == "inside a message":  # the header decodes: its content no longer matches it
        assert f"{feed_text(node.key)}:4: its content does not match its header" in out, out
    assert b"Traceback" not in checked.stderr
    as_json = json.loads((await tangled(node.data_dir, "check", "--json")).stdout)
    assert as_json["ok"] is False and as_json["problems"]
    listed = await tangled(node.data_dir, "log")  # may read the bad page: never a traceback
    assert b"Traceback" not in listed.stderr and listed.returncode in (0, 1)


async def test_a_store_restored_from_an_old_copy_cannot_fork_our_feed(tmp_path):
    """The node refuses to publish until a peer has given our feed back."""
    alice, bob = Node(tmp_path, "alice"), Node(tmp_path, "bob")
    await publish_offline(alice, 2)
    old = tmp_path / "alice-store-at-2"
    shutil.copytree(alice.data_dir / "store", old)
    await bob.start()
    await alice.start(peers=[bob])
    for number in range(3):
        await alice.publish({"later": number})
    await bob.wait_for_size(5, spacetime=True)
    await alice.stop()
    shutil.rmtree(alice.data_dir / "store")
    shutil.copytree(old, alice.data_dir / "store")

    await alice.start()  # no peers yet: it stays behind
    warned = [e for e in alice.log_lines() if e.get("event", "").startswith("own feed behind")]
    assert warned and warned[-1]["stored_seq"] == 2 and warned[-1]["published_seq"] == 5
    with trio.fail_after(COMMAND_SECONDS):
        async with await alice.client() as client:
            with pytest.raises(NodeError) as refused:
                await client.publish({"would be": "seq 3 again"})
    assert refused.value.kind == "own-feed-behind"
    done = await tangled(alice.data_dir, "publish", '"x"')
    assert done.returncode == 3 and "would fork our own feed" in one_error_line(done)

    with trio.fail_after(COMMAND_SECONDS):
        async with await alice.client() as client:
            await client.request("connect", address=bob.listen, key=bob.key)
    await alice.wait_for_size(5, spacetime=True)  # our feed, fetched back from bob
    assert (await alice.publish({"now": "fine"}))["seq"] == 6
    assert await alice.stop() == 0 and await bob.stop() == 0


def store_snapshot(node: Node):
    with FeedStore(node.data_dir / "store", create=False) as store:
        return snapshot(store)


async def test_export_wipe_import_restores_feeds_and_timelines(tmp_path):
    node, friend = Node(tmp_path, "keeper"), Node(tmp_path, "friend")
    await friend.start()
    await node.start(peers=[friend])
    root = (await node.publish({"t": "root"}, {"chat": None}))["id"]
    for number in range(4):
        await friend.publish({"n": number})
        await node.publish({"reply": number}, {"chat": root})
    await node.wait_for_size(9, spacetime=True)
    bundle, archive = tmp_path / "backup.bundle", tmp_path / "archive"
    exported = await tangled(node.data_dir, "export", "--bundle", str(bundle))
    assert exported.returncode == 0 and json.loads(exported.stdout)["messages"] == 9
    assert (await tangled(node.data_dir, "export", "--out", str(archive))).returncode == 0
    piped = await tangled(node.data_dir, "export", "--bundle", "-")
    assert piped.stdout == bundle.read_bytes() and json.loads(piped.stderr.splitlines()[-1])
    await node.stop()
    await friend.stop()
    expected = store_snapshot(node)

    for source, stdin in ((str(bundle), b""), ("-", bundle.read_bytes()), (str(archive), b"")):
        shutil.rmtree(node.data_dir / "store")
        done = await tangled(node.data_dir, "import", source, "--json", stdin=stdin)
        assert done.returncode == 0, done.stderr
        summary = json.loads(done.stdout)
        compacted = summary.pop("compacted")  # the free pages the import left, given back
        assert compacted is None or compacted["after"] < compacted["before"]
        assert summary == {
            "records": 9,
            "accepted": 9,
            "duplicate": 0,
            "fork": 0,
            "rejected": {},
            "error": None,
        }
        assert store_snapshot(node) == expected, source
    again = await tangled(node.data_dir, "import", str(bundle))
    assert again.stdout.decode().startswith("imported 9 records: 0 accepted, 9 duplicate")
    await node.start()  # level with what we published: publishing goes on
    assert (await node.publish({"after": "restore"}))["seq"] == 6
    assert await node.stop() == 0


def record(raw: bytes) -> bytes:
    return struct.pack(">I", len(raw)) + raw


async def test_hostile_bundles_are_refused_cleanly(tmp_path):
    node = Node(tmp_path, "target")
    await publish_offline(node, 2)
    good = tmp_path / "good.bundle"
    assert (await tangled(node.data_dir, "export", "--bundle", str(good))).returncode == 0
    data = good.read_bytes()
    assert data[:4] == MAGIC
    first = data[: 8 + struct.unpack(">I", data[4:8])[0]]  # the header and record 1
    cases = {
        "over-limit": (first + struct.pack(">I", 1 << 30), "record 2: length 1073741824 is over"),
        "truncated": (data[:-7], "record 2: cut short"),
        "garbage": (b"\xff" + os.urandom(4095), "record 1: not a bundle"),
        "format 1": (data[4:], "record 1: a bundle of format 1"),
    }
    for name, (data, words) in cases.items():
        path = tmp_path / f"{name}.bundle"
        path.write_bytes(data)
        for source, stdin in ((str(path), b""), ("-", data)):
            done = await tangled(node.data_dir, "import", source, stdin=stdin)
            assert done.returncode == 3 and words in one_error_line(done), (name, done.stderr)
    junk = first + record(b"\x93\x01\x02\x03") + record(os.urandom(300))
    rejected = await tangled(node.data_dir, "import", "-", "--json", stdin=junk)
    summary = json.loads(rejected.stdout)
    assert rejected.returncode == 3 and summary["records"] == 3 and summary["duplicate"] == 1
    assert sum(summary["rejected"].values()) == 2
    for source in (str(tmp_path / "missing"), str(tmp_path)):
        assert (await tangled(node.data_dir, "import", source)).returncode == 3
    exists = await tangled(node.data_dir, "export", "--bundle", str(good))
    assert "exists" in one_error_line(exists)
    assert (await tangled(node.data_dir, "export")).returncode == 2
    with FeedStore(node.data_dir / "store", create=False) as store:
        assert store.feeds.check().ok and store.feeds.frontier() == {node.key: 2}
