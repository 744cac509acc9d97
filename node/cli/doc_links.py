"""`tangled doc link` and `tangled doc resolve`: links into a document's text.

A link names a range by the atoms at its ends (protocol/doc_link.py), so it
survives every later edit; `doc resolve` prints what it points at now, or,
when all of it was deleted, how it read (docs/DOCUMENTS.md, "Links").
"""

from __future__ import annotations

import click

from tanglenode.node.cli.backend import Backend
from tanglenode.node.cli.doc_pages import read_text
from tanglenode.node.cli.lookup import document_arg
from tanglenode.node.cli.support import BadInput, Context, emit_json, json_option
from tanglenode.node.cli.terminal import for_stdout
from tanglenode.protocol.identity import message_text


def _obj() -> Context:
    return click.get_current_context().find_object(Context)


def parse_range(text: str) -> tuple[int, int]:
    """`--range START:END`: code points, END excluded."""
    start, sep, end = text.partition(":")
    if not sep or not start.isdigit() or not end.isdigit() or int(end) <= int(start):
        raise BadInput(f"--range {text!r}: START:END, code points, END after START")
    return int(start), int(end)


def match_range(text: str, match: str) -> tuple[int, int]:
    """`--match TEXT`: the range of its first place in `text`."""
    start = text.find(match) if match else -1
    if start < 0:
        raise BadInput(f"--match: the text holds no {match[:60]!r}")
    return start, start + len(match)


@click.command("link")
@click.argument("doc")
@click.option(
    "--range", "span", metavar="START:END", help="Code points of the text now, END excluded."
)
@click.option("--match", "match", metavar="TEXT", help="The first place the text now holds TEXT.")
@json_option
def doc_link(doc: str, span: str | None, match: str | None, as_json: bool) -> None:
    """Print a link to a range of DOC's text that survives every later edit (the last word
    printed); `doc resolve LINK` shows what it points at."""
    if (span is None) == (match is None):
        raise BadInput("give the range: --range START:END or --match TEXT")
    with Backend(_obj()) as docs:
        doc_id = document_arg(_obj(), doc, docs.call)
        if match is not None:
            start, end = match_range(read_text(docs.call, doc_id)["text"], match)
        else:
            start, end = parse_range(span or "")
        link = docs.call("doc-link", doc=doc_id, start=start, end=end)["link"]
    if as_json:
        emit_json({"doc": message_text(doc_id), "start": start, "end": end, "link": link})
    else:
        click.echo(f"{message_text(doc_id)} {start}:{end} {link}")


@click.command("resolve")
@click.argument("link")
@json_option
def doc_resolve(link: str, as_json: bool) -> None:
    """Print the text LINK points at now; when all of it was deleted, say so (on standard
    error) and print how it read when linked."""
    with Backend(_obj()) as docs:
        found = docs.call("doc-resolve", link=link)
    if as_json:
        emit_json(
            {
                "doc": message_text(found["doc"]),
                "text": found["text"],
                "start": found["start"],
                "deleted": found["deleted"],
                "was": found["was"],
            }
        )
        return
    if found["deleted"]:
        click.echo("deleted since the link was taken; it read:", err=True)
        click.echo(for_stdout(found["was"] or ""), color=True)
    else:
        click.echo(for_stdout(found["text"]), color=True)
