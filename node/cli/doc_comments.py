"""`tangled doc comment`, and the comments `doc show --comments` prints after the text.

A comment is a note on a range of a document's text, and the start of a
thread of replies (docs/DOCUMENTS.md, "Comments"); its range follows every
later edit, and a comment whose text was deleted stays listed, quoting the
deleted text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from tanglenode.node.cli.backend import Backend
from tanglenode.node.cli.doc_links import match_range, parse_range
from tanglenode.node.cli.doc_pages import read_text
from tanglenode.node.cli.lookup import document_arg, message_arg
from tanglenode.node.cli.names import lazy_label
from tanglenode.node.cli.support import BadInput, Context, emit_json, json_option
from tanglenode.node.present.text import safe
from tanglenode.protocol.doc_link import PREFIX as LINK_PREFIX
from tanglenode.protocol.identity import feed_text, message_text

QUOTE_SHOWN = 60  # code points of a range quoted on a comment's first line


def _obj() -> Context:
    return click.get_current_context().find_object(Context)


@click.command("comment")
@click.argument("target", metavar="DOC|LINK|COMMENT")
@click.argument("text")
@click.option("--range", "span", metavar="START:END", help="Code points of DOC's text now.")
@click.option("--match", "match", metavar="TEXT", help="The first place DOC's text holds TEXT.")
@click.option("--reply", is_flag=True, help="Answer the comment COMMENT.")
@json_option
def doc_comment(
    target: str, text: str, span: str | None, match: str | None, reply: bool, as_json: bool
) -> None:
    """Comment TEXT on a range: of DOC's text now (--range or --match), or the one LINK names
    (`doc link`); with --reply, answer the comment COMMENT. Prints the new comment's id."""
    is_link = target.startswith(LINK_PREFIX)
    ranged = span is not None or match is not None
    if (span is not None and match is not None) or (ranged and (is_link or reply)):
        raise BadInput("one of: DOC with --range or --match, a LINK, or --reply COMMENT")
    if not ranged and not is_link and not reply:
        raise BadInput("DOC takes --range START:END or --match TEXT")
    arguments: dict[str, Any] = {"text": text}
    with Backend(_obj()) as docs:
        if reply:
            arguments["reply"] = message_arg(_obj(), target, docs.call, "comment")
        elif is_link:
            arguments["link"] = target
        else:
            doc_id = document_arg(_obj(), target, docs.call)
            if match is not None:
                start, end = match_range(read_text(docs.call, doc_id)["text"], match)
            else:
                start, end = parse_range(span or "")
            arguments.update(doc=doc_id, start=start, end=end)
        made = docs.call("doc-comment", **arguments)["comment"]
    if as_json:
        emit_json({"comment": message_text(made)})
    else:
        click.echo(message_text(made))


def read_comments(call: Callable[..., Any], doc: bytes) -> list[dict[str, Any]]:
    """Every comment of `doc`, page after page."""
    comments: list[dict[str, Any]] = []
    start: int | None = 0
    while start is not None:
        page = call("doc-comments", doc=doc, start=start)
        comments += page["comments"]
        start = page["next"]
    return comments


def comments_json(comments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The comments as `doc show --comments --json` prints them: ids as text."""

    def person(entry: dict[str, Any]) -> dict[str, Any]:
        return entry | {"author": feed_text(entry["author"])}

    return [
        person(comment)
        | {
            "comment": message_text(comment["comment"]),
            "replies": [
                person(reply) | {"reply": message_text(reply["reply"])}
                for reply in comment["replies"]
            ],
        }
        for comment in comments
    ]


def comments_text(comments: list[dict[str, Any]]) -> str:
    """The comments as `doc show --comments` prints them after the text: each comment's
    range (where it starts, or `deleted`) and quote, its author and id, its text, and
    its replies indented."""
    label = lazy_label(_obj())
    lines = [f"\n-- {len(comments)} comment{'s' if len(comments) != 1 else ''}"]
    for comment in comments:
        where = "deleted" if comment["deleted"] else f"at {comment['start']}"
        quote = comment["quote"]
        shown = quote if len(quote) <= QUOTE_SHOWN else quote[: QUOTE_SHOWN - 1] + "…"
        lines.append(
            f"[{where}] {safe(shown)!r} - {safe(label(comment['author']))} "
            f"{message_text(comment['comment'])}"
        )
        lines += [f"  {safe(line)}" for line in comment["text"].splitlines() or [""]]
        for reply in comment["replies"]:
            lines.append(f"  > {safe(label(reply['author']))}: {safe(reply['text'])}")
        hidden = comment["replies_total"] - len(comment["replies"])
        if hidden:
            lines.append(f"  > ... {hidden} more replies")
    return "\n".join(lines) + "\n"
