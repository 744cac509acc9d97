"""JSON from a file, depth-bounded: where hostile nesting is, found without recursion.

Python's `json` and msgspec both recurse into arrays and objects, so a file of
100,000 `[` ends in `RecursionError`, which names no place. `too_deep_at` walks
the text once, iteratively (a regular expression steps over strings, so brackets
inside them do not count), and returns the offset of the first bracket nested
deeper than allowed; `place` turns an offset into "line L, column C".
`loads` is `json.loads` behind that check, raising `JsonTooDeep` (a `ValueError`,
which readers of small files already turn into their typed refusal). A reader of
a large file (an editing trace) decodes first and calls `too_deep_at` only when
the decoder gave up, so a good file costs nothing more.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_JSON_DEPTH = 64  # no file the command line reads nests deeper

_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


class JsonTooDeep(ValueError):
    """JSON nested deeper than allowed; `offset` is where (bytes from the start)."""

    def __init__(self, offset: int, where: str, max_depth: int) -> None:
        super().__init__(f"nested deeper than {max_depth} levels at {where}")
        self.offset = offset


def too_deep_at(data: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> int | None:
    """The offset of the first `[` or `{` nested deeper than `max_depth`, or None."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    depth = 0
    for token in _TOKEN.finditer(data):
        bracket = data[token.start()]
        if bracket in b"[{":
            depth += 1
            if depth > max_depth:
                return token.start()
        elif bracket in b"]}":
            depth -= 1
    return None


def place(data: bytes | str, offset: int) -> str:
    """`offset` (in bytes) as "line L, column C", both from 1, the column in bytes."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    line = data.count(b"\n", 0, offset) + 1
    line_start = data.rfind(b"\n", 0, offset) + 1
    return f"line {line}, column {offset - line_start + 1}"


def check_depth(data: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> None:
    """`JsonTooDeep` if `data` nests deeper than `max_depth`."""
    offset = too_deep_at(data, max_depth)
    if offset is not None:
        raise JsonTooDeep(offset, place(data, offset), max_depth)


def loads(data: bytes | str, max_depth: int = MAX_JSON_DEPTH, **options: Any) -> Any:
    """`json.loads(data, **options)`, refusing nesting deeper than `max_depth` first."""
    check_depth(data, max_depth)
    return json.loads(data, **options)
