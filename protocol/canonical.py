"""Canonical msgpack: exactly one encoding per value.

Theory of operation
-------------------
The values we allow are nil, booleans, integers (int64/uint64 range), 64-bit
floats, UTF-8 strings, binary strings, arrays and maps whose keys are all
strings or all binary strings. The canonical encoding of such a value is the
one msgpack-python's packer produces with `use_bin_type=True` once every
map's keys are in ascending order (strings by their UTF-8 bytes, which for
Python `str` is plain code-point order): shortest integer and length forms,
floats always as float64, no extension types.

Decoding is therefore a round trip: unpack (checking while unpacking that
every map's keys strictly ascend, which also rules out duplicates), pack the
result again, and demand the same bytes. Anything else that would decode to
the same value - a longer integer form, a float32, a str8 where a fixstr
fits, trailing bytes - fails that comparison.

Three content rules sit beside the encoding, each with its own error so a
message can be refused with its own reason: floats are finite (NaN and
infinities have no JSON form and compare unequal to themselves), no
extension type appears (the timestamp extension included), and arrays and
maps nest at most `max_depth` deep. `check_value` enforces them in one
iterative walk (no recursion, however deep the value), which `decode_canonical`
runs only when the value is a container or a float, so the common small
content costs a few type checks; `canonical_value` runs it before it recurses.
"""

from __future__ import annotations

from typing import Any

import msgpack

from tanglenode.protocol.errors import LocalProtocolError

# Deeper than any limit a config may set; msgpack's own packer stops at 512.
HARD_MAX_DEPTH = 256


class NonCanonical(ValueError):
    """Raised (internally) while decoding when bytes are not the canonical form."""


class ExtensionType(NonCanonical):
    """The value holds a msgpack extension type (the timestamp extension included)."""


class TooDeep(ValueError):
    """Arrays and maps nest deeper than allowed."""


class NonFiniteFloat(ValueError):
    """A float is NaN or infinite."""


_EXT_TYPES = (msgpack.ExtType, msgpack.Timestamp)
_PLAIN = frozenset((str, bytes, int, bool, type(None)))


def check_value(value: Any, max_depth: int) -> None:
    """Raise `TooDeep`, `NonFiniteFloat` or `ExtensionType` if `value` breaks a content rule.

    Depth counts containers: a scalar is depth 0, `[1]` is 1, `{"a": [1]}` is 2.
    Iterative, so a value nested thousands deep costs no Python recursion.
    Tuples count as arrays (callers may build values with them).
    """
    kind = type(value)
    if kind is list or kind is dict or kind is tuple:
        _walk(value, max_depth)
    elif kind is float:
        if value - value != 0.0:  # NaN - NaN and inf - inf are NaN; finite - itself is 0
            raise NonFiniteFloat(f"{value!r} is not a finite float")
    elif kind in _EXT_TYPES:
        raise ExtensionType("extension types are not allowed")


def _walk(value: Any, max_depth: int) -> None:
    level, depth = [value], 0  # breadth first, one level at a time: no recursion, no tuples
    while level:
        depth += 1
        if depth > max_depth:
            raise TooDeep(f"arrays and maps nest deeper than {max_depth} levels")
        below: list[Any] = []
        for container in level:
            for item in container.values() if type(container) is dict else container:
                kind = type(item)
                if kind in _PLAIN:
                    continue
                if kind is list or kind is dict or kind is tuple:
                    below.append(item)
                elif kind is float:
                    if item - item != 0.0:
                        raise NonFiniteFloat(f"{item!r} is not a finite float")
                elif kind in _EXT_TYPES:
                    raise ExtensionType("extension types are not allowed")
        level = below


def _ascending_map(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    mapping = dict(pairs)
    if len(pairs) > 1:
        keys = list(mapping)
        try:
            ascending = keys == sorted(keys)  # in C, however large the map
        except TypeError:
            raise NonCanonical("map mixes string and binary keys") from None
        if not ascending or len(keys) != len(pairs):
            raise NonCanonical("map keys are not strictly ascending")
    return mapping


def _reject_ext(code: int, data: bytes) -> Any:
    raise ExtensionType(f"extension type {code} is not allowed")


def decode_canonical(raw: bytes, max_depth: int = HARD_MAX_DEPTH) -> Any:
    """Decode `raw`, raising `NonCanonical` unless it is the one canonical encoding.

    A value breaking a content rule raises `TooDeep`, `NonFiniteFloat` or
    `ExtensionType` (a `NonCanonical`). Malformed msgpack raises `ValueError`
    (of which all these are subclasses callers may want to tell apart).
    """
    try:
        value = msgpack.unpackb(
            raw,
            raw=False,
            use_list=True,
            strict_map_key=True,
            object_pairs_hook=_ascending_map,
            ext_hook=_reject_ext,
            timestamp=0,  # ext -1 becomes a Timestamp, which check_value refuses
        )
    except NonCanonical:
        raise
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as error:
        raise ValueError(f"not a single msgpack value: {error}") from None
    except (ValueError, TypeError, UnicodeDecodeError) as error:
        raise ValueError(f"undecodable msgpack: {error}") from None
    kind = type(value)
    if kind is list or kind is dict or kind is float or kind is msgpack.Timestamp:
        check_value(value, max_depth)  # before packing again, which recurses
    try:
        again = msgpack.packb(value, use_bin_type=True)
    except (ValueError, OverflowError) as error:  # e.g. nesting deeper than the packer allows
        raise ValueError(f"unencodable value: {error}") from None
    if again != raw:
        raise NonCanonical("bytes are not the canonical encoding of their value")
    return value


def canonical_value(value: Any, max_depth: int = HARD_MAX_DEPTH) -> Any:
    """Return `value` with every map's keys sorted, checking that it is encodable.

    Tuples become lists. Raises `TooDeep`, `NonFiniteFloat` or `ExtensionType`
    for a value breaking a content rule (see `check_value`; `max_depth` at most
    `HARD_MAX_DEPTH`), and `LocalProtocolError` for other values outside the
    allowed set (the caller built something that can never be a message).
    """
    check_value(value, min(max_depth, HARD_MAX_DEPTH))
    return _canonical(value, 0)


def _canonical(value: Any, depth: int) -> Any:
    if depth > HARD_MAX_DEPTH:  # dict and list subclasses, which check_value does not walk
        raise TooDeep(f"arrays and maps nest deeper than {HARD_MAX_DEPTH} levels")
    if value is None or isinstance(value, bool | str | bytes):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise LocalProtocolError(f"integer {value} is outside the int64/uint64 range")
        return value
    if isinstance(value, float):
        if value - value != 0.0:  # float subclasses, which check_value does not look at
            raise NonFiniteFloat(f"{value!r} is not a finite float")
        return value
    if isinstance(value, msgpack.ExtType):  # a tuple, which must not pass for an array
        raise ExtensionType("extension types are not allowed")
    if isinstance(value, list | tuple):
        return [_canonical(item, depth + 1) for item in value]
    if isinstance(value, dict):
        keys = list(value)
        if not (all(isinstance(k, str) for k in keys) or all(isinstance(k, bytes) for k in keys)):
            raise LocalProtocolError("map keys must be all strings or all binary strings")
        return {key: _canonical(value[key], depth + 1) for key in sorted(keys)}
    raise LocalProtocolError(f"values of type {type(value).__name__} cannot be encoded")


def encode_canonical(value: Any) -> bytes:
    """The canonical encoding of `value`."""
    return msgpack.packb(canonical_value(value), use_bin_type=True)
