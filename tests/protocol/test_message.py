import hashlib
import struct
from dataclasses import replace
from functools import reduce

import msgpack
import pytest

from tanglenode.protocol.canonical import canonical_value
from tanglenode.protocol.errors import InvalidMessage, Reason
from tanglenode.protocol.identity import TAG_BYTES, message_id, tag_of
from tanglenode.protocol.limits import DEFAULT_LIMITS, Limits
from tanglenode.protocol.message import (
    ROOT_LINK,
    VERSION,
    Named,
    TangleLink,
    UnpublishableMessage,
    decode_message,
    sign_message,
)
from tanglenode.protocol.wire import bin_header, split_wire, wire
from tests.factories import Feed, break_signature, keypair, sign_raw, unsigned_fields

ALICE = keypair("alice")
BOB = keypair("bob")
CAROL = keypair("carol")
ID_A = b"\x01" * 32
ID_B = b"\x02" * 32
TAG = bytes(range(1, TAG_BYTES + 1))  # a timeframe entry's tag: 16 bytes


def test_sign_and_decode_round_trip():
    message = sign_message(
        ALICE,
        seq=2,
        prev=ID_A,
        timestamp=123,
        timeframe={BOB.public: Named(7, TAG)},
        tangles={"chat": TangleLink(ID_A, (ID_B, ID_A))},
        content={"type": "post", "text": "hi", "data": b"\x00\x01"},
    )
    decoded = decode_message(message.raw)
    assert decoded == message
    assert decoded.raw == wire(decoded.header, decoded.content_bytes)
    assert decoded.id == hashlib.blake2b(message.header, digest_size=32).digest()
    assert decoded.content_hash == hashlib.blake2b(decoded.content_bytes, digest_size=32).digest()
    assert decoded.content_size == len(decoded.content_bytes) and decoded.has_content
    assert decoded.tangles["chat"] == TangleLink(ID_A, (ID_A, ID_B))  # previous is sorted
    assert decoded.timeframe == {BOB.public: 7}
    assert decoded.timeframe_tags == {BOB.public: TAG}
    assert decoded.tangle_root("chat") == ID_A


def test_tags_round_trip_through_signing_and_decoding():
    """Each entry's (seq, tag) is signed as [seq, bin 16], in key order, and decodes back."""
    tags = {BOB.public: TAG, CAROL.public: b"\xff" * TAG_BYTES}
    given = {CAROL.public: (3, tags[CAROL.public]), BOB.public: Named(9, TAG)}  # unsorted
    message = sign_message(
        ALICE, seq=1, prev=None, timestamp=0, timeframe=given, tangles={}, content=None
    )
    signed = msgpack.unpackb(message.header)[5]
    assert list(signed) == sorted(tags)
    assert signed == {BOB.public: [9, TAG], CAROL.public: [3, tags[CAROL.public]]}
    decoded = decode_message(message.raw)
    assert decoded.timeframe == {BOB.public: 9, CAROL.public: 3}
    assert decoded.timeframe_tags == tags
    assert decoded.named() == {
        BOB.public: Named(9, TAG),
        CAROL.public: Named(3, tags[CAROL.public]),
    }
    assert all(type(entry) is Named for entry in decoded.named().values())
    # The tag is part of what is signed: another tag is another message.
    other = sign_message(
        ALICE,
        seq=1,
        prev=None,
        timestamp=0,
        timeframe={**given, BOB.public: Named(9, bytes(TAG_BYTES))},
        tangles={},
        content=None,
    )
    assert other.id != message.id
    assert other.timeframe == decoded.timeframe and other.timeframe_tags != tags


def test_a_timeframe_names_a_message_by_the_tag_of_its_id():
    bob = Feed("bob")
    first = bob.append("b1")
    message = Feed("alice").append("a1", timeframe={bob.public: first})
    assert message.named() == {bob.public: Named(1, tag_of(first.id))}
    assert tag_of(first.id) == first.id[:TAG_BYTES] and len(tag_of(first.id)) == 16


def test_a_root_message_names_itself_as_the_tangle_root():
    root = Feed("alice").root("chat")
    assert root.tangles["chat"].is_root
    assert root.tangle_root("chat") == root.id


def test_what_sign_message_returns_is_what_a_receiver_decodes():
    """sign_message does not verify its own signature: a receiver's full check must pass."""
    message = sign_message(
        ALICE,
        seq=1,
        prev=None,
        timestamp=5,
        timeframe={BOB.public: Named(1, TAG)},
        tangles={"chat": ROOT_LINK, "doc": TangleLink(ID_B, (ID_A,))},
        content=[1.5, {"b": None, "a": (True, b"x")}],
    )
    assert decode_message(message.raw, verify_signature=True) == message
    assert message.content == [1.5, {"a": [True, b"x"], "b": None}]


def test_signing_is_deterministic():
    first = Feed("alice").append({"n": 1})
    again = Feed("alice").append({"n": 1})
    assert first.raw == again.raw


def fields(**changes):
    return unsigned_fields(ALICE, **changes)


def valid_tangle(**changes):
    return {"chat": {"root": ID_A, "previous": [ID_A]} | changes}


def entries(count):
    """A timeframe of `count` entries of other feeds, keys ascending, as signed."""
    return {bytes([index]) * 32: [index, TAG] for index in range(1, count + 1)}


def old_format(version, **changes):
    """A message of format 1 or 2 as it was, validly signed: a 9-element array whose
    signature covers the content itself (no content hash, no wire pair)."""
    unsigned = canonical_value(fields(version=version, **changes))
    signature = ALICE.sign(msgpack.packb(unsigned, use_bin_type=True))
    return msgpack.packb([*unsigned, signature], use_bin_type=True)


def version_1(timeframe):
    """A message of format 1, whose timeframe entries were bare seqs, validly signed."""
    return old_format(1, timeframe=timeframe)


def body_of(content):
    return msgpack.packb(content, use_bin_type=True)


def head(content=None, **changes):
    """The nine fields a header signs: `fields(**changes)`' first seven, then the hash and
    size of `content`'s bytes."""
    body = body_of(content)
    return [*fields(**changes)[:7], hashlib.blake2b(body, digest_size=32).digest(), len(body)]


def pair(header_fields, content=None):
    """The wire form of a header packed from `header_fields` as they are, `content` beside it."""
    return wire(msgpack.packb(header_fields, use_bin_type=True), content)


def signed_for(content: bytes, **changes):
    """ALICE's message whose header she signed for the content bytes `content`, whatever
    they hold, with those bytes beside it."""
    digest = hashlib.blake2b(content, digest_size=32).digest()
    header_fields = [*fields(**changes)[:7], digest, len(content)]
    signature = ALICE.sign(msgpack.packb(header_fields, use_bin_type=True))
    return pair([*header_fields, signature], content)


def edit_header(raw, old, new):
    """`raw` with bytes `old` of its header replaced by `new` (the wire pair rebuilt)."""
    header, content = split_wire(raw)
    assert header.count(old) == 1
    return wire(header.replace(old, new), content)


GOOD = sign_raw(ALICE, fields(content="hello"))
HEADER, CONTENT = split_wire(GOOD)


# Each case: signed bytes that break exactly one rule, and the reason code expected.
CASES = {
    "too large": (sign_raw(ALICE, fields(content="x" * 17_000)), Reason.TOO_LARGE),
    "not msgpack": (b"\xc1", Reason.MALFORMED),
    # The wire pair [header bin, content bin | nil]: one encoding, nothing after it.
    "a header alone, not in a pair": (HEADER, Reason.MALFORMED),
    "a pair of three": (b"\x93" + GOOD[1:] + b"\xc0", Reason.MALFORMED),
    "the header as an array, not bin": (
        msgpack.packb([msgpack.unpackb(HEADER), CONTENT], use_bin_type=True),
        Reason.MALFORMED,
    ),
    "the content as a value, not bin": (
        msgpack.packb([HEADER, "hello"], use_bin_type=True),
        Reason.MALFORMED,
    ),
    "the header's bin length not in its shortest form": (
        b"\x92\xc5" + struct.pack(">H", len(HEADER)) + HEADER + bin_header(len(CONTENT)) + CONTENT,
        Reason.NON_CANONICAL,
    ),
    "the content's bin length not in its shortest form": (
        b"\x92" + bin_header(len(HEADER)) + HEADER + b"\xc5\x00" + bytes([len(CONTENT)]) + CONTENT,
        Reason.NON_CANONICAL,
    ),
    "bytes after the pair": (GOOD + b"\x00", Reason.MALFORMED),
    "bytes after a header alone": (wire(HEADER, None) + b"\xc0", Reason.MALFORMED),
    "a header that is not msgpack": (wire(b"\xc1", None), Reason.MALFORMED),
    "bytes after the header's array": (wire(HEADER + b"\x00", CONTENT), Reason.MALFORMED),
    # The header's shape.
    "a header not an array": (pair({"version": VERSION}), Reason.MALFORMED),
    "an empty header": (pair([]), Reason.MALFORMED),
    "a header of nine fields (unsigned)": (pair(head()), Reason.MALFORMED),
    "a header of eight fields (the content inside)": (pair(fields()), Reason.MALFORMED),
    "a header of eleven fields": (
        pair([*head(), ALICE.sign(msgpack.packb(head(), use_bin_type=True)), b""], body_of(None)),
        Reason.MALFORMED,
    ),
    "content nested 33 deep": (
        sign_raw(
            ALICE,
            fields(content=reduce(lambda inner, _: [inner], range(33), 0)),
            canonical=False,
        ),
        Reason.TOO_DEEP,
    ),
    "NaN in the content": (
        sign_raw(ALICE, fields(content={"x": float("nan")}), canonical=False),
        Reason.NON_FINITE_FLOAT,
    ),
    "an ext type in the content": (
        sign_raw(ALICE, fields(content=msgpack.ExtType(7, b"")), canonical=False),
        Reason.EXT_TYPE,
    ),
    "unsorted content map": (
        sign_raw(ALICE, fields(content={"b": 1, "a": 2}), canonical=False),
        Reason.NON_CANONICAL,
    ),
    "unsorted timeframe keys": (
        sign_raw(ALICE, fields(timeframe={ID_B: [1, TAG], ID_A: [1, TAG]}), canonical=False),
        Reason.NON_CANONICAL,
    ),
    "unsorted tangle names": (
        sign_raw(
            ALICE,
            fields(
                tangles={
                    "b": {"previous": None, "root": None},
                    "a": {"previous": None, "root": None},
                }
            ),
            canonical=False,
        ),
        Reason.NON_CANONICAL,
    ),
    "link keys out of order": (
        sign_raw(ALICE, fields(tangles={"a": {"root": None, "previous": None}}), canonical=False),
        Reason.NON_CANONICAL,
    ),
    "seq in a longer integer form": (
        edit_header(
            sign_raw(ALICE, fields()),
            b"\xc4\x20" + ALICE.public + b"\x01",
            b"\xc4\x20" + ALICE.public + b"\xcd\x00\x01",
        ),
        Reason.NON_CANONICAL,
    ),
    "tangle name not utf-8": (
        edit_header(
            sign_raw(ALICE, fields(tangles={"ab": {"previous": None, "root": None}})),
            b"\xa2ab",
            b"\xa2\xff\xfe",
        ),
        Reason.MALFORMED,
    ),
    "version 1 with a timeframe": (version_1({BOB.public: 3}), Reason.UNKNOWN_VERSION),
    "version 1 with an empty timeframe": (version_1({}), Reason.UNKNOWN_VERSION),
    "version 2 (nine fields, the content signed)": (
        old_format(2, timeframe={BOB.public: [3, TAG]}),
        Reason.UNKNOWN_VERSION,
    ),
    "version 2 in a header of format 3's shape": (
        sign_raw(ALICE, fields(version=2)),
        Reason.UNKNOWN_VERSION,
    ),
    "version 4 with eleven fields": (
        pair([4, *head()[1:], b"\x00" * 64, "extra"]),
        Reason.UNKNOWN_VERSION,
    ),
    "version true": (sign_raw(ALICE, fields(version=True)), Reason.UNKNOWN_VERSION),
    "short author": (
        pair([VERSION, b"\x00" * 31, *head()[2:], b"\x00" * 64], body_of(None)),
        Reason.BAD_AUTHOR,
    ),
    "seq 0": (sign_raw(ALICE, fields(seq=0)), Reason.BAD_SEQ),
    "seq as string": (sign_raw(ALICE, fields(seq="1")), Reason.BAD_SEQ),
    "seq as bool": (sign_raw(ALICE, fields(seq=True)), Reason.BAD_SEQ),
    "seq 1 with prev": (sign_raw(ALICE, fields(seq=1, prev=ID_A)), Reason.BAD_PREV),
    "seq 2 without prev": (sign_raw(ALICE, fields(seq=2)), Reason.BAD_PREV),
    "short prev": (sign_raw(ALICE, fields(seq=2, prev=b"\x01" * 31)), Reason.BAD_PREV),
    "negative timestamp": (sign_raw(ALICE, fields(timestamp=-1)), Reason.BAD_TIMESTAMP),
    "float timestamp": (sign_raw(ALICE, fields(timestamp=1.5)), Reason.BAD_TIMESTAMP),
    "timeframe list": (sign_raw(ALICE, fields(timeframe=[1])), Reason.BAD_TIMEFRAME),
    "timeframe short key": (
        sign_raw(ALICE, fields(timeframe={b"\x01" * 31: [1, TAG]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe string key": (
        sign_raw(ALICE, fields(timeframe={"a": [1, TAG]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe own feed": (
        sign_raw(ALICE, fields(timeframe={ALICE.public: [1, TAG]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe seq 0": (
        sign_raw(ALICE, fields(timeframe={BOB.public: [0, TAG]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe seq text": (
        sign_raw(ALICE, fields(timeframe={BOB.public: ["3", TAG]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe seq as bool": (
        sign_raw(ALICE, fields(timeframe={BOB.public: [True, TAG]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe entry a bare seq (format 1)": (
        sign_raw(ALICE, fields(timeframe={BOB.public: 3})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe tag of 15 bytes": (
        sign_raw(ALICE, fields(timeframe={BOB.public: [3, TAG[:15]]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe tag of 17 bytes": (
        sign_raw(ALICE, fields(timeframe={BOB.public: [3, TAG + b"\x00"]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe tag of a whole id": (
        sign_raw(ALICE, fields(timeframe={BOB.public: [3, ID_A]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe tag as text": (
        sign_raw(ALICE, fields(timeframe={BOB.public: [3, "t" * 16]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe entry without its tag": (
        sign_raw(ALICE, fields(timeframe={BOB.public: [3]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe entry of three items": (
        sign_raw(ALICE, fields(timeframe={BOB.public: [3, TAG, 0]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe entry tag first": (
        sign_raw(ALICE, fields(timeframe={BOB.public: [TAG, 3]})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe entry a map": (
        sign_raw(ALICE, fields(timeframe={BOB.public: {"seq": 3, "tag": TAG}})),
        Reason.BAD_TIMEFRAME,
    ),
    "timeframe seq in a longer integer form": (
        edit_header(
            sign_raw(ALICE, fields(timeframe={BOB.public: [3, TAG]})),
            b"\x92\x03\xc4\x10",
            b"\x92\xcd\x00\x03\xc4\x10",
        ),
        Reason.NON_CANONICAL,
    ),
    "65 timeframe entries": (
        sign_raw(ALICE, fields(timeframe=entries(65))),
        Reason.TOO_MANY_TIMEFRAME_ENTRIES,
    ),
    "tangles list": (sign_raw(ALICE, fields(tangles=[])), Reason.BAD_TANGLES),
    "tangle name empty": (
        sign_raw(ALICE, fields(tangles={"": {"root": None, "previous": None}})),
        Reason.BAD_TANGLES,
    ),
    "tangle name too long": (
        sign_raw(ALICE, fields(tangles={"n" * 65: {"root": None, "previous": None}})),
        Reason.BAD_TANGLES,
    ),
    "tangle extra key": (sign_raw(ALICE, fields(tangles=valid_tangle(x=1))), Reason.BAD_TANGLES),
    "tangle root without previous": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=None))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous without root": (
        sign_raw(ALICE, fields(tangles=valid_tangle(root=None))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous empty": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=[]))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous unsorted": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=[ID_B, ID_A]))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous repeated": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=[ID_A, ID_A]))),
        Reason.BAD_TANGLES,
    ),
    "tangle previous short id": (
        sign_raw(ALICE, fields(tangles=valid_tangle(previous=[b"\x01"]))),
        Reason.BAD_TANGLES,
    ),
    "17 tangles": (
        sign_raw(
            ALICE, fields(tangles={f"t{i:02}": {"root": None, "previous": None} for i in range(17)})
        ),
        Reason.TOO_MANY_TANGLES,
    ),
    "17 previous": (
        sign_raw(
            ALICE, fields(tangles=valid_tangle(previous=[bytes([i]) * 32 for i in range(17)]))
        ),
        Reason.TOO_MANY_PREVIOUS,
    ),
    # The content's hash and size, as the header holds them.
    "content hash of 31 bytes": (
        sign_raw(ALICE, fields(content="x"), content_hash=b"\x01" * 31),
        Reason.BAD_CONTENT_HASH,
    ),
    "content hash of 33 bytes": (
        sign_raw(ALICE, fields(content="x"), content_hash=b"\x01" * 33),
        Reason.BAD_CONTENT_HASH,
    ),
    "content hash as text": (
        sign_raw(ALICE, fields(content="x"), content_hash="h" * 32),
        Reason.BAD_CONTENT_HASH,
    ),
    "content size 0": (
        sign_raw(ALICE, fields(content="x"), content_size=0),
        Reason.BAD_CONTENT_HASH,
    ),
    "content size -1": (
        sign_raw(ALICE, fields(content="x"), content_size=-1),
        Reason.BAD_CONTENT_HASH,
    ),
    "content size as text": (
        sign_raw(ALICE, fields(content="x"), content_size="2"),
        Reason.BAD_CONTENT_HASH,
    ),
    # Content that has its header's hash and size but is no canonical value: its author
    # signed it so, and the whole message is refused.
    "content not msgpack": (signed_for(b"\xc1"), Reason.MALFORMED),
    "content with bytes after its value": (signed_for(b"\x01\x02"), Reason.MALFORMED),
    "content an integer in a longer form": (signed_for(b"\xcc\x01"), Reason.NON_CANONICAL),
    # The signature, over the header's first nine fields.
    "signed by someone else": (
        pair([*head(), BOB.sign(msgpack.packb(head(), use_bin_type=True))], body_of(None)),
        Reason.BAD_SIGNATURE,
    ),
    "short signature": (pair([*head(), b"\x00" * 63], body_of(None)), Reason.BAD_SIGNATURE),
    "a bit of the signature flipped": (break_signature(GOOD), Reason.BAD_SIGNATURE),
    "header changed after signing": (
        pair(
            [*head(timestamp=5), ALICE.sign(msgpack.packb(head(timestamp=6), use_bin_type=True))],
            body_of(None),
        ),
        Reason.BAD_SIGNATURE,
    ),
    "content and its hash changed after signing": (
        pair(
            [*head("after"), ALICE.sign(msgpack.packb(head("befor"), use_bin_type=True))],
            body_of("after"),
        ),
        Reason.BAD_SIGNATURE,
    ),
    "signature broken beside content that does not match": (
        wire(split_wire(break_signature(GOOD))[0], body_of("other")),
        Reason.BAD_SIGNATURE,
    ),
}


SIGNED_BEFORE = split_wire(sign_raw(ALICE, fields(content="befor")))[0]

# Content beside a header that does not have the header's hash and size: never a refusal of
# the message (a relay may have garbled it), the content alone dropped. Each case: the
# wire form, and the content the header was signed for.
KEPT = {
    "content changed after signing": (wire(SIGNED_BEFORE, body_of("after")), body_of("befor")),
    "content of another size": (wire(SIGNED_BEFORE, body_of("before!")), body_of("befor")),
    "empty content": (wire(HEADER, b""), CONTENT),
    "a bit of the content flipped": (GOOD[:-1] + bytes([GOOD[-1] ^ 1]), CONTENT),
    "another message's content": (wire(HEADER, body_of(None)), CONTENT),
}


@pytest.mark.parametrize("raw, reason", CASES.values(), ids=CASES.keys())
def test_every_rule_has_its_reason_code(raw, reason):
    with pytest.raises(InvalidMessage) as caught:
        decode_message(raw)
    assert caught.value.reason is reason
    assert caught.value.detail


@pytest.mark.parametrize("raw, right", KEPT.values(), ids=KEPT.keys())
def test_content_that_does_not_match_its_header_is_dropped_and_the_header_kept(raw, right):
    header, content = split_wire(raw)
    message = decode_message(raw)
    assert message.content_refused is Reason.CONTENT_MISMATCH
    assert message.header == header and message.id == message_id(header)
    assert not message.has_content and message.content is None and message.content_bytes is None
    assert message.raw == wire(header, None)  # what is stored and passed on: the header alone
    # The header alone is the same message, and the right content fills it in, same id.
    assert decode_message(wire(header, None)) == replace(message, content_refused=None)
    whole = decode_message(wire(header, right))
    assert whole.content_refused is None and whole.content_bytes == right != content
    assert whole.id == message.id and whole.without_content() == decode_message(message.raw)


def test_a_header_alone_is_a_whole_message():
    """Content nil: nothing refused, the id and every header field as with the content."""
    whole = decode_message(GOOD)
    alone = decode_message(wire(HEADER, None))
    assert alone.content_refused is None and not alone.has_content and alone.content is None
    assert alone == whole.without_content()
    assert (alone.id, alone.author, alone.seq, alone.content_hash, alone.content_size) == (
        whole.id,
        whole.author,
        whole.seq,
        whole.content_hash,
        whole.content_size,
    )
    assert alone.raw == wire(HEADER, None) and alone.header == whole.header == HEADER


def test_every_reason_of_the_protocol_layer_is_covered():
    storage_reasons = {
        Reason.MISSING_PREVIOUS,
        Reason.CHAIN_MISMATCH,
        Reason.FORKED_FEED,
        Reason.BLOCKED_FEED,  # tests/storage/test_scope.py
    }
    covered = {reason for _, reason in CASES.values()}
    assert Reason.CONTENT_MISMATCH not in covered  # never a refusal: see KEPT
    covered.add(Reason.CONTENT_MISMATCH)
    assert covered == set(Reason) - storage_reasons


def test_a_version_1_message_is_refused_and_the_detail_says_why():
    """Format 1's timeframes fail format 3's shape; the reason is the version all the same."""
    for raw in (version_1({BOB.public: 3}), version_1({})):
        with pytest.raises(InvalidMessage) as caught:
            decode_message(raw)
        assert caught.value.reason is Reason.UNKNOWN_VERSION
        assert "version 1" in caught.value.detail
    # The same timeframe as format 3 signs it is accepted: the version alone was refused.
    assert decode_message(sign_raw(ALICE, fields(timeframe={BOB.public: [3, TAG]}))).seq == 1


@pytest.mark.parametrize(
    "raw",
    [old_format(2, timeframe={BOB.public: [3, TAG]}), sign_raw(ALICE, fields(version=2))],
    ids=["as format 2 wrote it", "in a header of format 3's shape"],
)
def test_a_version_2_message_is_refused_and_the_detail_says_why(raw):
    """Format 2 signed its content inside a 9-element array: no pair, no content hash."""
    with pytest.raises(InvalidMessage) as caught:
        decode_message(raw)
    assert caught.value.reason is Reason.UNKNOWN_VERSION
    assert "version 2" in caught.value.detail and "refused" in caught.value.detail


def test_the_default_limits_take_64_timeframe_entries_and_no_more():
    assert DEFAULT_LIMITS.max_timeframe_entries == 64
    most = decode_message(sign_raw(ALICE, fields(timeframe=entries(64))))
    assert len(most.timeframe) == 64 and set(most.timeframe_tags.values()) == {TAG}
    with pytest.raises(InvalidMessage) as caught:
        decode_message(sign_raw(ALICE, fields(timeframe=entries(65))))
    assert caught.value.reason is Reason.TOO_MANY_TIMEFRAME_ENTRIES
    assert "65" in caught.value.detail


@pytest.mark.parametrize(
    "entry",
    [7, (7, TAG[:15]), (7, TAG + b"\x00"), (0, TAG), ("7", TAG)],
    ids=["bare seq", "15-byte tag", "17-byte tag", "seq 0", "seq text"],
)
def test_signing_a_bad_timeframe_entry_is_a_local_error(entry):
    with pytest.raises(UnpublishableMessage) as caught:
        sign_message(
            ALICE,
            seq=1,
            prev=None,
            timestamp=0,
            timeframe={BOB.public: entry},
            tangles={},
            content=None,
        )
    assert caught.value.reason is Reason.BAD_TIMEFRAME


def test_limits_are_configurable():
    raw = sign_raw(ALICE, fields(timeframe={BOB.public: [1, TAG], CAROL.public: [2, TAG]}))
    assert decode_message(raw).seq == 1
    with pytest.raises(InvalidMessage) as caught:
        decode_message(raw, Limits(max_timeframe_entries=1))
    assert caught.value.reason is Reason.TOO_MANY_TIMEFRAME_ENTRIES
    with pytest.raises(InvalidMessage) as caught:
        decode_message(sign_raw(ALICE, fields(content="x" * 2000)), Limits(max_message_bytes=1024))
    assert caught.value.reason is Reason.TOO_LARGE


def test_signing_an_invalid_message_is_a_local_error():
    with pytest.raises(UnpublishableMessage) as caught:
        sign_message(
            ALICE, seq=1, prev=None, timestamp=0, timeframe={}, tangles={}, content="x" * 20_000
        )
    assert caught.value.reason is Reason.TOO_LARGE


def test_skipping_signature_verification_still_checks_the_rest():
    forged = CASES["signed by someone else"][0]
    assert decode_message(forged, verify_signature=False).author == ALICE.public
    with pytest.raises(InvalidMessage):
        decode_message(CASES["seq 0"][0], verify_signature=False)


def test_ids_are_blake2b_of_the_signed_header():
    message = Feed("alice").root("chat", {"hello": "world"})
    assert message.id == hashlib.blake2b(message.header, digest_size=32).digest()
    assert message.id == message_id(message.raw) == message_id(message.header)
    assert message.id == message_id(message.without_content().raw)  # the content is no part of it
    assert message.raw != message.header and message.raw == wire(
        message.header, message.content_bytes
    )
    assert ROOT_LINK.is_root
