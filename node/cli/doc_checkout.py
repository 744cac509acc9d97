"""Files that hold a revision of a document, and edits made from them (`doc show --out`,
`doc checkout`, `doc edit`).

Theory of operation
-------------------
An edit says which revision it was made against, its *base*, and the node
applies it there, merged with whatever happened since (docs/DOCUMENTS.md,
"Edits from a base"). So a file taken out of a document must remember the
revision it holds: `doc show D --out FILE` writes FILE and, beside it,
`FILE.tangled`, a small JSON sidecar naming the document and the revision
as a weft (`{"doc": "%...", "base": {"@FEED": seq, ...}}`), which every
node holding those messages reads as the same text. A sidecar, not a header
inside the file: the file stays exactly the document's text, for any tool
to read and diff, and the sidecar is plain to see, copy or delete.

`edit_from` reads the base's text, diffs the file against it (in whole words
and lines, `docs.edit_splices`: protocol/doc_diff.py) and sends the splices
with the base; a long edit goes in several requests, each next one based on
the revision the previous one made (the node's reply says it: the base with
our messages, which is the file's text exactly). The sidecar then names that revision, so the
next edit of the file starts from it. Nothing others wrote is lost: their
text is not in the base, so no splice can delete it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tanglenode.node.cli.doc_pages import read_text
from tanglenode.node.cli.support import BadInput
from tanglenode.protocol import json_depth
from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import feed_text, message_text, parse_feed, parse_message_id

SUFFIX = ".tangled"
MAX_SIDECAR_BYTES = 4 << 20  # a weft of 65,536 feeds, and room to spare

Weft = dict[bytes, int]


def sidecar(path: str) -> Path:
    return Path(path + SUFFIX)


def weft_json(weft: Weft) -> dict[str, int]:
    return {feed_text(feed): seq for feed, seq in sorted(weft.items())}


def weft_text(weft: Weft) -> str:
    """A weft as `--at` and `--base` read it: @FEED=SEQ,..."""
    return ",".join(f"{feed_text(feed)}={seq}" for feed, seq in sorted(weft.items()))


def write_checkout(path: str, doc: bytes, text: str, weft: Weft) -> None:
    """FILE holds `text`, and its sidecar the revision it is: the old sidecar goes first, so
    a failure between the two leaves FILE with no revision, never with another's. Each is
    written whole and moved into place; FILE keeps its mode, and a link to a file stays a
    link (the file it names is written)."""
    forget_base(path)
    _replace(Path(os.path.realpath(path)), text.encode("utf-8"))
    write_base(path, doc, weft)


def write_base(path: str, doc: bytes, weft: Weft) -> None:
    """FILE's sidecar names `weft` as the revision FILE holds."""
    record = {"doc": message_text(doc), "base": weft_json(weft)}
    _replace(sidecar(path), (json.dumps(record, indent=1) + "\n").encode())


def forget_base(path: str) -> None:
    """FILE no longer holds a revision anyone can name: its sidecar goes."""
    try:
        sidecar(path).unlink(missing_ok=True)
    except OSError as error:
        raise BadInput(f"cannot remove {sidecar(path)}: {error.strerror or error}") from None


def _replace(path: Path, data: bytes) -> None:
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = None
    try:
        with tempfile.NamedTemporaryFile(
            dir=path.parent, prefix=f".{path.name}.", suffix=".partial", delete=False
        ) as file:
            temporary = Path(file.name)
            file.write(data)
    except OSError as error:
        raise BadInput(f"cannot write {path}: {error.strerror or error}") from None
    try:
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise BadInput(f"cannot write {path}: {error.strerror or error}") from None


def read_base(path: str, doc: bytes) -> Weft | None:
    """The revision FILE's sidecar names, None if it has none; `BadInput` if the sidecar is
    malformed or names another document."""
    where = sidecar(path)
    try:
        with open(where, "rb") as file:
            data = file.read(MAX_SIDECAR_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise BadInput(f"cannot read {where}: {error.strerror or error}") from None
    try:
        record = json_depth.loads(data) if len(data) <= MAX_SIDECAR_BYTES else None
        named, base = record["doc"], record["base"]
        weft = {parse_feed(feed): seq for feed, seq in base.items()}
        if not all(type(seq) is int and 0 <= seq < 1 << 63 for seq in weft.values()):
            raise ValueError("a seq is not a count")
        doc_named = parse_message_id(named)
    except (ValueError, TypeError, KeyError, AttributeError, BadIdentifier) as error:
        raise BadInput(
            f"{where} is not a revision `doc show --out` wrote ({error}): delete it, and take "
            "the document out again or give --base"
        ) from None
    if doc_named != doc:
        raise BadInput(f"{where} holds a revision of {named}, not of {message_text(doc)}")
    return weft


class LostBase(BadInput):
    """A long edit's next request has no base: our own edits made elsewhere meanwhile are
    woven in among its messages (what was published stays; the rest is not sent)."""


def edit_from(
    call: Callable[..., Any],
    doc: bytes,
    base: Any,
    new: str,
    split: Callable[[str, str], list],
    progress: Callable[[Weft | None], None] = lambda weft: None,
) -> tuple[list[dict[str, Any]], Weft | None]:
    """Make of revision `base` the text `new`, merged with what happened since: the messages
    published, and the revision the edited text is now (`new`, exactly; None when no weft
    names it: we edited the document elsewhere since `base`). `split(old, new)` gives the
    splices in request-sized groups; `call(op, **arguments)` asks the node; `progress` is
    told the revision each request left, so a long edit cut short (an interrupt, a lost
    connection) resumes from there, never sending a part twice."""
    shown = read_text(call, doc, base)
    weft: Weft | None = shown["weft"]
    published: list[dict[str, Any]] = []
    for group in split(shown["text"], new):
        if weft is None:
            raise LostBase(
                f"published {len(published)} messages of the edit, then lost its base: you "
                f"edited {message_text(doc)} elsewhere meanwhile; the rest of the file is "
                "not published (`doc edit --force` makes the document exactly the file)"
            )
        reply = call("doc-edit", doc=doc, splices=group, base=weft)
        published.extend(reply["messages"])
        weft = reply["base"]
        progress(weft)
    return published, weft
