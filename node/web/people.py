"""Whom we follow and block: our own contact messages' stances, as the pages show them.

The home page reads what the feeds we follow wrote; the peers page says, on
each peer, whether we follow it. Both ask the `contacts` view for our own
feed's stance towards each contact (`store.feeds.stances`, one read
transaction in a worker thread): what we said, not what the scope computed
from it (a feed followed is carried only within the scope's bounds).
"""

from __future__ import annotations

from tanglenode.node.web.http import WebContext
from tanglenode.protocol.contacts import Stance

FOLLOWING, NOT_FOLLOWING, BLOCKED = "following", "not followed", "blocked"


async def our_stances(web: WebContext) -> dict[bytes, Stance]:
    """Contact -> our feed's stance towards it; {} for a node without a key."""
    if web.keypair is None or web.service is None:
        return {}
    ours = web.keypair.public
    return await web.service.read(lambda store: store.feeds.stances(ours))


def follow_state(stances: dict[bytes, Stance], feed: bytes) -> str:
    """`following`, `blocked` or `not followed`: what we said of `feed`."""
    stance = stances.get(feed)
    if stance is None:
        return NOT_FOLLOWING
    if stance.blocking:
        return BLOCKED
    return FOLLOWING if stance.following else NOT_FOLLOWING


def followed(stances: dict[bytes, Stance]) -> list[bytes]:
    """The feeds we follow (and do not block), in id order."""
    return sorted(feed for feed, stance in stances.items() if stance.follows)
