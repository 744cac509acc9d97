"""Private groups on the wire: what a group message carries, and its encryption.

Theory of operation
-------------------
A group message is an ordinary signed message whose envelope tangles place
it (docs/GROUPS.md, "Messages"): every one is in the `group` tangle rooted at the group's
first `group/init`; an epoch's `group/init` also roots that epoch's
`members` tangle and extends the `epoch` tangle; `add-member` and
`exclude-member` extend their epoch's `members` tangle. Its content is a map
readable by every replicating peer:

    {"group": 1, "epoch": EPOCH_ID | nil, "box": nonce + ciphertext,
     "seals": [sealed epoch key, ...]}

`epoch` names the epoch whose key opens `box` (nil in a `group/init`: the
message opens its own epoch, whose id is its own message id). `box` is a
SecretBox under the epoch key holding the private part, a msgpack map:

    {"type": "group/init", "name": str, "members": [feed, ...]}
    {"type": "group/add-member", "members": [feed, ...]}
    {"type": "group/exclude-member", "members": [feed, ...]}
    {"type": "group/post", "content": any}

`seals` carry the epoch key to members who do not have it yet, each sealed
(crypto_box_seal) to a member's X25519 key, converted from its Ed25519 feed
key: every member of a new epoch in its `group/init`, the new members in an
`add-member`. A sealed box does not name its recipient; a member tries its
key on each seal. So a non-member learns which group and epoch a message
belongs to, its place in the tangles (hence whether it opens an epoch or
changes membership), its author, time and size, and how many keys it
carries, never its type, text or who was added or excluded.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import msgpack
from nacl import bindings
from nacl.exceptions import CryptoError
from nacl.public import PrivateKey, PublicKey, SealedBox
from nacl.secret import SecretBox
from nacl.utils import random as random_bytes

from tanglenode.protocol.canonical import decode_canonical, encode_canonical
from tanglenode.protocol.errors import RemoteProtocolError
from tanglenode.protocol.identity import FEED_BYTES, Keypair

GROUP_VERSION = 1
EPOCH_KEY_BYTES = 32  # a SecretBox key


class Kind(enum.StrEnum):
    INIT = "group/init"
    ADD = "group/add-member"
    EXCLUDE = "group/exclude-member"
    POST = "group/post"


class GroupFormatError(RemoteProtocolError):
    """A group message's content is not shaped as a group message."""


def new_epoch_key() -> bytes:
    return random_bytes(EPOCH_KEY_BYTES)


def curve_public(feed: bytes) -> bytes:
    """A feed's X25519 public key, converted from its Ed25519 key."""
    return bindings.crypto_sign_ed25519_pk_to_curve25519(feed)


def seal_key(epoch_key: bytes, member: bytes) -> bytes:
    return SealedBox(PublicKey(curve_public(member))).encrypt(epoch_key)


def open_seals(seals: list[bytes], keypair: Keypair) -> bytes | None:
    """The epoch key from whichever seal is ours, or None."""
    secret = bindings.crypto_sign_ed25519_sk_to_curve25519(keypair.seed + keypair.public)
    opener = SealedBox(PrivateKey(secret))
    for seal in seals:
        try:
            key = opener.decrypt(seal)
        except CryptoError:
            continue
        if len(key) == EPOCH_KEY_BYTES:
            return key
    return None


@dataclass(frozen=True, slots=True)
class Private:
    """The private part of a group message, once opened."""

    kind: Kind
    members: tuple[bytes, ...] = ()
    name: str = ""
    content: Any = None
    # An add-member's keys of the group's earlier epochs, (epoch, key) each: what the
    # added can read of the group's past (its private documents). Optional: a node that
    # does not know it reads the add as before; one that does checks each key opens its
    # epoch's `group/init` before using it (storage/groups/state.py).
    history: tuple[tuple[bytes, bytes], ...] = ()

    def encode(self) -> bytes:
        fields: dict[str, Any] = {"type": str(self.kind)}
        if self.kind is Kind.POST:
            fields["content"] = self.content
        else:
            fields["members"] = list(self.members)
        if self.kind is Kind.INIT:
            fields["name"] = self.name
        if self.kind is Kind.ADD and self.history:
            fields["keys"] = [list(pair) for pair in self.history]
        return msgpack.packb(fields, use_bin_type=True)

    @classmethod
    def decode(cls, raw: bytes) -> Private:
        try:
            fields = msgpack.unpackb(raw, raw=False)
            kind = Kind(fields["type"])
        except (ValueError, KeyError, TypeError, msgpack.ExtraData) as error:
            raise GroupFormatError(f"the private part is not a group message: {error}") from None
        if kind is Kind.POST:
            return cls(kind, content=fields.get("content"))
        members = fields.get("members")
        if not isinstance(members, list) or not all(
            isinstance(m, bytes) and len(m) == FEED_BYTES for m in members
        ):
            raise GroupFormatError(f"{kind}: members must be a list of 32-byte feed keys")
        name = fields.get("name", "")
        if not isinstance(name, str):
            raise GroupFormatError("a group name is text")
        history = _history(fields.get("keys")) if kind is Kind.ADD else ()
        return cls(kind, tuple(members), name, history=history)


MAX_HISTORY = 64  # earlier epochs' keys one add-member carries, at most


def _history(keys: Any) -> tuple[tuple[bytes, bytes], ...]:
    """An add-member's earlier epochs' keys; none if not well formed (the add itself stays
    valid, as it is on a node that does not read them)."""
    if not isinstance(keys, list) or len(keys) > MAX_HISTORY:
        return ()
    pairs = []
    for pair in keys:
        if not (
            isinstance(pair, list)
            and len(pair) == 2
            and all(isinstance(part, bytes) and len(part) == 32 for part in pair)
        ):
            return ()
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


@dataclass(frozen=True, slots=True)
class GroupContent:
    """The readable part of a group message's content: epoch, box and seals.

    Not the message's envelope (`protocol.envelope`): this is what its content holds.
    """

    epoch: bytes | None
    box: bytes
    seals: tuple[bytes, ...]

    def to_content(self) -> dict[str, Any]:
        return {
            "group": GROUP_VERSION,
            "epoch": self.epoch,
            "box": self.box,
            "seals": list(self.seals),
        }

    @classmethod
    def from_content(cls, content: Any) -> GroupContent:
        version = content.get("group") if isinstance(content, dict) else None
        if type(version) is not int or version != GROUP_VERSION:  # msgpack's true == 1
            raise GroupFormatError("not a group message")
        epoch, box, seals = content.get("epoch"), content.get("box"), content.get("seals", [])
        if epoch is not None and not (isinstance(epoch, bytes) and len(epoch) == 32):
            raise GroupFormatError("epoch must be a message id or nil")
        if not isinstance(box, bytes):
            raise GroupFormatError("box must be bytes")
        if not isinstance(seals, list) or not all(isinstance(seal, bytes) for seal in seals):
            raise GroupFormatError("seals must be a list of bytes")
        return cls(epoch, box, tuple(seals))


def seal_message(
    private: Private, epoch_key: bytes, epoch: bytes | None, key_for: tuple[bytes, ...] = ()
) -> dict[str, Any]:
    """The content of a group message: `private` boxed, the key sealed to `key_for`."""
    box = bytes(SecretBox(epoch_key).encrypt(private.encode()))
    seals = tuple(seal_key(epoch_key, member) for member in key_for)
    return GroupContent(epoch, box, seals).to_content()


def seal_value(value: Any, epoch_key: bytes, epoch: bytes) -> dict[str, Any]:
    """The content of a message that is not a group message but lives in one (a private
    document's `doc/init` or `doc/edit`): `value` in canonical msgpack, boxed under the
    key of `epoch`, with no seals (docs/DOCUMENTS.md, "Private documents")."""
    box = bytes(SecretBox(epoch_key).encrypt(encode_canonical(value)))
    return GroupContent(epoch, box, ()).to_content()


def open_value(content: GroupContent, epoch_key: bytes, max_depth: int) -> Any:
    """What `seal_value` boxed, under the rules every content follows (canonical msgpack,
    finite floats, at most `max_depth` nested containers); `GroupFormatError` otherwise."""
    try:
        plain = SecretBox(epoch_key).decrypt(content.box)
    except CryptoError:
        raise GroupFormatError("the box does not open with its epoch's key") from None
    try:
        return decode_canonical(plain, max_depth)
    except ValueError as error:  # not canonical, too deep, a non-finite float, not msgpack
        raise GroupFormatError(f"the boxed content breaks the content rules: {error}") from None


def open_message(content: GroupContent, epoch_key: bytes) -> Private:
    try:
        plain = SecretBox(epoch_key).decrypt(content.box)
    except CryptoError:
        raise GroupFormatError("the box does not open with this epoch's key") from None
    return Private.decode(plain)
