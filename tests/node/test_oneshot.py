"""The blocking one-request client against a fake node on a real Unix socket: every way a
reply can go wrong ends in a typed error, bounded in size and in time."""

import socket
import threading
from pathlib import Path

import pytest

from tanglenode.node.ipc.oneshot import NodeError, NodeNotRunning, request
from tanglenode.protocol.framing import LENGTH_PREFIX, MAX_IPC_FRAME, FrameDecoder, encode_frame
from tanglenode.protocol.ipc_fields import ErrorKind


class FakeNode:
    """Accepts one connection, reads one request frame, then does `answer(conn, request)`."""

    def __init__(self, path: Path, answer) -> None:
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(1)
        self.requests: list = []
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, args=(answer,), daemon=True)
        self.thread.start()

    def _serve(self, answer) -> None:
        conn, _ = self.listener.accept()
        with conn:
            decoder = FrameDecoder(MAX_IPC_FRAME)
            while (frame := decoder.next_frame()) is None:
                decoder.receive_data(conn.recv(65536))
            self.requests.append(frame)
            answer(conn, frame)
            self.done.wait(10)  # keep the connection open until the client is finished

    def close(self) -> None:
        self.done.set()
        self.thread.join(10)
        self.listener.close()


@pytest.fixture
def fake(tmp_path):
    started = []

    def start(answer) -> Path:
        node = FakeNode(tmp_path / "node.sock", answer)
        started.append(node)
        return node.path

    yield start
    for node in started:
        node.close()


def test_the_reply_value_comes_back(fake):
    path = fake(lambda conn, req: conn.sendall(encode_frame({"id": req["id"], "ok": {"n": 1}})))
    assert request(path, "status", extra=b"\x01") == {"n": 1}


def test_an_error_reply_raises_its_kind(fake):
    error = {"kind": "not-found", "message": "no such message", "reason": None}
    path = fake(lambda conn, req: conn.sendall(encode_frame({"id": req["id"], "error": error})))
    with pytest.raises(NodeError) as caught:
        request(path, "get", message=b"x" * 32)
    assert caught.value.kind == ErrorKind.NOT_FOUND and "no such message" in str(caught.value)


def test_nothing_listening_is_not_running(tmp_path):
    with pytest.raises(NodeNotRunning):
        request(tmp_path / "absent.sock", "status")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(tmp_path / "stale.sock"))  # bound, never listening: refused
    with stale, pytest.raises(NodeNotRunning):
        request(tmp_path / "stale.sock", "status")


@pytest.mark.parametrize(
    "reply, kind",
    [
        (b"", ErrorKind.DISCONNECTED),  # hangs up without a word
        (LENGTH_PREFIX.pack(MAX_IPC_FRAME + 1), ErrorKind.PROTOCOL),  # over the cap
        (LENGTH_PREFIX.pack(0), ErrorKind.PROTOCOL),  # an empty frame
        (LENGTH_PREFIX.pack(2) + b"\xc1\xc1", ErrorKind.PROTOCOL),  # not msgpack
        (encode_frame([1, 2]), ErrorKind.PROTOCOL),  # not a map
        (encode_frame({"id": 7, "ok": 1}), ErrorKind.PROTOCOL),  # another request's reply
        (encode_frame({"id": True, "ok": 1}), ErrorKind.PROTOCOL),  # true is no request id
        (encode_frame({"id": 1}), ErrorKind.PROTOCOL),  # neither ok nor error
        (encode_frame({"id": 1, "error": "x"}), ErrorKind.PROTOCOL),  # a malformed error
        (LENGTH_PREFIX.pack(100) + b"\x81", ErrorKind.DISCONNECTED),  # cut short
    ],
)
def test_a_bad_reply_is_a_typed_error(fake, reply, kind):
    def answer(conn, req):
        conn.sendall(reply)
        conn.shutdown(socket.SHUT_WR)

    path = fake(answer)
    with pytest.raises(NodeError) as caught:
        request(path, "status")
    assert caught.value.kind == kind


def test_a_node_that_never_answers_is_given_up_on(fake):
    path = fake(lambda conn, req: None)  # reads the request, says nothing
    with pytest.raises(NodeError) as caught:
        request(path, "status", timeout=0.2)
    assert caught.value.kind == ErrorKind.DISCONNECTED and "no reply" in str(caught.value)
