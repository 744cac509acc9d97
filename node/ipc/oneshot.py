"""One request to the node, blocking: the client of CLI commands that ask once and exit.

`request(socket_path, op, **arguments)` connects to the node's IPC socket,
sends one frame `{"op", "id": 1, ...}`, reads frames until the reply to
request 1 is whole, closes, and returns the reply's `ok` value; an error
reply raises `NodeError` with the server's `kind`. It speaks the same frames
as the Trio client (node/ipc/client.py), through the same codec
(protocol/framing.py), but with a plain socket and no event loop, so a
command like `tangled status` or `tangled publish` starts without importing
Trio. Every wait is bounded by `timeout` seconds (a node that accepts and
never answers raises `NodeError` of kind `DISCONNECTED`), and a reply is
capped at `MAX_IPC_FRAME` bytes by the decoder.

The errors are defined here, not in node/ipc/client.py, so this module stays
light; node/ipc/client.py and `tanglenode.client` re-export them.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from tanglenode.protocol.errors import TanglenodeError
from tanglenode.protocol.framing import MAX_IPC_FRAME, FrameDecoder, FrameError, encode_frame
from tanglenode.protocol.ipc_fields import ErrorKind

# A one-shot request's whole exchange; `publish` waits for a durable commit.
REQUEST_SECONDS = 60.0


class NodeNotRunning(TanglenodeError):
    """Nothing listens on the IPC socket."""


class NodeError(TanglenodeError):
    """An error reply: `kind` is a stable code (docs/IPC.md), `reason` a reason code, `feed`
    the feed it is about where it names one (an `unknown-tangle` root's author).

    `kind` is an `ErrorKind`, or the text of a kind this client does not know (a newer node).
    """

    def __init__(
        self,
        kind: ErrorKind | str,
        message: str,
        reason: str | None = None,
        feed: bytes | None = None,
    ) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.reason = reason
        self.feed = feed


def not_running(path: Path | str) -> NodeNotRunning:
    return NodeNotRunning(f"the node is not running (nothing listens on {path})")


def listening(path: Path | str, timeout: float = 1.0) -> bool:
    """Whether a node answers on the IPC socket at `path`: a blocking connect, no request.

    The one liveness probe; a command that asks something learns it from the
    request itself (node/cli/backend.py).
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout)
        try:
            probe.connect(str(path))
        except OSError:  # absent, refused (a socket left by a node that died), or unreachable
            return False
    return True


def _kind(text: str) -> ErrorKind | str:
    try:
        return ErrorKind(text)
    except ValueError:
        return text


def error_from(frame: dict[str, Any]) -> NodeError:
    """The `NodeError` an error frame carries."""
    error = frame.get("error")
    if not isinstance(error, dict):
        return NodeError(ErrorKind.PROTOCOL, "a malformed error reply")
    feed = error.get("feed")
    return NodeError(
        _kind(str(error.get("kind"))),
        str(error.get("message")),
        error.get("reason"),
        bytes(feed) if type(feed) is bytes and len(feed) == 32 else None,  # a feed id, or none
    )


def reply_value(frame: Any, number: int) -> Any:
    """The `ok` value of the reply `frame` to request `number`; error replies raise."""
    if not isinstance(frame, dict):
        raise NodeError(ErrorKind.PROTOCOL, "a reply that is not a map")
    answered = frame.get("id")
    if answered is not None and (type(answered) is not int or answered != number):  # true == 1
        raise NodeError(
            ErrorKind.PROTOCOL, f"reply to request {frame.get('id')}, expected {number}"
        )
    if "error" in frame:
        raise error_from(frame)
    if "ok" not in frame:
        raise NodeError(ErrorKind.PROTOCOL, "a reply with neither ok nor error")
    return frame["ok"]


def request(
    path: Path | str, op: str, *, timeout: float = REQUEST_SECONDS, **arguments: Any
) -> Any:
    """Send one request to the node listening at `path` and return its reply's value."""
    frame = encode_frame({"op": op, "id": 1, **arguments})
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            raise not_running(path) from None
        except TimeoutError:
            raise NodeError(ErrorKind.DISCONNECTED, f"no answer on {path}") from None
        decoder = FrameDecoder(MAX_IPC_FRAME)
        try:
            sock.sendall(frame)
            while (reply := decoder.next_frame()) is None:
                data = sock.recv(65536)
                if not data:
                    raise NodeError(ErrorKind.DISCONNECTED, "the node closed the connection")
                decoder.receive_data(data)
        except TimeoutError:
            raise NodeError(ErrorKind.DISCONNECTED, f"no reply in {timeout:g} s") from None
        except (BrokenPipeError, ConnectionResetError):
            raise NodeError(ErrorKind.DISCONNECTED, "the node closed the connection") from None
        except FrameError as error:
            raise NodeError(ErrorKind.PROTOCOL, f"a malformed reply: {error}") from None
    return reply_value(reply, 1)
