"""The redeemer's side of an invite: dial the inviter, prove the secret, read its answer.

Theory of operation
-------------------
`redeem` tries the code's addresses in order. For each it opens TCP,
runs the secret handshake against the inviter's key (the code's `feed`:
a server holding another key fails the handshake, so the secret only ever
goes to the inviter, inside the box-stream), sends the redemption frame
(protocol/invite.py) and reads one answer frame, all within
`REDEEM_SECONDS`. The first address that answers decides: accepted, or
refused with the inviter's reason. Only when none answers is the result
`invite-unavailable`, naming what each address did; a peer that answers
with gossip instead (a node of a version that takes no invites) is one of
those. The secret goes nowhere else: not in an error, not in a log.
"""

from __future__ import annotations

import trio

from tanglenode.node.net.transport import BoxStreamError, HandshakeFailed, client_handshake
from tanglenode.protocol.address import BadAddress, parse_address
from tanglenode.protocol.errors import RemoteProtocolError, TanglenodeError
from tanglenode.protocol.framing import FrameDecoder, encode_frame
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.invite import (
    Answer,
    BadInvite,
    InviteCode,
    Refusal,
    parse_answer,
    redeem_frame,
)

REDEEM_SECONDS = 15.0  # per address: connect, handshake, ask, answer


class InviteFailed(TanglenodeError):
    """No address of the code answered, or the inviter refused: `refusal` says which."""

    def __init__(self, refusal: Refusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal


async def redeem(
    code: InviteCode, network_key: bytes, keypair: Keypair, *, seconds: float = REDEEM_SECONDS
) -> tuple[str, Answer]:
    """The address that answered and its answer; `InviteFailed` if the inviter refused or
    none answered."""
    failures = []
    for address in code.addresses:
        try:
            with trio.fail_after(seconds):
                answer = await _ask(address, code, network_key, keypair)
        except (OSError, BadAddress, HandshakeFailed, BoxStreamError, trio.TooSlowError) as error:
            failures.append(f"{address}: {_why(error)}")
            continue
        except (BadInvite, RemoteProtocolError, trio.BrokenResourceError):
            failures.append(f"{address}: answered, but not to an invite (an older node?)")
            continue
        if answer.refusal is not None:
            raise InviteFailed(answer.refusal, f"the inviter refused: {answer.detail}")
        return address, answer
    raise InviteFailed(
        Refusal.UNAVAILABLE, "could not reach the inviter: " + "; ".join(failures)[:600]
    )


def _why(error: BaseException) -> str:
    if isinstance(error, trio.TooSlowError):
        return "no answer in time"
    return str(error) or type(error).__name__


async def _ask(address: str, code: InviteCode, network_key: bytes, keypair: Keypair) -> Answer:
    host, port = parse_address(address)
    stream = await trio.open_tcp_stream(host, port)
    try:
        secure = await client_handshake(stream, network_key, keypair, code.feed)
    except BaseException:
        await stream.aclose()
        raise
    try:
        await secure.send_all(encode_frame(redeem_frame(code.secret)))
        decoder = FrameDecoder()
        while (frame := decoder.next_frame()) is None:
            data = await secure.receive_some()
            if not data:
                raise BadInvite("the inviter closed without an answer")
            decoder.receive_data(data)
        return parse_answer(frame)
    finally:
        await secure.aclose()
