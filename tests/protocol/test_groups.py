"""Group message encryption: the epoch key, seals to members, what a non-member can open."""

import pytest

from tanglenode.protocol.groups import (
    GroupContent,
    GroupFormatError,
    Kind,
    Private,
    new_epoch_key,
    open_message,
    open_seals,
    seal_message,
)
from tests.factories import keypair

ALICE, BOB, EVE = keypair("g-alice"), keypair("g-bob"), keypair("g-eve")


def test_an_init_delivers_the_epoch_key_to_its_members_only():
    key = new_epoch_key()
    private = Private(Kind.INIT, (ALICE.public, BOB.public), name="book club")
    content = seal_message(private, key, None, key_for=(ALICE.public, BOB.public))
    envelope = GroupContent.from_content(content)
    assert envelope.epoch is None and len(envelope.seals) == 2
    assert open_seals(list(envelope.seals), BOB) == key
    assert open_seals(list(envelope.seals), EVE) is None
    assert open_message(envelope, key) == private
    with pytest.raises(GroupFormatError, match="does not open"):
        open_message(envelope, new_epoch_key())


def test_a_post_round_trips_and_reveals_nothing_readable():
    key = new_epoch_key()
    private = Private(Kind.POST, content={"text": "secret plans"})
    content = seal_message(private, key, b"\x01" * 32)
    assert b"secret plans" not in content["box"] and content["seals"] == []
    assert open_message(GroupContent.from_content(content), key).content == {"text": "secret plans"}


@pytest.mark.parametrize(
    "content, why",
    [
        ("text", "not a group message"),
        ({"group": True, "epoch": None, "box": b""}, "not a group message"),  # true == 1
        ({"group": 1, "epoch": b"short", "box": b""}, "epoch"),
        ({"group": 1, "epoch": None, "box": "x"}, "box"),
        ({"group": 1, "epoch": None, "box": b"", "seals": ["x"]}, "seals"),
    ],
)
def test_malformed_envelopes_are_refused(content, why):
    with pytest.raises(GroupFormatError, match=why):
        GroupContent.from_content(content)


def test_malformed_private_parts_are_refused():
    key = new_epoch_key()
    bad = Private(Kind.ADD, (b"short",))
    envelope = GroupContent.from_content(seal_message(bad, key, b"\x01" * 32))
    with pytest.raises(GroupFormatError, match="32-byte"):
        open_message(envelope, key)
