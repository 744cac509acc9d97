"""The docs' tables of codes, ops, tables and commands name exactly what the code defines;
the repository cites only itself, and every section it cites exists."""

from __future__ import annotations

import os
import re
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
