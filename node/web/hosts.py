"""Which `Host` the web view answers: the guard against DNS rebinding (docs/WEB.md, "The Host").

Theory of operation
-------------------
A page of another site cannot read the view's pages: the browser's
same-origin policy keeps its script out, and the token keeps out whoever
lacks it. DNS rebinding gets round the first: `evil.example` resolves to
the attacker's server, which hands the browser a script, then to
127.0.0.1; the script's requests to `evil.example:PORT` now reach the node,
and the browser calls them same-origin (same name, same port), so the
script may read what they return. Were the token ever to leak (a URL
pasted, a screenshot, a log), that script could read every page and stream
and write through `/api/`, whatever `Origin` and `Sec-Fetch-Site` say:
both name `evil.example` as our own. What the script cannot change is the
`Host` of its requests, which names `evil.example`. So every request, pages
and streams as well as writes, must name in `Host` the address the view
listens on, before the token is even looked at; any other is refused with
421 (Misdirected Request), a missing, repeated or malformed one with 400.

`AllowedHosts` says which: for `web.listen = HOST:PORT`, bound to port P
(port 0 takes a free one, known once bound),

- `HOST:P` itself (a name exactly, an IP address as an address:
  `[::1]` and `[0::1]` are one);
- when HOST is a loopback address or `localhost`: `localhost:P`,
  `127.0.0.1:P` and `[::1]:P` too, the names a browser on this machine
  uses for it;
- when HOST is the wildcard (`0.0.0.0`, `::`): any IP address with P, and
  `localhost:P`. An IP address cannot be rebound: a page whose Host is an
  address was loaded from that address, so the browser's same-origin
  policy already keeps other sites' scripts from reading it. Names other
  than `localhost` only as `web.hosts` lists them;
- each entry of `web.hosts` (config/settings.py): a name or address the view
  is also reached by (a TLS proxy's public name, the machine's name on the
  LAN), with its port, or without one for any port (a proxy forwards its
  own).

A Host without a port means the scheme's default, 80. Names compare
without regard to case; nothing else is normalised (`localhost.` is not
`localhost`). The Host is hostile input: bounded, ASCII, parsed once
(protocol.address.parse_host, which reads `web.hosts` too), never echoed.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.address import BadAddress, HostName, parse_host

DEFAULT_PORT = 80  # a Host without a port names http's default
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::")


class BadHost(Exception):
    """A request's Host that is not one the view answers: `status` (400 or 421), `reason`."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def _name(host: str) -> HostName:
    """A listening address's host (as `web.listen` writes it) as `parse_host` gives it."""
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return host.lower()


def _is_loopback(name: HostName) -> bool:
    return name == "localhost" or (not isinstance(name, str) and name.is_loopback)


@dataclass(frozen=True)
class AllowedHosts:
    """The Hosts the view answers (see the module docstring)."""

    port: int  # the port it listens on (0: not bound yet, nothing is answered)
    names: frozenset[HostName]  # answered with `port`
    any_address: bool = False  # listening on a wildcard: any IP address with `port`
    extra: frozenset[tuple[HostName, int | None]] = frozenset()  # web.hosts; None: any port

    @classmethod
    def listening(cls, host: str, port: int, also: Iterable[str] = ()) -> AllowedHosts:
        """For the view bound to `host` (as `web.listen` names it) and `port`, and the
        `web.hosts` entries `also` (checked by config/settings.py; `BadAddress` if not)."""
        name = _name(host)
        names = {name}
        wildcard = not isinstance(name, str) and str(name) in WILDCARDS
        if _is_loopback(name):
            names |= {_name(loopback) for loopback in LOOPBACK_NAMES}
        if wildcard:
            names = {"localhost"}
        extra = frozenset(parse_host(entry) for entry in also)
        return cls(port, frozenset(names), wildcard, extra)

    def check(self, scope: dict[str, Any]) -> None:
        """`BadHost` unless the request's one `Host` header is one of ours."""
        hosts = [value for name, value in scope["headers"] if name == b"host"]
        if len(hosts) != 1:
            raise BadHost(400, "a request names its host in one Host header")
        try:
            name, port = parse_host(hosts[0].decode("ascii"))
        except (UnicodeDecodeError, BadAddress):
            raise BadHost(400, "the Host header is not a host") from None
        if not self.answers(name, port):
            raise BadHost(421, "this view does not answer that Host (web.listen, web.hosts)")

    def answers(self, name: HostName, port: int | None) -> bool:
        if (name, None) in self.extra or (name, port) in self.extra:
            return True
        if not self.port or (DEFAULT_PORT if port is None else port) != self.port:
            return False
        return name in self.names or (self.any_address and not isinstance(name, str))
