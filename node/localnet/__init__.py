"""Local networks of real `tangled run` processes on 127.0.0.1 (the demo, the tests).

Each node has its own data directory and its own NOTIFY_SOCKET, so starting
one awaits its READY=1 rather than polling, and learns its port (any free
one) from its status; convergence is awaited through IPC subscriptions,
never by sleeping. Every wait has a deadline: a start, a stop or a kill,
a request, a subscription waiting for its size.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

import trio

from tanglenode.node.ipc.client import NodeClient, connect
from tanglenode.protocol.identity import parse_feed

TANGLED = Path(sys.executable).with_name("tangled")
START_SECONDS = 30
STOP_SECONDS = 20
REQUEST_SECONDS = 30  # one IPC exchange (a timeline read page by page counts as one)
CONVERGE_SECONDS = 120  # a subscription waiting for a timeline to reach its size


RUNNING: set[Node] = set()  # started and not yet stopped or killed: `kill_leftovers` ends them


def kill_leftovers() -> list[str]:
    """Kill and reap every node a caller started and did not stop (a test that failed
    half-way), outside any Trio run; returns their names."""
    left = sorted(RUNNING, key=lambda node: node.name)
    if left:
        trio.run(_kill_all, left)
    return [node.name for node in left]


async def _kill_all(nodes: list[Node]) -> None:
    for node in nodes:
        if node.process is not None:
            await node.kill()  # waits for the process: nothing is left unreaped
        RUNNING.discard(node)


def _limit_open_files(count: int) -> Callable[[], None]:
    def limit() -> None:  # in the child, before exec
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))

    return limit


class Node:
    def __init__(self, root: Path, name: str, init_args: Sequence[str] = ()) -> None:
        """`tangled init` a data directory `root/name`, with `init_args` (`--listen`,
        `--peer`: what its config file says; `start` listens on a free port all the same,
        and dials the config's peers only when given `peers=None`)."""
        self.name = name
        self.data_dir = root / name
        self.notify_path = root / f"{name}.notify"
        self.log_path = root / f"{name}.log"
        done = subprocess.run(
            [str(TANGLED), "--data-dir", str(self.data_dir), "init", *init_args],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        self.feed_id = done.stdout.strip()
        self.key = parse_feed(self.feed_id)
        self.process: trio.Process | None = None
        self.listen: str | None = None
        self.notifications: list[str] = []

    @property
    def socket_path(self) -> Path:
        return self.data_dir / "tangled.sock"

    async def start(
        self,
        peers: Sequence[Node] | None = (),
        extra_env: dict[str, str] | None = None,
        open_files: int | None = None,
        hops: str | None = "all",
    ) -> None:
        """Start `tangled run`, dialing `peers` (None: those of its config file); returns once
        it sent READY=1. `open_files`: its RLIMIT_NOFILE, soft and hard (as systemd's
        `LimitNOFILE` sets it). `hops`: its `[replication] hops` ("all" by default: these
        networks follow no one; None: its config file's, as a user's node runs)."""
        self.notify_path.unlink(missing_ok=True)
        notify = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_DGRAM)
        await notify.bind(str(self.notify_path))
        env = {
            **os.environ,
            "TANGLED_LISTEN": "127.0.0.1:0",
            "TANGLED_PEERS": json.dumps(
                [{"address": peer.listen, "key": peer.feed_id} for peer in peers or ()]
            ),
            "TANGLED_LOG_FORMAT": "json",
            # Every feed carried, as before replication scope: these networks follow no one.
            "TANGLED_REPLICATION__HOPS": hops or "",
            "NOTIFY_SOCKET": str(self.notify_path),
            **(extra_env or {}),
        }
        if peers is None:
            del env["TANGLED_PEERS"]
        if hops is None:
            del env["TANGLED_REPLICATION__HOPS"]
        with self.log_path.open("ab") as log:
            self.process = await trio.lowlevel.open_process(
                [str(TANGLED), "--data-dir", str(self.data_dir), "run"],
                env=env,
                stdout=log,
                stderr=log,
                preexec_fn=None if open_files is None else _limit_open_files(open_files),
            )
        RUNNING.add(self)
        with notify, trio.fail_after(START_SECONDS):
            while True:
                datagram = (await notify.recv(4096)).decode()
                self.notifications.extend(datagram.splitlines())
                if "READY=1" in datagram.splitlines():
                    break
        with trio.fail_after(REQUEST_SECONDS):
            async with await self.client() as client:
                self.listen = (await client.status())["listen"]

    async def client(self) -> NodeClient:
        return await connect(self.socket_path)

    async def stop(self) -> int:
        """SIGTERM and wait; returns the exit code."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        with trio.fail_after(STOP_SECONDS):
            code = await self.process.wait()
        self.process = None
        RUNNING.discard(self)
        return code

    async def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        with trio.fail_after(STOP_SECONDS):
            await self.process.wait()
        self.process = None
        RUNNING.discard(self)

    async def request(self, op: str, **arguments: Any) -> Any:
        """One IPC request's reply (at most `REQUEST_SECONDS`)."""
        with trio.fail_after(REQUEST_SECONDS):
            async with await self.client() as client:
                return await client.request(op, **arguments)

    def call(self, op: str, **arguments: Any) -> Any:
        """`request` from plain code (a bench, a script): one `trio.run`."""
        return trio.run(functools.partial(self.request, op, **arguments))

    async def publish(self, content, tangles=None) -> dict:
        with trio.fail_after(REQUEST_SECONDS):
            async with await self.client() as client:
                return await client.publish(content, tangles)

    async def wait_for_size(self, size: int, *, seconds: float = CONVERGE_SECONDS, **which) -> int:
        """Wait (at most `seconds`) until the timeline (spacetime=True, or tangle=, root=)
        holds `size` messages."""
        with trio.fail_after(seconds):
            return await self._wait_for_size(size, **which)

    async def _wait_for_size(self, size: int, **which) -> int:
        async with (
            await self.client() as client,
            aclosing(client.subscribe(since=None, **which)) as events,
        ):
            count = 0
            async for event in events:
                if "snapshot" in event:
                    count += len(event["snapshot"])
                for command in event.get("commands", ()):
                    count += ("ins" in command) - ("del" in command)
                if count >= size:
                    return count
        raise AssertionError("the subscription ended")

    async def timeline(self, **which) -> list[tuple[int, bytes]]:
        with trio.fail_after(REQUEST_SECONDS):
            return await self._timeline(**which)

    async def _timeline(self, **which) -> list[tuple[int, bytes]]:
        async with await self.client() as client:
            entries: list[tuple[int, bytes]] = []
            start = 0
            while True:
                page = await client.timeline(start=start, limit=1000, **which)
                entries.extend((entry[0], entry[1]) for entry in page["entries"])
                if len(page["entries"]) < 1000:
                    return entries
                start += 1000

    def log_lines(self) -> list[dict]:
        lines = []
        for line in self.log_path.read_text().splitlines():
            try:
                lines.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return lines
