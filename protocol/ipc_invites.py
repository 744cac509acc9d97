"""The invites' half of the IPC protocol, sans-IO: `invite-create`, `invite-list`,
`invite-revoke` and `invite-use` requests (docs/IPC.md, "Wire").

`invite-create` takes `uses` (1..`MAX_USES`, default 1), `expires` (seconds
from now, at most `MAX_EXPIRES`; null: never; default `DEFAULT_EXPIRES`),
`follow_back` (default true) and `addresses` (the HOST:PORTs to put in the
code, at most `MAX_ADDRESSES`; default: where the node listens).
`invite-revoke` takes `invite`, at least 4 characters of an invite's id (the
request's own `id` numbers it, as every request's).
`invite-use` takes `code` (at most `MAX_CODE_CHARS`) and `save` (default
true: the inviter is added to the config's peers). Their parsers join
`protocol.ipc.PARSERS`; the handlers are `node/ipc/invites.py`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.address import BadAddress, parse_address
from tanglenode.protocol.invite import MAX_ADDRESS_CHARS, MAX_ADDRESSES, MAX_CODE_CHARS
from tanglenode.protocol.ipc_fields import bad, count
from tanglenode.protocol.limits import Limits

MAX_USES = 10_000
DEFAULT_EXPIRES = 7 * 86_400
MAX_EXPIRES = 366 * 86_400
MAX_ID_CHARS = 64


@dataclass(frozen=True, slots=True)
class InviteCreateRequest:
    uses: int = 1
    expires: int | None = DEFAULT_EXPIRES  # seconds from now; None: never
    follow_back: bool = True
    addresses: tuple[str, ...] = ()  # empty: where the node listens


@dataclass(frozen=True, slots=True)
class InviteListRequest:
    pass


@dataclass(frozen=True, slots=True)
class InviteRevokeRequest:
    id: str


@dataclass(frozen=True, slots=True)
class InviteUseRequest:
    code: str
    save: bool = True


InviteRequests = InviteCreateRequest | InviteListRequest | InviteRevokeRequest | InviteUseRequest


def _bool(fields: dict[str, Any], key: str, default: bool) -> bool:
    value = fields.get(key, default)
    if value is None:
        return default
    if type(value) is not bool:
        raise bad(f"{key} is true or false")
    return value


def _create(fields: dict[str, Any], limits: Limits) -> InviteCreateRequest:
    uses = count(fields, "uses", 1)
    if not 1 <= uses <= MAX_USES:
        raise bad(f"uses is 1 to {MAX_USES}")
    expires = fields.get("expires", DEFAULT_EXPIRES)
    if expires is not None and (type(expires) is not int or not 1 <= expires <= MAX_EXPIRES):
        raise bad(f"expires is null (never) or 1 to {MAX_EXPIRES} seconds")
    addresses = fields.get("addresses") or []
    if not isinstance(addresses, list) or len(addresses) > MAX_ADDRESSES:
        raise bad(f"addresses is a list of at most {MAX_ADDRESSES} HOST:PORT")
    for address in addresses:
        if not isinstance(address, str) or len(address) > MAX_ADDRESS_CHARS:
            raise bad(f"an address is HOST:PORT, at most {MAX_ADDRESS_CHARS} characters")
        try:
            parse_address(address)
        except BadAddress as error:
            raise bad(f"address {address[:60]!r}: {error}") from None
    return InviteCreateRequest(uses, expires, _bool(fields, "follow_back", True), tuple(addresses))


def _list(fields: dict[str, Any], limits: Limits) -> InviteListRequest:
    return InviteListRequest()


def _revoke(fields: dict[str, Any], limits: Limits) -> InviteRevokeRequest:
    ident = fields.get("invite")
    if not isinstance(ident, str) or not 4 <= len(ident) <= MAX_ID_CHARS:
        raise bad("invite is at least 4 characters of an invite's id (tangled invite list)")
    return InviteRevokeRequest(ident)


def _use(fields: dict[str, Any], limits: Limits) -> InviteUseRequest:
    code = fields.get("code")
    if not isinstance(code, str) or len(code) > MAX_CODE_CHARS:
        raise bad(f"code is an invite code, at most {MAX_CODE_CHARS} characters")
    return InviteUseRequest(code, _bool(fields, "save", True))


INVITE_PARSERS: dict[str, Callable[[dict[str, Any], Limits], InviteRequests]] = {
    "invite-create": _create,
    "invite-list": _list,
    "invite-revoke": _revoke,
    "invite-use": _use,
}
