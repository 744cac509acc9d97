"""The invites this node has made: kept by hash, counted down, expired, revoked, redeemed.

Theory of operation
-------------------
One table, local to this node (no message says anything of it):

    invites    BLAKE2b-256(secret) -> msgpack {created, expires, uses, left,
                                               follow_back, revoked, by}

Only the secret's hash is kept (protocol/invite.py, `secret_hash`): a copy
of the store redeems nothing, and an invite is named everywhere by
`invite_id` of its hash. `left` counts down from `uses`; `by` holds the
last `KEPT_REDEEMERS` redeemers' feeds, for `invite list` and for retries: a
redeemer that asks again (its answer lost on the way) is answered again
without spending another use.

A redemption (`redeem`) is one write transaction: it judges the row
(`judge`, a pure function: unknown, revoked, expired, used up), counts it
down, and, when the invite follows back and we do not follow the redeemer
yet, publishes our follow of it in that same transaction (through
`store.writes`' publishing session), so a code is never spent without
its follow nor followed without being spent. A refused redemption raises
`InviteRefused` before anything is written.

An invite that can no longer be redeemed stays `KEEP_CLOSED_SECONDS` (so a
late redeemer hears "used up", "expired" or "revoked", not "unknown"),
then goes when the next invite is made. At most `MAX_OPEN` are open at
once and `MAX_ROWS` kept in all: the table stays small whatever is asked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import msgpack

from tanglenode.protocol.contacts import contact_content
from tanglenode.protocol.errors import TanglenodeError
from tanglenode.protocol.invite import Refusal, invite_id
from tanglenode.protocol.message import Message
from tanglenode.storage.context import StoreContext
from tanglenode.storage.views.contacts import CONTACTS_DB, stance_toward
from tanglenode.storage.writes import OwnPublishing, Writes

INVITES_DB = b"invites"
MAX_OPEN = 1_000
MAX_ROWS = 2_000
MAX_USES = 10_000
KEPT_REDEEMERS = 16
KEEP_CLOSED_SECONDS = 30 * 86_400


class InviteRefused(TanglenodeError):
    """A redemption or revocation refused: `refusal` says why (nothing was written)."""

    def __init__(self, refusal: Refusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal


class InviteNotFound(TanglenodeError):
    """No invite (or more than one) has the id given to `revoke`."""


class TooManyInvites(TanglenodeError):
    """`MAX_OPEN` invites are open already: revoke some first."""


@dataclass(frozen=True, slots=True)
class Invite:
    hashed: bytes
    created: float
    expires: float | None  # None: never
    uses: int
    left: int
    follow_back: bool
    revoked: float | None = None  # when it was revoked
    by: tuple[bytes, ...] = field(default_factory=tuple)  # the latest redeemers' feeds

    @property
    def id(self) -> str:
        return invite_id(self.hashed)

    def state(self, now: float) -> str:
        """open, used-up, expired or revoked."""
        refusal = judge(self, now)
        return "open" if refusal is None else refusal.removeprefix("invite-")

    def closed_at(self, now: float) -> float | None:
        """When it stopped being redeemable (None while open)."""
        if self.revoked is not None:
            return self.revoked
        if self.expires is not None and self.expires <= now:
            return self.expires
        return None if self.left > 0 else self.created

    def packed(self) -> bytes:
        return msgpack.packb(
            {
                "created": self.created,
                "expires": self.expires,
                "uses": self.uses,
                "left": self.left,
                "follow_back": self.follow_back,
                "revoked": self.revoked,
                "by": list(self.by),
            }
        )

    @classmethod
    def unpacked(cls, hashed: bytes, value: bytes) -> Invite:
        row = msgpack.unpackb(value)
        return cls(
            bytes(hashed),
            row["created"],
            row["expires"],
            row["uses"],
            row["left"],
            row["follow_back"],
            row["revoked"],
            tuple(row["by"]),
        )


def judge(invite: Invite | None, now: float) -> Refusal | None:
    """Why `invite` cannot be redeemed at `now`, or None if it can."""
    if invite is None:
        return Refusal.UNKNOWN
    if invite.revoked is not None:
        return Refusal.REVOKED
    if invite.expires is not None and invite.expires <= now:
        return Refusal.EXPIRED
    if invite.left <= 0:
        return Refusal.USED_UP
    return None


_SAID = {
    Refusal.UNKNOWN: "no invite of this node has that code",
    Refusal.REVOKED: "that invite was revoked",
    Refusal.EXPIRED: "that invite has expired",
    Refusal.USED_UP: "every use of that invite was redeemed",
}


@dataclass(frozen=True, slots=True)
class Redemption:
    invite: Invite  # as it is after this redemption
    followed: Message | None  # our follow of the redeemer, if this published one
    follows_back: bool  # we follow the redeemer now


class InviteBook:
    """`store.invites`: make, list, revoke and redeem invites, each one transaction."""

    def __init__(self, ctx: StoreContext, writes: Writes) -> None:
        self._ctx = ctx
        self._writes = writes
        with ctx.env.begin(write=True) as txn:
            self._db = ctx.env.open_db(INVITES_DB, txn=txn)

    def _all(self, txn: Any) -> list[Invite]:
        return [
            Invite.unpacked(bytes(key), bytes(value))
            for key, value in txn.cursor(db=self._db).iternext()
        ]

    def create(
        self, hashed: bytes, now: float, *, uses: int, expires: float | None, follow_back: bool
    ) -> Invite:
        """Keep a new invite whose secret hashes to `hashed`; `TooManyInvites` past
        `MAX_OPEN`. Closed invites older than `KEEP_CLOSED_SECONDS` go first."""
        if not 1 <= uses <= MAX_USES:
            raise ValueError(f"an invite has 1 to {MAX_USES} uses")
        invite = Invite(hashed, now, expires, uses, uses, follow_back)
        with self._ctx.write() as txn:
            kept = self._all(txn)
            closed = sorted(
                (at, each.hashed) for each in kept if (at := each.closed_at(now)) is not None
            )
            stale = [h for at, h in closed if at <= now - KEEP_CLOSED_SECONDS]
            stale += [h for _at, h in closed[len(stale) :]][: max(0, len(kept) + 1 - MAX_ROWS)]
            for hashed_key in stale:
                txn.delete(hashed_key, db=self._db)
            if len(kept) - len(closed) >= MAX_OPEN:
                raise TooManyInvites(
                    f"{MAX_OPEN} invites are open already: revoke some (tangled invite revoke ID)"
                )
            txn.put(hashed, invite.packed(), db=self._db)
        return invite

    def listing(self) -> list[Invite]:
        """Every invite kept, newest first."""
        with self._ctx.read() as txn:
            return sorted(self._all(txn), key=lambda each: -each.created)

    def revoke(self, prefix: str, now: float) -> Invite:
        """Revoke the one invite whose id starts with `prefix` (at least 4 characters);
        `InviteNotFound` for none or several. Revoking twice keeps the first time."""
        if len(prefix) < 4:
            raise InviteNotFound("name an invite by at least 4 characters of its id")
        with self._ctx.write() as txn:
            found = [each for each in self._all(txn) if each.id.startswith(prefix)]
            if len(found) != 1:
                what = "no invite" if not found else f"{len(found)} invites"
                raise InviteNotFound(f"{what} with an id starting {prefix!r}")
            invite = found[0]
            if invite.revoked is None:
                invite = replace(invite, revoked=now)
                txn.put(invite.hashed, invite.packed(), db=self._db)
            return invite

    def redeem(
        self, session: OwnPublishing, hashed: bytes, redeemer: bytes, now: float, follow_all: bool
    ) -> Redemption:
        """Inside a publishing session (storage.writes, `Job`): spend one use of the invite
        whose secret hashes to `hashed` for `redeemer`, and follow it back if the invite
        (or `follow_all`, a community peer's setting) says so and we do not yet; raises
        `InviteRefused` having written nothing."""
        txn, keypair = session.txn, self._ctx.keypair
        assert keypair is not None, "only a node with a feed of its own makes invites"
        if redeemer == keypair.public:
            raise InviteRefused(Refusal.OWN, "that is this node's own invite")
        value = txn.get(hashed, db=self._db)
        invite = None if value is None else Invite.unpacked(hashed, bytes(value))
        again = invite is not None and redeemer in invite.by  # a retry: its use is spent
        refusal = judge(invite, now)
        if refusal is not None and not (again and refusal is Refusal.USED_UP):
            raise InviteRefused(refusal, _SAID[refusal])
        assert invite is not None
        stance = stance_toward(txn, self._ctx.view_tables[CONTACTS_DB], keypair.public, redeemer)
        if stance.blocking:
            raise InviteRefused(Refusal.BLOCKED, "this node blocks that feed")
        if not again:
            invite = replace(
                invite, left=invite.left - 1, by=(*invite.by, redeemer)[-KEPT_REDEEMERS:]
            )
            txn.put(hashed, invite.packed(), db=self._db)
        followed = None
        if (invite.follow_back or follow_all) and not stance.following:
            content = contact_content(redeemer, following=True, blocking=False)
            followed = session.publish(content, None)
        return Redemption(invite, followed, stance.following or followed is not None)
