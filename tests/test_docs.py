"""The docs' tables of codes, ops, tables and commands name exactly what the code defines;
the repository cites only itself, and every section, file, module, class member and store
area it cites exists."""

from __future__ import annotations

import ast
import builtins
import functools
import io
import os
import re
import tokenize
from pathlib import Path

import lmdb

from tanglenode.node.cli import cli
from tanglenode.protocol.document import DocReason
from tanglenode.protocol.errors import Reason
from tanglenode.protocol.ipc import PARSERS, ErrorKind
from tanglenode.storage.store import FeedStore

ROOT = Path(__file__).resolve().parents[1]
CODE = re.compile(r"`([^`]+)`")


def first_cells(path: Path, heading: str) -> list[str]:
    """The first cell of each row of the first table after `heading`."""
    lines = (ROOT / path).read_text().splitlines()
    start = lines.index(heading)
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append(re.split(r"(?<!\\)\|", line)[1].strip())  # `\|` stays in its cell
        elif rows:
            break
    return rows[2:]  # past the header and its rule


def codes(path: str, heading: str) -> set[str]:
    """Every `code` in the first column of that table."""
    return {code for cell in first_cells(Path(path), heading) for code in CODE.findall(cell)}


def test_format_lists_every_reason_code():
    assert codes("docs/FORMAT.md", "## Reason codes") == {str(reason) for reason in Reason}


def test_documents_lists_every_set_aside_reason():
    listed = codes("docs/DOCUMENTS.md", "## What is set aside, and why")
    assert listed == {str(reason) for reason in DocReason}


def test_ipc_lists_every_op_and_every_error_kind():
    assert codes("docs/IPC.md", "## Wire") == set(PARSERS)
    # never sent by the node
    client_only = {ErrorKind.DISCONNECTED, ErrorKind.PROTOCOL, ErrorKind.STREAMING}
    sent = {str(kind) for kind in ErrorKind} - client_only
    assert codes("docs/IPC.md", "## Error kinds") == sent
    client = (ROOT / "docs" / "IPC.md").read_text().split("## The client")[1]
    assert all(f"`{kind}`" in client.split("```")[0] for kind in client_only)


def test_storage_names_every_database_a_store_opens(tmp_path):
    FeedStore(tmp_path / "store", map_size=2**24).close()
    with lmdb.open(str(tmp_path / "store"), max_dbs=1) as env, env.begin() as txn:
        opened = {bytes(key).decode() for key, _value in txn.cursor()}
    listed = codes("docs/STORAGE.md", "## Named databases")
    prefixes = tuple(name[:-1] for name in listed if name.endswith("*"))
    assert {name for name in opened if not name.startswith(prefixes)} == {
        name for name in listed if not name.endswith("*")
    }
    assert all(any(name.startswith(prefix) for name in opened) for prefix in prefixes)


def test_readme_lists_every_command():
    listed = {code.split()[0] for code in codes("README.md", "## Using the CLI") if code[0] != "["}
    assert listed == set(cli.list_commands(None))


SOURCES = {".py", ".pxd", ".md", ".js", ".html", ".css", ".toml", ".1", ".service", ".sh"}
NOT_OURS = {".git", ".venv", ".cache", "node_modules", "__pycache__", ".hypothesis", "build"}


def repository_texts() -> dict[Path, str]:
    """Every source and document of the repository (not its data, nor what tools put there)."""
    found = {}
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [
            name
            for name in subfolders
            if name not in NOT_OURS and not name.endswith((".egg-info", "dist"))
        ]
        here = Path(folder).relative_to(ROOT)
        for name in names:
            path = here / name
            if path.parts[:2] == ("tests", "data") and path.suffix != ".md":
                continue
            if path.suffix in SOURCES or name == "Makefile":
                found[path] = (ROOT / path).read_text(encoding="utf-8")
    return found


def test_nothing_cites_or_reads_outside_the_repository():
    """Docs, comments, tests and benches cite the repository's own docs (docs/DECISIONS.md
    says where the ideas came from) and read its own data (tests/data)."""
    outside = re.compile(
        r"\bseeds? 00\d\b|DESIGN\.md|DESIGN §|\bdecision \d\b|Lemma 1|"
        r"\.\./shared|shared/(?:data|interop|seeds)|/work/",
        re.IGNORECASE,
    )
    texts = repository_texts()
    assert Path("docs/DECISIONS.md") in texts and Path("tests/data/README.md") in texts
    found = [
        f"{path}:{text.count(chr(10), 0, hit.start()) + 1}: {hit.group()}"
        for path, text in texts.items()
        if path not in {Path("docs/DECISIONS.md"), Path("tests/test_docs.py")}
        for hit in outside.finditer(text)
    ]
    assert found == []
    sources = outside.findall(texts[Path("docs/DECISIONS.md")])  # it names the seeds, only
    assert sources and all(hit.lower().startswith("seed") for hit in sources)


def test_every_cited_section_exists():
    """A section cited as docs/NAME.md then "Section" in quotes (tests/data/README.md's too)
    is a heading, or the bold lead of a paragraph, of that document."""
    cite = re.compile(r'((?:docs|tests/data)/[A-Za-z_]+\.md),?\s+"([^"]+)"')
    sections: dict[str, list[str]] = {}
    missing = []
    for path, text in repository_texts().items():
        flat = re.sub(r"\s*\n\s*(?:#+ |// |\* )?", " ", text)  # a citation may span lines
        for document, section in cite.findall(flat):
            if document not in sections:
                cited = ROOT / document
                body = cited.read_text(encoding="utf-8") if cited.exists() else ""
                heads = re.findall(r"^#+ (.+)$", body, re.MULTILINE)
                sections[document] = [h.replace("`", "").lower() for h in heads] + [
                    lead.replace("`", "").lower() for lead in re.findall(r"\*\*(.+?)\*\*", body)
                ]
            wanted = section.replace("`", "").lower()
            if not any(wanted in head for head in sections[document]):
                missing.append(f'{path}: {document}, "{section}"')
    assert missing == []


def test_the_test_data_readme_names_every_file_its_size_and_licence():
    """tests/data/README.md's table lists each file (or folder) of tests/data with its bytes;
    the text names each licence file."""
    data = ROOT / "tests" / "data"
    readme = (data / "README.md").read_text(encoding="utf-8")
    listed = {
        cells[1].strip().strip("`"): int(cells[2].replace(",", ""))
        for cells in (line.split("|") for line in readme.splitlines() if line.startswith("| `"))
    }
    files = {
        path.relative_to(data).as_posix(): path.stat().st_size
        for path in data.rglob("*")
        if path.is_file() and "node_modules" not in path.parts
    }
    licences = {name for name in files if Path(name).name.startswith("LICENSE")}
    assert licences and all(f"`{name}`" in readme for name in licences)
    sizes = {}
    for name, size in files.items():
        if name in licences or name == "README.md":
            continue
        row = name if name in listed else name.split("/")[0] + "/"
        sizes[row] = sizes.get(row, 0) + size
    assert sizes == listed


# -- what the docs and docstrings cite exists -----------------------------------------------

CITED_FILE = re.compile(
    r"(?<![\w./-])((?:node|storage|protocol|config|pipeline|bench|tests|docs|systemd)"
    r"/[\w/.-]*\w\.(?:py|pxd|md|js|toml|sh|1|service))\b"
)
CITED_MODULE = re.compile(
    r"(?<![\w./-])(?:tanglenode\.)?((?:node|storage|protocol|config|pipeline)(?:\.[A-Za-z_]\w*)+)"
)
CITED_MEMBER = re.compile(r"`([A-Z]\w*)\.([A-Za-z_]\w*)")  # `Class.member...
CITED_AREA = re.compile(r"`store\.(?!py`)([a-z_]\w*)(?:\.([A-Za-z_]\w*))?")  # not `store.py`
# Dated records: each entry names the code as it was when it was measured.
RECORDS = {Path("docs/BENCHMARKS.md")}
PLAIN_BASES = {"object", "Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "Protocol"}


def prose(path: Path, text: str) -> str:
    """What a file says in words: a Python file's strings and comments, any other whole."""
    if path.suffix != ".py":
        return text
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return "\n".join(t.string for t in tokens if t.type in (tokenize.STRING, tokenize.COMMENT))


@functools.cache
def top_level_names(module: Path) -> set[str]:
    """The names a module defines or imports at any depth of its statements."""
    names = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


class CodeIndex:
    """Every class the repository defines, by name (a name defined twice: the union), with
    the names its body and its methods' `self.x = ...` define, and `FeedStore`'s areas."""

    def __init__(self, texts: dict[Path, str]) -> None:
        self.defined: dict[str, set[str]] = {}
        self.bases: dict[str, set[str]] = {}
        self.areas: dict[str, str] = {}  # store.<area> -> its class (Writes, FeedReads, ...)
        for path, text in texts.items():
            if path.suffix != ".py":
                continue
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.ClassDef):
                    self._add(node)

    def _add(self, cls: ast.ClassDef) -> None:
        names = self.defined.setdefault(cls.name, set())
        self.bases.setdefault(cls.name, set()).update(
            base.id if isinstance(base, ast.Name) else base.attr
            for base in cls.bases
            if isinstance(base, ast.Name | ast.Attribute)
        )
        for node in cls.body:  # methods, class attributes, fields
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            names |= {one.id for one in _targets(node) if isinstance(one, ast.Name)}
        for node in ast.walk(cls):  # and `self.x = ...` in any method
            for one in _targets(node):
                if isinstance(one, ast.Attribute) and _is_name(one.value, "self"):
                    names.add(one.attr)
                    self._area(cls, one.attr, getattr(node, "value", None))

    def _area(self, cls: ast.ClassDef, attribute: str, value: ast.AST | None) -> None:
        """`self.writes = Writes(...)` in `FeedStore`: an area and its class."""
        if cls.name != "FeedStore" or not isinstance(value, ast.Call):
            return
        if isinstance(value.func, ast.Name) and value.func.id[:1].isupper():
            self.areas[attribute] = value.func.id

    def members(self, cls: str) -> set[str] | None:
        """What instances of `cls` have, or None when a base is none of ours (unknowable)."""
        found = set(self.defined[cls])
        for base in self.bases.get(cls, ()):
            if base in self.defined and base != cls:
                inherited = self.members(base)
                if inherited is None:
                    return None
                found |= inherited
            elif base not in PLAIN_BASES and not (
                isinstance(getattr(builtins, base, None), type)
                and issubclass(getattr(builtins, base), BaseException)
            ):
                return None
        return found


@functools.cache
def code_index() -> tuple[dict[Path, str], CodeIndex]:
    """The repository's texts and the classes they define, read once for the tests below."""
    texts = repository_texts()
    return texts, CodeIndex(texts)


def _targets(node: ast.AST) -> list[ast.expr]:
    """What an assignment statement assigns to (each element of a tuple), else nothing."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    else:
        return []
    return [one for t in targets for one in (t.elts if isinstance(t, ast.Tuple) else [t])]


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def cited_module(parts: list[str]) -> tuple[Path, int]:
    """The deepest package or module `parts` (a dotted name's) names from the repository's
    root, and how many of the parts that took."""
    here, at = ROOT / parts[0], 1
    while at < len(parts) and here.is_dir():
        package, module = here / parts[at], here / f"{parts[at]}.py"
        if package.is_dir():
            here = package
        elif module.exists():
            here = module
        else:
            break
        at += 1
    return here, at


def test_every_file_and_module_cited_exists():
    """A path (`node/service/store_service.py`) or a module and what it defines
    (`protocol.group_state.excluded_in_past`) named anywhere names what is there."""
    missing = []
    for path, text in repository_texts().items():
        if path == Path("tests/test_docs.py"):
            continue
        missing += [
            f"{path}: {cited}" for cited in CITED_FILE.findall(text) if not (ROOT / cited).exists()
        ]
        if path in RECORDS or path.suffix not in {".py", ".md"}:
            continue
        for dotted in CITED_MODULE.findall(prose(path, text)):
            parts = dotted.split(".")
            here, at = cited_module(parts)
            if at == 1 or at == len(parts):
                continue  # not a module (`storage.map_size` is a setting), or the module alone
            module = here / "__init__.py" if here.is_dir() else here
            if not module.exists() or parts[at] not in top_level_names(module):
                missing.append(f"{path}: {dotted}")
    assert missing == []


def test_every_class_member_and_store_area_cited_exists():
    """`Class.member` and `store.area.method` in the docs, docstrings and comments name what
    the code defines (a method that moved, an area that was renamed leave them behind)."""
    texts, code = code_index()
    store = code.members("FeedStore")
    assert store and {"writes", "digests"} <= set(code.areas)
    missing = []
    for path, text in texts.items():
        if path in RECORDS | {Path("tests/test_docs.py")} or path.suffix not in {".py", ".md"}:
            continue
        said = prose(path, text)
        for cls, member in CITED_MEMBER.findall(said):
            known = code.members(cls) if cls in code.defined else None
            if known is not None and member not in known:
                missing.append(f"{path}: {cls}.{member}")
        for area, member in CITED_AREA.findall(said):
            if area not in store:
                missing.append(f"{path}: store.{area}")
            elif member and area in code.areas:
                known = code.members(code.areas[area])
                if known is not None and member not in known:
                    missing.append(f"{path}: store.{area}.{member}")
    assert missing == []


def test_the_code_and_the_benches_use_only_what_the_store_has():
    """`store.x` and `store.area.y` in the code and the benches (which no test runs) name
    what a `FeedStore` has: setting an attribute it no longer reads (`store._digest_cache =
    None` once the cache moved to `store.digests`) would quietly do nothing."""
    texts, code = code_index()
    store = code.members("FeedStore")
    assert store is not None
    missing = []
    for path, text in texts.items():
        if path.suffix != ".py" or path.parts[0] == "tests":
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Attribute):
                continue
            if _is_name(node.value, "store") and node.attr not in store:
                missing.append(f"{path}:{node.lineno}: store.{node.attr}")
            inner = node.value
            if isinstance(inner, ast.Attribute) and _is_name(inner.value, "store"):
                area = code.areas.get(inner.attr)
                known = code.members(area) if area in code.defined else None
                if known is not None and node.attr not in known:
                    missing.append(f"{path}:{node.lineno}: store.{inner.attr}.{node.attr}")
    assert missing == []


def test_architecture_names_every_package_and_every_module_at_nodes_root():
    """docs/ARCHITECTURE.md is enough to find one's room: each package of ours is named
    there (`storage/feeds/`), each module at node/'s root by its file name, and each module
    of the daemon's packages (`node/gossip/`, ...) in its package's row."""
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    packages = sorted(
        str(init.parent.relative_to(ROOT))
        for folder in ("node", "storage", "protocol", "config", "pipeline")
        for init in (ROOT / folder).rglob("__init__.py")
    )
    assert [p for p in packages if f"{p}/" not in text and f"`{p}`" not in text] == []
    modules = sorted(p.name for p in (ROOT / "node").glob("*.py") if p.name != "__init__.py")
    assert [m for m in modules if f"`{m}`" not in text and f"node/{m}" not in text] == []
    # the daemon's packages by job: each module by its file name, in its package's row
    rows = {
        row.split("|")[1].strip(): row for row in text.splitlines() if row.startswith("| `node/")
    }
    unnamed = [
        f"{package}/{path.name}"
        for package in ("node/net", "node/service", "node/invites", "node/gossip", "node/ipc")
        for path in sorted((ROOT / package).glob("*.py"))
        if path.name != "__init__.py" and f"`{path.name}`" not in rows.get(f"`{package}/`", "")
    ]
    assert unnamed == []
