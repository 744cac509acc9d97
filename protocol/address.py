"""Peer addresses, `HOST:PORT`, checked before anything stores or dials them.

The port is plain ASCII digits, 1 to 65535 (0, "any free port", only where
we listen); the host is non-empty, at most 253 characters of printable ASCII
without spaces (a name outside ASCII is written as IDNA, `xn--...`, as the
resolver takes it); an IPv6 host is written in brackets (`[::1]:8008`).
"""

from __future__ import annotations

from tanglenode.protocol.errors import LocalProtocolError

MAX_HOST = 253


class BadAddress(LocalProtocolError):
    """Text that is not a usable HOST:PORT."""


def parse_address(text: object, *, lowest_port: int = 1) -> tuple[str, int]:
    """`(host, port)` of `text`, or `BadAddress` saying why not."""
    expected = f"expected HOST:PORT with a port from {lowest_port} to 65535"
    if not isinstance(text, str):
        raise BadAddress(expected)
    host, sep, port = text.rpartition(":")
    shown = repr(text if len(text) <= 60 else text[:56] + "...")
    if not sep or not port.isascii() or not port.isdigit() or len(port) > 5:
        raise BadAddress(f"{shown}: {expected}")
    if not lowest_port <= int(port) <= 65535:
        raise BadAddress(f"{shown}: {expected}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or len(host) > MAX_HOST or not host.isprintable() or any(c.isspace() for c in host):
        raise BadAddress(f"{shown}: {expected} (the host is empty or not a host name)")
    if not host.isascii():
        raise BadAddress(f"{shown}: the host is ASCII (write a name outside it as IDNA: xn--...)")
    return host, int(port)
