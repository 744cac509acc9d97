"""`/docs` and `/doc/ROOT`: documents, live, with blame colours and a version slider."""

from __future__ import annotations

from tanglenode.node.web.http import Request, Response, WebContext, not_found


async def index(web: WebContext, request: Request) -> Response:
    return not_found("documents: not built yet")


async def page(web: WebContext, request: Request) -> Response:
    return not_found("document view: not built yet")


async def part(web: WebContext, request: Request) -> Response:
    return not_found()
