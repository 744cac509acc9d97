"""File descriptors: how many the node may hold, and how many each kind of party may take.

Theory of operation
-------------------
Every socket and file the node holds is a descriptor, and a process has at most
`RLIMIT_NOFILE` of them (1,024 under systemd unless the unit says otherwise;
systemd/tangled.service sets `LimitNOFILE`). Were the peers' port allowed to
take them all, what needs one next would fail: the IPC socket and the web view
would accept no one, and a publish would commit and then fail to record our
head (storage/feeds/ownhead.py). So the limit is cut in shares at start:

- `RESERVED` for the node itself: the store (data.mdb, lock.mdb, the own-head
  file), the listening sockets, the verifier's worker and its pipes, logs, and
  the files a command the node runs opens. Never given to a party.
- inbound peers: at most `inbound` connections at once, counted from the moment
  one is accepted (its handshake included, which has its own deadline), at most
  `per_address` from one remote address; past either, a connection is closed
  as soon as it is accepted. Half of what is left after the reserve, by default
  (config `gossip.max_inbound`, `gossip.max_inbound_per_address`).
- IPC clients: at most `ipc` at once (a quarter); past it, a client is closed
  as soon as it is accepted.
- the rest: the dialers of our own peers (at most `network.MAX_DIALERS`, each
  one connection) and the web view's clients.

At start the node raises its soft limit to the hard one (where it may: the
unit forbids `setrlimit`, and sets both), then derives the shares from it.
"""

from __future__ import annotations

import resource
from dataclasses import dataclass

RESERVED = 128
MIN_SHARE = 16  # whatever the limit, each party may have this many


@dataclass(frozen=True)
class Descriptors:
    limit: int  # RLIMIT_NOFILE's soft limit, after raising it
    inbound: int  # peers connected to us (or handshaking) at once
    per_address: int  # of them, from one remote address
    ipc: int  # IPC clients at once

    @classmethod
    def shares(
        cls, limit: int, inbound: int | None = None, per_address: int | None = None
    ) -> Descriptors:
        """The shares of `limit`; `inbound` and `per_address` as configured (None: derived)."""
        spare = max(limit - RESERVED, 0)
        derived = max(spare // 2, MIN_SHARE)
        inbound = derived if inbound is None else inbound
        per_address = max(inbound // 16, 4) if per_address is None else per_address
        return cls(limit, inbound, min(per_address, inbound), max(spare // 4, MIN_SHARE))


def raise_soft_limit() -> int:
    """Raise RLIMIT_NOFILE's soft limit to the hard one where allowed; the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (OSError, ValueError):  # a sandbox that forbids it (seccomp): keep the soft one
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 20
