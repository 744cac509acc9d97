"""`/tangles` and `/t/NAME/ROOT`: a tangle's timeline, live by its `ins`/`mov` stream."""

from __future__ import annotations

from tanglenode.node.web.http import Request, Response, WebContext, not_found


async def index(web: WebContext, request: Request) -> Response:
    return not_found("tangles: not built yet")


async def page(web: WebContext, request: Request) -> Response:
    return not_found("tangle view: not built yet")


async def events(web: WebContext, request: Request) -> Response:
    return not_found()
