"""The unit file passes systemd's own checks, and `tangled run` speaks the notify protocol."""

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import trio

from tanglenode.node.localnet import TANGLED

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "tangled.service"
analyze = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)


@pytest.fixture
def unit(tmp_path) -> Path:
    """The shipped unit with ExecStart pointing at this checkout's tangled."""
    text = UNIT.read_text().replace("/opt/tanglenode/.venv/bin/tangled", str(TANGLED))
    path = tmp_path / "tangled.service"
    path.write_text(text)
    return path


@analyze
def test_unit_verifies(unit, tmp_path):
    """`verify` also runs `man` on the unit's Documentation=man:…: the page `make install`
    installs (docs/tangled.1, under PREFIX/share/man) must be the one it names."""
    man1 = tmp_path / "share" / "man" / "man1"
    man1.mkdir(parents=True)
    shutil.copy(UNIT.parents[1] / "docs" / "tangled.1", man1)
    done = subprocess.run(
        ["systemd-analyze", "verify", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MANPATH": str(tmp_path / "share" / "man")},
    )
    assert done.returncode == 0, done.stderr
    assert "tangled.service" not in done.stderr  # no warnings about our unit


@analyze
def test_unit_is_rated_ok_or_better(unit):
    done = subprocess.run(
        ["systemd-analyze", "security", "--offline=true", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    found = re.search(r"Overall exposure level for tangled.service: ([\d.]+) (\w+)", done.stdout)
    assert found, done.stdout[-500:] + done.stderr
    assert found.group(2) in ("SAFE", "OK"), found.group(0)
    assert float(found.group(1)) < 4.0


def test_unit_names_the_service_type_watchdog_and_directories():
    text = UNIT.read_text()
    for setting in ("Type=notify", "WatchdogSec=", "StateDirectory=", "RuntimeDirectory="):
        assert setting in text
    assert "Documentation=man:tangled(1)\n" in text and ".invalid" not in text
    for path in re.findall(r"file:///opt/tanglenode/(\S+)", text):  # where ExecStart has it
        assert (UNIT.parents[1] / path).is_file(), path


async def test_run_sends_ready_status_watchdog_and_stopping(tmp_path):
    data_dir = tmp_path / "node"
    subprocess.run([str(TANGLED), "--data-dir", str(data_dir), "init"], check=True, timeout=60)
    notify_path = tmp_path / "notify"
    received: list[str] = []
    with trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_DGRAM) as notify:
        await notify.bind(str(notify_path))
        env = {
            "PATH": "/usr/bin:/bin",
            "TANGLED_LISTEN": "127.0.0.1:0",
            "NOTIFY_SOCKET": str(notify_path),
            "WATCHDOG_USEC": "200000",  # a ping every 0.1 s
        }
        process = await trio.lowlevel.open_process(
            [str(TANGLED), "--data-dir", str(data_dir), "run"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

        async def until(line: str) -> None:
            while line not in received:
                received.extend((await notify.recv(4096)).decode().splitlines())

        with trio.fail_after(30):
            await until("READY=1")
            assert (data_dir / "tangled.sock").is_socket()
            while received.count("WATCHDOG=1") < 3:
                received.extend((await notify.recv(4096)).decode().splitlines())
            process.send_signal(signal.SIGTERM)
            await until("STOPPING=1")
            assert await process.wait() == 0
    assert any(line.startswith("STATUS=listening on 127.0.0.1:") for line in received)
    assert received.index("READY=1") < received.index("STOPPING=1")
    assert not (data_dir / "tangled.sock").exists()  # removed on the way out
