"""The IPC protocol without a socket or a store: request checks, error kinds, encodings."""

import math
import re
from pathlib import Path

import msgpack
import pytest

from tanglenode.protocol import (
    doc_ipc,
    ipc,
    ipc_discovery,
    ipc_erase,
    ipc_invites,
    ipc_resolve,
    ipc_scope,
)
from tanglenode.protocol.ipc import ErrorKind, RequestError, TimelineRef
from tanglenode.protocol.limits import Limits
from tanglenode.protocol.message import ROOT_LINK, Named, TangleLink, decode_message, sign_message
from tests.factories import keypair

ID = b"\x07" * 32
KEY = keypair("ipc-protocol-peer").public
LIMITS = Limits()
DOCS = Path(__file__).resolve().parents[2] / "docs" / "IPC.md"


def nested(depth, inner=0):
    for _ in range(depth):
        inner = [inner]
    return inner


def parse(op, **fields):
    return ipc.parse_request(op, {"op": op, "id": 1, **fields}, LIMITS)


def refusal(op, **fields) -> RequestError:
    with pytest.raises(RequestError) as refused:
        parse(op, **fields)
    return refused.value


# -- the header ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [[1, 2], "status", {"id": 1}, {"op": 7}, {"op": b"status"}, None],
    ids=["list", "text", "no op", "op is an int", "op is bytes", "nil"],
)
def test_a_frame_that_is_no_request_is_a_bad_request(frame):
    with pytest.raises(RequestError) as refused:
        ipc.request_header(frame)
    assert refused.value.kind is ErrorKind.BAD_REQUEST
    assert str(refused.value) == "a request is a map with an op"


@pytest.mark.parametrize("number", [1.5, "x" * 129, [1], nested(400), b"1", True])
def test_a_request_id_is_an_integer_a_short_string_or_nil(number):
    with pytest.raises(RequestError) as refused:
        ipc.request_header({"op": "status", "id": number})
    assert refused.value.kind is ErrorKind.BAD_REQUEST


@pytest.mark.parametrize("number", [None, 0, -5, 2**63, "", "x" * 128])
def test_good_request_ids_pass(number):
    assert ipc.request_header({"op": "status", "id": number}) == (number, "status")


def test_an_unknown_op_is_named_back_cut_short():
    refused = refusal("x" * 100_000)
    assert refused.kind is ErrorKind.UNKNOWN_OP and len(str(refused)) < 100
    # Only the names on the wire: no Python spelling of them.
    assert refusal("group_create").kind is ErrorKind.UNKNOWN_OP
    assert refusal("watch_processed").kind is ErrorKind.UNKNOWN_OP


def test_every_op_has_a_parser_and_streams_are_ops():
    assert set(ipc.PARSERS) == ipc.OPS and ipc.STREAMING <= ipc.OPS
    others = (doc_ipc.DOC_PARSERS, ipc_discovery.DISCOVERY_PARSERS, ipc_scope.SCOPE_PARSERS)
    others += (ipc_resolve.RESOLVE_PARSERS, ipc_invites.INVITE_PARSERS, ipc_erase.ERASE_PARSERS)
    assert len(ipc.OPS) == 18 + sum(map(len, others))


# -- each op's fields ------------------------------------------------------------------------

BAD_FIELDS = {
    "publish tangles is a list": ("publish", {"content": 1, "tangles": ["chat"]}),
    "publish tangle name is huge": ("publish", {"content": 1, "tangles": {"n" * 600: None}}),
    "publish tangle name is 65 bytes": ("publish", {"tangles": {"é" * 33: None}}),
    "publish tangle name is empty": ("publish", {"content": 1, "tangles": {"": None}}),
    "publish tangle name is bytes": ("publish", {"content": 1, "tangles": {b"chat": None}}),
    "publish tangle root is short": ("publish", {"content": 1, "tangles": {"chat": b"r"}}),
    "publish tangle root is text": ("publish", {"content": 1, "tangles": {"chat": "%r"}}),
    "publish too many tangles": ("publish", {"tangles": {f"t{n}": None for n in range(17)}}),
    "get no message": ("get", {}),
    "get message is an int": ("get", {"message": 7}),
    "get message is 31 bytes": ("get", {"message": b"x" * 31}),
    "get message is 33 bytes": ("get", {"message": b"x" * 33}),
    "timeline names nothing": ("timeline", {}),
    "timeline has a tangle but no root": ("timeline", {"tangle": "chat"}),
    "timeline start is text": ("timeline", {"spacetime": True, "start": "x"}),
    "timeline start is true": ("timeline", {"spacetime": True, "start": True}),
    "timeline limit is inf": ("timeline", {"spacetime": True, "limit": math.inf}),
    "timeline limit is negative": ("timeline", {"spacetime": True, "limit": -1}),
    "timeline spacetime is a map": ("timeline", {"spacetime": {"a": 1}}),
    "timeline spacetime is 1": ("timeline", {"spacetime": 1}),
    "timeline root is short": ("timeline", {"tangle": "chat", "root": b"x"}),
    "timeline name is huge": ("timeline", {"tangle": "n" * 10_000, "root": ID}),
    "timeline name is an int": ("timeline", {"tangle": 5, "root": ID}),
    "timeline digest is 1": ("timeline", {"spacetime": True, "digest": 1}),
    "timeline digest of a window": (
        "timeline",
        {"spacetime": True, "order": "causal-time", "digest": True, "from_time": 5},
    ),
    "status digests is text": ("status", {"digests": "yes"}),
    "disconnect no key": ("disconnect", {}),
    "follow no feed": ("follow", {}),
    "unfollow feed is text": ("unfollow", {"feed": "@abc"}),
    "block feed is short": ("block", {"feed": b"k"}),
    "unblock feed is 33 bytes": ("unblock", {"feed": b"k" * 33}),
    "scope start is negative": ("scope", {"start": -1}),
    "scope limit is text": ("scope", {"limit": "all"}),
    "delete no message": ("delete", {}),
    "delete message is short": ("delete", {"message": b"x" * 31}),
    "purge no messages": ("purge", {}),
    "purge messages empty": ("purge", {"messages": []}),
    "purge too many": ("purge", {"messages": [bytes(32)] * 1001}),
    "purge a short id": ("purge", {"messages": [b"x"]}),
    "invite-create uses is 0": ("invite-create", {"uses": 0}),
    "invite-create uses is huge": ("invite-create", {"uses": 10_001}),
    "invite-create expires is text": ("invite-create", {"expires": "7d"}),
    "invite-create expires past a year": ("invite-create", {"expires": 400 * 86_400}),
    "invite-create follow_back is 1": ("invite-create", {"follow_back": 1}),
    "invite-create addresses are many": ("invite-create", {"addresses": ["h:1"] * 5}),
    "invite-create address has no port": ("invite-create", {"addresses": ["host"]}),
    "invite-create addresses is text": ("invite-create", {"addresses": "h:1"}),
    "invite-revoke no invite": ("invite-revoke", {}),
    "invite-revoke invite is short": ("invite-revoke", {"invite": "abc"}),
    "invite-use no code": ("invite-use", {}),
    "invite-use code is oversized": ("invite-use", {"code": "inv1." + "A" * 2000}),
    "invite-use code is bytes": ("invite-use", {"code": b"inv1.AAAA"}),
    "invite-use save is text": ("invite-use", {"code": "inv1.AAAA", "save": "yes"}),
    "resolve kind is unknown": ("resolve", {"kind": "group", "text": "AbCd"}),
    "resolve text is bytes": ("resolve", {"kind": "message", "text": b"AbCd"}),
    "resolve prefix too short": ("resolve", {"kind": "message", "text": "AbC"}),
    "resolve prefix not base64": ("resolve", {"kind": "feed", "text": "Ab+d"}),
    "resolve prefix too long": ("resolve", {"kind": "message", "text": "A" * 44}),
    "resolve whole id not 32 bytes": ("resolve", {"kind": "message", "text": "A" * 42 + "B"}),
    "resolve name empty": ("resolve", {"kind": "name", "text": ""}),
    "resolve title too long": ("resolve", {"kind": "title", "text": "t" * 201}),
    "resolve title a lone surrogate": ("resolve", {"kind": "title", "text": "\ud800"}),
    "disconnect key is text": ("disconnect", {"key": "@abc"}),
    "disconnect key is short": ("disconnect", {"key": b"k"}),
    "commands since is a float": ("commands", {"spacetime": True, "since": 1.5}),
    "commands limit is negative": ("commands", {"spacetime": True, "limit": -3}),
    "placement message is text": ("placement", {"spacetime": True, "message": "%abc"}),
    "placement names no timeline": ("placement", {"message": ID}),
    "peers limit is text": ("peers", {"limit": "all"}),
    "peers start is negative": ("peers", {"start": -1}),
    "clock start is a float": ("clock", {"start": 0.5}),
    "clock peer is short": ("clock", {"peer": b"p"}),
    "connect port 1e3": ("connect", {"address": "127.0.0.1:1e3", "key": KEY}),
    "connect nonsense": ("connect", {"address": "nonsense:abc", "key": KEY}),
    "connect no host": ("connect", {"address": ":8008", "key": KEY}),
    "connect port 0": ("connect", {"address": "h:0", "key": KEY}),
    "connect port 65536": ("connect", {"address": "h:65536", "key": KEY}),
    "connect unicode digits": ("connect", {"address": "h:\uff18\uff10", "key": KEY}),
    "connect no colon": ("connect", {"address": "localhost", "key": KEY}),
    "connect address is bytes": ("connect", {"address": b"h:1", "key": KEY}),
    "connect no key": ("connect", {"address": "h:1"}),
    "connect key is short": ("connect", {"address": "h:1", "key": b"k"}),
    "subscribe since is text": ("subscribe", {"spacetime": True, "since": "x"}),
    "subscribe since is negative": ("subscribe", {"spacetime": True, "since": -1}),
    "subscribe name is huge": ("subscribe", {"tangle": "n" * 1000, "root": ID}),
    "watch-processed start is negative": ("watch-processed", {"start": -1}),
    "group-create name is a map": ("group-create", {"name": {"a": 1}}),
    "group-create name is long": ("group-create", {"name": "n" * 1001}),
    "group-create name has an escape": ("group-create", {"name": "club\x1b[31m"}),
    "group-create name has a bidi control": ("group-create", {"name": "club\u202eevil"}),
    "group-create name has two lines": ("group-create", {"name": "club\nnews"}),
    "group-add no members": ("group-add", {"group": ID, "members": []}),
    "group-add too many members": ("group-add", {"group": ID, "members": [ID] * 1001}),
    "group-add a member is short": ("group-add", {"group": ID, "members": [ID, b"m"]}),
    "group-add group is short": ("group-add", {"group": b"g", "members": [ID]}),
    "group-exclude members is a map": ("group-exclude", {"group": ID, "members": {ID: 1}}),
    "group-exclude no group": ("group-exclude", {"members": [ID]}),
    "group-post group is text": ("group-post", {"group": "g", "content": 1}),
    "group-show no group": ("group-show", {}),
    "group-timeline order is bad": ("group-timeline", {"group": ID, "order": "x"}),
    "group-timeline tangle is bad": ("group-timeline", {"group": ID, "tangle": "chat"}),
    "group-timeline group is an int": ("group-timeline", {"group": 1}),
}


@pytest.mark.parametrize("op, fields", BAD_FIELDS.values(), ids=BAD_FIELDS.keys())
def test_each_bad_field_is_a_bad_request(op, fields):
    refused = refusal(op, **fields)
    assert refused.kind is ErrorKind.BAD_REQUEST and refused.reason is None


def test_every_op_is_checked_by_some_bad_field():
    # The document ops' are tests/protocol/test_doc_ipc.py's, the listings' test_ipc_discovery.py's.
    checked = {op for op, _fields in BAD_FIELDS.values()}
    others = set(doc_ipc.DOC_PARSERS) | set(ipc_discovery.DISCOVERY_PARSERS)
    others |= {"invite-list"}  # it takes no field
    assert checked == ipc.OPS - others


BAD_CONTENT = {
    "NaN": (math.nan, "non-finite-float"),
    "inf in a map": ({"x": [1.0, -math.inf]}, "non-finite-float"),
    "ext type": (msgpack.ExtType(5, b"xy"), "ext-type"),
    "timestamp": ({"t": msgpack.Timestamp(1, 0)}, "ext-type"),
    "33 deep": (nested(33), "too-deep"),
}


@pytest.mark.parametrize("content, reason", BAD_CONTENT.values(), ids=BAD_CONTENT.keys())
def test_group_content_breaking_a_rule_is_an_invalid_message_with_its_reason(content, reason):
    refused = refusal("group-post", group=ID, content=content)
    assert (refused.kind, refused.reason) == (ErrorKind.INVALID_MESSAGE, reason)
    assert str(refused).startswith(f"{reason}: content: ")
    # Checked before the group: a bad group id does not hide bad content.
    assert refusal("group-post", group="g", content=content).kind is ErrorKind.INVALID_MESSAGE


def test_group_content_depth_follows_the_limits():
    deep = {"group": ID, "content": nested(40)}
    with pytest.raises(RequestError):
        ipc.parse_request("group-post", deep, LIMITS)
    assert ipc.parse_request("group-post", deep, Limits(max_content_depth=64)).content == nested(40)


def test_good_requests_parse_to_their_shapes_with_defaults_and_caps():
    assert parse("status") == ipc.StatusRequest() == ipc.StatusRequest(digests=False)
    assert parse("status", digests=True) == ipc.StatusRequest(digests=True)
    assert parse("timeline", spacetime=True, digest=True).digest
    assert not parse("timeline", spacetime=True, digest=None).digest
    assert parse("disconnect", key=KEY) == ipc.DisconnectRequest(KEY)
    assert parse("publish", content={"a": 1}) == ipc.PublishRequest({"a": 1}, {})
    assert parse("publish", content=1, tangles={"chat": None, "x": ID}).tangles == {
        "chat": None,
        "x": ID,
    }
    assert parse("get", message=ID) == ipc.GetRequest(ID)
    assert parse("timeline", spacetime=True) == ipc.TimelineRequest(TimelineRef(), 0, ipc.PAGE)
    # Counts above an op's cap are lowered to it, not refused.
    assert parse("timeline", tangle="chat", root=ID, start=5, limit=10**12) == (
        ipc.TimelineRequest(TimelineRef(ID, "chat"), 5, ipc.MAX_ENTRIES)
    )
    assert parse("timeline", spacetime=False, tangle="c", root=ID).timeline == TimelineRef(ID, "c")
    assert parse("commands", spacetime=True, since=3, limit=None) == ipc.CommandsRequest(
        TimelineRef(), 3, ipc.PAGE
    )
    assert parse("placement", spacetime=True, message=ID) == ipc.PlacementRequest(TimelineRef(), ID)
    assert parse("peers", limit=10**9) == ipc.PeersRequest(0, ipc.MAX_PEERS_PAGE)
    assert parse("clock") == ipc.ClockRequest(None, 0, ipc.MAX_CLOCK_PAGE)
    assert parse("clock", peer=KEY, start=2, limit=5) == ipc.ClockRequest(KEY, 2, 5)
    assert parse("connect", address="[::1]:8008", key=KEY) == ipc.ConnectRequest("[::1]:8008", KEY)
    assert parse("subscribe", spacetime=True) == ipc.SubscribeRequest(TimelineRef(), None)
    assert parse("subscribe", tangle="c", root=ID, since=0).since == 0
    assert parse("watch-processed") == ipc.WatchProcessedRequest(0)
    assert parse("group-create") == ipc.GroupCreateRequest("")
    assert parse("group-add", group=ID, members=[KEY]) == ipc.GroupAddRequest(ID, [KEY])
    assert parse("group-exclude", group=ID, members=[KEY]) == ipc.GroupExcludeRequest(ID, [KEY])
    assert parse("group-post", group=ID, content="hi") == ipc.GroupPostRequest(ID, "hi")
    assert parse("group-show", group=ID) == ipc.GroupShowRequest(ID)
    assert parse("group-timeline", group=ID) == ipc.GroupTimelineRequest(ID, "group", "rank")
    assert parse("group-timeline", group=ID, tangle="epoch", order="causal-time").order == (
        "causal-time"
    )


# -- error kinds -----------------------------------------------------------------------------


def documented(section: str) -> set[str]:
    """The `names` opening the rows of a table in a section of docs/IPC.md."""
    text = DOCS.read_text().split(f"\n## {section}\n")[1].split("\n## ")[0]
    rows = re.findall(r"^\| (`[a-z-]+`(?:, `[a-z-]+`)*) \|", text, re.MULTILINE)
    return {name for row in rows for name in re.findall(r"`([a-z-]+)`", row)}


def test_the_error_kinds_are_the_documented_ones():
    client_side = {ErrorKind.DISCONNECTED, ErrorKind.PROTOCOL, ErrorKind.STREAMING}
    assert documented("Error kinds") == {str(kind) for kind in ErrorKind} - client_side
    assert all(f"`{kind}`" in DOCS.read_text() for kind in client_side)


def test_the_ops_are_the_documented_ones():
    assert documented("Wire") == ipc.OPS


def test_an_error_reply_carries_the_kind_as_text_and_cuts_the_message():
    reply = ipc.error_reply(3, ErrorKind.NOT_FOUND, "no such message")
    assert reply == {"id": 3, "error": {"kind": "not-found", "message": "no such message"}}
    assert type(reply["error"]["kind"]) is str
    assert msgpack.packb(reply) == msgpack.packb(
        {"id": 3, "error": {"kind": "not-found", "message": "no such message"}}
    )
    long = ipc.error_reply(None, ErrorKind.INVALID_MESSAGE, "x" * 5000, "too-deep")
    assert long["error"]["reason"] == "too-deep"
    assert len(long["error"]["message"]) == 1000 and long["error"]["message"].endswith("...")


def test_short_cuts_only_what_is_over_the_limit():
    assert ipc.short(None) is None
    assert ipc.short("a" * 300) == "a" * 300
    assert ipc.short("a" * 301) == "a" * 297 + "..."


# -- what goes out ---------------------------------------------------------------------------

AUTHOR = keypair("ipc-protocol-author")
OTHER = keypair("ipc-protocol-other").public
TAG = bytes(range(16))
OTHER_TAG = b"\xee" * 16


def a_message(content, tangles=None):
    return sign_message(
        AUTHOR,
        seq=1,
        prev=None,
        timestamp=1234,
        timeframe={KEY: Named(2, TAG), OTHER: Named(5, OTHER_TAG)},
        tangles=tangles or {},
        content=content,
    )


def test_a_message_body_has_every_field_in_wire_order():
    message = a_message({"text": "hi"}, {"chat": ROOT_LINK, "topic": TangleLink(ID, (KEY,))})
    body = ipc.message_body(message)
    assert list(body) == [
        "id",
        "author",
        "seq",
        "prev",
        "timestamp",
        "timeframe",
        "tangles",
        "content",
        "has_content",
    ]
    assert body["has_content"] and not ipc.message_body(message.without_content())["has_content"]
    assert body["id"] == message.id and body["author"] == AUTHOR.public
    assert (body["seq"], body["prev"], body["timestamp"]) == (1, None, 1234)
    assert body["timeframe"] == {KEY: [2, TAG], OTHER: [5, OTHER_TAG]}
    assert body["tangles"] == {
        "chat": {"root": None, "previous": []},
        "topic": {"root": ID, "previous": [KEY]},
    }
    assert body["content"] == {"text": "hi"}


def test_a_message_body_carries_the_timeframe_as_signed():
    """[seq, tag] per feed, as in the signed bytes: a client can check which message is named."""
    message = a_message("x")
    body = msgpack.unpackb(msgpack.packb(ipc.message_body(message), use_bin_type=True))
    assert body["timeframe"] == msgpack.unpackb(message.header)[5]
    assert body["timeframe"] == {
        feed: [seq, tag] for feed, (seq, tag) in decode_message(message.raw).named().items()
    }
    no_timeframe = sign_message(
        AUTHOR, seq=1, prev=None, timestamp=0, timeframe={}, tangles={}, content=None
    )
    assert ipc.message_body(no_timeframe)["timeframe"] == {}


def test_content_too_deep_for_a_frame_is_marked_and_the_rest_passes():
    assert ipc.bounded_content(nested(500)) == {"$too-deep": True}
    assert ipc.bounded_content({"a": nested(500)}) == {"$too-deep": True}
    assert ipc.bounded_content(nested(10)) == nested(10)
    assert ipc.bounded_content([math.inf]) == [math.inf]  # stored before the rules: carried
    assert ipc.bounded_content("text") == "text"


def test_each_command_kind_encodes_byte_for_byte():
    def packed(value):
        return msgpack.packb(value, use_bin_type=True)

    # In a `commands` reply: no version, inserts with the id only.
    assert packed(ipc.insert_command(2, ID)) == packed({"ins": 2, "id": ID})
    assert packed(ipc.move_command(5, 1)) == packed({"mov": [5, 1]})
    assert packed(ipc.delete_command(4)) == packed({"del": 4})
    # In a stream: the version first, inserts with the message's body.
    message = a_message("x")
    assert packed(ipc.insert_command(0, message.id, message, 7)) == packed(
        {"v": 7, "ins": 0, "message": ipc.message_body(message)}
    )
    assert packed(ipc.insert_command(0, ID, None, 7)) == packed({"v": 7, "ins": 0, "message": ID})
    assert packed(ipc.move_command(5, 1, 8)) == packed({"v": 8, "mov": [5, 1]})
    assert packed(ipc.delete_command(4, 9)) == packed({"v": 9, "del": 4})


def test_a_processed_entry_has_its_index_and_body():
    message = a_message(1)
    assert ipc.processed_entry(3, message) == {"index": 3, "message": ipc.message_body(message)}
    assert ipc.processed_entry(4, None) == {"index": 4, "message": None}
