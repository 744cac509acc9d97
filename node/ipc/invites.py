"""The IPC ops of invites: `invite-create`, `invite-list`, `invite-revoke`, `invite-use`.

Theory of operation
-------------------
Rows of `node.ipc.ops.OPS`, served by the running node only: a code names
where the node listens, and redeeming one dials out (docs/PEERS.md,
"Invites").

`invite-create` makes a 32-byte secret, keeps its hash (`store.invites`,
one transaction) and answers the code (protocol/invite.py) with the
addresses asked for, or else where the node listens: its listening
address, or, when it listens on every interface, this machine's own
addresses (loopback last). `invite-use` checks the code here (its network,
that it is not our own), redeems it (node/invites/use.py), and once the
inviter accepted: saves the inviter as a peer in the config file (unless
`save` is false or the node runs without one), follows it unless we do
already (our contact message, as `tangled follow`), and dials it. Its reply
says what the scope will bring: whether the inviter is carried now and
whether it follows us back. No reply, error or log carries the code.
"""

from __future__ import annotations

import secrets
import socket
import time
from typing import TYPE_CHECKING, Any

import trio

from tanglenode.node.invites.use import InviteFailed, redeem
from tanglenode.node.ipc.peers import save_in_config
from tanglenode.protocol.address import parse_address
from tanglenode.protocol.contacts import contact_content
from tanglenode.protocol.invite import (
    MAX_ADDRESSES,
    BadInvite,
    InviteCode,
    Refusal,
    network_tag,
    parse_code,
    secret_hash,
)
from tanglenode.protocol.ipc import ConnectRequest, message_body
from tanglenode.protocol.ipc_fields import ErrorKind, RequestError
from tanglenode.protocol.ipc_invites import (
    InviteCreateRequest,
    InviteListRequest,
    InviteRevokeRequest,
    InviteUseRequest,
)
from tanglenode.storage.invites import Invite, InviteNotFound, TooManyInvites

if TYPE_CHECKING:
    from tanglenode.node.ipc.area import Area
    from tanglenode.node.ipc.peers import RunningNode

__all__ = ["invite_create", "invite_list", "invite_revoke", "invite_use", "listen_addresses"]

_ANY_HOST = {"0.0.0.0", "::", ""}


def listen_addresses(listen: str) -> list[str]:
    """Where peers can reach a node listening on `listen` (HOST:PORT): that address, or for
    every interface this machine's addresses (blocking: it asks the resolver)."""
    host, port = parse_address(listen, lowest_port=0)
    if host not in _ANY_HOST:
        return [listen]
    found: list[str] = []
    try:
        infos = socket.getaddrinfo(socket.gethostname(), port, type=socket.SOCK_STREAM)
    except OSError:
        infos = []
    for _family, _type, _proto, _name, sockaddr in infos:
        ip = str(sockaddr[0])
        text = f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"
        if not ip.startswith(("127.", "::1", "fe80")) and text not in found:
            found.append(text)
    return [*found[: MAX_ADDRESSES - 1], f"127.0.0.1:{port}"]


def _running(area: Area) -> RunningNode:
    assert area.node is not None, "served only by the running node (node.ipc.ops.OPS)"
    return area.node


def _keypair(area: Area):
    if area.keypair is None:
        raise RequestError(ErrorKind.NO_IDENTITY, "the node has no feed of its own")
    return area.keypair


def invite_row(invite: Invite, now: float) -> dict[str, Any]:
    """One invite as `invite list` shows it: never its secret (only its hash is kept)."""
    return {
        "id": invite.id,
        "state": invite.state(now),
        "created": invite.created,
        "expires": invite.expires,
        "uses": invite.uses,
        "left": invite.left,
        "follow_back": invite.follow_back,
        "revoked": invite.revoked,
        "redeemed_by": list(invite.by),
    }


async def invite_create(area: Area, request: InviteCreateRequest) -> dict[str, Any]:
    node, keypair = _running(area), _keypair(area)
    addresses = list(request.addresses)
    if not addresses:
        listen = node.status_extra.get("listen")
        if listen is None:
            raise RequestError(ErrorKind.NOT_FOUND, "where the node listens is not known yet")
        addresses = await trio.to_thread.run_sync(listen_addresses, listen)
    secret = secrets.token_bytes(32)
    now = time.time()
    expires = None if request.expires is None else now + request.expires
    book = area.service.store.invites
    try:
        invite = await area.service.keep(
            lambda: book.create(
                secret_hash(secret),
                now,
                uses=request.uses,
                expires=expires,
                follow_back=request.follow_back,
            )
        )
    except TooManyInvites as error:
        raise RequestError(ErrorKind.REFUSED, str(error), "too-many-invites") from None
    code = InviteCode(
        tuple(addresses), keypair.public, secret, network_tag(node.network.network_key)
    )
    door = node.network.door
    return {
        "code": code.text(),
        **invite_row(invite, now),
        "follows_back": request.follow_back or bool(door and door.follow_all),
        "addresses": addresses,
    }


async def invite_list(area: Area, request: InviteListRequest) -> dict[str, Any]:
    invites = await area.service.read(lambda store: store.invites.listing())
    now = time.time()
    return {"invites": [invite_row(invite, now) for invite in invites]}


async def invite_revoke(area: Area, request: InviteRevokeRequest) -> dict[str, Any]:
    book, now = area.service.store.invites, time.time()
    try:
        invite = await area.service.keep(book.revoke, request.id, now)
    except InviteNotFound as error:
        raise RequestError(ErrorKind.NOT_FOUND, str(error)) from None
    return invite_row(invite, now)


def _refused(refusal: Refusal, message: str) -> RequestError:
    return RequestError(ErrorKind.REFUSED, message, str(refusal))


async def invite_use(area: Area, request: InviteUseRequest) -> dict[str, Any]:
    node, keypair, service = _running(area), _keypair(area), area.service
    try:
        code = parse_code(request.code)
    except BadInvite as error:
        raise _refused(Refusal.MALFORMED, str(error)) from None
    if code.feed == keypair.public:
        raise _refused(Refusal.OWN, "that invite is this node's own: give it to someone else")
    network_key = node.network.network_key
    if code.network != network_tag(network_key):
        raise _refused(
            Refusal.OTHER_NETWORK,
            "that invite is for another network: its inviter's network_key differs from ours",
        )
    try:
        address, answer = await redeem(code, network_key, keypair)
    except InviteFailed as failed:
        raise _refused(failed.refusal, str(failed)) from None
    reply: dict[str, Any] = {
        "inviter": code.feed,
        "address": address,
        "follows_back": answer.follows_back,
        "saved": None,
    }
    if request.save and node.config_file is not None:
        try:
            reply["saved"] = await save_in_config(node, ConnectRequest(address, code.feed, True))
        except RequestError as error:  # redeemed all the same: say why it is not saved
            reply["saved"] = False
            reply["not_saved"] = str(error)
    me = keypair.public
    stance = (await service.read(lambda store: store.feeds.stances(me))).get(code.feed)
    reply["followed"] = None
    if stance is None or not stance.following:
        message = await service.publish(
            contact_content(code.feed, following=True, blocking=False), None
        )
        reply["followed"] = message_body(message)
    await service.refresh_scope()
    reply["carried"] = service.scope.carries(code.feed)
    from tanglenode.node.gossip.network import TooManyDialers  # loaded with the daemon

    assert node.dialers is not None
    try:
        node.network.dial(node.dialers, address, code.feed)
    except TooManyDialers as error:
        reply["not_dialed"] = str(error)
    return reply
