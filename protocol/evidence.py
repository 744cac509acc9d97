"""Proofs that a feed broke the rules: a fork, or a timeframe cycle.

See docs/PROCESSING.md, "Invalid feeds: forks and timeframe cycles".

Theory of operation
-------------------
A proof is a short list of signed messages that shows, with nothing else,
that their authors lied:

- **fork**: two messages by one author at one seq with different ids. An
  honest author writes one message per seq.
- **cycle**: messages that each *need* another of them, closing a loop. A
  message x needs y when y's author is x's own and y's seq is lower (the
  chain of `prev`), or when x's timeframe says x's author had processed
  y's feed up to y's seq or beyond. Nobody can process a message before one
  written after it (docs/PROCESSING.md), so a loop of needs proves every author on it
  signed a timeframe it could not have had.

A proof invalidates each of its authors from the lowest seq it holds of
that author: the feed ends just before it on every node. Because anyone
can check a proof with the messages alone, proofs travel between nodes
and every node ends with the lowest boundary any node found, whatever the
order messages arrived in. That is what makes the outcome converge.

`check_proof` is pure: the caller decodes and verifies the messages first.
A cycle proof is checked by reachability among its messages: every one must
reach every other through needs (strongly connected), which costs
O(messages²) for at most `MAX_PROOF_MESSAGES`.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tanglenode.protocol.errors import RemoteProtocolError
from tanglenode.protocol.message import Message

MAX_PROOF_MESSAGES = 64


class ProofKind(enum.StrEnum):
    FORK = "fork"
    CYCLE = "cycle"


class InvalidProof(RemoteProtocolError):
    """Messages offered as a proof do not prove anything (or are too many)."""


@dataclass(frozen=True, slots=True)
class Proof:
    """Checked evidence; `messages` are in ascending id order."""

    kind: ProofKind
    messages: tuple[Message, ...]

    @property
    def id(self) -> bytes:
        """BLAKE2b-256 of the kind and the sorted message ids: one id per proof."""
        digest = hashlib.blake2b(self.kind.value.encode(), digest_size=32)
        for message in self.messages:
            digest.update(message.id)
        return digest.digest()

    def invalid_from(self) -> dict[bytes, int]:
        """Author -> the seq its feed is invalid from (the lowest this proof holds)."""
        boundaries: dict[bytes, int] = {}
        for message in self.messages:
            known = boundaries.get(message.author)
            if known is None or message.seq < known:
                boundaries[message.author] = message.seq
        return boundaries


def needs(x: Message, y: Message) -> bool:
    """True if x could only have been written after y was processed by its author."""
    if x.author == y.author:
        return x.seq > y.seq
    return x.timeframe.get(y.author, 0) >= y.seq


def check_proof(messages: Iterable[Message]) -> Proof:
    """The proof these messages make, or `InvalidProof`."""
    unique = {message.id: message for message in messages}
    ordered = tuple(unique[msg_id] for msg_id in sorted(unique))
    if not 2 <= len(ordered) <= MAX_PROOF_MESSAGES:
        raise InvalidProof(f"a proof holds 2 to {MAX_PROOF_MESSAGES} distinct messages")
    first, second = ordered[0], ordered[1]
    if len(ordered) == 2 and first.author == second.author and first.seq == second.seq:
        return Proof(ProofKind.FORK, ordered)
    if len({message.author for message in ordered}) < 2:
        raise InvalidProof("one author's messages at different seqs prove nothing")
    if not _strongly_connected(ordered):
        raise InvalidProof("the messages do not close a loop of timeframe needs")
    return Proof(ProofKind.CYCLE, ordered)


def _strongly_connected(messages: Sequence[Message]) -> bool:
    def reach(forward: bool) -> int:
        seen, stack = {0}, [0]
        while stack:
            here = messages[stack.pop()]
            for index, other in enumerate(messages):
                if index not in seen and (needs(here, other) if forward else needs(other, here)):
                    seen.add(index)
                    stack.append(index)
        return len(seen)

    return reach(True) == len(messages) and reach(False) == len(messages)


def cycle_proof(loop: Sequence[Message]) -> Proof:
    """The proof of a loop found in the spacetime: `loop[i]` needs `loop[i + 1]`, the last
    needs the first.

    Of each run of one author's consecutive messages only the last (its lowest
    seq, the one whose need leaves the feed) is kept: whoever needed the run's
    first message needs that one too, so the loop still closes.
    """
    kept = [
        message
        for index, message in enumerate(loop)
        if loop[(index + 1) % len(loop)].author != message.author
    ]
    return check_proof(kept)
