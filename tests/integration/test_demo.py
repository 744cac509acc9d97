"""`make demo` end to end: it narrates, converges, and with --keep leaves commands that work."""

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def run_kept_demo() -> subprocess.CompletedProcess:
    """`make demo KEEP=1`'s run, which must succeed; its output as text."""
    done = subprocess.run(
        [sys.executable, "-m", "tanglenode.node.localnet.demo", "--keep"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_the_demo_narrates_keeps_its_data_and_its_next_commands_work():
    done = run_kept_demo()
    out = done.stdout
    lines = out.splitlines()
    assert lines[0].startswith("[") and " s] " in lines[0]  # narrated from the first line
    assert "the four digests are identical" in out and "demo finished" in out
    tail = lines[lines.index("demo finished") :]
    tried = [line.strip() for line in tail if " --data-dir " in line and "run`" not in line]
    assert len(tried) == 3
    kept = Path(shlex.split(tried[0])[2]).parent
    try:
        for command in tried:
            words = shlex.split(command)
            assert Path(words[0]).name == "tangled" and Path(words[0]).exists()  # runnable
            ran = subprocess.run(
                words,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert ran.returncode == 0 and ran.stdout.strip(), (command, ran.stderr)
    finally:
        shutil.rmtree(kept, ignore_errors=True)
