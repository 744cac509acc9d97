"""Builders of test messages: valid chains, and wire bytes of any shape, signed."""

from __future__ import annotations

import hashlib
import random
from typing import Any

import msgpack

from tanglenode.protocol.canonical import canonical_value
from tanglenode.protocol.identity import Keypair, tag_of
from tanglenode.protocol.message import ROOT_LINK, Message, Named, TangleLink, sign_message
from tanglenode.protocol.wire import split_wire, wire
from tanglenode.storage.registry import OPTIONAL

ALL_VIEWS = tuple(view.name for view in OPTIONAL)  # a store keeping every optional view

# The message each `Feed` built last at (feed, seq): what a timeframe entry given as a bare
# seq names (a test that forks a feed names the branch it means by passing the message).
_BUILT: dict[tuple[bytes, int], Message] = {}

Entry = int | Message | tuple[int, bytes]  # a timeframe entry as tests write it


def remember(message: Message) -> Message:
    """Let a bare seq in a later timeframe name `message` (tests/conftest.py passes every
    message a store signs here too)."""
    _BUILT[(message.author, message.seq)] = message
    return message


def named(feed: bytes, entry: Entry) -> Named:
    """A timeframe entry: a seq (the message built last there), a message, or (seq, tag)."""
    if isinstance(entry, Message):
        return Named(entry.seq, tag_of(entry.id))
    if isinstance(entry, tuple):
        return Named(entry[0], entry[1])
    built = _BUILT.get((feed, entry))
    if built is None:  # nothing built there: a tag nobody will ever match
        return Named(entry, bytes(16))
    return Named(entry, tag_of(built.id))


def timeframe_of(entries: dict[bytes, Entry] | None) -> dict[bytes, Named]:
    return {feed: named(feed, entry) for feed, entry in (entries or {}).items()}


def keypair(label: str | int) -> Keypair:
    """A deterministic keypair, so separate processes can rebuild the same feeds."""
    return Keypair(hashlib.sha256(f"tanglenode-test-{label}".encode()).digest())


def unsigned_fields(
    author: Keypair,
    *,
    seq: int = 1,
    prev: Any = None,
    timestamp: Any = 1_700_000_000_000,
    timeframe: Any = None,
    tangles: Any = None,
    content: Any = None,
    version: Any = 3,
) -> list[Any]:
    """The header's first seven fields and the content, with no validation: tests bend
    them at will (`sign_raw` adds the content's hash and size)."""
    return [
        version,
        author.public,
        seq,
        prev,
        timestamp,
        {} if timeframe is None else timeframe,
        {} if tangles is None else tangles,
        content,
    ]


def sign_raw(
    author: Keypair,
    fields: list[Any],
    *,
    canonical: bool = True,
    content_hash: Any = None,
    content_size: Any = None,
) -> bytes:
    """A message's wire form with `fields` (`unsigned_fields`' eight: the header's first
    seven and the content) signed validly, whatever they hold: the content's hash and
    size are added to the header (unless given), the header signed, the content beside it.
    Fields of another count are signed as they are, as a header without content."""
    if canonical:
        fields = canonical_value(fields)
    if len(fields) != 8:
        payload = msgpack.packb(fields, use_bin_type=True)
        header = msgpack.packb([*fields, author.sign(payload)], use_bin_type=True)
        return wire(header, None)
    *head, content = fields
    body = msgpack.packb(content, use_bin_type=True)
    digest = content_hash or hashlib.blake2b(body, digest_size=32).digest()
    head += [digest, len(body) if content_size is None else content_size]
    payload = msgpack.packb(head, use_bin_type=True)
    header = msgpack.packb([*head, author.sign(payload)], use_bin_type=True)
    return wire(header, body)


def break_signature(raw: bytes) -> bytes:
    """A message's wire form with its header's signature broken (its last byte flipped), the
    content kept beside it: refused `bad-signature`, where flipping the wire form's last byte
    would only garble the content (dropped as `content-mismatch`, the header accepted)."""
    header, content = split_wire(raw)
    return wire(header[:-1] + bytes([header[-1] ^ 1]), content)


class Feed:
    """A valid chain of one author's messages, built in memory."""

    def __init__(self, author: Keypair | str | int) -> None:
        self.keypair = author if isinstance(author, Keypair) else keypair(author)
        self.messages: list[Message] = []

    @property
    def public(self) -> bytes:
        return self.keypair.public

    def append(
        self,
        content: Any = None,
        *,
        tangles: dict[str, TangleLink] | None = None,
        timeframe: dict[bytes, Entry] | None = None,
        timestamp: int | None = None,
    ) -> Message:
        seq = len(self.messages) + 1
        message = sign_message(
            self.keypair,
            seq=seq,
            prev=self.messages[-1].id if self.messages else None,
            timestamp=1_700_000_000_000 + seq if timestamp is None else timestamp,
            timeframe=timeframe_of(timeframe),
            tangles=tangles or {},
            content=content,
        )
        remember(message)
        self.messages.append(message)
        return message

    def root(self, name: str, content: Any = None) -> Message:
        return self.append(content, tangles={name: ROOT_LINK})


def batches_for_crash_test(batches: int, feeds: int, per_feed: int) -> list[list[bytes]]:
    """Batch k holds messages k*per_feed+1 .. (k+1)*per_feed of every feed."""
    chains = [Feed(f"crash-{index}") for index in range(feeds)]
    result = []
    for _ in range(batches):
        batch = []
        for chain in chains:
            for _ in range(per_feed):
                batch.append(chain.append({"type": "tick", "pad": "x" * 64}).raw)
        result.append(batch)
    return result


def late_reply(name: str = "chat") -> tuple[Message, Message, Message, Message]:
    """(root, a2, b1, c1): a tangle where a late message moves another.

    alice writes the root and a2, bob b1, and carol c1, which names b1. Given the
    root, a2 and c1 first, c1 waits (pending); when b1 arrives, c1 moves after it
    (a `mov`). The feeds' keys are fixed, so the ids fall that way every run.
    """
    alice, bob, carol = Feed("mv-a0"), Feed("mv-b0"), Feed("mv-c0")
    root = alice.root(name, {"text": "root"})
    link = TangleLink(root.id, (root.id,))
    a2 = alice.append({"text": "a2"}, tangles={name: link})
    b1 = bob.append({"text": "b1"}, tangles={name: link})
    c1 = carol.append({"text": "c1 names b1"}, tangles={name: TangleLink(root.id, (b1.id,))})
    return root, a2, b1, c1


def late_arrivals(rng: random.Random, feeds: int, per_feed: int, fork: bool = False):
    """A tangle `chat` (its root first) and messages of `feeds` feeds, each naming, in its
    timeframe and as its tangle `previous`, messages made before it (of any feed), in an
    arrival order that keeps each feed's own order but lets the others come late: a late
    message ranks low, so it arrives as an `ins` in the middle and raises what named it
    (`mov`); most arrive at the end. With `fork`, one feed also forks: its messages from
    the fork on leave every timeline (`del`, and `mov` of what they had raised)."""
    root = Feed("r-root").root("chat")
    chains = [Feed(f"r-{n}") for n in range(feeds)]
    made = [root]
    for _ in range(feeds * per_feed):
        chain = rng.choice(chains)
        named = rng.sample(made, min(len(made), rng.randint(1, 2)))
        timeframe = {m.author: m.seq for m in named if m.author != chain.public}
        link = TangleLink(root.id, tuple(m.id for m in named))
        made.append(chain.append(len(made), tangles={"chat": link}, timeframe=timeframe))
    queues = {c.public: [m for m in made[1:] if m.author == c.public] for c in chains}
    arrival = [root]
    while any(queues.values()):
        arrival.append(queues[rng.choice([a for a, q in queues.items() if q])].pop(0))
    forked = [c for c in chains if len(c.messages) >= 2]
    if fork and forked:
        chain = rng.choice(forked)
        seq = rng.randint(1, len(chain.messages) - 1)
        twin = Feed(chain.keypair)
        twin.messages = chain.messages[:seq]
        other = twin.append("other", tangles={"chat": TangleLink(root.id, (root.id,))})
        after = arrival.index(chain.messages[seq - 1]) + 1
        arrival.insert(rng.randint(after, len(arrival)), other)
    return root, arrival
