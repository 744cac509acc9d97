"""Erase requests: an author taking back the content of one of its own messages.

Theory of operation
-------------------
A message's id is the hash of its header alone (docs/FORMAT.md), so its
content can go without breaking any chain, link or proof. An author asks
every node to drop the content of one of its earlier messages by
publishing, in its own feed, an erase request:

    {"type": "erase", "message": bin 32, "seq": int}

naming the message by its seq in the author's own feed and its id. A
document edit's request also carries the edit's `weave`: its structure
without its characters (protocol/document.py, `skeleton`), so that every
node weaves the same atoms whether it ever saw the content or not.

Whether a request is good is decided from the request and its author's own
feed alone, which every node processing the request holds up to it (a
message is processed after its `prev`), so every node decides the same:

- `erase-malformed`: the content is not of the shape above;
- `erase-self`: it names its own seq;
- `erase-unknown`: it names a later seq (no message can name its future);
- `erase-not-own`: the author's message at that seq has another id (the
  request names another author's message, or a message of another branch);
- `erase-erase`: it names an erase request (those must stay, or a node
  that never saw one could never learn what it erased);
- `erase-structure`: it names a message of a private group's `members` or
  `epoch` tangle (its header says so): the group's membership and keys rest
  on those; a group's posts erase like any other.

A good request is carried out by every node that processes it: the
content is dropped, the header kept, and the content is never fetched or
accepted again (storage/erasure.py).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.limits import MAX_SEQ

ERASE = "erase"


class EraseReason(enum.StrEnum):
    """Why an erase request is refused: the same on every node."""

    MALFORMED = "erase-malformed"
    SELF = "erase-self"
    UNKNOWN = "erase-unknown"
    NOT_OWN = "erase-not-own"
    ERASE = "erase-erase"
    STRUCTURE = "erase-structure"


# Tangles whose members' contents others' state rests on: never erased (storage/groups).
STRUCTURAL_TANGLES = frozenset({"members", "epoch"})


@dataclass(frozen=True, slots=True)
class EraseRequest:
    """What a well-formed erase request says: the message at `seq` of its own feed, whose
    id is `message`; `weave` the structure of a document edit (None for any other)."""

    seq: int
    message: bytes
    weave: Any = None


def erase_content(seq: int, message: bytes, weave: Any = None) -> dict[str, Any]:
    """The content of our erase request of our message `message` at `seq`."""
    content: dict[str, Any] = {"message": message, "seq": seq, "type": ERASE}
    if weave is not None:
        content["weave"] = weave
    return content


def is_erase(content: Any) -> bool:
    return isinstance(content, dict) and content.get("type") == ERASE


def erase_request(content: Any) -> EraseRequest | EraseReason:
    """The request `content` makes, or `EraseReason.MALFORMED` (content that is not an erase
    request at all is the caller's to tell apart: `is_erase`)."""
    if not is_erase(content) or not set(content) <= {"type", "message", "seq", "weave"}:
        return EraseReason.MALFORMED
    message, seq = content.get("message"), content.get("seq")
    if type(message) is not bytes or len(message) != 32:
        return EraseReason.MALFORMED
    if type(seq) is not int or not 1 <= seq <= MAX_SEQ:
        return EraseReason.MALFORMED
    return EraseRequest(seq, message, content.get("weave"))


def judge(
    request: EraseRequest,
    own_seq: int,
    held_id: bytes | None,
    held_content: Any,
    held_tangles: Any = (),
) -> EraseReason | None:
    """Whether request `request`, at `own_seq` of its author's feed, is good, given the id
    of the author's message at `request.seq` (`held_id`), that message's content
    (`held_content`, None if absent: only an erase request's own matters) and the names
    of its tangles (`held_tangles`, from its header)."""
    if request.seq == own_seq:
        return EraseReason.SELF
    if request.seq > own_seq or held_id is None:
        return EraseReason.UNKNOWN
    if held_id != request.message:
        return EraseReason.NOT_OWN
    if is_erase(held_content):
        return EraseReason.ERASE
    if STRUCTURAL_TANGLES.intersection(held_tangles):
        return EraseReason.STRUCTURE
    return None
