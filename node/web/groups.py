"""`/groups` and `/groups/ROOT`: our private groups, their members, epochs and timeline."""

from __future__ import annotations

from tanglenode.node.web.http import Request, Response, WebContext, not_found


async def index(web: WebContext, request: Request) -> Response:
    return not_found("groups: not built yet")


async def page(web: WebContext, request: Request) -> Response:
    return not_found("group view: not built yet")
