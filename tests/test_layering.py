"""The layers, enforced: which of our packages may import what (docs/ARCHITECTURE.md).

- protocol is sans-IO: it imports neither trio nor lmdb;
- storage does no networking: it imports no trio;
- pipeline stands apart from the daemon: it imports nothing of tanglenode.node;
- the web view asks the node as the CLI does, through the op table, and shows
  things through node/present: node/web imports nothing of node/cli (nor click,
  the CLI's framework), and node/present, which both share, neither of them;
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
FORBIDDEN = {  # a folder (a subpackage's as `node.web`) -> what nothing in it may load
    "protocol": ("trio", "lmdb"),
    "storage": ("trio",),
    "pipeline": ("tanglenode.node",),
    "node.web": ("tanglenode.node.cli", "click"),
    "node.present": ("tanglenode.node.cli", "tanglenode.node.web", "click", "trio"),
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
        for path in sorted(ROOT.joinpath(*package.split(".")).rglob("*.py"))
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
    for folder in (*FOLDERS, "tests", "bench"):  # not what npm installs (bench/peers)
        found = (ROOT / folder).rglob("*.py")
        files.extend(sorted(path for path in found if "node_modules" not in path.parts))
    bare = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        for line, name in imported_names(path)
        if any(under(name, folder) for folder in FOLDERS)
    ]
    assert bare == []


# -- storage/'s own layers (docs/ARCHITECTURE.md, "The store's layers") ---------------------

# Each layer may import the layers listed for it (and itself); storage.errors is everyone's.
# The composition (storage's own modules: store, context, writes, registry, reindex and the
# read areas) may import every layer below it; the clients and tooling, anything; nothing
# below them imports them. Imports only for type annotations (under TYPE_CHECKING) are not
# dependencies and are not counted.
STORAGE_LAYERS = {
    "engine": (),
    "feeds": ("engine",),
    "views": ("engine", "feeds"),
    "documents": ("engine", "feeds"),
    "(composition)": ("engine", "feeds", "views", "documents", "(composition)"),
    "groups": ("*",),
    "clients": ("*",),
    "tools": ("*",),
}


def storage_layer(module: str) -> str | None:
    """The layer of a `tanglenode.storage` module; None for storage.errors, the base."""
    parts = module.split(".")
    if len(parts) < 3 or parts[2] == "errors":
        return None
    return parts[2] if parts[2] in STORAGE_LAYERS else "(composition)"


def runtime_imports(path: Path) -> list[tuple[int, str]]:
    """Like `imported_names`, leaving out the imports under `if TYPE_CHECKING:`."""
    found = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                continue
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module:
                found.append((child.lineno, child.module))
                found.extend((child.lineno, f"{child.module}.{a.name}") for a in child.names)
            walk(child)

    walk(ast.parse(path.read_text(), str(path)))
    return found


def crossings(folder: str, layers: dict[str, tuple[str, ...]], layer_of) -> list[str]:
    """Every run-time import in `folder` from one layer into another its row does not list
    (`layer_of(module)`: a module's layer, None for the base everyone may import)."""
    package, found = f"tanglenode.{folder}", []
    for path in sorted((ROOT / folder).rglob("*.py")):
        module = "tanglenode." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        mine = layer_of(module.removesuffix(".__init__"))
        allowed = layers.get(mine or "", ())
        for line, name in runtime_imports(path):
            if not under(name, package) or name == package:
                continue
            theirs = layer_of(name)
            if theirs is None or theirs == mine or "*" in allowed or theirs in allowed:
                continue
            found.append(f"{path.relative_to(ROOT)}:{line}: {mine} imports {name}")
    return found


def test_storage_layers_import_only_what_lies_below_them():
    assert crossings("storage", STORAGE_LAYERS, storage_layer) == []


def test_the_layers_exist_and_the_check_sees_a_crossing(tmp_path):
    """Every layer is a folder of storage/, and a planted upward import is found."""
    for layer in STORAGE_LAYERS:
        assert layer == "(composition)" or (ROOT / "storage" / layer / "__init__.py").is_file()
    planted = tmp_path / "planted.py"
    planted.write_text("from tanglenode.storage.writes import Writes\n")
    assert [storage_layer(name) for _line, name in runtime_imports(planted)] == [
        "(composition)",
        "(composition)",
    ]
    assert "(composition)" not in STORAGE_LAYERS["engine"]


# -- node/'s packages, by job (docs/ARCHITECTURE.md, "node/, by job") ------------------------

# Each package of node/ may import those listed for it (and itself); node/failures.py is
# everyone's. The daemon (node/'s root), the CLI and the simulator sit on top: anything.
NODE_LAYERS = {
    "net": (),
    "service": ("net",),
    "invites": ("net", "service"),
    "gossip": ("net", "service", "invites"),
    "ipc": ("net", "service", "invites", "gossip"),
    "present": (),
    "web": ("ipc", "service", "present"),
    "sim": ("net", "service", "gossip"),
    "localnet": ("*",),
    "cli": ("*",),
    "(root)": ("*",),
}


def node_layer(module: str) -> str | None:
    """The package of a `tanglenode.node` module; None for node.failures, the base."""
    parts = module.split(".")
    if len(parts) < 3 or parts[2] == "failures":
        return None
    return parts[2] if len(parts) > 3 or parts[2] in NODE_LAYERS else "(root)"


def test_node_packages_import_only_what_lies_below_them():
    packages = {path.parent.name for path in (ROOT / "node").glob("*/__init__.py")}
    assert packages <= NODE_LAYERS.keys()  # a new package of node/ gets its row
    assert crossings("node", NODE_LAYERS, node_layer) == []


def test_the_node_check_sees_a_crossing(tmp_path):
    """A planted upward import (the connection layer reaching for gossip) is found."""
    planted = tmp_path / "planted.py"
    planted.write_text("from tanglenode.node.gossip.session import GossipSession\n")
    found = [node_layer(name) for _line, name in runtime_imports(planted)]
    assert found == ["gossip", "gossip"]
    assert "gossip" not in NODE_LAYERS["net"]
    assert node_layer("tanglenode.node.daemon") == "(root)"
    assert node_layer("tanglenode.node.failures") is None


# -- no import circles ---------------------------------------------------------------


def module_graph() -> dict[str, set[str]]:
    """Our modules -> those of ours each imports at run time (function-local imports too,
    those only for type annotations not)."""
    paths = {}
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = "tanglenode." + ".".join(parts).removesuffix(".__init__")
            paths[name] = path
    return {
        name: {imported for _line, imported in runtime_imports(path) if imported in paths} - {name}
        for name, path in paths.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or through others
    (strongly connected components of more than one module: Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            advanced = False
            for other in edges:
                if other not in index:
                    index[other] = low[other] = len(index)
                    stack.append(other)
                    on_stack.add(other)
                    work.append((other, iter(sorted(graph[other]))))
                    advanced = True
                    break
                if other in on_stack:
                    low[node] = min(low[node], index[other])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_modules_import_each_other():
    assert circles(module_graph()) == []


def test_the_circle_check_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
