import math
import struct

import msgpack
import pytest

from tanglenode.protocol.canonical import (
    NonCanonical,
    NonFiniteFloat,
    canonical_value,
    decode_canonical,
    encode_canonical,
)
from tanglenode.protocol.errors import LocalProtocolError


def test_round_trip_sorts_map_keys_recursively():
    value = {"b": [1, {"z": None, "a": b"\x00"}], "a": -3, "é": 1.5, "c": "x" * 40}
    raw = encode_canonical(value)
    assert decode_canonical(raw) == value
    assert list(decode_canonical(raw)) == ["a", "b", "c", "é"]
    assert list(decode_canonical(raw)["b"][1]) == ["a", "z"]


def test_binary_keys_sort_as_bytes():
    value = {b"\xff": 1, b"\x00\x01": 2, b"\x00": 3}
    assert list(decode_canonical(encode_canonical(value))) == [b"\x00", b"\x00\x01", b"\xff"]


def test_tuples_encode_as_arrays():
    assert encode_canonical((1, 2)) == encode_canonical([1, 2])


@pytest.mark.parametrize(
    "raw, why",
    [
        (msgpack.packb({"b": 1, "a": 2}), "unsorted keys"),
        (b"\x82\xa1a\x01\xa1a\x02", "duplicate keys"),
        (b"\xcd\x00\x05", "5 as uint16 instead of a fixint"),
        (b"\xd0\x05", "5 as int8"),
        (b"\xca" + struct.pack(">f", 1.5), "float32"),
        (b"\xd9\x01a", "str8 where a fixstr fits"),
        (b"\xdc\x00\x01\x01", "array16 where a fixarray fits"),
        (msgpack.packb({"a": 1, b"b": 2}, use_bin_type=True), "mixed key types"),
        (msgpack.packb(msgpack.ExtType(5, b"xy")), "an extension type"),
        (b"\xd6\xff\x00\x00\x00\x01", "the timestamp extension"),
    ],
)
def test_rejects_every_non_canonical_form(raw, why):
    with pytest.raises(NonCanonical):
        decode_canonical(raw)


@pytest.mark.parametrize(
    "raw",
    [b"", b"\xc1", b"\x92\x01", b"\x01\x02", b"\xa2\xff\xfe", b"\x81\x01\x02"],
    ids=["empty", "never-used byte", "truncated array", "trailing bytes", "bad utf-8", "int key"],
)
def test_rejects_malformed_bytes_with_value_error(raw):
    with pytest.raises(ValueError):
        decode_canonical(raw)


def test_float64_round_trips_and_non_finite_floats_are_refused():
    assert decode_canonical(encode_canonical(2.5)) == 2.5
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(NonFiniteFloat):
            decode_canonical(msgpack.packb(value))
        with pytest.raises(NonFiniteFloat):
            encode_canonical([value])


@pytest.mark.parametrize("value", [{1, 2}, object(), 2**64, -(2**63) - 1, {1: "int key"}])
def test_values_outside_the_model_are_refused_when_encoding(value):
    with pytest.raises(LocalProtocolError):
        canonical_value(value)
