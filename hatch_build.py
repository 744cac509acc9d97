"""Build hook: one import root, `tanglenode`, over the repository's top-level folders.

`pyproject.toml` maps each folder into the package with `force-include`
(`node/` -> `tanglenode/node`, ..., `tanglenode.client.py` ->
`tanglenode/client.py`). A wheel is that mapping plus this hook's
`tanglenode/__init__.py`.

An editable install cannot use the mapping as it stands: hatchling copies
force-included files into the editable wheel (edits would not take effect),
and refuses a `sources` rewrite that adds a prefix ("Dev mode installations
are unsupported when any path rewrite in the `sources` option changes a
prefix rather than removes it"); `editables` maps top-level names only. So
for an editable install the hook replaces the copies with one generated
`tanglenode/__init__.py` whose finder loads exactly the mapped folders and
files from this checkout: `tanglenode.node` is `<checkout>/node`, and
nothing else of the checkout (tests, bench) is importable through it.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

PACKAGE = "tanglenode"

DOCSTRING = (
    "tanglenode: a peer-to-peer replication node. Subpackages: node (the daemon and CLI), "
    "storage, protocol, config, pipeline; tanglenode.client is the public client API."
)

EDITABLE_INIT = '''"""{docstring}

Editable install from {root!r}, written by hatch_build.py: the finder below
loads each module of the mapping from the checkout, so edits take effect
without reinstalling. Reinstall after changing the mapping in pyproject.toml.
"""

import importlib.util
import os
import sys

__path__ = []  # submodules come from the finder only
_MAPPING = {mapping!r}


class _CheckoutFinder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        source = _MAPPING.get(fullname)
        if source is None:
            return None
        if os.path.isdir(source):
            return importlib.util.spec_from_file_location(
                fullname, os.path.join(source, "__init__.py"), submodule_search_locations=[source]
            )
        return importlib.util.spec_from_file_location(fullname, source)


if not any(getattr(f, "__name__", "") == "_CheckoutFinder" for f in sys.meta_path):
    sys.meta_path.append(_CheckoutFinder)
'''


class TanglenodeBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        self._scratch = tempfile.mkdtemp(prefix="tanglenode-build-")
        init = os.path.join(self._scratch, "__init__.py")
        if version == "editable":
            text = EDITABLE_INIT.format(
                docstring=DOCSTRING, root=self.root, mapping=self._editable_mapping()
            )
            # Replaces force-include in an editable wheel: only this file is installed.
            build_data["force_include_editable"][init] = f"{PACKAGE}/__init__.py"
        else:
            text = f'"""{DOCSTRING}"""\n'
            build_data["force_include"][init] = f"{PACKAGE}/__init__.py"
        with open(init, "w", encoding="utf-8") as file:
            file.write(text)

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)

    def _editable_mapping(self) -> dict[str, str]:
        """`tanglenode.X` -> the checkout's folder or file, from pyproject's force-include."""
        mapping = {}
        for source, target in self.build_config.get_force_include().items():
            parts = target.removesuffix(".py").split("/")
            if parts[0] != PACKAGE or len(parts) != 2:
                raise ValueError(f"force-include target {target!r} is not {PACKAGE}/NAME")
            mapping[".".join(parts)] = os.path.abspath(source)
        return mapping
