"""Run the real `tangled` under a pseudo-terminal, for output that differs on a terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tanglenode.node.localnet import TANGLED


@dataclass(frozen=True)
class TerminalRun:
    returncode: int
    output: str  # stdout and stderr as the terminal showed them, "\r\n" made "\n"


def run_on_terminal(
    args: list[str], *, data_dir: Path | None = None, timeout: float = 60.0, columns: int = 120
) -> TerminalRun:
    """`tangled [--data-dir D] ARGS` with stdout and stderr on one pseudo-terminal."""
    argv = [str(TANGLED)] + (["--data-dir", str(data_dir)] if data_dir else []) + list(args)
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    process = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env
    )
    os.close(follower)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        else:
            process.kill()
            raise TimeoutError(f"tangled {' '.join(args)} ran over {timeout} s")
        returncode = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(leader)
    output = b"".join(chunks).decode("utf-8", "replace")
    return TerminalRun(returncode, output.replace("\r\n", "\n"))
