"""The layers, enforced: which of our packages may import what (docs/ARCHITECTURE.md).

- protocol is sans-IO: it imports neither trio nor lmdb;
- storage does no networking: it imports no trio;
- pipeline stands apart from the daemon: it imports nothing of tanglenode.node;
- everything imports our code through the one root, `tanglenode.` (a bare
  `import node` only works from a checkout, and would load a second copy).

Each rule is checked twice: statically, on every import statement in the
folder (function-local ones included), and in a fresh interpreter that
imports every module of the package, so an indirect import counts too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("node", "storage", "protocol", "config", "pipeline")
FORBIDDEN = {
    "protocol": ("trio", "lmdb"),
    "storage": ("trio",),
    "pipeline": ("tanglenode.node",),
}


def imported_names(path: Path) -> list[tuple[int, str]]:
    """Every module an import statement in `path` names, with its line."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            names.append((node.lineno, node.module))
            names.extend((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)
    return names


def under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_no_forbidden_import_statement(package):
    found = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, name in imported_names(path)
        if any(under(name, bad) for bad in FORBIDDEN[package])
    ]
    assert found == []


PROBE = """
import importlib, pkgutil, sys
package = importlib.import_module(sys.argv[1])
names = [m.name for m in pkgutil.walk_packages(package.__path__, sys.argv[1] + ".")]
for name in names:
    importlib.import_module(name)
print(len(names))
for name in sorted(sys.modules):
    print(name)
"""


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_importing_the_package_loads_nothing_forbidden(package):
    # A fresh interpreter, outside the checkout: the test process has imported everything.
    done = subprocess.run(
        [sys.executable, "-c", PROBE, f"tanglenode.{package}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=ROOT / "docs",
    )
    count, *modules = done.stdout.split()
    assert int(count) >= 3  # the walk really reached the package's modules
    assert [m for m in modules if any(under(m, bad) for bad in FORBIDDEN[package])] == []


def test_our_code_is_imported_through_tanglenode_only():
    files = [ROOT / "hatch_build.py", ROOT / "tanglenode.client.py"]
    for folder in (*FOLDERS, "tests", "bench"):
        files.extend(sorted((ROOT / folder).rglob("*.py")))
    bare = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        for line, name in imported_names(path)
        if any(under(name, folder) for folder in FOLDERS)
    ]
    assert bare == []
