"""Peer addresses, `HOST:PORT`, checked before anything stores or dials them.

The port is plain ASCII digits, 1 to 65535 (0, "any free port", only where
we listen); the host is non-empty, at most 253 characters of printable ASCII
without spaces (a name outside ASCII is written as IDNA, `xn--...`, as the
resolver takes it); an IPv6 host is written in brackets (`[::1]:8008`).

`parse_host` reads a host as HTTP's `Host` header names one (the web
view's guard, node/web/hosts.py, and its `web.hosts` setting): a name or an
IP address, with a port or without.
"""

from __future__ import annotations

import ipaddress

from tanglenode.protocol.errors import LocalProtocolError

MAX_HOST = 253
MAX_HOST_HEADER = 300  # a 253-character name, brackets, a colon and a port, with room

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
HostName = str | IPAddress  # a host name in lower case, or an IP address


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


def parse_host(text: object) -> tuple[HostName, int | None]:
    """(name or address, port or None) of a host as HTTP's `Host` names one: `NAME`,
    `NAME:PORT`, `IPV4[:PORT]`, `[IPV6][:PORT]`; a name in lower case, an address as
    an address (`[0::1]` is `[::1]`). `BadAddress` if it is none of these."""
    if not isinstance(text, str) or not text or len(text) > MAX_HOST_HEADER:
        raise BadAddress("not a host: empty or too long")
    if not text.isascii() or not all(c.isalnum() or c in "-._:[]%" for c in text):
        raise BadAddress("not a host: a host is letters, digits and - . _ : [ ] %")
    if text.startswith("["):  # an IPv6 address, `[::1]` or `[::1]:8080`
        inside, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise BadAddress("not a host: an IPv6 address is written [ADDRESS]:PORT")
        try:
            address = ipaddress.IPv6Address(inside)
        except ValueError:
            raise BadAddress("not a host: no IPv6 address between the brackets") from None
        return address, _host_port(rest[1:]) if rest else None
    host, colon, port = text.rpartition(":")
    if not colon:
        host, found = text, None
    elif ":" in host:
        raise BadAddress("not a host: an IPv6 address is written in brackets")
    else:
        found = _host_port(port)
    if not host or len(host) > MAX_HOST or any(c in host for c in "[]%"):
        raise BadAddress("not a host: no name before the port, or not a name")
    try:
        return ipaddress.IPv4Address(host), found
    except ValueError:
        return host.lower(), found


def _host_port(text: str) -> int:
    if not text.isdigit() or len(text) > 5 or not 1 <= int(text) <= 65535:
        raise BadAddress("not a host: a port is 1 to 65535")
    return int(text)
