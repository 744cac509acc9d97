"""The inviter's side of an invite: telling a redemption from gossip, and answering it.

Theory of operation
-------------------
A redeemer dials us like any peer and completes the secret handshake, so
we know its feed key before it says a word. Its first frame then says what
the connection is for (protocol/invite.py): a gossip HELLO, or a
redemption. `first_frame` reads until one whole frame has arrived (within
the handshake's deadline, at most one gossip frame's bytes) and the
listener (node/gossip/network.py) either hands every byte read back to the
stream (`SecureStream.unread`) for gossip, or lets the door answer.

The door answers each redemption with one frame, then closes:

- `RedemptionRate` first: at most `PER_ADDRESS` attempts per remote
  address and `IN_ALL` from everyone in any `WINDOW` seconds, counted
  whatever their outcome, so no one can guess codes or flood the writer;
  past it the answer is `invite-rate-limited` and nothing is looked up;
- a malformed frame is `invite-malformed`;
- otherwise the store judges it (`StoreService.redeem_invite`: spent and
  followed back in one transaction, or refused with nothing written).

Every answer is counted (`tanglenode_invite_redemptions_total`, by outcome).
The secret is never logged: a redemption is logged in one line naming the
redeemer's feed, the invite's id (a hash of the secret) and the outcome.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

import structlog
import trio

from tanglenode.node.net.transport import SecureStream
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.errors import RemoteProtocolError
from tanglenode.protocol.framing import FrameDecoder, encode_frame
from tanglenode.protocol.identity import feed_text
from tanglenode.protocol.invite import (
    BadInvite,
    Refusal,
    invite_id,
    invited_frame,
    redeemed_secret,
    refused_frame,
    secret_hash,
)
from tanglenode.storage.invites import InviteRefused

log = structlog.get_logger("invites")

PER_ADDRESS = 5  # redemptions from one address per WINDOW
IN_ALL = 60  # redemptions from everyone per WINDOW
WINDOW = 60.0
TRACKED = 4096  # addresses remembered at most (the oldest forgotten first)


class RedemptionRate:
    """Whether one more redemption attempt from an address is let through now (pure)."""

    def __init__(
        self, per_address: int = PER_ADDRESS, in_all: int = IN_ALL, window: float = WINDOW
    ) -> None:
        self.per_address, self.in_all, self.window = per_address, in_all, window
        self._by_address: OrderedDict[str, deque[float]] = OrderedDict()
        self._all: deque[float] = deque()

    def admit(self, address: str, now: float) -> bool:
        """Count an attempt from `address` at `now`; False past either limit."""
        since = now - self.window
        while self._all and self._all[0] <= since:
            self._all.popleft()
        times = self._by_address.pop(address, deque())
        while times and times[0] <= since:
            times.popleft()
        self._by_address[address] = times  # most recent last
        while len(self._by_address) > TRACKED:
            self._by_address.popitem(last=False)
        if len(times) >= self.per_address or len(self._all) >= self.in_all:
            return False
        times.append(now)
        self._all.append(now)
        return True


async def first_frame(secure: SecureStream, seconds: float) -> tuple[Any, bytes] | None:
    """The first frame a peer sent and every byte read to find it, or None if it hung up
    or sent something that is not a frame first (gossip then says why, as ever);
    `trio.TooSlowError` past `seconds`."""
    decoder, read = FrameDecoder(), bytearray()
    with trio.fail_after(seconds):
        while True:
            data = await secure.receive_some()
            if not data:
                return None
            read += data
            try:
                decoder.receive_data(data)
                frame = decoder.next_frame()
            except RemoteProtocolError:
                return None, bytes(read)
            if frame is not None:
                return frame, bytes(read)


class InviteDoor:
    """Answers redemptions of this node's invites (see the module docstring)."""

    def __init__(
        self,
        service: StoreService,
        *,
        follow_all: bool = False,
        rate: RedemptionRate | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.service = service
        self.follow_all = follow_all  # [replication] follow_invited: follow every redeemer
        self.rate = rate or RedemptionRate()
        self.clock = clock
        self.redeemed = 0
        self.refused = 0

    async def answer(self, secure: SecureStream, frame: Any, host: str) -> None:
        """Answer the redemption `frame` from `host` with one frame, then close."""
        try:
            reply = await self._judge(secure.peer, frame, host)
            await secure.send_all(encode_frame(reply))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # it left: what was decided stands
        finally:
            await secure.aclose()

    async def _judge(self, redeemer: bytes, frame: Any, host: str) -> list[Any]:
        now = self.clock()
        if not self.rate.admit(host, trio.current_time()):
            return self._refuse(redeemer, None, Refusal.RATE_LIMITED, "too many redemptions")
        try:
            hashed = secret_hash(redeemed_secret(frame))
        except BadInvite as error:
            return self._refuse(redeemer, None, Refusal.MALFORMED, str(error))
        try:
            redemption = await self.service.redeem_invite(hashed, redeemer, now, self.follow_all)
        except InviteRefused as refused:
            return self._refuse(redeemer, hashed, refused.refusal, str(refused))
        self.redeemed += 1
        self.service.counters.invites["redeemed"] += 1
        log.info(
            "invite redeemed",
            peer=feed_text(redeemer),
            invite=invite_id(hashed),
            left=redemption.invite.left,
            follows_back=redemption.follows_back,
        )
        return invited_frame(redemption.follows_back)

    def _refuse(
        self, redeemer: bytes, hashed: bytes | None, refusal: Refusal, detail: str
    ) -> list[Any]:
        self.refused += 1
        self.service.counters.invites[str(refusal)] += 1
        log.info(
            "invite refused",
            peer=feed_text(redeemer),
            invite=None if hashed is None else invite_id(hashed),
            refusal=str(refusal),
        )
        return refused_frame(refusal, detail)
