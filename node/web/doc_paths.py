"""Where a document's pages are, and the numbers their queries carry: what /doc/ROOT's
pages (node/web/docs.py) and its history (node/web/doc_history.py) share."""

from __future__ import annotations

from tanglenode.node.web.http import Response, root_text, segment, text_response

MAX_NUMBER_DIGITS = 10  # `v` and `start` are u32s


def doc_path(doc: bytes, *rest: str) -> str:
    """`/doc/ROOT[/rest]`, ROOT without its `%`."""
    return "/".join(["/doc", segment(root_text(doc)), *rest])


def number(query: dict[str, str], key: str, default: int | None = None) -> int | None:
    """A non-negative integer query value, `default` when absent; `ValueError` otherwise."""
    text = query.get(key)
    if text is None:
        return default
    if not (text.isascii() and text.isdigit() and len(text) <= MAX_NUMBER_DIGITS):
        raise ValueError(f"{key}: a number (0, 1, 2, ...) of at most {MAX_NUMBER_DIGITS} digits")
    return int(text)


def bad_request(error: ValueError) -> Response:
    return text_response(f"{error}\n", 400)
