"""The listing ops' requests without a socket or a store: `tangles` and `group-list`."""

import pytest

from tanglenode.protocol import ipc_discovery
from tanglenode.protocol.ipc import ErrorKind, RequestError, parse_request
from tanglenode.protocol.ipc_discovery import GroupListRequest, TanglesRequest, cursor_body
from tanglenode.protocol.limits import Limits

ID = b"\x07" * 32


def parse(op, **fields):
    return parse_request(op, {"op": op, "id": 1, **fields}, Limits())


BAD_FIELDS = {
    "tangles limit is 0": ("tangles", {"limit": 0}),
    "tangles limit is negative": ("tangles", {"limit": -1}),
    "tangles limit is true": ("tangles", {"limit": True}),
    "tangles name is empty": ("tangles", {"name": ""}),
    "tangles name is 65 bytes": ("tangles", {"name": "é" * 33}),
    "tangles name is bytes": ("tangles", {"name": b"chat"}),
    "tangles after is text": ("tangles", {"after": "chat/%x"}),
    "tangles after has no tangle": ("tangles", {"after": {"root": ID}}),
    "tangles after root is short": ("tangles", {"after": {"root": b"r", "tangle": "chat"}}),
    "tangles after tangle is huge": ("tangles", {"after": {"root": ID, "tangle": "n" * 10_000}}),
    "group-list limit is text": ("group-list", {"limit": "20"}),
    "group-list after is a list": ("group-list", {"after": [ID, "group"]}),
}


@pytest.mark.parametrize("op, fields", BAD_FIELDS.values(), ids=BAD_FIELDS.keys())
def test_each_bad_field_is_a_bad_request(op, fields):
    with pytest.raises(RequestError) as refused:
        parse(op, **fields)
    assert refused.value.kind is ErrorKind.BAD_REQUEST


def test_every_listing_op_is_checked_by_some_bad_field():
    checked = {op for op, _fields in BAD_FIELDS.values()}
    assert checked == set(ipc_discovery.DISCOVERY_PARSERS)


def test_good_requests_parse_with_their_defaults_and_caps():
    assert parse("tangles") == TanglesRequest(None, 1000, None)
    after = {"root": ID, "tangle": "chat"}
    assert parse("tangles", after=after, limit=10**9, name="notes") == TanglesRequest(
        (ID, "chat"), 1000, "notes"
    )
    assert parse("group-list") == GroupListRequest(None, 20)
    assert parse("group-list", after=after, limit=10**9) == GroupListRequest((ID, "chat"), 100)
    assert cursor_body((ID, "chat")) == after and cursor_body(None) is None
