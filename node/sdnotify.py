"""systemd's notify protocol: datagrams to $NOTIFY_SOCKET (no-op when it is unset).

`READY=1` once every service is up, `STATUS=...` lines as things change,
`WATCHDOG=1` every half of $WATCHDOG_USEC, `STOPPING=1` at shutdown. An
address starting with "@" is in the abstract namespace.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from contextlib import suppress

import trio


class Notifier:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        address = environ.get("NOTIFY_SOCKET")
        self.address = "\0" + address[1:] if address and address.startswith("@") else address
        usec = environ.get("WATCHDOG_USEC", "")
        self.watchdog_seconds = int(usec) / 2e6 if usec.isdigit() and int(usec) > 0 else None

    def send(self, *lines: str) -> None:
        if not self.address:
            return
        # systemd gone or its socket unreachable: there is no one to tell
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock, suppress(OSError):
            sock.sendto("\n".join(lines).encode(), self.address)

    async def watchdog(self) -> None:
        """Ping the watchdog at half its interval, for as long as the event loop runs."""
        if self.watchdog_seconds is None or not self.address:
            return
        while True:
            self.send("WATCHDOG=1")
            await trio.sleep(self.watchdog_seconds)
