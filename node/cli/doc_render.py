"""How `tangled doc` shows documents: dyed diffs (terminal and HTML) and blame by line.

Authors are shown by a `label` the caller gives (node/cli/names.py: a petname, else
~the name the feed chose, else a short id), as every other command shows feeds."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Callable
from typing import Any

import click

from tanglenode.node.cli.terminal import for_stdout
from tanglenode.protocol.identity import feed_text


def short_feed(author: bytes | None) -> str:
    """An author as the commands show it: `@` and 8 characters of its key."""
    return "" if author is None else feed_text(author)[:9]


Label = Callable[[bytes], str]


def dyed(span: dict[str, Any], tty: bool, label: Label = short_feed) -> str:
    """A span as the terminal shows it: coloured on a TTY, wdiff's marks elsewhere."""
    text, inserted_by, removed_by = span["text"], span["inserted_by"], span["removed_by"]
    if inserted_by is None and removed_by is None:
        return text
    who = label(inserted_by or removed_by)
    if tty:
        style = (
            {"fg": "green", "underline": True}
            if inserted_by
            else {"fg": "red", "strikethrough": True}
        )
        dyed = click.style(text, **style)
        return dyed + click.style(f"({who})", dim=True)
    return f"{{+{text}+}}({who})" if inserted_by else f"[-{text}-]({who})"


def diff_page(heading: str, spans: list[dict[str, Any]], label: Label = feed_text) -> str:
    """A self-contained HTML page of dyed spans: <ins>/<del> titled by author (its label and
    its id), all escaped."""

    def title(feed: bytes) -> str:
        shown = label(feed)  # a name, or an id (whole here, where it can be copied)
        return html.escape(
            feed_text(feed) if shown.startswith("@") else f"{shown} {feed_text(feed)}"
        )

    body = []
    for span in spans:
        text = html.escape(span["text"])
        if span["inserted_by"] is not None:
            body.append(f'<ins title="{title(span["inserted_by"])}">{text}</ins>')
        elif span["removed_by"] is not None:
            body.append(f'<del title="{title(span["removed_by"])}">{text}</del>')
        else:
            body.append(text)
    heading = html.escape(heading)
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{heading}</title>\n<style>\n"
        "body { font-family: sans-serif; margin: 2em; }\n"
        "pre { white-space: pre-wrap; font-family: monospace; line-height: 1.4; }\n"
        "ins { background: #d8f5d8; color: #0a5c0a; text-decoration: underline; }\n"
        "del { background: #fadcdc; color: #8c1010; text-decoration: line-through; }\n"
        "</style>\n</head>\n<body>\n"
        f"<h1>{heading}</h1>\n<pre>{''.join(body)}</pre>\n</body>\n</html>"
    )


def blame_lines(
    spans: list[dict[str, Any]], marker: Callable[[dict[str, Any]], str] | None = None
) -> list[tuple[bytes, bytes, str]]:
    """(author, edit, line without its newline) per line: the author of most of its code
    points (the newline counts; a tie goes to who typed first in the line), and of that
    author's edits the one that typed most of it. An erased edit's span (no characters)
    shows as `marker(span)` where its atoms are, weighing nothing (no marker: nothing)."""
    lines: list[tuple[bytes, bytes, str]] = []
    parts: list[str] = []
    weights: Counter[bytes] = Counter()
    edits: Counter[tuple[bytes, bytes]] = Counter()

    def close() -> None:
        author = weights.most_common(1)[0][0]
        edit = max((n, -i, m) for i, ((a, m), n) in enumerate(edits.items()) if a == author)[2]
        lines.append((author, edit, "".join(parts)))

    for span in spans:
        if span.get("erased") is not None:
            weights[span["author"]] += 0  # counted in, weighing nothing
            edits[(span["author"], span["msg"])] += 0
            if marker is not None:
                parts.append(marker(span))
            continue
        pieces = span["text"].split("\n")
        for number, piece in enumerate(pieces):
            ends_line = number < len(pieces) - 1
            parts.append(piece)
            weights[span["author"]] += len(piece) + ends_line
            edits[(span["author"], span["msg"])] += len(piece) + ends_line
            if ends_line:
                close()
                parts, weights, edits = [], Counter(), Counter()
    if parts and any(parts):
        close()
    return lines


def span_json(span: dict[str, Any]) -> dict[str, Any]:
    return {
        "text": span["text"],
        "inserted_by": span["inserted_by"] and feed_text(span["inserted_by"]),
        "removed_by": span["removed_by"] and feed_text(span["removed_by"]),
    }


def changed_lines(spans: list[dict[str, Any]], tty: bool, label: Callable) -> list[str]:
    """The lines of a dyed diff that hold a change (the others are context nobody asked
    for), each made safe for the terminal."""
    lines, current, changed = [], "", False
    for span in spans:
        pieces = for_stdout(span["text"]).split("\n")
        for number, piece in enumerate(pieces):
            marked = span["inserted_by"] is not None or span["removed_by"] is not None
            current += dyed({**span, "text": piece}, tty, label) if piece else ""
            changed = changed or (marked and (bool(piece) or number < len(pieces) - 1))
            if number < len(pieces) - 1:
                if changed:
                    lines.append(current)
                current, changed = "", False
    if changed:
        lines.append(current)
    return lines
