"""The built wheel installs one import root, `tanglenode`, and nothing generic.

The wheel goes into a fresh venv whose site-packages already holds a user's
module named `config`: had the wheel shipped a top-level `config/` package,
that package would shadow the user's module (a package beats a module of the
same name in one directory). The wheel is installed without its
dependencies; the fresh venv reaches them through a path entry to this
environment's site-packages, placed after its own, so everything of ours
that runs comes from the wheel.
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHECK = """
import importlib, sys
from pathlib import Path

import config
assert config.OWNER == "user", config.__file__

import tanglenode.client, tanglenode.config.settings, tanglenode.node.cli
import tanglenode.pipeline.schema, tanglenode.protocol.message, tanglenode.storage.store

site = Path(sys.argv[1])
for module in (tanglenode, tanglenode.client, tanglenode.config, tanglenode.node.cli):
    assert site in Path(module.__file__).parents, module.__file__
assert tanglenode.client.NodeClient is tanglenode.node.ipc.client.NodeClient
for name in ("node", "storage", "protocol", "pipeline", "client"):
    try:
        importlib.import_module(name)
    except ModuleNotFoundError:
        continue
    raise AssertionError(f"{name} is importable at the top level")
print("ok")
"""


def test_the_wheel_installs_tanglenode_beside_a_users_config(tmp_path):
    pip = [sys.executable, "-m", "pip"]
    subprocess.run(
        [
            *pip,
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            tmp_path / "dist",
            ROOT,
        ],
        check=True,
        timeout=120,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("tanglenode-*.whl")
    top = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert top == {"tanglenode", wheel.name.split("-py3")[0] + ".dist-info"}

    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "config.py").write_text('OWNER = "user"\n')
    subprocess.run(
        [*pip, "--python", python, "install", "--quiet", "--no-deps", "--no-index", wheel],
        check=True,
        timeout=120,
        capture_output=True,
    )
    (site / "zz_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [python, "-c", CHECK, str(site)], cwd=work, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok"]
    tangled = subprocess.run(
        [fresh / "bin" / "tangled", "--help"], capture_output=True, text=True, timeout=60
    )
    assert tangled.returncode == 0, tangled.stderr
    assert "Usage: tangled" in tangled.stdout
