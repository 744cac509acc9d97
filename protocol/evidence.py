"""Proofs that a feed broke the rules: a fork.

See docs/PROCESSING.md, "Invalid feeds: forks".

Theory of operation
-------------------
A proof is two signed messages by one author at one seq with different
ids: an honest author writes one message per seq. It invalidates the
author from that seq: the feed ends just before it on every node. Because
anyone can check a proof with the two messages alone, proofs travel between
nodes and every node ends with the lowest boundary any node found, whatever
the order messages arrived in. That is what makes the outcome converge.

There is no other kind. Timeframes name messages by a tag of their ids
(docs/FORMAT.md), so a loop of causal references would need a message to
contain a digest of itself, and no loop, hence no cycle proof, exists.

`check_proof` is pure: the caller decodes and verifies the messages first.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from tanglenode.protocol.errors import RemoteProtocolError
from tanglenode.protocol.message import Message

PROOF_MESSAGES = 2


class ProofKind(enum.StrEnum):
    FORK = "fork"


class InvalidProof(RemoteProtocolError):
    """Messages offered as a proof do not prove anything."""


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
        """Author -> the seq its feed is invalid from."""
        first = self.messages[0]
        return {first.author: first.seq}


def check_proof(messages: Iterable[Message]) -> Proof:
    """The proof these messages make, or `InvalidProof`."""
    unique = {message.id: message for message in messages}
    ordered = tuple(unique[msg_id] for msg_id in sorted(unique))
    if len(ordered) != PROOF_MESSAGES:
        raise InvalidProof(f"a proof holds {PROOF_MESSAGES} distinct messages")
    first, second = ordered
    if first.author != second.author or first.seq != second.seq:
        raise InvalidProof("a proof is two messages of one author at one seq")
    return Proof(ProofKind.FORK, ordered)
