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
fits, an ext type, trailing bytes - fails that comparison.
"""

from __future__ import annotations

from typing import Any

import msgpack

from protocol.errors import LocalProtocolError


class NonCanonical(ValueError):
    """Raised (internally) while decoding when bytes are not the canonical form."""


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
    raise NonCanonical(f"extension type {code} is not allowed")


def decode_canonical(raw: bytes) -> Any:
    """Decode `raw`, raising `NonCanonical` unless it is the one canonical encoding.

    Malformed msgpack raises `ValueError` (of which `NonCanonical` is a subclass
    callers may want to tell apart).
    """
    try:
        value = msgpack.unpackb(
            raw,
            raw=False,
            use_list=True,
            strict_map_key=True,
            object_pairs_hook=_ascending_map,
            ext_hook=_reject_ext,
            timestamp=1,  # ext -1 becomes a float, so it cannot re-encode identically
        )
    except NonCanonical:
        raise
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as error:
        raise ValueError(f"not a single msgpack value: {error}") from None
    except (ValueError, TypeError, UnicodeDecodeError) as error:
        raise ValueError(f"undecodable msgpack: {error}") from None
    try:
        again = msgpack.packb(value, use_bin_type=True)
    except (ValueError, OverflowError) as error:  # e.g. nesting deeper than the packer allows
        raise ValueError(f"unencodable value: {error}") from None
    if again != raw:
        raise NonCanonical("bytes are not the canonical encoding of their value")
    return value


def canonical_value(value: Any) -> Any:
    """Return `value` with every map's keys sorted, checking that it is encodable.

    Tuples become lists. Raises `LocalProtocolError` for values outside the
    allowed set (the caller built something that can never be a message).
    """
    if value is None or isinstance(value, bool | str | bytes):
        return value
    if isinstance(value, int):
        if not -(2**63) <= value < 2**64:
            raise LocalProtocolError(f"integer {value} is outside the int64/uint64 range")
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, list | tuple):
        return [canonical_value(item) for item in value]
    if isinstance(value, dict):
        keys = list(value)
        if not (all(isinstance(k, str) for k in keys) or all(isinstance(k, bytes) for k in keys)):
            raise LocalProtocolError("map keys must be all strings or all binary strings")
        return {key: canonical_value(value[key]) for key in sorted(keys)}
    raise LocalProtocolError(f"values of type {type(value).__name__} cannot be encoded")


def encode_canonical(value: Any) -> bytes:
    """The canonical encoding of `value`."""
    return msgpack.packb(canonical_value(value), use_bin_type=True)
