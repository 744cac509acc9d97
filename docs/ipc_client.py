"""A client of the node's IPC socket in plain Python: the socket module and msgpack.

    python docs/ipc_client.py ~/tn/tangled.sock

It roots a tangle `chat`, replies in it, and reads the tangle back three
ways: its order (`timeline`), its numbered commands (`commands`) and one
message's place (`placement`). docs/IPC.md shows this file whole.
"""

import socket
import struct
import sys

import msgpack

LENGTH = struct.Struct(">I")  # a frame: 4-byte big-endian length, then one msgpack value
MAX_FRAME = 4 << 20


class NodeError(Exception):
    """An error reply: `kind` is a stable code (docs/IPC.md, "Error kinds")."""

    def __init__(self, error: dict) -> None:
        super().__init__(f"{error['kind']}: {error['message']}")
        self.kind = error["kind"]
        self.reason = error.get("reason")


class Node:
    """One connection to the node; requests on it are answered in order."""

    def __init__(self, socket_path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(socket_path)
        self.last_id = 0

    def request(self, op: str, **arguments):
        self.last_id += 1
        body = msgpack.packb({"op": op, "id": self.last_id, **arguments}, use_bin_type=True)
        self.sock.sendall(LENGTH.pack(len(body)) + body)
        (length,) = LENGTH.unpack(self._read(LENGTH.size))
        if not 0 < length <= MAX_FRAME:
            raise ConnectionError(f"a frame of {length} bytes")
        reply = msgpack.unpackb(self._read(length))
        if "error" in reply:
            raise NodeError(reply["error"])
        return reply["ok"]

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the node closed the connection")
            data += chunk
        return bytes(data)


def main(socket_path: str) -> None:
    node = Node(socket_path)
    root = node.request("publish", content={"text": "hello"}, tangles={"chat": None})
    reply = node.request("publish", content={"text": "hi"}, tangles={"chat": root["id"]})
    chat = {"tangle": "chat", "root": root["id"]}  # ids are 32 raw bytes on the wire

    page = node.request("timeline", **chat, start=0, limit=100)
    print("timeline at version", page["version"])
    for position, (rank, msg_id, state) in enumerate(page["entries"]):
        print(" ", position, rank, msg_id.hex(), state)  # state: joined, pending or invalid

    log = node.request("commands", **chat, since=0)  # what changed after version 0
    for version, command in enumerate(log["commands"], start=1):
        if "ins" in command:
            print(" ", version, "ins", command["ins"], command["id"].hex())
        elif "mov" in command:
            print(" ", version, "mov", *command["mov"])
        else:
            print(" ", version, "del", command["del"])

    place = node.request("placement", **chat, message=reply["id"])
    print("reply at position", place["position"], "rank", place["rank"])
    try:
        node.request("placement", **chat, message=bytes(32))
    except NodeError as error:
        print("unknown message:", error.kind)  # not-found


if __name__ == "__main__":
    main(sys.argv[1])
