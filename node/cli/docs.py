"""`tangled doc ...`: collaborative text documents (docs/DOCUMENTS.md), edited as people do.

Every command asks through node/cli/backend.py (the IPC `doc-` ops,
docs/IPC.md): the running node, or, while it is stopped, the node's own
handlers on the store opened here, writes under the data directory's lock
and signed with the node's key, so both paths answer alike. `doc watch`
follows the running node.

Positions and lengths are code points. Every edit says the revision it
was made against (its base) and the node merges it with what happened
since. `doc show --out FILE` (or `doc checkout`) writes FILE and a sidecar
naming its revision; `doc edit D FILE` diffs FILE against that revision in
whole words and lines (protocol/doc_diff.py's `edit_splices`, so blame,
links and comments stay on whole words) and publishes the splices with it
as their base (node/cli/doc_checkout.py), so nothing others wrote since is
lost. `--force` is the old way, named as what it is: make
the document exactly FILE, deleting what FILE lacks, whoever wrote it; its
splices carry the version they were read at with `exclusive`, so they never
land on a text another edit changed meanwhile: the node refuses them
(`conflict`) and it reads and diffs again (`edit_to`). A revision (`--at`,
`--base`, FROM, TO) is a message id as printed (%...), a weft
`@FEED=SEQ,...` (both name the same text on every node), or this node's
own version number (`v12` or `12`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import aclosing
from typing import Any

import click
import trio

from tanglenode.node.cli import doc_checkout
from tanglenode.node.cli.backend import Backend
from tanglenode.node.cli.doc_pages import read_text, revision_weft
from tanglenode.node.cli.doc_render import (
    blame_lines,
    changed_lines,
    diff_page,
    dyed,
    span_json,
)
from tanglenode.node.cli.doc_revisions import parse_at, resolve_at
from tanglenode.node.cli.lookup import document_arg, message_arg
from tanglenode.node.cli.names import lazy_label
from tanglenode.node.cli.support import (
    COUNT,
    INDEX,
    BadInput,
    Context,
    NotFound,
    emit_json,
    json_option,
)
from tanglenode.node.cli.terminal import for_stdout
from tanglenode.node.ipc.client import NodeError, NodeNotRunning, connect
from tanglenode.node.present.render import format_timestamp
from tanglenode.node.present.text import safe, safe_json
from tanglenode.protocol.doc_diff import edit_splices
from tanglenode.protocol.doc_ipc import MAX_SPLICE_CHARS, MAX_SPLICES, MAX_VERSIONS_PAGE
from tanglenode.protocol.errors import TanglenodeError
from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.ipc import ErrorKind

MAX_EDIT_BYTES = 4 << 20  # a file `doc edit` reads: the diff and its splices stay quick
EDIT_TRIES = 5  # reads and diffs of one `doc edit` while others edit the document


@click.group("doc")
def doc_command() -> None:
    """Text documents: create, edit, insert, delete, show, log, diff, blame, watch, list,
    link, resolve, comment, include, export, import.

    DOC is a document's id (or enough of its start to be the only message held
    so: 4 characters after the % at least) or its title (exactly, else but for
    case), as `doc list` prints them.
    """


def _obj() -> Context:
    return click.get_current_context().find_object(Context)


def _doc(text: str, call: Callable[..., Any] | None = None) -> bytes:
    """DOC: a document's id, whole or cut short, or its title (node/cli/lookup.py); `call`
    asks the store where a `Backend` is open already."""
    return document_arg(_obj(), text, call)


# -- command-line values ----------------------------------------------------------------------


def requests(splices: list[list[Any]]) -> Iterator[list[list[Any]]]:
    """Splices in `doc-edit`-sized groups (`MAX_SPLICES`, `MAX_SPLICE_CHARS`), in order; a
    long insert is cut into inserts one after the other, which is the same edit."""
    group: list[list[Any]] = []
    chars = 0
    for kind, pos, what in splices:
        pieces = [(pos, what)]
        if kind == "ins":
            pieces = [
                (pos + start, what[start : start + MAX_SPLICE_CHARS])
                for start in range(0, len(what), MAX_SPLICE_CHARS)
            ]
        for at, value in pieces:
            size = len(value) if kind == "ins" else 0
            if group and (len(group) >= MAX_SPLICES or chars + size > MAX_SPLICE_CHARS):
                yield group
                group, chars = [], 0
            group.append([kind, at, value])
            chars += size
    if group:
        yield group


def argument_text(text: str, what: str) -> str:
    """A command-line argument that must be UTF-8 text (argv can hold any bytes)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{what} is not UTF-8 text") from None
    return text


def read_text_file(path: str) -> str:
    """FILE ('-': stdin) as UTF-8 text, at most `MAX_EDIT_BYTES`; else `BadInput`."""
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_EDIT_BYTES + 1)
        else:
            with open(path, "rb") as file:
                data = file.read(MAX_EDIT_BYTES + 1)
    except OSError as error:
        raise BadInput(f"cannot read {path}: {error.strerror or error}") from None
    if len(data) > MAX_EDIT_BYTES:
        raise BadInput(f"{path}: over {MAX_EDIT_BYTES >> 20} MiB; doc edit reads at most that")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise BadInput(f"{path}: not UTF-8 text (byte {error.start})") from None


class EditConflict(TanglenodeError):
    """The document kept changing under `doc edit`, try after try (exit 1)."""


def edit_to(
    call: Callable[..., Any], doc: bytes, new: str, tries: int = EDIT_TRIES
) -> list[dict[str, Any]]:
    """Make `doc`'s text `new` though others edit it meanwhile; the messages published.

    A try reads the version and the text together (`doc-show`, page by page:
    node/cli/doc_pages.py), diffs, and
    sends the splices with that version as `base`: in one request whenever
    the request limits allow, else in several, each next one based on the
    version the previous one made (its reply's last message). The node
    refuses splices whose base the document has moved past (`conflict`),
    publishing nothing; the next try reads again and diffs from there (what
    earlier requests published stays: the diff starts from it). `call(op,
    **arguments)` asks the node, or the store (`Backend.call`).
    """
    published: list[dict[str, Any]] = []
    for _try in range(tries):
        shown = read_text(call, doc)
        base: int | None = shown["version"]
        try:
            for group in requests(edit_splices(shown["text"], new)):
                messages = call("doc-edit", doc=doc, splices=group, base=base, exclusive=True)[
                    "messages"
                ]
                published.extend(messages)
                base = messages[-1]["version"] if messages else base
                if base is None:  # a reply without the version made: read again
                    break
            else:
                return published
        except NodeError as error:
            if error.kind != ErrorKind.CONFLICT:
                raise
    raise EditConflict(
        f"{message_text(doc)} kept changing while `doc edit` edited it ({tries} tries): its"
        " text is not the file's yet (a long edit may be partly published); run it again"
    )


def _publish(
    docs: Backend, doc: bytes, splices: list[list[Any]], as_json: bool, base: str | None
) -> None:
    """Publish `splices`, made against revision `base` (None: the current text), in as many
    requests as they need, each next one based on the revision the last made; print the
    versions made."""
    published: list[dict[str, Any]] = []
    at: Any = None if base is None else resolve_at(docs.call, doc, parse_at(base))
    for group in requests(splices):
        if at is None and published:
            raise doc_checkout.LostBase("the insert lost its base part way: run it again")
        reply = docs.call("doc-edit", doc=doc, splices=group, base=at)
        published.extend(reply["messages"])
        at = reply["base"]
    _print_published(doc, published, as_json)


BASE_HELP = "The revision POS counts in (a message id, a weft, v12); default: the text now."


def _print_published(doc: bytes, published: list[dict[str, Any]], as_json: bool) -> None:
    rows = [{"msg": message_text(m["msg"]), "version": m["version"]} for m in published]
    if as_json:
        emit_json({"doc": message_text(doc), "messages": rows})
    elif not rows:
        click.echo("unchanged", err=True)
    for row in rows if not as_json else ():
        click.echo(f"v{row['version']}  {row['msg']}")


# -- editing ------------------------------------------------------------------------------


@doc_command.command("create")
@click.argument("title")
@click.option(
    "--group",
    "group",
    metavar="GROUP",
    help="Make it private to GROUP: sealed with the group's key, readable by members only.",
)
@json_option
def doc_create(title: str, group: str | None, as_json: bool) -> None:
    """Start a document called TITLE; prints its id."""
    title = argument_text(title, "TITLE")
    arguments: dict[str, Any] = {"title": title}
    if group is not None:
        arguments["group"] = message_arg(_obj(), group, what="group")
    with Backend(_obj(), writes=True) as docs:
        doc = message_text(docs.call("doc-create", **arguments)["doc"])
    if as_json:
        shown = None if group is None else message_text(arguments["group"])
        emit_json({"doc": doc, "title": title, "group": shown})
    else:
        click.echo(doc)


@doc_command.command("edit")
@click.argument("doc")
@click.argument("file", metavar="FILE|-")
@click.option("--base", "base", metavar="REV", help="The revision FILE was made from.")
@click.option(
    "--force", is_flag=True, help="Make DOC exactly FILE, deleting what others wrote since."
)
@click.option(
    "--exclusive", is_flag=True, help="Publish nothing if DOC moved past the base; exit 1."
)
@json_option
def doc_edit(
    doc: str, file: str, base: str | None, force: bool, exclusive: bool, as_json: bool
) -> None:
    """Publish what FILE ('-': stdin) changes in the revision of DOC it was made from, merged
    with what others did since. The revision is FILE's sidecar's (`doc show --out FILE`) or
    --base's; with neither, nothing is published unless --force. The change is found in
    whole words and lines: a replaced phrase is one deletion and one insertion."""
    doc_id, new = _doc(doc), read_text_file(file)
    if force and (base is not None or exclusive):
        raise BadInput("--force makes the document exactly FILE: it takes no --base or --exclusive")
    sidecar = None if file == "-" or force else doc_checkout.read_base(file, doc_id)
    at: Any = parse_at(base) if base is not None else sidecar
    if base is None and sidecar is None and not force:
        raise BadInput(
            f"no base: which revision of {message_text(doc_id)} was {file} made from? "
            f"`tangled doc show {message_text(doc_id)} "
            "--out FILE` writes a file that says it; or give --base REV; or --force to make "
            "the document exactly the file, deleting what others wrote since"
        )
    keeps = file != "-"  # FILE's sidecar follows what is published, request by request

    def progress(made: Any) -> None:
        if keeps and made is None:
            doc_checkout.forget_base(file)
        elif keeps:
            doc_checkout.write_base(file, doc_id, made)

    with Backend(_obj(), writes=True) as docs:
        at = resolve_at(docs.call, doc_id, at)
        if force:
            published = edit_to(docs.call, doc_id, new)
        elif exclusive:
            published = _exclusive(docs.call, doc_id, at, new, progress)
        else:
            published, made = doc_checkout.edit_from(docs.call, doc_id, at, new, _groups, progress)
            if made is None and keeps:
                click.echo(
                    f"{file}: published; its revision has no name (you edited the document "
                    "elsewhere meanwhile): `doc show --out` before editing it again",
                    err=True,
                )
    _print_published(doc_id, published, as_json)


def _groups(old: str, new: str) -> list[list[list[Any]]]:
    return list(requests(edit_splices(old, new)))


def _exclusive(
    call: Callable[..., Any], doc: bytes, at: Any, new: str, progress: Callable[[Any], None]
) -> list[dict[str, Any]]:
    """`doc edit --exclusive`: the edit, only if the document is still at its base."""
    shown = read_text(call, doc, at)
    groups = _groups(shown["text"], new)
    if len(groups) > 1:
        raise BadInput("--exclusive edits fit one request; this one does not: leave it out")
    if not groups:
        return []
    reply = call("doc-edit", doc=doc, splices=groups[0], base=shown["weft"], exclusive=True)
    progress(reply["base"])
    return reply["messages"]


@doc_command.command("insert")
@click.argument("doc")
@click.argument("pos", type=INDEX)
@click.argument("text")
@click.option("--base", "base", metavar="REV", help=BASE_HELP)
@json_option
def doc_insert(doc: str, pos: int, text: str, base: str | None, as_json: bool) -> None:
    """Insert TEXT at code point POS of DOC (of its revision --base, merged with what came
    since)."""
    if not argument_text(text, "TEXT"):
        raise BadInput("nothing to insert: TEXT is empty")
    with Backend(_obj(), writes=True) as docs:
        _publish(docs, _doc(doc, docs.call), [["ins", pos, text]], as_json, base)


@doc_command.command("delete")
@click.argument("doc")
@click.argument("pos", type=INDEX)
@click.argument("length", type=COUNT)
@click.option("--base", "base", metavar="REV", help=BASE_HELP)
@json_option
def doc_delete(doc: str, pos: int, length: int, base: str | None, as_json: bool) -> None:
    """Delete LENGTH code points of DOC from POS (of its revision --base: only what it
    held, never what others wrote since)."""
    with Backend(_obj(), writes=True) as docs:
        _publish(docs, _doc(doc, docs.call), [["del", pos, length]], as_json, base)


# -- reading ------------------------------------------------------------------------------


@doc_command.command("show")
@click.argument("doc")
@click.option("--at", "at", metavar="REV", help="A message id, a version (v12) or @FEED=SEQ,...")
@click.option("--out", "out", metavar="FILE", help="Write FILE, and FILE.tangled: its revision.")
@click.option("--comments", is_flag=True, help="Also print the comments, after the text.")
@click.option("--transclude", is_flag=True, help="Show included ranges of others in place.")
@json_option
def doc_show(
    doc: str, at: str | None, out: str | None, comments: bool, transclude: bool, as_json: bool
) -> None:
    """Print DOC's text, now or --at an earlier revision, exactly as it is; --out writes it
    to FILE, with the revision beside it for `doc edit DOC FILE`; --comments adds the
    comments on its ranges (as they stand now), with their replies; --transclude shows
    the ranges of other documents it includes in place, each marked."""
    from tanglenode.node.cli.doc_comments import comments_json, comments_text, read_comments
    from tanglenode.node.cli.doc_transclusion import rendered_json, rendered_text

    arguments: dict[str, Any] = {"doc": _doc(doc)}
    if at is not None:
        arguments["at"] = parse_at(at)
    if (comments or transclude) and out is not None:
        raise BadInput("--out writes the text alone: not with --comments or --transclude")
    if transclude and at is not None:
        raise BadInput("--transclude shows the text now: not with --at")
    noted: list[dict[str, Any]] = []
    with Backend(_obj()) as docs:
        if "at" in arguments:
            arguments["at"] = resolve_at(docs.call, arguments["doc"], arguments["at"])
        shown = read_text(docs.call, arguments["doc"], arguments.get("at"))
        if comments:
            noted = read_comments(docs.call, arguments["doc"])
        parts = docs.call("doc-render", doc=arguments["doc"])["parts"] if transclude else []
    revision = doc_checkout.weft_text(shown["weft"])
    if out == "-":
        raise BadInput("--out takes a file name; without it the text goes to standard output")
    if out is not None:
        doc_checkout.write_checkout(out, arguments["doc"], shown["text"], shown["weft"])
    if as_json:
        emit_json(
            {
                "doc": message_text(arguments["doc"]),
                "at": at,
                "version": shown["version"],
                "weft": doc_checkout.weft_json(shown["weft"]),
                "text": shown["text"],
            }
            | ({"comments": comments_json(noted)} if comments else {})
            | ({"rendered": rendered_json(parts)} if transclude else {})
        )
    elif out is not None:
        click.echo(f"{out}: revision {revision}", err=True)
    else:
        # exact into a file (color=True: click strips nothing), made safe on a terminal
        text = rendered_text(parts) if transclude else shown["text"]
        click.echo(for_stdout(text), nl=False, color=True)
        if comments:
            click.echo(comments_text(noted), nl=False)


@doc_command.command("checkout")
@click.argument("doc")
@click.argument("file")
@click.option("--at", "at", metavar="REV", help="A message id, a version (v12) or @FEED=SEQ,...")
@click.pass_context
def doc_checkout_command(context: click.Context, doc: str, file: str, at: str | None) -> None:
    """Write DOC's text to FILE, and FILE.tangled: the revision, for `doc edit DOC FILE`."""
    context.invoke(doc_show, doc=doc, at=at, out=file, as_json=False)


@doc_command.command("list")
@json_option
def doc_list(as_json: bool) -> None:
    """The documents the store holds: id, title, author, created, length, versions."""
    documents: list[dict[str, Any]] = []
    with Backend(_obj()) as docs:
        start: int | None = 0
        while start is not None:
            page = docs.call("doc-list", start=start)
            documents.extend(page["documents"])
            start = page["next"]
    rows = [
        {
            "doc": message_text(d["doc"]),
            "title": d["title"],
            "author": feed_text(d["author"]),
            "created": d["created"],
            "length": d["length"],
            "versions": d["versions"],
            "set_aside": d["set_aside"],
            "group": None if d.get("group") is None else message_text(d["group"]),
        }
        for d in documents
    ]
    if as_json:
        emit_json(rows)
        return
    label = lazy_label(_obj())
    for row, document in zip(rows, documents, strict=True):
        aside = f"  {row['set_aside']} set aside" if row["set_aside"] else ""
        private = f"  private to {row['group'][:10]}" if row["group"] else ""
        click.echo(
            f"{row['doc']}  {safe(label(document['author']))}  "
            f"{format_timestamp(row['created'])}  v{row['versions']}  {row['length']} chars  "
            f"{safe_json(row['title'])}{aside}{private}"
        )


@doc_command.command("log")
@click.argument("doc")
@click.option("-p", "--patch", is_flag=True, help="Show each edit's change, dyed.")
@json_option
def doc_log(doc: str, patch: bool, as_json: bool) -> None:
    """DOC's versions (number, author, time, +inserted -deleted, id), and the edits set aside;
    -p shows what each edit changed, as its author saw it."""
    doc_id = _doc(doc)
    versions: list[dict[str, Any]] = []
    with Backend(_obj()) as docs:
        page = docs.call("doc-log", doc=doc_id, since=0, limit=MAX_VERSIONS_PAGE)
        aside, aside_total = page["set_aside"], page["set_aside_total"]
        versions.extend(page["versions"])
        while len(page["versions"]) == MAX_VERSIONS_PAGE:  # since: the first version wanted
            since = versions[-1]["version"] + 1
            page = docs.call("doc-log", doc=doc_id, since=since, limit=MAX_VERSIONS_PAGE)
            versions.extend(page["versions"])
        changes = {v["msg"]: _change(docs.call, doc_id, v) for v in versions} if patch else {}
    rows = [
        {**v, "msg": message_text(v["msg"]), "author": feed_text(v["author"])} for v in versions
    ]
    if patch:
        for row, version in zip(rows, versions, strict=True):
            row["change"] = [span_json(span) for span in changes[version["msg"]]]
    aside_rows = [{**a, "msg": message_text(a["msg"])} for a in aside]
    if as_json:
        emit_json(
            {
                "doc": message_text(doc_id),
                "versions": rows,
                "set_aside": aside_rows,
                "set_aside_total": aside_total,
            }
        )
        return
    label = lazy_label(_obj())
    tty = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for row, version in zip(rows, versions, strict=True):
        click.echo(
            f"v{row['version']:<5} {safe(label(version['author'])):<14.14}  "
            f"{format_timestamp(row['timestamp'])}  +{row['inserted']} -{row['deleted']}  "
            f"{row['msg']}"
        )
        for line in changed_lines(changes.get(version["msg"], []), tty, label):
            click.echo(f"    {line}", color=True)
    for row in aside_rows:
        click.echo(safe(f"set aside  {row['msg']}  {row['reason']}: {row['detail']}"))
    if aside_total > len(aside_rows):
        click.echo(f"set aside  ... and {aside_total - len(aside_rows)} more")


def _change(call: Callable[..., Any], doc: bytes, version: dict[str, Any]) -> list[dict]:
    """What one edit changed, dyed: from its author's text just before it to just after."""
    if version["version"] == 0:
        return []
    after = revision_weft(call, doc, version["msg"])
    before = dict(after)
    before[version["author"]] = after[version["author"]] - 1
    return call("doc-diff", doc=doc, **{"from": before, "to": after})["spans"]


@doc_command.command("diff")
@click.argument("doc")
@click.argument("old", metavar="FROM")
@click.argument("new", metavar="[TO]", required=False, default="now")
@click.option("--html", "as_html", is_flag=True, help="A self-contained HTML page.")
@json_option
def doc_diff(doc: str, old: str, new: str, as_html: bool, as_json: bool) -> None:
    """What changed in DOC from FROM to TO (default: `now`, the current text), dyed: inserted
    text green, removed red, by author."""
    doc_id = _doc(doc)
    with Backend(_obj()) as docs:
        start, end = (resolve_at(docs.call, doc_id, parse_at(at)) for at in (old, new))
        if start is None:  # FROM is now: named by its weft, as the request needs one
            start = revision_weft(docs.call, doc_id)
        spans = docs.call("doc-diff", doc=doc_id, **{"from": start, "to": end})["spans"]
    if as_json:
        rows = [
            {
                "text": s["text"],
                "inserted_by": s["inserted_by"] and feed_text(s["inserted_by"]),
                "removed_by": s["removed_by"] and feed_text(s["removed_by"]),
            }
            for s in spans
        ]
        emit_json({"doc": message_text(doc_id), "from": old, "to": new, "spans": rows})
    elif as_html:
        title = f"{message_text(doc_id)} from {old} to {new}"
        click.echo(diff_page(title, spans, lazy_label(_obj())))
    else:
        tty = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        spans = [span | {"text": for_stdout(span["text"])} for span in spans]
        label = lazy_label(_obj())
        click.echo("".join(dyed(span, tty, label) for span in spans), nl=False, color=True)
        if spans and not spans[-1]["text"].endswith("\n"):
            click.echo()


@doc_command.command("blame")
@click.argument("doc")
@click.option("--at", "at", metavar="REV", help="A message id, a version (v12) or @FEED=SEQ,...")
@json_option
def doc_blame(doc: str, at: str | None, as_json: bool) -> None:
    """DOC line by line, each with the author who typed most of it, that author's edit which
    typed most of it (its id, cut short), and when."""
    arguments: dict[str, Any] = {"doc": _doc(doc)}
    with Backend(_obj()) as docs:
        if at is not None:
            arguments["at"] = resolve_at(docs.call, arguments["doc"], parse_at(at))
        spans = docs.call("doc-blame", **arguments)["spans"]
        lines = blame_lines(spans, None if as_json else _erased_marker)
        when = _edit_times(docs.call, arguments["doc"]) if lines else {}
    if as_json:
        rows = [
            {"text": s["text"], "author": feed_text(s["author"]), "msg": message_text(s["msg"])}
            | _erased_json(s)
            for s in spans
        ]
        lines_json = [
            {
                "author": feed_text(author),
                "msg": message_text(edit),
                "timestamp": when.get(edit),
                "text": text,
            }
            for author, edit, text in lines
        ]
        shown = message_text(arguments["doc"])
        emit_json({"doc": shown, "at": at, "lines": lines_json, "spans": rows})
        return
    label = lazy_label(_obj())
    for author, edit, text in lines:
        stamp = format_timestamp(when[edit]) if edit in when else "?"
        who, short = safe(label(author)), message_text(edit)[:9]
        click.echo(f"{who:<14.14}  {stamp}  {short}  {for_stdout(text)}", color=True)


def _erased_marker(span: dict[str, Any]) -> str:
    """Where an erased edit's atoms are in a blamed line: by whose request, how many."""
    by = "purged here" if not span["erased"] else f"by {message_text(span['erased'])[:9]}"
    return f"⟦erased {span['atoms']} {by}⟧"


def _erased_json(span: dict[str, Any]) -> dict[str, Any]:
    """An erased edit's span in `doc blame --json`: the request (null: purged here), the atoms."""
    if span.get("erased") is None:
        return {}
    by = span["erased"]
    return {"erased": message_text(by) if by else None, "atoms": span["atoms"]}


def _edit_times(call: Callable[..., Any], doc: bytes) -> dict[bytes, int]:
    """Each version's message id -> its timestamp (ms), from `doc-log`."""
    when: dict[bytes, int] = {}
    since = 0
    while True:
        page = call("doc-log", doc=doc, since=since, limit=MAX_VERSIONS_PAGE)["versions"]
        when.update({v["msg"]: v["timestamp"] for v in page})
        if len(page) < MAX_VERSIONS_PAGE:
            return when
        since = page[-1]["version"] + 1


# -- live ---------------------------------------------------------------------------------


@doc_command.command("watch")
@click.argument("doc")
@click.option("--since", type=INDEX, default=None, help="Resume after VERSION (no snapshot).")
@click.option("--count", type=COUNT, default=None, help="Stop after N versions.")
@json_option
def doc_watch(doc: str, since: int | None, count: int | None, as_json: bool) -> None:
    """Follow DOC live: its text, then each splice as it arrives (Ctrl-C stops)."""
    doc_id = _doc(doc)
    obj = _obj()
    printer = _WatchPrinter(as_json)
    try:
        trio.run(_watch, obj, doc_id, since, count, printer)
    except KeyboardInterrupt:
        printer.end()
        return
    except NodeNotRunning:
        obj.require_data_dir()  # a mistyped --data-dir says so
        raise
    except NodeError as error:
        if error.kind == ErrorKind.NOT_FOUND:
            raise NotFound(str(error)) from None
        if error.kind != ErrorKind.DISCONNECTED:
            raise
        printer.end()
        click.echo("tangled: the node closed the connection", err=True)
        return
    printer.end()


async def _watch(obj: Context, doc: bytes, since: int | None, count: int | None, printer) -> None:
    """Follow `doc`; a lag resumes from the version reached (the node sends what was missed)."""
    while True:
        async with (
            await connect(obj.settings.ipc_socket_path) as client,
            aclosing(client.doc_watch(doc, since=since)) as events,
        ):
            async for event in events:
                if "lagged" in event:
                    since = event["lagged"]
                    break
                if "started" in event:
                    continue
                if "entries" in event:
                    for entry in event["entries"]:
                        printer.entry(entry)
                        since = entry["version"]
                        if count is not None:
                            count -= 1
                            if count == 0:
                                return
                else:
                    printer.snapshot(event)
                    since = event["version"]
            else:
                return


class _WatchPrinter:
    """`doc watch` output: text for people, or one JSON object per line."""

    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json
        self.line_start = True

    def _out(self, text: str) -> None:
        click.echo(for_stdout(text), nl=False, color=True)
        if text:
            self.line_start = text.endswith("\n")

    def end(self) -> None:
        if not self.line_start:
            self._out("\n")
        sys.stdout.flush()

    def snapshot(self, event: dict[str, Any]) -> None:
        if self.as_json:
            emit_json(event)
            return
        if event["start"] == 0:
            self.end()
            self._out(f"# version {event['version']}\n")
        self._out(event["text"])
        sys.stdout.flush()

    def entry(self, entry: dict[str, Any]) -> None:
        if self.as_json:
            emit_json({**entry, "msg": entry["msg"] and message_text(entry["msg"])})
            return
        self.end()
        for kind, pos, what in entry["splices"]:
            shown = safe_json(what) if kind == "ins" else what
            self._out(f"v{entry['version']} {kind} {pos} {shown}\n")
        sys.stdout.flush()


def _add_link_commands() -> None:
    """`doc link` and `doc resolve` live in their own module (node/cli/doc_links.py), and
    `doc comment` in node/cli/doc_comments.py, `doc include` in node/cli/doc_transclusion.py."""
    from tanglenode.node.cli.doc_comments import doc_comment
    from tanglenode.node.cli.doc_links import doc_link, doc_resolve
    from tanglenode.node.cli.doc_transclusion import doc_include

    doc_command.add_command(doc_link)
    doc_command.add_command(doc_resolve)
    doc_command.add_command(doc_comment)
    doc_command.add_command(doc_include)


_add_link_commands()
