"""A node no peer, client or file can starve, probed as an attacker would, against real
`tangled run` processes on loopback: a full store during catch-up is a state, shown in one
line, never a traceback; a killed import leaves no process behind, nor its pipe open."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
import trio

from tanglenode.node.localnet import REQUEST_SECONDS, TANGLED, Node
from tanglenode.protocol.framing import LENGTH_PREFIX, encode_frame
from tanglenode.storage.clients.bundle import BATCH, MAGIC
from tanglenode.storage.store import FeedStore
from tests.factories import Feed
from tests.integration.test_cli_live import cli
from tests.integration.test_metrics_live import WEB, scrape

FILLER = "x" * 12_000  # each message near the 16 KiB cap
FILLERS = 120  # about 1.5 MB: more than a 1 MiB map holds beside the empty store


async def _peer_error(node: Node) -> str:
    """The first peer's `last_error`, once it has one."""
    with trio.fail_after(30):
        while True:
            reply = await node.request("peers")
            errors = [peer["last_error"] for peer in reply["peers"] if peer["last_error"]]
            if errors:
                return errors[0]
            await trio.sleep(0.2)  # nothing to await: the peer's state is polled over IPC


async def test_a_full_store_during_catch_up_is_a_typed_state_in_one_line(tmp_path):
    source, small = Node(tmp_path, "source"), Node(tmp_path, "small")
    await source.start()
    with trio.fail_after(REQUEST_SECONDS * 4):
        async with await source.client() as client:
            for n in range(FILLERS):
                await client.publish({"n": n, "pad": FILLER})
    await small.start(peers=[source], extra_env={"TANGLED_STORAGE__MAP_SIZE": str(2**20), **WEB})

    error = await _peer_error(small)
    if not error.startswith("store-full: "):  # say what the other end and the log saw
        theirs = [peer["last_error"] for peer in (await source.request("peers"))["peers"]]
        logged = [line for line in small.log_lines() if line.get("reason")]
        raise AssertionError(f"{error!r}; the source's reasons {theirs}; logged {logged[-5:]}")
    assert "map_size" in error, error
    assert "ExceptionGroup" not in error and "internal error" not in error
    status = await small.request("status")
    assert status["store_full"] and "map_size" in status["store_full"]
    assert (await scrape(small))[("tanglenode_store_full", ())] == 1.0
    shown = await cli(small, "status")
    assert shown.returncode == 0 and b"store full: " in shown.stdout
    lines = small.log_lines()
    assert any(line.get("reason", "").startswith("store-full: ") for line in lines)
    assert not [line for line in lines if "exception" in line], "a traceback was logged"
    assert (await source.request("status"))["store_full"] is None
    assert json.loads((await cli(small, "status", "--json")).stdout)["store_full"]


def _children(pid: int) -> list[int]:
    """The live (not zombie) children of `pid`, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                state, parent = (
                    Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[:2]
                )
            except (OSError, ValueError):
                continue
            if int(parent) == pid and state != "Z":
                found.append(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_kill_9_of_import_leaves_no_process_and_its_pipe_ends(tmp_path):
    feed = Feed("orphans")
    records = (feed.append({"n": n}).raw for n in range(3 * BATCH))
    bundle = MAGIC + b"".join(LENGTH_PREFIX.pack(len(raw)) + raw for raw in records)
    subprocess.run([str(TANGLED), "--data-dir", str(tmp_path / "d"), "init"], check=True)
    # The import reads stdin and writes into a pipe, as into `| cat`: the reader sees its
    # end only when every holder has closed it, the command and whatever it started.
    pipeline = subprocess.Popen(
        [str(TANGLED), "--data-dir", str(tmp_path / "d"), "import", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    helpers: list[int] = []
    with pipeline, contextlib.ExitStack() as cleanup:
        cleanup.callback(_kill_all, [pipeline.pid], helpers)
        pipeline.stdin.write(bundle)  # and stays open: the import waits for more
        pipeline.stdin.flush()
        importer = pipeline.pid
        for _ in range(200):  # the worker, a child of the forkserver, is preparing batches
            helpers[:] = _children(importer)
            workers = [worker for helper in helpers for worker in _children(helper)]
            if workers:
                break
            time.sleep(0.05)  # no event to await in another process's tree
        assert workers, "the import never started its worker"
        helpers += workers
        os.kill(importer, signal.SIGKILL)
        pipeline.stdin.close()
        assert _reaches_end(pipeline.stdout, seconds=10), "a process still holds the pipe"
        pipeline.wait(timeout=10)
        for _ in range(100):
            if not any(_alive(pid) for pid in helpers):
                break
            time.sleep(0.05)
        assert not [pid for pid in helpers if _alive(pid)]


def _reaches_end(pipe, seconds: float) -> bool:
    """Whether reading `pipe` reaches its end within `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if select.select([pipe], [], [], left)[0] and not os.read(pipe.fileno(), 65536):
            return True
    return False


def _kill_all(*groups: list[int]) -> None:
    for pid in (pid for group in groups for pid in group):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


OPEN_FILES = 256  # shares (node/net/descriptors.py): 64 inbound, 4 an address, 32 IPC clients
FLOOD = 300  # idle TCP connections, more than the node could hold beside its own files
FLOOD_ADDRESSES = 100
HANDSHAKE_SECONDS = (
    10  # Network.handshake_seconds  # loopback sources 127.0.0.2 and on, 3 connections each
)


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def test_a_flood_of_idle_connections_starves_neither_ipc_nor_web_nor_publish(tmp_path):
    node = Node(tmp_path, "flooded")
    await node.start(extra_env=WEB, open_files=OPEN_FILES)
    host, port = node.listen.rsplit(":", 1)
    flood = []
    try:
        with trio.fail_after(30):
            for n in range(FLOOD):
                sock = trio.socket.socket()
                flood.append(sock)
                await sock.bind((f"127.0.0.{2 + n % FLOOD_ADDRESSES}", 0))
                await sock.connect((host, int(port)))  # and never says a word
        # Each connection the node took, it holds for its handshake's 10 s; the others it
        # closed as soon as it accepted them. Within those 10 s, everyone else is served.
        with trio.fail_after(HANDSHAKE_SECONDS / 2):
            status = await node.request("status")  # the IPC socket answers
            published = await node.publish({"type": "post", "text": "during the flood"})
            assert (await node.request("get", message=published["id"]))["content"]["text"]
            metrics = await scrape(node)  # the web view answers
            assert metrics[("tanglenode_messages", ())] >= 1
        assert status["store_full"] is None and status["own_head_unrecorded"] is None
        assert node.process is not None
        held = _descriptors(node.process.pid)
        assert held < OPEN_FILES - 16, held  # room left for the store and its own sockets
        ready = next(line for line in node.log_lines() if line.get("event") == "node ready")
        assert ready["descriptors"] == OPEN_FILES and ready["max_inbound"] == 64
        assert ready["max_inbound_per_address"] == 4 and ready["max_ipc_clients"] == 32
    finally:
        for sock in flood:
            sock.close()
    assert await node.stop() == 0


STALLED = 8  # subscriptions whose clients never read
MIB = 1 << 20


def _anonymous_bytes(pid: int) -> int:
    """The process's resident heap (RssAnon: not the store's mapped pages)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon")


@pytest.mark.slow
async def test_subscribers_that_never_read_hold_the_budget_and_give_it_back(tmp_path):
    node = Node(tmp_path, "subscribed")
    feed = Feed("stalled")
    raws = [feed.append({"n": n, "pad": FILLER}).raw for n in range(2000)]  # ~24 MB of log
    # Stored as a node stores what it receives, command log and all (`tangled import` keeps
    # none: its subscribers start from a snapshot, which fits a socket's buffer).
    with FeedStore(node.data_dir / "store") as store:
        for first in range(0, len(raws), 500):
            store.writes.ingest(raws[first : first + 500])
    await node.start(extra_env={"TANGLED_TIMELINES__KEEP_COMMANDS": "0", **WEB})
    assert node.process is not None
    base = peak = _anonymous_bytes(node.process.pid)
    stalled = []
    try:
        for _ in range(STALLED):  # each replays the whole log from version 0, and never reads
            sock = trio.socket.socket(trio.socket.AF_UNIX)
            stalled.append(sock)
            await sock.connect(str(node.socket_path))
            await sock.send(
                encode_frame({"op": "subscribe", "id": 1, "spacetime": True, "since": 0})
            )
        with trio.fail_after(60):  # each ends once its socket stays unwritable for 10 s
            while (await scrape(node))[("tanglenode_ipc_subscribers", ())] > 0:
                peak = max(peak, _anonymous_bytes(node.process.pid))
                await trio.sleep(0.1)  # sampling another process's memory: nothing to await
    finally:
        for sock in stalled:
            sock.close()
    await trio.sleep(1)  # what the last stream released is trimmed as it ends
    after = _anonymous_bytes(node.process.pid)
    # The budget (32 MiB) and one page being read per stream; before, 64 pages a stream
    # as decoded events: over 200 MiB here, none of it given back.
    assert peak - base < 80 * MIB, f"peak {(peak - base) / MIB:.0f} MiB over the start"
    assert after - base < 24 * MIB, f"{(after - base) / MIB:.0f} MiB kept after"
    assert await node.stop() == 0
