"""Invite codes and the redemption exchange, sans-IO.

Theory of operation
-------------------
An invite lets a newcomer join a node in one step (docs/PEERS.md, "Invites"):
the inviter's node makes a one-time secret, keeps only its hash, and prints a
code holding what the redeemer needs:

    inv1.<base64url of msgpack [addresses, feed, secret, network]>

`addresses` are where the inviter listens (1 to `MAX_ADDRESSES`, each
HOST:PORT), `feed` its 32-byte public key (the key the secret handshake
checks), `secret` 32 random bytes, `network` the first `NETWORK_TAG_BYTES`
of the hash of its network key, so a redeemer on another network is told
so instead of failing the handshake in silence. A code is at most
`MAX_CODE_CHARS` characters; anything else is refused (`BadInvite`) before
it is decoded further.

Redemption happens inside a secret-handshake session, never in clear: the
redeemer dials one of the addresses, completes the handshake against
`feed` (proving its own key as it does), and sends one frame as its first:

    ["invite", VERSION, secret]

instead of a gossip HELLO. The inviter answers with one frame and closes:

    ["invited", {"follows_back": bool}]
    ["invite-refused", refusal, detail]

`Refusal` names every reason a redemption is refused; the inviter writes
nothing for any of them. The secret is never logged: `invite_id` (a short
text of its hash) is how logs and listings name an invite.
"""

from __future__ import annotations

import base64
import binascii
import enum
import hashlib
from dataclasses import dataclass
from typing import Any

import msgpack

from tanglenode.protocol.address import BadAddress, parse_address
from tanglenode.protocol.errors import TanglenodeError

PREFIX = "inv1."
VERSION = 1
SECRET_BYTES = 32
NETWORK_TAG_BYTES = 4
MAX_ADDRESSES = 4
MAX_ADDRESS_CHARS = 255
MAX_CODE_CHARS = 1024
ID_CHARS = 8  # an invite's id: this many base64url characters of its secret's hash
REDEEM = "invite"
INVITED = "invited"
REFUSED = "invite-refused"


class Refusal(enum.StrEnum):
    """Why an inviter refused a redemption (the redeemer is told which)."""

    UNKNOWN = "invite-unknown"  # no invite has that secret (a wrong code)
    USED_UP = "invite-used-up"  # every use of it was redeemed
    EXPIRED = "invite-expired"
    REVOKED = "invite-revoked"
    RATE_LIMITED = "invite-rate-limited"  # too many redemptions from that address lately
    OWN = "invite-own"  # the inviter redeeming its own code
    BLOCKED = "invite-blocked"  # the inviter blocks the redeemer's feed
    OTHER_NETWORK = "invite-other-network"  # the code's network key is not the redeemer's
    MALFORMED = "invite-malformed"  # a code or redemption frame of the wrong shape
    UNAVAILABLE = "invite-unavailable"  # the inviter could not be reached or takes no invites


class BadInvite(TanglenodeError):
    """A code that is not an invite (too long, not base64url msgpack of the right shape)."""

    refusal = Refusal.MALFORMED


@dataclass(frozen=True, slots=True)
class InviteCode:
    addresses: tuple[str, ...]
    feed: bytes
    secret: bytes
    network: bytes  # NETWORK_TAG_BYTES of the hash of the inviter's network key

    def text(self) -> str:
        body = msgpack.packb([list(self.addresses), self.feed, self.secret, self.network])
        return PREFIX + base64.urlsafe_b64encode(body).decode().rstrip("=")


def network_tag(network_key: bytes) -> bytes:
    return hashlib.blake2b(network_key, digest_size=NETWORK_TAG_BYTES).digest()


def secret_hash(secret: bytes) -> bytes:
    """What the inviter keeps of a secret: its BLAKE2b-256 hash."""
    return hashlib.blake2b(secret, digest_size=32, person=b"tangled-invite").digest()


def invite_id(hashed: bytes) -> str:
    """The short name of an invite, from its secret's hash: safe to log and list."""
    return base64.urlsafe_b64encode(hashed).decode()[:ID_CHARS]


def parse_code(text: Any) -> InviteCode:
    """The code in `text` (surrounding whitespace ignored); `BadInvite` for anything else."""
    if not isinstance(text, str) or len(text) > MAX_CODE_CHARS:
        raise BadInvite(f"an invite code is text of at most {MAX_CODE_CHARS} characters")
    text = text.strip()
    if not text.startswith(PREFIX):
        raise BadInvite(f"an invite code starts with {PREFIX!r}")
    payload = text[len(PREFIX) :]
    try:
        body = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        fields = msgpack.unpackb(body, raw=False, max_array_len=8, max_str_len=MAX_ADDRESS_CHARS)
    except (binascii.Error, ValueError, msgpack.ExtraData, msgpack.FormatError) as error:
        raise BadInvite(f"not an invite code: {error}") from None
    match fields:
        case [list() as addresses, bytes() as feed, bytes() as secret, bytes() as network]:
            pass
        case _:
            raise BadInvite("not an invite code: its fields have the wrong shape")
    if not 1 <= len(addresses) <= MAX_ADDRESSES:
        raise BadInvite(f"an invite names 1 to {MAX_ADDRESSES} addresses")
    for address in addresses:
        try:
            parse_address(address)
        except BadAddress as error:
            raise BadInvite(f"an invite's address is not HOST:PORT: {error}") from None
    if len(feed) != 32 or len(secret) != SECRET_BYTES or len(network) != NETWORK_TAG_BYTES:
        raise BadInvite("not an invite code: a key, secret or network tag of the wrong size")
    return InviteCode(tuple(addresses), feed, secret, network)


def redeem_frame(secret: bytes) -> list[Any]:
    return [REDEEM, VERSION, secret]


def is_redemption(frame: Any) -> bool:
    """Whether a connection's first frame asks to redeem an invite (not a gossip HELLO)."""
    return isinstance(frame, list) and bool(frame) and frame[0] == REDEEM


def redeemed_secret(frame: Any) -> bytes:
    """The secret a redemption frame carries; `BadInvite` for a malformed one."""
    match frame:
        case [str(), int(version), bytes() as secret] if version == VERSION:
            if len(secret) == SECRET_BYTES:
                return secret
    raise BadInvite(f"a redemption is [{REDEEM!r}, {VERSION}, {SECRET_BYTES}-byte secret]")


def invited_frame(follows_back: bool) -> list[Any]:
    return [INVITED, {"follows_back": follows_back}]


def refused_frame(refusal: Refusal, detail: str) -> list[Any]:
    return [REFUSED, str(refusal), detail[:300]]


@dataclass(frozen=True, slots=True)
class Answer:
    """The inviter's answer: accepted (`refusal` None) with `follows_back`, or refused."""

    follows_back: bool = False
    refusal: Refusal | None = None
    detail: str = ""


def parse_answer(frame: Any) -> Answer:
    """The inviter's reply frame; `BadInvite` for anything but the two shapes above."""
    match frame:
        case [str(kind), {"follows_back": bool(follows_back)}] if kind == INVITED:
            return Answer(follows_back=follows_back)
        case [str(kind), str(refusal), str(detail)] if kind == REFUSED:
            try:
                return Answer(refusal=Refusal(refusal), detail=detail[:300])
            except ValueError:
                pass
    raise BadInvite("the inviter answered something that is not an invite reply")
