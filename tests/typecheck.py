"""`make lint`'s type check: mypy over the `tanglenode` package, from this checkout.

Each top-level folder of the checkout is a subpackage (pyproject.toml's
`force-include` mapping: `node/` is `tanglenode.node`, `tanglenode.client.py`
is `tanglenode.client`), and every import says `tanglenode.…`. mypy names a
file's module by its path (`node/gossip/session.py` would be `node.gossip.session`) and cannot
follow the editable install's finder (hatch_build.py), so this hands mypy each
file of the mapping under its package name, and mypy reports errors at the
checkout's paths. Everything else is mypy's own command line and
`[tool.mypy]` in pyproject.toml: `tests/typecheck.py [mypy options]` (targets
named there are ignored: it checks the whole package, fast from its cache).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import mypy.build
import mypy.main
from mypy.errors import CompileError
from mypy.fscache import FileSystemCache
from mypy.modulefinder import BuildSource

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "tanglenode"


def package_sources() -> list[BuildSource]:
    """Every module of the mapping, at its path in the checkout, by its package name."""
    with open(ROOT / "pyproject.toml", "rb") as file:
        project = tomllib.load(file)
    mapping = project["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]
    # The package's own __init__ is written by hatch_build.py at build time: empty here.
    sources = [BuildSource(None, PACKAGE, text="")]
    for source, target in mapping.items():
        base = target.removesuffix(".py").replace("/", ".")
        path = ROOT / source
        if not path.is_dir():
            sources.append(BuildSource(source, base))
            continue
        for file in sorted(path.rglob("*.py")):
            parts = file.relative_to(path).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join((base, *parts))
            sources.append(BuildSource(str(file.relative_to(ROOT)), name, base_dir=str(ROOT)))
    return sources


def main(args: list[str]) -> int:
    fscache = FileSystemCache()
    _targets, options = mypy.main.process_options(args, require_targets=False, fscache=fscache)
    sources = package_sources()
    blocked = False
    try:
        messages = mypy.build.build(sources, options, fscache=fscache).errors
    except CompileError as error:  # a blocking error: a syntax error, a module found twice
        messages, blocked = error.messages, True
    for line in messages:
        print(line)
    errors = sum(1 for line in messages if ": error:" in line)
    if blocked:
        return 2
    if errors:
        files = len({line.split(":", 1)[0] for line in messages if ": error:" in line})
        print(f"Found {errors} errors in {files} files (checked {len(sources)} source files)")
        return 1
    print(f"Success: no issues found in {len(sources)} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
