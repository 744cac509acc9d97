"""`tangled doc export` and `tangled doc import`: a document's history as one file.

The forms are the causal-tree paper's (docs/WEAVE.md): `weave5c`, every atom
ever with its cause and id; `text3`, the text with each character's id;
`hili3`, two revisions dyed; `text1`, the text, exactly as `doc show`
prints it. The export reads the store (beside the running node, as `doc
show` does: LMDB readers never disturb it) through `store.documents`;
`--at` exports the weave as it was at a revision (the paper's prefiltered
weave), by the filtre of protocol/weave_regex.py.

An import cannot bring the atoms in as they are: they are other feeds'
signed edits, and no node can sign for them. So `doc import FILE` checks
the weave5c file whole, as hostile (protocol/weave_file.py; exit 3 with the
first bad offset), then, unless `--check`, writes a new document of ours
holding its text, titled after the source document; the frame (whose
yarns wrote it) is printed with `--json`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tanglenode.node.cli.backend import Backend
from tanglenode.node.cli.doc_pages import read_text, revision_weft
from tanglenode.node.cli.doc_revisions import parse_at, resolve_at
from tanglenode.node.cli.lookup import document_arg
from tanglenode.node.cli.support import BadInput, Context, NotFound, emit_json, json_option
from tanglenode.node.cli.terminal import for_stdout
from tanglenode.protocol import weave_regex
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.weave_file import (
    MAX_FILE_BYTES,
    WeaveError,
    WeaveFile,
    parse_file,
    validate,
)

FORMATS = ("weave5c", "text3", "hili3", "text1")


def _obj() -> Context:
    return click.get_current_context().find_object(Context)


def _weft(docs: Backend, doc: bytes, at: str | None) -> Any:
    """The weft (feed -> seq) of revision `at` (None: now), as the node names it."""
    return revision_weft(
        docs.call, doc, None if at is None else resolve_at(docs.call, doc, parse_at(at))
    )


@click.command("export")
@click.argument("doc")
@click.option(
    "--format",
    "form",
    type=click.Choice(FORMATS),
    default="weave5c",
    show_default=True,
    help="The form (docs/WEAVE.md).",
)
@click.option("--at", "at", metavar="REV", help="The revision (default: now); weave5c: as it was.")
@click.option("--from", "since", metavar="REV", help="hili3: the older revision (default: empty).")
@click.option("--out", "out", metavar="FILE", help="Write FILE instead of standard output.")
def doc_export(doc: str, form: str, at: str | None, since: str | None, out: str | None) -> None:
    """Write DOC's history in one of the causal-tree paper's forms: weave5c (every atom ever,
    with its cause and id), text3, hili3 (--from, --at dyed) or text1 (the text)."""
    from tanglenode.storage.documents.weave_export import Unexportable

    if since is not None and form != "hili3":
        raise BadInput("--from is for --format hili3")
    with Backend(_obj()) as docs:
        doc_id = document_arg(_obj(), doc, docs.call)
        if form == "text1":
            revision = None if at is None else resolve_at(docs.call, doc_id, parse_at(at))
            _write(out, read_text(docs.call, doc_id, revision)["text"].encode("utf-8"))
            return
        new = _weft(docs, doc_id, at)
        old = _weft(docs, doc_id, since) if since is not None else None
        store = docs.store()
        if store is None:
            raise NotFound("no store here to read the weave from")
        try:
            exported = store.documents.document_weave(doc_id)
        except Unexportable as error:
            raise BadInput(f"{message_text(doc_id)}: {error}") from None
    whole = weave_regex.weft2(exported.weft2(new))
    weave = exported.weave if at is None else weave_regex.at_weft(exported.weave, whole)
    if form == "weave5c":
        body = weave
    elif form == "text3":
        body = weave_regex.scour(weave)
    else:
        before = weave_regex.weft2(exported.weft2(old)) if old is not None else ""
        body = weave_regex.hili3(exported.weave, before, whole)
    _write(out, WeaveFile(form, doc_id, exported.frame, body).render())


def _write(out: str | None, data: bytes) -> None:
    if out is None:
        click.echo(for_stdout(data.decode("utf-8")), nl=False, color=True)
        return
    try:
        Path(out).write_bytes(data)
    except OSError as error:
        raise BadInput(f"cannot write {out}: {error.strerror or error}") from None


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--check", is_flag=True, help="Check FILE only; write nothing.")
@click.option("--title", "title", metavar="TITLE", help="The new document's title.")
@json_option
def doc_import(file: Path, check: bool, title: str | None, as_json: bool) -> None:
    """Check a weave5c FILE whole (exit 3 at its first bad offset), then write a new document
    of ours holding its text (other feeds' atoms cannot be signed again)."""
    try:
        with open(file, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise BadInput(f"cannot read {file}: {error.strerror or error}") from None
    try:
        loaded = parse_file(data)
        if loaded.form != "weave5c":
            raise BadInput(f"{file}: a {loaded.form} file; import takes weave5c")
        checked = validate(loaded.body, loaded.frame)
    except WeaveError as error:
        raise BadInput(f"{file}: {error}") from None
    text = weave_regex.revision(loaded.body)
    source = message_text(loaded.doc)
    summary: dict[str, Any] = {
        "source": source,
        "frame": [feed_text(feed) for feed in loaded.frame],
        "atoms": checked.atoms,
        "characters": len(text),
        "doc": None,
    }
    if not check:
        from tanglenode.node.cli.docs import edit_to

        name = title if title is not None else f"import of {source}"[:200]
        with Backend(_obj(), writes=True) as docs:
            made = docs.call("doc-create", title=name)["doc"]
            edit_to(docs.call, made, text)
        summary["doc"] = message_text(made)
    if as_json:
        emit_json(summary)
    elif summary["doc"] is None:
        click.echo(
            f"{file}: a valid weave5c of {source}: {checked.atoms} atoms in "
            f"{len(loaded.frame)} yarns, {len(text)} characters"
        )
    else:
        click.echo(summary["doc"])
