"""`make java-runtime` (part of `make install`): apt-get a JRE 17 when no Java 17+ is on PATH."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAKE = shutil.which("make")


def make_java_runtime(tmp_path: Path, java_version: str | None, apt_works: bool):
    """The target with a PATH of stand-ins: a `java` of that version (or none), an apt-get
    that records its arguments and succeeds or fails."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "grep", "make"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    calls = tmp_path / "apt-get.calls"
    apt = bin_dir / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexit {0 if apt_works else 100}\n')
    apt.chmod(0o755)
    if java_version is not None:
        java = bin_dir / "java"
        java.write_text(f"#!/bin/sh\necho 'openjdk version \"{java_version}\" 2025-01-01' >&2\n")
        java.chmod(0o755)
    done = subprocess.run(
        [MAKE, "-s", "-C", str(ROOT), "java-runtime"],
        env={"PATH": str(bin_dir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done, calls.read_text().splitlines() if calls.exists() else []


pytestmark = pytest.mark.skipif(MAKE is None, reason="needs make")


@pytest.mark.parametrize("version", ["17.0.15", "21.0.2", "25"])
def test_a_java_17_or_later_is_left_alone(tmp_path, version):
    done, calls = make_java_runtime(tmp_path, version, apt_works=True)
    assert done.returncode == 0 and calls == [] and done.stdout == ""


@pytest.mark.parametrize("version", [None, "11.0.2", "1.8.0_392"])
def test_no_java_or_an_old_one_installs_the_headless_jre_17(tmp_path, version):
    done, calls = make_java_runtime(tmp_path, version, apt_works=True)
    assert done.returncode == 0, done.stderr
    assert calls == ["install -y -qq openjdk-17-jre-headless"]


def test_without_a_working_apt_get_it_updates_once_then_leaves_a_note(tmp_path):
    done, calls = make_java_runtime(tmp_path, None, apt_works=False)
    assert done.returncode == 0  # the rest of the suite still runs; the Spark tests fail
    assert calls == ["install -y -qq openjdk-17-jre-headless", "update -qq"]
    assert "note: no Java 17+ runtime" in done.stdout
