"""Logs are human-readable on a terminal and JSON lines otherwise."""

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

TANGLED = Path(sys.executable).with_name("tangled")


def run_with_stderr_on_a_terminal(args: list[str], env: dict) -> str:
    """Run `tangled` with stderr on a pseudo-terminal; return what it printed there."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [str(TANGLED), *args], stderr=follower, stdout=subprocess.PIPE, env=env, timeout=60
        )
        assert done.returncode == 0
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO once the terminal's other side is closed and drained
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
    return b"".join(chunks).decode(errors="replace")


def test_terminal_gets_console_lines_and_pipes_get_json(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TANGLED_")}
    data_dir = ["--data-dir", str(tmp_path / "node")]
    on_terminal = run_with_stderr_on_a_terminal([*data_dir, "init"], env)
    assert "initialized" in on_terminal
    assert not on_terminal.lstrip().startswith("{")

    piped = subprocess.run(
        [str(TANGLED), *data_dir, "publish", '"hello"'],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    (event,) = [json.loads(line) for line in piped.stderr.splitlines()]
    assert event["event"] == "published" and event["level"] == "info"
