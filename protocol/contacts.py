"""Contact messages: who a feed follows and blocks, published on its own feed.

Theory of operation
-------------------
A feed says whom it follows or blocks (Secure Scuttlebutt's convention) by
publishing

    {"type": "contact", "contact": "@FEED", "following": true|false,
     "blocking": true|false}

where either flag may be left out (it then keeps its earlier value, false at
first). `tangled follow` writes `following: true, blocking: false`,
`unfollow` `following: false`, `block` `following: false, blocking: true`,
`unblock` `blocking: false`. A feed's stance towards a contact is its
contact messages about it folded in seq order, each flag the last one given
(`fold`); it follows the contact when `following` is true and `blocking` is
not. A message of type `contact` whose fields are not these (a contact
that is no feed id, a flag that is no boolean, no flag at all, itself as
its contact) says nothing: every node reads it the same way, as nothing.

Peers read the graph from these messages (storage/views/contacts.py) to
decide what to replicate (storage/scope.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import feed_text, parse_feed

CONTACT = "contact"


@dataclass(frozen=True, slots=True)
class ContactSaid:
    """What one contact message says about `contact`: each flag, or None where left out."""

    contact: bytes
    following: bool | None
    blocking: bool | None


@dataclass(frozen=True, slots=True)
class Stance:
    """A feed's stance towards one contact, after all it said about it."""

    following: bool = False
    blocking: bool = False

    @property
    def follows(self) -> bool:
        return self.following and not self.blocking


def contact_said(content: Any, author: bytes) -> ContactSaid | None:
    """What `content` says, if it is a well-formed contact message of `author`'s."""
    if not isinstance(content, dict) or content.get("type") != CONTACT:
        return None
    text = content.get("contact")
    if not isinstance(text, str):
        return None
    try:
        contact = parse_feed(text)
    except BadIdentifier:
        return None
    if contact == author:
        return None
    flags = []
    for field in ("following", "blocking"):
        value = content.get(field)
        if value is not None and not isinstance(value, bool):
            return None
        flags.append(value)
    if flags == [None, None]:
        return None
    return ContactSaid(contact, flags[0], flags[1])


def fold(said: Iterable[ContactSaid | Stance], start: Stance = Stance()) -> Stance:
    """The stance after each message of `said` in turn (a `Stance` replaces all before it)."""
    stance = start
    for each in said:
        if isinstance(each, Stance):
            stance = each
            continue
        stance = Stance(
            stance.following if each.following is None else each.following,
            stance.blocking if each.blocking is None else each.blocking,
        )
    return stance


def contact_content(
    contact: bytes, *, following: bool | None, blocking: bool | None
) -> dict[str, Any]:
    """The content of a contact message of ours (None leaves a flag out)."""
    content: dict[str, Any] = {"type": CONTACT, "contact": feed_text(contact)}
    if following is not None:
        content["following"] = following
    if blocking is not None:
        content["blocking"] = blocking
    return content


# What each command publishes: (following, blocking).
FOLLOW = (True, False)
UNFOLLOW = (False, None)
BLOCK = (False, True)
UNBLOCK = (None, False)
