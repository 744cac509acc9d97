"""The one table of IPC ops, and the one path a request is served by.

Theory of operation
-------------------
`OPS` maps each op of `protocol.ipc.PARSERS` to an `Op`: its handler, and
where it can run (whether it writes, needs our key, needs the running node,
or streams). A handler is `handler(area, request)`: the `Area` it works on
(node/ipc/area.py) and the checked request; it returns the reply's value. A
stream's handler is `handler(server, stream, id, request)` (node/ipc/streams.py).

`run_op` runs one request through that table: its checks, its handler, and its
failure as an `OpError` (the kind, the text, the reason code); it returns the
reply's value (`OpReply`) or that error, and is the only place a request is
served. `answer` encodes its result as a reply frame: the socket sends it
(node/ipc/server.py), and the CLI reads the same frame from a store it opened
itself while the node is stopped (node/cli/backend.py); the web view's writes
take the result as it is, with no frame between (node/web/actions.py). So all
three answer alike, errors included. The errors an operation raises map to an
`ErrorKind` in one place (`ERROR_KINDS`).

A new op is a request parser in protocol/ipc.py, a handler in the module of
its area, and a row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import structlog

from tanglenode.node.ipc import (
    discovery,
    docs,
    erase,
    invites,
    messages,
    peers,
    presence,
    resolve,
    scope,
    streams,
)
from tanglenode.node.ipc import (
    groups as group_ops,
)
from tanglenode.node.ipc.area import Area
from tanglenode.protocol.address import BadAddress
from tanglenode.protocol.document import DocumentError
from tanglenode.protocol.errors import BadIdentifier, InvalidMessage, TanglenodeError
from tanglenode.protocol.framing import MAX_IPC_FRAME as MAX_FRAME
from tanglenode.protocol.framing import encode_frame
from tanglenode.protocol.ipc import (
    MAX_ERROR_TEXT,
    ErrorKind,
    RequestError,
    once_key,
    parse_request,
    short,
)
from tanglenode.protocol.ipc import error_reply as encode_error
from tanglenode.protocol.message import UnpublishableMessage
from tanglenode.storage.engine.causal_window import WindowTooLarge
from tanglenode.storage.errors import (
    BadSplice,
    BelowLogFloor,
    NoIdentity,
    NotInGroup,
    OwnFeedBehind,
    OwnFeedForked,
    SealedDocument,
    StoreFull,
    UnknownDocument,
    UnknownTangle,
    UnknownTimeline,
    VersionConflict,
    ViewOff,
)
from tanglenode.storage.groups import state as groups

__all__ = [
    "ERROR_KINDS",
    "MAX_FRAME",
    "OPS",
    "Op",
    "OpError",
    "OpReply",
    "answer",
    "error_kind",
    "error_reply",
    "once_of",
    "run_op",
]

log = structlog.get_logger("ipc")

# The error kind a client sees, by the error class an operation raised (first
# match wins; anything else is `internal`). Stable codes, never class names.
ERROR_KINDS: tuple[tuple[type[BaseException], ErrorKind], ...] = (
    (InvalidMessage, ErrorKind.INVALID_MESSAGE),
    (UnpublishableMessage, ErrorKind.INVALID_MESSAGE),
    (UnknownTangle, ErrorKind.UNKNOWN_TANGLE),
    (UnknownTimeline, ErrorKind.NOT_FOUND),
    (ViewOff, ErrorKind.VIEW_OFF),
    (BelowLogFloor, ErrorKind.NOT_FOUND),  # the commands asked for are no longer logged
    (WindowTooLarge, ErrorKind.BAD_REQUEST),
    (SealedDocument, ErrorKind.SEALED),
    (UnknownDocument, ErrorKind.NOT_FOUND),
    (NotInGroup, ErrorKind.GROUP),
    (BadSplice, ErrorKind.BAD_REQUEST),
    (VersionConflict, ErrorKind.CONFLICT),
    (DocumentError, ErrorKind.BAD_REQUEST),
    (groups.UnknownGroup, ErrorKind.NOT_FOUND),
    (groups.GroupError, ErrorKind.GROUP),
    (OwnFeedForked, ErrorKind.OWN_FEED_FORKED),
    (OwnFeedBehind, ErrorKind.OWN_FEED_BEHIND),
    (StoreFull, ErrorKind.STORE_FULL),
    (NoIdentity, ErrorKind.NO_IDENTITY),
    (BadAddress, ErrorKind.BAD_REQUEST),
    (BadIdentifier, ErrorKind.BAD_REQUEST),
    (TanglenodeError, ErrorKind.REFUSED),
)


def error_kind(error: BaseException) -> ErrorKind:
    """The stable kind a client sees for `error`."""
    if isinstance(error, RequestError):
        return error.kind
    return next((kind for cls, kind in ERROR_KINDS if isinstance(error, cls)), ErrorKind.INTERNAL)


def error_reply(number: Any, error: BaseException) -> dict[str, Any]:
    """The error reply for `error`: its kind, its text, a reason code, the feed it names."""
    return OpError.of(error).reply(number)


def once_of(op: str, frame: dict[str, Any]) -> str | None:
    """The request's `once` key (node/ipc/once_replies.py), for an op that writes only."""
    once = once_key(frame)
    if once is not None and not OPS[op].writes:
        raise RequestError(ErrorKind.BAD_REQUEST, f"once is for writes; {op} writes nothing")
    return once


@dataclass(frozen=True)
class OpReply:
    """An op's reply value, as its handler returned it (ids as bytes, tuples unencoded)."""

    value: Any


@dataclass(frozen=True)
class OpError:
    """An op's refusal, typed: what its error reply carries (docs/IPC.md, "Error kinds")."""

    kind: ErrorKind
    message: str  # cut to the error text's cap, as the socket sends it
    reason: str | None = None  # a message's reason code
    feed: bytes | None = None  # the feed the error is about, where it names one

    @classmethod
    def of(cls, error: BaseException) -> OpError:
        reason, feed = getattr(error, "reason", None), getattr(error, "feed", None)
        return cls(error_kind(error), short(str(error), MAX_ERROR_TEXT) or "", reason, feed)

    def reply(self, number: Any) -> dict[str, Any]:
        """The error reply to request `number`."""
        return encode_error(number, self.kind, self.message, self.reason, self.feed)


async def run_op(area: Area, op: str, frame: Any) -> OpReply | OpError:
    """Request `frame` of an op with one reply, run: checked (`parse_request`, `once`),
    handled (`OPS[op].handler` on `area`), its failure typed (`ERROR_KINDS`).

    The one path wherever a request is served: `answer` encodes its result for
    the socket (and the CLI's store opened here, node/cli/backend.py); the web
    view's writes take it as it is (node/web/actions.py), never encoded.
    """
    try:
        request = parse_request(op, frame, area.service.store.limits)
        once = once_of(op, frame)
        if op.startswith("doc-"):  # read the documents whole, every key at hand
            await area.service.weave_backlog()
            await area.service.read_keys_if_stale()
        handler = OPS[op].handler
        if once is None or area.once is None:
            return OpReply(await handler(area, request))
        return OpReply(await area.once.run(op, once, partial(handler, area, request)))
    except TanglenodeError as error:
        return OpError.of(error)
    except Exception as error:  # a bug of ours: the client gets a reply, the node serves on
        log.exception("ipc request failed", op=short(op, 64))
        return OpError.of(error)


async def answer(area: Area, number: Any, op: str, frame: Any) -> bytes:
    """The reply frame to request `frame` (`number`, `op`) of an op with one reply: `run_op`'s
    result, encoded as the socket carries it.

    The IPC server sends it; the CLI decodes it from a store it opened itself
    (node/cli/backend.py): one path for the checks, the handler, the errors'
    kinds and the reply's encoding, wherever the request is served.
    """
    result = await run_op(area, op, frame)
    if isinstance(result, OpError):
        reply = result.reply(number)
    else:
        reply = {"id": number, "ok": result.value}
    try:
        return encode_frame(reply, MAX_FRAME)
    except (TanglenodeError, ValueError, TypeError, OverflowError) as error:
        # Every reply is bounded by design; this is the net under that.
        log.warning("ipc reply not sent", op=op, error=short(str(error)))
        too_large = RequestError(ErrorKind.REPLY_TOO_LARGE, short(str(error)) or "")
        return encode_frame(error_reply(number, too_large))


@dataclass(frozen=True)
class Op:
    """A row of `OPS`: the handler, and where the op can be served."""

    handler: Callable[..., Any]  # handler(area, request); a stream's (server, stream, id, request)
    writes: bool = False  # signs and stores: the CLI's own process needs the data dir's lock
    keyed: bool = False  # reads with our keypair (groups)
    node: bool = False  # only the running node answers (its peers, its clock, streams)
    stream: bool = False  # events follow the reply, until the client hangs up

    @property
    def key(self) -> bool:
        """Whether serving it needs our keypair."""
        return self.writes or self.keyed


# Every op of `protocol.ipc.PARSERS`, by name: the one table the server dispatches through,
# and the CLI too, on a store of its own (node/cli/backend.py). A new op is a row here.
OPS: dict[str, Op] = {
    # messages and timelines (node/ipc/messages.py)
    "publish": Op(messages.publish, writes=True),
    "get": Op(messages.get),
    "timeline": Op(messages.timeline),
    "commands": Op(messages.commands),
    "placement": Op(messages.placement),
    # private groups (node/ipc/groups.py), read and written with our key
    "group-create": Op(group_ops.group_create, writes=True),
    "group-add": Op(group_ops.group_add, writes=True),
    "group-exclude": Op(group_ops.group_exclude, writes=True),
    "group-post": Op(group_ops.group_post, writes=True),
    "group-show": Op(group_ops.group_show, keyed=True),
    "group-timeline": Op(group_ops.group_timeline, keyed=True),
    # the listings (node/ipc/discovery.py)
    "tangles": Op(discovery.tangles),
    "group-list": Op(discovery.group_list, keyed=True),
    # names people type, to ids (node/ipc/resolve.py)
    "resolve": Op(resolve.resolve),
    # documents (node/ipc/docs.py)
    "doc-create": Op(docs.doc_create, writes=True),
    "doc-edit": Op(docs.doc_edit, writes=True),
    "doc-list": Op(docs.doc_list),
    "doc-show": Op(docs.doc_show),
    "doc-link": Op(docs.doc_link),
    "doc-presence": Op(presence.doc_presence, keyed=True, node=True),  # ephemeral: no write
    "doc-resolve": Op(docs.doc_resolve),
    "doc-comment": Op(docs.doc_comment, writes=True),
    "doc-comments": Op(docs.doc_comments),
    "doc-include": Op(docs.doc_include, writes=True),
    "doc-render": Op(docs.doc_render),
    "doc-log": Op(docs.doc_log),
    "doc-diff": Op(docs.doc_diff),
    "doc-blame": Op(docs.doc_blame),
    # the replication scope (node/ipc/scope.py)
    "follow": Op(scope.contact, writes=True),
    "unfollow": Op(scope.contact, writes=True),
    "block": Op(scope.contact, writes=True),
    "unblock": Op(scope.contact, writes=True),
    "scope": Op(scope.scope, keyed=True),
    # the node and its peers (node/ipc/peers.py)
    "status": Op(peers.status, node=True),
    "peers": Op(peers.peers, node=True),
    "clock": Op(peers.clock, node=True),
    "connect": Op(peers.connect, node=True),
    "disconnect": Op(peers.disconnect, node=True),
    # forgetting content (node/ipc/erase.py)
    "delete": Op(erase.delete, writes=True),
    "purge": Op(erase.purge, writes=True),
    # invites (node/ipc/invites.py)
    "invite-create": Op(invites.invite_create, node=True),
    "invite-list": Op(invites.invite_list),
    "invite-revoke": Op(invites.invite_revoke, writes=True),
    "invite-use": Op(invites.invite_use, node=True),
    # streams (node/ipc/streams.py)
    "subscribe": Op(streams.subscribe, node=True, stream=True),
    "watch-processed": Op(streams.watch_processed, node=True, stream=True),
    "doc-watch": Op(streams.doc_watch, node=True, stream=True),
}
