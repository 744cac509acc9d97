"""Compile the engine's hot modules in place: `python -m tanglenode.storage.tools.native_build`.

Theory of operation
-------------------
`make install` runs this after installing the package. For each hot module
`storage/<name>.py` (see `storage.engine.native`) it copies the source and its
augmenting `.pxd` to a scratch folder as `<name>_native`, appends the stamp
`SOURCE_SHA256` (the hash of both files), has Cython translate it to C and
gcc compile that against this interpreter's headers, and puts the extension
module in `storage/__pycache__/<name>_native<EXT_SUFFIX>` (see `storage.engine.native`). Nothing is
downloaded; Cython is a dev dependency. A module whose stamp already
matches is left alone. If Cython or the compiler is missing, it says so and
exits 1: the engine then runs the plain modules.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from tanglenode.storage.engine.native import (
    ENGINE_FOLDER,
    HOT_MODULES,
    compiled,
    native_path,
    source_hash,
)

CFLAGS = ["-O2", "-fPIC", "-shared", "-fno-strict-aliasing", "-DNDEBUG", "-w"]


def build(name: str, scratch: Path) -> Path:
    native = f"{name}_native"
    # A package layout, so that Cython names the module `tanglenode.storage.<name>_native`
    # and finds the augmenting .pxd beside its source.
    for package in ("tanglenode", "tanglenode/storage"):
        (scratch / package).mkdir(exist_ok=True)
        (scratch / package / "__init__.py").touch()
    scratch = scratch / "tanglenode" / "storage"
    source = scratch / f"{native}.py"
    shutil.copy(ENGINE_FOLDER / f"{name}.pxd", scratch / f"{native}.pxd")
    text = (ENGINE_FOLDER / f"{name}.py").read_text(encoding="utf-8")
    source.write_text(f'{text}\n\nSOURCE_SHA256 = "{source_hash(name)}"\n', encoding="utf-8")
    c_file = scratch / f"{native}.c"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cython",
            "-3",
            "-X",
            "annotation_typing=False",  # the .pxd alone gives the C types
            "-o",
            str(c_file),
            str(source),
        ],
        check=True,
    )
    final = native_path(name)
    built = scratch / final.name
    compiler = sysconfig.get_config_var("CC") or "gcc"
    subprocess.run(
        [
            compiler.split()[0],
            *CFLAGS,
            f"-I{sysconfig.get_paths()['include']}",
            str(c_file),
            "-o",
            str(built),
        ],
        check=True,
    )
    final.parent.mkdir(exist_ok=True)
    shutil.move(built, final)
    return final


def main() -> int:
    try:
        import Cython  # noqa: F401  (only to say clearly that it is missing)
    except ImportError:
        print("native_build: Cython is not installed; the engine runs plain", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="tanglenode-native-") as directory:
        for name in HOT_MODULES:
            if compiled(name) is not None:
                print(f"native_build: {name}_native is current")
                continue
            try:
                print(f"native_build: built {build(name, Path(directory))}")
            except (OSError, subprocess.CalledProcessError) as error:
                print(f"native_build: {name}: {error}; the engine runs plain", file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
