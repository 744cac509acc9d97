"""Which build of the engine's hot modules runs: the compiled one if it is built and current.

Theory of operation
-------------------
The timeline engine's inner loops live in two modules written in Cython's
pure-Python mode: `storage/engine/ordertree.py` (the order tree) and
`storage/engine/engine_core.py` (the wave and the placing of an event's commands).
Each is plain Python that runs as it is; an augmenting `.pxd` beside it gives
Cython the C types. `make install` compiles each source with gcc into an
extension module `<module>_native` (`storage/tools/native_build.py`), stamped with
`SOURCE_SHA256`, the hash of the `.py` and `.pxd` it was built from. The
builds go to `storage/__pycache__/`, the folder of this interpreter's
compiled artifacts: a wheel (pure Python, built from the same folders)
never ships a platform binary, and `compiled` loads them by path.

`load(name)` returns the compiled module when it exists and its stamp matches
the sources as they are now, else the plain module: a checkout whose sources
were edited after the last build runs the edited plain code, never a stale
binary. `TANGLENODE_ENGINE=plain` forces the plain modules (to compare or
profile), `=native` makes a missing or stale build an error.

Both builds give identical results, command for command; the tests run the
engine with each (`tests/storage/test_timeline_native.py`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

HOT_MODULES = ("ordertree", "engine_core")
PACKAGE = "tanglenode.storage.engine"
ENGINE_FOLDER = Path(__file__).resolve().parent


def source_hash(name: str) -> str:
    """The hash a build of `name` is stamped with: its `.py` and `.pxd`, as they are now."""
    digest = hashlib.sha256()
    for suffix in (".py", ".pxd"):
        digest.update((ENGINE_FOLDER / f"{name}{suffix}").read_bytes())
    return digest.hexdigest()


def native_path(name: str) -> Path:
    """Where `make install` puts the compiled build of hot module `name`."""
    return ENGINE_FOLDER / "__pycache__" / f"{name}_native{sysconfig.get_config_var('EXT_SUFFIX')}"


def compiled(name: str) -> ModuleType | None:
    """The compiled build of hot module `name` if it is built and current, else None."""
    full = f"{PACKAGE}.{name}_native"
    module = sys.modules.get(full)
    if module is None:
        path = native_path(name)
        spec = importlib.util.spec_from_file_location(full, path) if path.exists() else None
        if spec is None or spec.loader is None:
            return None
        try:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        except ImportError:
            return None
        sys.modules[full] = module
    try:
        current = getattr(module, "SOURCE_SHA256", None) == source_hash(name)
    except OSError:  # sources not shipped beside the build: trust the build
        current = True
    return module if current else None


def plain(name: str) -> ModuleType:
    return importlib.import_module(f"{PACKAGE}.{name}")


def load(name: str) -> ModuleType:
    """Hot module `name`: compiled if built and current (see the module docstring), else plain."""
    wanted = os.environ.get("TANGLENODE_ENGINE", "")
    if wanted == "plain":
        return plain(name)
    module = compiled(name)
    if module is not None:
        return module
    if wanted == "native":
        raise ImportError(f"{PACKAGE}.{name}_native is not built or is stale: run `make install`")
    return plain(name)


def build_name() -> str:
    """'native' if every hot module runs compiled, else 'plain' (for benchmarks and reports)."""
    if os.environ.get("TANGLENODE_ENGINE", "") == "plain":
        return "plain"
    return "native" if all(compiled(name) for name in HOT_MODULES) else "plain"
