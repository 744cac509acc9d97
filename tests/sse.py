"""A raw server-sent-events client for the web view's tests and bench: h11 over TCP.

Not a browser: it shows the frames exactly as the node sends them (event,
JSON data, id), and sends `Last-Event-ID` when asked, as a browser does on
reconnecting.
"""

from __future__ import annotations

import json

import h11
import trio

from tanglenode.node.localnet import REQUEST_SECONDS


class EventReader:
    """A raw server-sent-events client over h11: frames as (event, data, id)."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.connection = h11.Connection(h11.CLIENT)
        self.buffer = b""
        self.status = 0
        self.headers: dict[bytes, bytes] = {}

    @classmethod
    async def open(cls, url: str, last_event_id: int | None = None) -> EventReader:
        host, rest = url.removeprefix("http://").split("/", 1)
        address, port = host.rsplit(":", 1)
        reader = cls(await trio.open_tcp_stream(address, int(port)))
        headers = [("host", host)]
        if last_event_id is not None:
            headers.append(("last-event-id", str(last_event_id)))
        request = h11.Request(method="GET", target="/" + rest, headers=headers)
        await reader.stream.send_all(reader.connection.send(request))
        await reader.stream.send_all(reader.connection.send(h11.EndOfMessage()))
        while not reader.status:
            event = await reader._event()
            if isinstance(event, h11.Response):
                reader.status, reader.headers = event.status_code, dict(event.headers)
        return reader

    async def _event(self):
        while True:
            event = self.connection.next_event()
            if event is h11.NEED_DATA:
                self.connection.receive_data(await self.stream.receive_some(65536))
                continue
            return event

    async def frame(self) -> tuple[str, dict, int | None]:
        """The next event (comments skipped)."""
        with trio.fail_after(REQUEST_SECONDS):
            while True:
                if b"\n\n" in self.buffer:
                    block, self.buffer = self.buffer.split(b"\n\n", 1)
                    fields = dict(
                        line.split(": ", 1)
                        for line in block.decode().splitlines()
                        if ": " in line and not line.startswith(":")
                    )
                    if "event" in fields:
                        version = int(fields["id"]) if "id" in fields else None
                        return fields["event"], json.loads(fields["data"]), version
                    continue
                event = await self._event()
                assert isinstance(event, h11.Data), event
                self.buffer += bytes(event.data)

    async def until(self, kind: str) -> tuple[dict, int | None]:
        while True:
            event, data, version = await self.frame()
            if event == kind:
                return data, version

    async def aclose(self) -> None:
        await self.stream.aclose()
