"""`make demo KEEP=1` ends with alice's web view: the command it prints starts her again
with it, and the URL it prints opens her home page in the browser, token and all, her status
one link away."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

from tanglenode.node.localnet import START_SECONDS, STOP_SECONDS, TANGLED
from tests.integration.test_demo import run_kept_demo

pytestmark = pytest.mark.slow

NARRATED = re.compile(r"alice's web view, while she runs: (http://127\.0\.0\.1:\d+/\?token=(\S+))$")


def test_the_kept_demo_prints_a_web_view_that_opens_in_the_browser(page, tmp_path):
    done = run_kept_demo()
    lines = done.stdout.splitlines()
    narrated = [match for line in lines if (match := NARRATED.search(line))]
    assert len(narrated) == 2  # each time alice starts: before the partition, and in it
    token = narrated[0][2]
    assert narrated[1][2] == token and narrated[0][1] != narrated[1][1]  # new port, same token
    assert f"web: {narrated[1][1]}" in lines  # alice's `tangled status` shows it too
    tail = lines[lines.index("demo finished") :]
    (run_line,) = [line for line in tail if line.startswith("(`") and "run` starts alice" in line]
    run = shlex.split(run_line[2 : run_line.index("`", 2)])
    (web_line,) = [line for line in tail if line.startswith("Her web view: add `--web ")]
    address = web_line.split("`")[1].removeprefix("--web ")
    url = tail[tail.index(web_line) + 1].strip()
    assert url == f"http://{address}/?token={token}"
    alice = Path(run[2])
    try:
        assert alice.name == "alice" and Path(run[0]).exists()
        process, notify = start([*run, "--web", address], tmp_path)
        try:
            response = page.goto(url)
            assert response.status == 200
            assert page.title() == "home · tanglenode"  # her conversations
            with page.expect_navigation():  # and her status, one link away
                page.get_by_role("link", name="status").click()
            assert page.locator("h1").inner_text() == "~alice"
            assert page.locator("code", has_text=feed_of(alice)).is_visible()
            assert page.goto(url.replace(token, token[::-1])).status == 401
        finally:
            process.terminate()
            notify.close()
            assert process.wait(STOP_SECONDS) == 0
    finally:
        shutil.rmtree(alice.parent, ignore_errors=True)


def start(command: list[str], tmp_path: Path) -> tuple[subprocess.Popen, socket.socket]:
    """Run `command` (a `tangled … run`) and wait for its READY=1, as systemd would."""
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    notify.settimeout(START_SECONDS)
    env = {**os.environ, "NOTIFY_SOCKET": str(tmp_path / "notify")}
    env["TANGLED_LISTEN"] = "127.0.0.1:0"  # peers' port: any free one, not the config's
    with (tmp_path / "alice.log").open("ab") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
    try:
        while b"READY=1" not in notify.recv(4096).splitlines():
            pass
    except BaseException:
        process.kill()
        process.wait(STOP_SECONDS)
        notify.close()
        raise
    return process, notify


def feed_of(data_dir: Path) -> str:
    """The feed id of the node in `data_dir`, as `tangled whoami` prints it."""
    done = subprocess.run(
        [str(TANGLED), "--data-dir", str(data_dir), "whoami", "--json"],
        capture_output=True,
        text=True,
        timeout=STOP_SECONDS,
        check=True,
    )
    return json.loads(done.stdout)["feed"]
