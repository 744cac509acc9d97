"""What a command-line argument names: whatever a command prints, another accepts back.

Theory of operation
-------------------
Commands print feeds by name (node/cli/names.py), ids cut short (`@AbCdEfGh…`,
`%AbCdEfGh…`) and documents by title; every argument that takes a feed, a
message or a document takes those back, through the functions here:

- a **feed** (`feed_arg`): its whole id `@…` (always, held or not); its id cut
  short, at least `MIN_PREFIX_CHARS` characters after the `@` (a trailing `…`
  or `...`, as printed, is dropped): the one feed held, or given a petname,
  whose id starts so; `~NAME`: the one feed whose latest own `about` names it
  NAME (else NAME but for case); a bare NAME: our petname NAME, and where we
  gave none, the feed that chose NAME itself, as `~NAME` (a petname wins: a
  feed cannot take a name we gave by choosing it);
- a **message** (`message_arg`): its whole id `%…`, or its id cut short, at
  least `MIN_PREFIX_CHARS` characters after the `%`: the one message held (or
  held as fork evidence) whose id starts so;
- a **document** (`document_arg`): an id as a message's, or its title: the one
  document titled so (else so but for case).

A whole id is read here and asks nothing. The rest asks the store (the IPC
op `resolve`, protocol/ipc_resolve.py) through node/cli/backend.py, so it
works the same with the node running or stopped. Nothing found is
`NotFound` (exit 4); several found is `Ambiguous` (exit 3), whose message
lists them by id (at most `MAX_CANDIDATES` of them, then how many more)
so the user can give the one meant. What is typed is hostile: bounded
(`MAX_ARGUMENT_CHARS`), checked as UTF-8, and quoted back made safe for a
terminal by the CLI's error report.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tanglenode.node.cli.support import Ambiguous, BadInput, Context, NotFound
from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import (
    FEED_SIGIL,
    ID_CHARS,
    MESSAGE_SIGIL,
    feed_text,
    is_id_prefix,
    message_text,
    parse_feed,
    parse_message_id,
)
from tanglenode.protocol.ipc_resolve import MAX_CANDIDATES, MAX_NAME_BYTES, MIN_PREFIX_CHARS

__all__ = ["document_arg", "feed_arg", "message_arg"]

SELF_CHOSEN = "~"  # as node/cli/names.py shows a name a feed chose itself
MAX_ARGUMENT_CHARS = 400  # an id is 44, a name or a title at most 200 bytes
_ELLIPSES = ("…", "...")  # how an id cut short is printed

Call = Callable[..., Any]  # `Backend.call`: op, **arguments -> the reply's value


def feed_arg(obj: Context, text: str, call: Call | None = None) -> bytes:
    """The feed `text` names (see the module doc); `call` asks the store (default: a
    `Backend` of its own, opened only if the store must be asked)."""
    text = _checked(text, "feed")
    if text.startswith(FEED_SIGIL):
        body = _cut(text[1:])
        if len(body) == ID_CHARS:
            return _whole(parse_feed, FEED_SIGIL + body)
        _prefix(body, text, "feed id")
        petnamed = [feed for feed in _petnames(obj, strict=False) if _starts(feed, body)]
        found = _ask(obj, call, "feed", body)
        ids = sorted(set(petnamed) | set(found["ids"]))
        return _one(text, ids, found["more"], "feeds", f"no feed held starts {_quoted(text)}")
    if text.startswith(MESSAGE_SIGIL):
        raise BadInput(f"{_quoted(text)} is a message id; a feed is @…, ~NAME or a petname")
    if text.startswith(SELF_CHOSEN):
        return _self_chosen(obj, text, call)
    petnamed = sorted(feed for feed, name in _petnames(obj).items() if name == text)
    if petnamed:  # a petname wins over any name a feed chose itself
        return _one(text, petnamed, False, "feeds", "")
    try:
        return _self_chosen(obj, SELF_CHOSEN + text, call)
    except NotFound:
        raise NotFound(
            f"no feed is called {_quoted(text)}: no petname (`tangled name` lists them) "
            "and no feed chose it; a feed is @…, ~NAME or a petname"
        ) from None


def message_arg(obj: Context, text: str, call: Call | None = None, what: str = "message") -> bytes:
    """The message `text` names: a whole `%…` id, or one cut short (see the module doc)."""
    text = _checked(text, what)
    if not text.startswith(MESSAGE_SIGIL):
        raise BadInput(f"{_quoted(text)} is not a {what} id: it must start with '%'")
    body = _cut(text[1:])
    if len(body) == ID_CHARS:
        return _whole(parse_message_id, MESSAGE_SIGIL + body)
    _prefix(body, text, f"{what} id")
    found = _ask(obj, call, "message", body)
    missing = f"no message held starts {_quoted(text)}"
    return _one(text, found["ids"], found["more"], "messages", missing)


def document_arg(obj: Context, text: str, call: Call | None = None) -> bytes:
    """The document `text` names: its id (whole or cut short), else its title."""
    text = _checked(text, "document")
    if _looks_like_id(text):
        try:
            return message_arg(obj, text, call, "document")
        except NotFound:  # no such id; a title may start with % all the same
            titled = _titled(obj, text, call)
            if titled is None:
                raise
            return titled
    titled = _titled(obj, text, call)
    if titled is None:
        raise NotFound(f"no document titled {_quoted(text)} (`tangled doc list` lists them)")
    return titled


# -- the parts ------------------------------------------------------------------------------


def _checked(text: str, what: str) -> str:
    """`text` if it is UTF-8 text of at most `MAX_ARGUMENT_CHARS`, else `BadInput`."""
    if not text:
        raise BadInput(f"a {what} is named by its id or a name: not an empty argument")
    if len(text) > MAX_ARGUMENT_CHARS:
        raise BadInput(
            f"{_quoted(text)}: no {what} id or name is over {MAX_ARGUMENT_CHARS} characters"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{_quoted(text)} is not UTF-8 text") from None
    return text


def _quoted(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:56] + "...")


def _cut(body: str) -> str:
    """An id's text without the ellipsis it was printed with, if any."""
    for ellipsis in _ELLIPSES:
        if body.endswith(ellipsis):
            return body[: -len(ellipsis)]
    return body


def _whole(parse: Callable[[str], bytes], text: str) -> bytes:
    try:
        return parse(text)
    except BadIdentifier as error:
        raise BadInput(str(error)) from None


def _prefix(body: str, text: str, what: str) -> None:
    """Refuse `body` unless it can start an id, with enough characters to look one up."""
    if not is_id_prefix(body):
        raise BadInput(f"{_quoted(text)} is not a {what}: base64url characters after the sigil")
    if len(body) < MIN_PREFIX_CHARS:
        raise BadInput(
            f"{_quoted(text)}: a {what} cut short needs at least {MIN_PREFIX_CHARS} characters"
        )


def _looks_like_id(text: str) -> bool:
    """Whether `text` is `%` and enough of an id to be looked up as one."""
    body = _cut(text[1:])
    long_enough = len(body) >= MIN_PREFIX_CHARS
    return (
        text.startswith(MESSAGE_SIGIL)
        and long_enough
        and (len(body) == ID_CHARS or is_id_prefix(body))
    )


def _ask(obj: Context, call: Call | None, kind: str, text: str) -> dict[str, Any]:
    """The store's answer to `resolve`: `{"ids": [...], "more": bool}` (titles kept too)."""
    if call is None:
        from tanglenode.node.cli.backend import ask

        reply = ask(obj, "resolve", kind=kind, text=text)
    else:
        reply = call("resolve", kind=kind, text=text)
    found = reply["found"]
    return {
        "ids": [entry["id"] for entry in found],
        "titles": {entry["id"]: entry.get("title") for entry in found},
        "more": reply["more"],
    }


def _starts(feed: bytes, body: str) -> bool:
    return feed_text(feed)[1:].startswith(body)


def _one(text: str, ids: list[bytes], more: bool, whats: str, missing: str) -> bytes:
    """The one id found for `text`; none: `NotFound(missing)`; several: `Ambiguous`,
    listing them (feeds as `@…`, messages as `%…`)."""
    if len(ids) == 1 and not more:
        return ids[0]
    if not ids:
        raise NotFound(missing)
    shown = [(feed_text if whats == "feeds" else message_text)(found) for found in ids]
    raise Ambiguous(_several(text, whats, shown, more))


def _several(text: str, whats: str, shown: list[str], more: bool) -> str:
    listed = ", ".join(shown[:MAX_CANDIDATES])
    rest = len(shown) - MAX_CANDIDATES
    tail = f" and {rest} more" if rest > 0 else (" and more" if more else "")
    return f"{_quoted(text)} names several {whats}: {listed}{tail}; give the one meant by its id"


def _self_chosen(obj: Context, text: str, call: Call | None) -> bytes:
    """The one feed that named itself `text[1:]` (`~NAME`)."""
    name = text[len(SELF_CHOSEN) :]
    if not name or len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise BadInput(f"{_quoted(text)}: ~NAME takes a NAME of 1 to {MAX_NAME_BYTES} bytes")
    found = _ask(obj, call, "name", name)
    if not found["ids"]:
        raise NotFound(f"{_quoted(text)}: no feed held chose that name (`tangled name` lists them)")
    if len(found["ids"]) > 1 or found["more"]:
        petnames = _petnames(obj)
        shown = [
            feed_text(feed) + (f" (our {petnames[feed]!r})" if feed in petnames else "")
            for feed in found["ids"]
        ]
        raise Ambiguous(_several(text, "feeds", shown, found["more"]))
    return found["ids"][0]


def _titled(obj: Context, text: str, call: Call | None) -> bytes | None:
    """The one document titled `text` (else so but for case), None if none is."""
    if len(text.encode("utf-8")) > MAX_NAME_BYTES:
        return None  # no title is this long
    found = _ask(obj, call, "title", text)
    ids = found["ids"]
    if len(ids) > 1 or found["more"]:
        shown = [f"{message_text(doc)} {found['titles'][doc]!r}" for doc in ids]
        raise Ambiguous(_several(text, "documents", shown, found["more"]))
    return ids[0] if ids else None


def _petnames(obj: Context, *, strict: bool = True) -> dict[bytes, str]:
    """Our petnames (node/cli/names.py); a damaged file is `BadInput` when `strict` (a
    name typed is looked up in it), else none (an id cut short is looked up beside it)."""
    try:
        return read_petnames(petnames_path(obj))
    except BadInput:
        if strict:
            raise
        return {}


def petnames_path(obj: Context) -> Path:
    """Where our petnames are kept (node/present/names.py)."""
    from tanglenode.node.present.names import PETNAMES_FILE

    return obj.settings.data_dir / PETNAMES_FILE


def read_petnames(path: Path) -> dict[bytes, str]:
    """The petnames file as feed -> name (node/present/names.py); {} if there is none;
    `BadInput` (exit 3) if it is damaged or unreadable."""
    from tanglenode.node.present import names

    try:
        return names.read_petnames(path)
    except names.PetnamesDamaged as error:
        raise BadInput(str(error)) from None
