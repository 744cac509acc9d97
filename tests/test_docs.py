"""The docs' tables of codes, ops, tables and commands name exactly what the code defines."""

from __future__ import annotations

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
    client_only = {ErrorKind.DISCONNECTED, ErrorKind.PROTOCOL}  # never sent by the node
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
