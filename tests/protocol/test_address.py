"""Peer addresses (protocol/address.py): what is stored or dialed is a host the resolver takes."""

import pytest

from tanglenode.protocol.address import BadAddress, parse_address


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("example.org:8008", ("example.org", 8008)),
        ("[::1]:1", ("::1", 1)),
        ("xn--ls8h.example:65535", ("xn--ls8h.example", 65535)),
    ],
)
def test_an_address_is_host_and_port(text, parsed):
    assert parse_address(text) == parsed


@pytest.mark.parametrize(
    "text",
    [
        "\U0001f600.example:8008",  # outside ASCII: written as IDNA, or refused
        "bücher.example:8008",
        "host:0",
        "host:65536",
        "host:\uff18\uff10",  # full-width digits
        ":8008",
        "a b:8008",
        "host\x00:1",
        "x" * 254 + ":1",
        True,
    ],
)
def test_what_no_resolver_takes_is_refused_with_a_reason(text):
    with pytest.raises(BadAddress):
        parse_address(text)
