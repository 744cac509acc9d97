"""Peer addresses (protocol/address.py): what is stored or dialed is a host the resolver takes;
and a host as HTTP's Host header names one (the web view's guard)."""

import ipaddress

import pytest

from tanglenode.protocol.address import BadAddress, parse_address, parse_host


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


@pytest.mark.parametrize(
    "text, parsed",
    [
        ("localhost:8080", ("localhost", 8080)),
        ("Node.Example", ("node.example", None)),  # no port: the scheme's default
        ("127.0.0.1:1", (ipaddress.IPv4Address("127.0.0.1"), 1)),
        ("[0::1]:9", (ipaddress.IPv6Address("::1"), 9)),
        ("[::1]", (ipaddress.IPv6Address("::1"), None)),
        ("127.1:8080", ("127.1", 8080)),  # not an address as written: a name, no one's
    ],
)
def test_a_host_header_is_a_name_or_an_address_and_maybe_a_port(text, parsed):
    assert parse_host(text) == parsed


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a b:1",
        "host:0",
        "host:65536",
        "host:",
        ":8080",
        "::1:8080",  # an IPv6 address goes in brackets
        "[::1",
        "[::1]x",
        "[nope]:1",
        "[127.0.0.1]:1",
        "evil.example/x:1",
        "user@host:1",
        "b\u00fccher.example",
        "x" * 254,
        "1" * 301,
        None,
    ],
)
def test_what_is_no_host_is_refused(text):
    with pytest.raises(BadAddress):
        parse_host(text)
