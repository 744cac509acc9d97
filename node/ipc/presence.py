"""Presence for the IPC and the web view: where authors' carets are (node/gossip/presence.py).

`doc-presence` (the op) places our author in a document: positions of the
current text turned into the atoms before them, put in the node's
`PresenceHub`, which tells the gossip sessions. `PresenceWatch` is what a
document's page stream reads: each other author's latest presence in the document
(our own pages do not show our author),
its atoms found again as positions of the current text (one not woven here yet
is tried again at the next change), and what to await for the next.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from tanglenode.node.gossip.presence import UNKNOWN, PresenceHub, Seen
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.doc_ipc import DocPresenceRequest
from tanglenode.protocol.doc_link import Link
from tanglenode.protocol.presence import Anchor, Presence, PresenceDrop
from tanglenode.storage.errors import UnknownDocument

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area


async def doc_presence(area: Area, request: DocPresenceRequest) -> dict[str, Any]:
    """Where our author is in a document (node/gossip/presence.py): the positions (clamped to
    the current text: the page may be a version behind) named by the atoms before them,
    kept a while in the node's memory, shown to our other pages and told to the peers that
    may see the document. Nothing is signed or stored."""
    if area.keypair is None:
        raise UnknownDocument("no key: no author to place")
    hub = area.service.shared(PresenceHub)
    access = await hub.access_of(area.service, request.doc)
    if access == UNKNOWN:
        raise UnknownDocument("no such document")
    doc, start, end = request.doc, request.start, request.end

    def anchors(store) -> tuple[Anchor | None, Anchor | None]:
        atoms = store.documents.document_atoms(doc)
        at = [min(position, len(atoms)) for position in (start, end)]
        return tuple(None if p == 0 else atoms[p - 1] for p in at)  # type: ignore[return-value]

    first, last = await area.service.read(anchors)
    hub.put(Presence(doc, area.keypair.public, first, last), trio.current_time(), access=access)
    return {}


def presence_drops(service: StoreService | None) -> dict[str, int]:
    """Peers' PRESENCE frames dropped, by reason, every reason from zero (for `/metrics`)."""
    dropped = service.shared(PresenceHub).dropped if service is not None else {}
    return {str(reason): dropped.get(str(reason), 0) for reason in PresenceDrop}


class PresenceWatch:
    """A document's presence as one page stream follows it."""

    def __init__(self, service: StoreService, doc: bytes) -> None:
        self.service, self.doc = service, doc
        self.hub = service.shared(PresenceHub)
        self.seen = 0  # the hub's `seq` this watch has read up to
        self.unplaced: list[Seen] = []  # naming atoms not woven here yet: tried again

    def wake(self) -> Callable[[], Awaitable[None]]:
        """What to await for presence newer than now."""
        return partial(self.hub.wait_changed, self.hub.seq)

    async def news(self) -> list[tuple[bytes, int, int]]:
        """(author, start, end) for each presence new since the last call, in positions of
        the current text."""
        hub = self.hub
        ours = self.service.own_feed  # our own pages show others: ours is not sent them
        news = [
            seen
            for seen in hub.of(self.doc, self.seen, trio.current_time())
            if seen.presence.author != ours
        ]
        self.seen = hub.seq
        retried = [seen for seen in self.unplaced if hub.latest(seen) and seen not in news]
        news, self.unplaced = retried + news, []
        if not news:
            return []
        doc = self.doc

        def places(store: Any) -> list[tuple[int, int] | None]:
            return [_place(store, doc, seen) for seen in news]

        found = []
        for seen, place in zip(news, await self.service.read(places), strict=True):
            if place is None:  # an atom not woven here yet: when the store changes
                self.unplaced.append(seen)
            else:
                found.append((seen.presence.author, *place))
        return found


def _place(store: Any, doc: bytes, seen: Seen) -> tuple[int, int] | None:
    """`seen`'s start and end as positions of the current text; None if an atom is not here."""
    try:
        start, end = (_position(store, doc, a) for a in (seen.presence.start, seen.presence.end))
    except UnknownDocument:
        return None
    return min(start, end), max(start, end)


def _position(store: Any, doc: bytes, anchor: Anchor | None) -> int:
    """The position just after `anchor`'s atom (where it was, if deleted); 0 for None."""
    if anchor is None:
        return 0
    found = store.documents.resolve_link(Link(doc, anchor, anchor, doc))
    return int(found.start + len(found.text))
