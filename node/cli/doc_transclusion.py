"""`tangled doc include`, and the rendering `doc show --transclude` prints.

A document may show a live range of another document in place
(docs/DOCUMENTS.md, "Transclusion"): `doc include D LINK --at POS` places
the range LINK names (`doc link`) after POS code points of D's text.
`doc show D` prints D's own text exactly; `--transclude` prints it with
each inclusion's text now between `⟦` and `⟧`, and each one that cannot be
followed as `⟦why: document⟧` (a cycle, a private document this node cannot
open, one it does not hold, a range all deleted, too deep, too many).
"""

from __future__ import annotations

from typing import Any

import click

from tanglenode.node.cli.backend import Backend
from tanglenode.node.cli.lookup import document_arg
from tanglenode.node.cli.support import Context, emit_json, json_option
from tanglenode.protocol.identity import feed_text, message_text


def _obj() -> Context:
    return click.get_current_context().find_object(Context)


@click.command("include")
@click.argument("doc")
@click.argument("link")
@click.option(
    "--at",
    "at",
    type=click.IntRange(min=0),
    required=True,
    metavar="POS",
    help="Code points of DOC's text now before the range.",
)
@json_option
def doc_include(doc: str, link: str, at: int, as_json: bool) -> None:
    """Show the range LINK names (of another document) inside DOC, after its first POS
    code points, following that range's edits; prints the inclusion's id."""
    with Backend(_obj()) as docs:
        doc_id = document_arg(_obj(), doc, docs.call)
        made = docs.call("doc-include", doc=doc_id, at=at, link=link)["include"]
    if as_json:
        emit_json({"include": message_text(made)})
    else:
        click.echo(message_text(made))


def rendered_text(parts: list[dict[str, Any]]) -> str:
    """A `doc-render` reply's parts as text (see the module)."""
    out = []
    for part in parts:
        kind = part["kind"]
        if kind == "text":
            out.append(part["text"])
        elif kind == "included":
            out.append("⟦" + rendered_text(part["parts"]) + "⟧")
        elif kind in ("too-many", "cut"):
            out.append(f"⟦{kind}: {part['text']} more⟧")
        else:
            name = message_text(part["doc"])[:12] if part.get("doc") else "?"
            shown = f" {part['text']}" if kind == "deleted" else ""
            out.append(f"⟦{kind}: {name}{shown}⟧")
    return "".join(out)


def rendered_json(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parts as `--json` prints them: ids as text."""
    shown = []
    for part in parts:
        body = dict(part)
        if body.get("doc") is not None:
            body["doc"] = message_text(body["doc"])
            body["author"] = feed_text(body["author"])
        if "parts" in body:
            body["parts"] = rendered_json(body["parts"])
        shown.append(body)
    return shown
