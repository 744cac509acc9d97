"""A timeline's edit commands (`ins`, `mov`, `del`) and their encoding in the command log.

The engine (`storage.timeline`) returns these for every event and appends
them to the timeline's log; a subscriber replays them on its own array with
`apply_commands`. In the log an event's commands are one msgpack list of
`[0, pos, id]` (ins), `[1, from, to]` (mov) and `[2, pos]` (del).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import msgpack

_INS, _MOV, _DEL = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Insert:
    """`ins pos id`: insert `id` so that it ends up at index `pos`."""

    pos: int
    id: bytes


@dataclass(frozen=True, slots=True)
class Move:
    """`mov src dst`: take the element at `src` out, then insert it at `dst`."""

    src: int
    dst: int


@dataclass(frozen=True, slots=True)
class Delete:
    """`del pos`: take the element at `pos` out (a removed member)."""

    pos: int


Command = Insert | Move | Delete


def apply_commands(array: list[Any], commands: Iterable[Command]) -> list[Any]:
    """Replay commands on a list (in place), as a subscriber would."""
    for command in commands:
        if isinstance(command, Insert):
            array.insert(command.pos, command.id)
        elif isinstance(command, Move):
            array.insert(command.dst, array.pop(command.src))
        else:
            del array[command.pos]
    return array


def encode_commands(commands: Sequence[Command]) -> bytes:
    """One event's commands as a log row."""
    rows: list[tuple] = []
    for command in commands:
        kind = type(command)
        if kind is Move:
            rows.append((_MOV, command.src, command.dst))  # type: ignore[union-attr]
        elif kind is Insert:
            rows.append((_INS, command.pos, command.id))  # type: ignore[union-attr]
        else:
            rows.append((_DEL, command.pos))
    return msgpack.packb(rows)


def _decode_command(kind: int, *fields: Any) -> Command:
    if kind == _INS:
        return Insert(*fields)
    if kind == _MOV:
        return Move(*fields)
    if kind == _DEL:
        return Delete(*fields)
    raise ValueError(f"unknown timeline command kind {kind}")


def decode_commands(raw: bytes) -> list[Command]:
    """A log row back to its commands."""
    return [_decode_command(*fields) for fields in msgpack.unpackb(raw)]
