import subprocess
import sys

PROBE = """
import importlib, pkgutil, sys
import tanglenode.protocol as protocol
names = [m.name for m in pkgutil.walk_packages(protocol.__path__, "tanglenode.protocol.")]
for name in names:
    importlib.import_module(name)
print(len(names), *sorted(m for m in ("trio", "lmdb") if m in sys.modules))
"""


def test_protocol_imports_neither_trio_nor_lmdb():
    # A fresh interpreter: the test process itself has imported both.
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    imported, *io_modules = done.stdout.split()
    assert int(imported) >= 5  # the walk really reached protocol's modules
    assert io_modules == []
