"""Invite codes and the redemption frames (protocol/invite.py): every hostile code refused."""

from __future__ import annotations

import base64
import contextlib

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tanglenode.protocol.invite import (
    MAX_CODE_CHARS,
    PREFIX,
    Answer,
    BadInvite,
    InviteCode,
    Refusal,
    invite_id,
    invited_frame,
    is_redemption,
    network_tag,
    parse_answer,
    parse_code,
    redeem_frame,
    redeemed_secret,
    refused_frame,
    secret_hash,
)

CODE = InviteCode(("127.0.0.1:8008", "[::1]:8008"), b"F" * 32, b"s" * 32, network_tag(b"k" * 32))


def _code_of(fields) -> str:
    return PREFIX + base64.urlsafe_b64encode(msgpack.packb(fields)).decode().rstrip("=")


def test_a_code_reads_back_as_written_whitespace_around_it_ignored():
    assert parse_code(CODE.text()) == CODE
    assert parse_code(f"  {CODE.text()}\n") == CODE
    assert len(CODE.text()) < 200


@pytest.mark.parametrize(
    "text",
    [
        None,
        42,
        "",
        "inv2." + CODE.text()[5:],  # another version's prefix
        PREFIX + "!!!",  # not base64url
        PREFIX + "x" * (MAX_CODE_CHARS + 1),  # too long
        _code_of([["127.0.0.1:8008"], b"F" * 32, b"s" * 32]),  # a field missing
        _code_of([[], b"F" * 32, b"s" * 32, b"net!"]),  # no address
        _code_of([["h:1"] * 5, b"F" * 32, b"s" * 32, b"net!"]),  # too many addresses
        _code_of([["no port"], b"F" * 32, b"s" * 32, b"net!"]),
        _code_of([["h:1"], b"F" * 31, b"s" * 32, b"net!"]),  # a short key
        _code_of([["h:1"], b"F" * 32, b"s" * 16, b"net!"]),  # a short secret
        _code_of([["h:1"], b"F" * 32, b"s" * 32, b"net"]),  # a short network tag
        _code_of({"addresses": ["h:1"]}),
        _code_of([["h:1"], b"F" * 32, b"s" * 32, b"net!"]) + "AAAA",  # bytes after the value
    ],
)
def test_anything_but_a_code_is_refused_as_malformed(text):
    with pytest.raises(BadInvite) as refused:
        parse_code(text)
    assert refused.value.refusal is Refusal.MALFORMED


@given(st.one_of(st.text(max_size=1100), st.binary(max_size=700)))
def test_no_text_makes_parse_code_fail_otherwise(junk):
    """Text, or any bytes as base64url (msgpack of any shape): a code or `BadInvite`."""
    if isinstance(junk, bytes):
        junk = base64.urlsafe_b64encode(junk).decode()
    with contextlib.suppress(BadInvite):
        parse_code(PREFIX + junk)


def test_the_secret_is_kept_only_as_a_hash_and_named_by_its_id():
    hashed = secret_hash(b"s" * 32)
    assert len(hashed) == 32 and b"s" * 32 not in hashed
    assert invite_id(hashed) != invite_id(secret_hash(b"t" * 32))
    assert base64.urlsafe_b64encode(b"s" * 32).decode()[:8] != invite_id(hashed)


def test_a_redemption_frame_is_told_from_gossip_and_checked():
    frame = redeem_frame(b"s" * 32)
    assert is_redemption(frame) and redeemed_secret(frame) == b"s" * 32
    assert not is_redemption([0, 4, {}, 64])  # a gossip HELLO
    for bad in (["invite", 2, b"s" * 32], ["invite", 1, b"short"], ["invite"], ["invite", 1, "s"]):
        with pytest.raises(BadInvite):
            redeemed_secret(bad)


def test_answers_read_back_and_nothing_else_passes():
    assert parse_answer(invited_frame(True)) == Answer(follows_back=True)
    refused = parse_answer(refused_frame(Refusal.USED_UP, "gone"))
    assert refused.refusal is Refusal.USED_UP and refused.detail == "gone"
    for bad in (["invited", {}], ["invite-refused", "no-such-reason", ""], [0, 4, {}, 1], None):
        with pytest.raises(BadInvite):
            parse_answer(bad)
