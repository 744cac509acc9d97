"""What the node tells people about its replication scope, where they meet it.

Theory of operation
-------------------
A node carries only the feeds its scope names (docs/PEERS.md, "Scope"), so
a new user who connects to a peer and sees nothing arrive, or cannot
publish into a thread, meets the scope without knowing it. The ops where
that happens say so, each from what the node knows at that moment:

- `standing(scope, feed)`: where a feed stands: carried, and why (`ours`,
  `followed`, `hop`, `group`, or `every-feed` under hops = "all"), or left
  out: `not-followed` or `blocked`. `connect` replies with the peer's, so
  `tangled connect` says whether anything of theirs will be carried, and
  the command that changes it.
- `ever_seen(area, feed)`: whether the node has ever been shown the feed,
  as `follow` warns of a feed it has not ("never seen; following
  anyway": likely a mistyped id). Shown means any of: a message of it held,
  a witness of it or an ask for one, a contact message held that names it
  (the store's signs, storage/sightings.py); a connected peer's clock names
  it; it is a peer's key the node dials or has met (`PeerRegistry`, which
  holds the configured peers once dialed, and the recent others). With the
  node stopped the store's signs are all there is; `tangled follow` adds the
  configured peers' keys from the config file.
- `unknown_tangle(area, error)`: a publish into a tangle without tips here
  (`UnknownTangle`) answers `unknown-tangle` still, with what the store says
  of the root's author (`store.tangles.root_clue`): the message is held but
  roots no such tangle; its author is blocked, not followed, or carried and
  the message not arrived; or the author is unknown here. The text says
  what to do (`tangled follow`, `tangled unblock`), `reason` says which
  case (`ROOT_REASONS`), and `feed` is the author when known.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.ipc_fields import ErrorKind, RequestError
from tanglenode.storage.errors import UnknownTangle
from tanglenode.storage.scope import Scope
from tanglenode.storage.sightings import HELD, NAMED, RootClue

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area

NOT_FOLLOWED, BLOCKED, EVERY_FEED = "not-followed", "blocked", "every-feed"

# `reason` of an `unknown-tangle` error: which case it is (docs/IPC.md, "Error kinds").
ROOT_NOT_A_ROOT = "root-not-a-root"  # the message is held and roots no tangle of that name
AUTHOR_BLOCKED = "author-blocked"
AUTHOR_NOT_FOLLOWED = "author-not-followed"
ROOT_NOT_ARRIVED = "root-not-arrived"  # its author is carried, the message not held yet
AUTHOR_UNKNOWN = "author-unknown"
ROOT_REASONS = (
    ROOT_NOT_A_ROOT,
    AUTHOR_BLOCKED,
    AUTHOR_NOT_FOLLOWED,
    ROOT_NOT_ARRIVED,
    AUTHOR_UNKNOWN,
)


class UnknownRoot(RequestError):
    """`unknown-tangle`, with `reason` (one of `ROOT_REASONS`) and the root's author
    (`feed`, None when unknown)."""

    def __init__(self, message: str, reason: str, feed: bytes | None) -> None:
        super().__init__(ErrorKind.UNKNOWN_TANGLE, message, reason)
        self.feed = feed


def standing(scope: Scope, feed: bytes) -> str:
    """Where `feed` stands in `scope`: why it is carried, or `not-followed`, `blocked`."""
    if feed in scope.blocked:
        return BLOCKED
    if scope.hops is None:
        return EVERY_FEED
    why = scope.feeds.get(feed)
    return NOT_FOLLOWED if why is None else why.why


async def ever_seen(area: Area, feed: bytes) -> bool:
    """Whether the node was ever shown `feed` (see the module docstring)."""
    node = area.node
    if node is not None:
        peers = node.registry.peers
        if feed in peers or any(feed in peer.clock for peer in peers.values()):
            return True
    return await area.service.read(lambda store: store.feeds.seen(feed))


async def unknown_tangle(area: Area, error: UnknownTangle) -> UnknownRoot:
    """The `unknown-tangle` refusal of a publish into `error`'s tangle, saying what the
    store knows of its root's author and what to do."""
    name, root = error.name, error.root
    if name is None or root is None:  # not raised by a publish's links: as it was
        return UnknownRoot(str(error), AUTHOR_UNKNOWN, None)
    clue = await area.service.read(lambda store: store.tangles.root_clue(root, name))
    scope = area.service.scope
    said = root_text(scope, clue, name)
    text = f"no tangle {name!r} rooted at {message_text(root)}: {said}"
    return UnknownRoot(text, root_reason(scope, clue), clue.author)


def root_reason(scope: Scope, clue: RootClue) -> str:
    """Which of `ROOT_REASONS` the clue is, under `scope`."""
    if clue.author is None:
        return AUTHOR_UNKNOWN
    if clue.source == HELD:
        return ROOT_NOT_A_ROOT
    where = standing(scope, clue.author)
    if where == BLOCKED:
        return AUTHOR_BLOCKED
    if where == NOT_FOLLOWED:
        return AUTHOR_NOT_FOLLOWED
    return ROOT_NOT_ARRIVED


def root_text(scope: Scope, clue: RootClue, name: str) -> str:
    """What the store knows of the root, and what to do, for people."""
    reason = root_reason(scope, clue)
    if clue.author is None:
        return (
            "the message is not held here, nor is its author known: follow whoever wrote or"
            " shared it (tangled follow @FEED), and it comes with their feed"
        )
    author = feed_text(clue.author)
    who = f"its author {author}" + (" (as a reply held names it)" if clue.source == NAMED else "")
    if reason == ROOT_NOT_A_ROOT:
        return f"the message is held, by {author}, but roots no tangle {name!r}"
    if reason == AUTHOR_BLOCKED:
        return f"{who} is blocked, so nothing of theirs is held: tangled unblock {author}"
    if reason == AUTHOR_NOT_FOLLOWED:
        return (
            f"{who} is not followed, so their feed is not carried here: tangled follow {author},"
            " then publish again once the thread arrived"
        )
    return f"{who} is carried, but the message has not arrived yet: a peer that holds it sends it"
