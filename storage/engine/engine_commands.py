"""A timeline's edit commands (`ins`, `mov`, `del`) and their encoding in the command log.

The engine (`storage.engine.timeline`) returns these for every event and appends
them to the timeline's log; a subscriber replays them on its own array with
`apply_commands`. In the log an event's commands are one msgpack list of
`[0, pos, id]` (ins), `[1, from, to]` (mov) and `[2, pos]` (del), written by
`storage.engine.engine_core.encode_log` and read back by `decode_commands`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

import msgpack

_INS, _MOV, _DEL = 0, 1, 2


def _same_command(self: tuple[Any, ...], other: object) -> bool:
    return type(self) is type(other) and tuple.__eq__(self, other)


def _other_command(self: tuple[Any, ...], other: object) -> bool:
    return not _same_command(self, other)


# Commands are named tuples, immutable, compared by kind and fields: the engine
# makes one per moved message, and `tuple.__new__(Move, (src, dst))` costs a
# third of what a dataclass's __init__ does.


class Insert(NamedTuple):
    """`ins pos id`: insert `id` so that it ends up at index `pos`."""

    pos: int
    id: bytes


class Move(NamedTuple):
    """`mov src dst`: take the element at `src` out, then insert it at `dst`."""

    src: int
    dst: int


class Delete(NamedTuple):
    """`del pos`: take the element at `pos` out (a removed member)."""

    pos: int


# Set after the classes are made (a NamedTuple's body holds its fields alone); tuple's
# hash stays, since no class body defines __eq__.
for _kind in (Insert, Move, Delete):
    for _name, _method in (("__eq__", _same_command), ("__ne__", _other_command)):
        setattr(_kind, _name, _method)

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
