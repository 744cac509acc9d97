"""Skeletons (protocol/document.py): an erased document message's structure without its
characters, what its erase request carries, and the checks a peer's skeleton meets."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tanglenode.protocol.canonical import decode_canonical, encode_canonical
from tanglenode.protocol.document import (
    ERASED,
    MAX_ATOMS,
    SELF,
    AtomRef,
    Delete,
    DocComment,
    DocEdit,
    DocInit,
    DocReason,
    DocumentError,
    Insert,
    Undelete,
    comment_content,
    edit_content,
    include_content,
    init_content,
    parse_document,
    parse_skeleton,
    skeleton,
)

ID1, ID2 = bytes([1]) * 32, bytes([2]) * 32

ops = st.lists(
    st.one_of(
        st.builds(
            Insert,
            st.builds(AtomRef, st.sampled_from([ID1, ID2]), st.integers(0, 99)),
            st.text(st.sampled_from("ab é\u0301😀\n"), min_size=1, max_size=30),
        ),
        st.builds(
            Delete,
            st.builds(AtomRef, st.sampled_from([ID1, ID2]), st.integers(0, 99)),
            st.integers(1, 5),
        ),
        st.builds(
            Undelete,
            st.builds(AtomRef, st.sampled_from([ID1, ID2]), st.integers(0, 99)),
            st.integers(1, 5),
        ),
    ),
    min_size=1,
    max_size=12,
)


@given(ops)
def test_a_skeleton_keeps_every_atom_and_no_character(edit_ops):
    content = edit_content(edit_ops)
    weave = skeleton(content)
    encoded = encode_canonical(weave)
    assert decode_canonical(encoded) == weave  # canonical, as any content
    assert len(encoded) <= len(encode_canonical(content))  # never larger than the edit
    assert weave["refs"] == content["refs"]
    parsed, erased = parse_document(content), parse_skeleton(weave)
    assert isinstance(erased, DocEdit) and erased.atoms == parsed.atoms
    for op, blank in zip(parsed.ops, erased.ops, strict=True):
        assert type(op) is type(blank) and op[0] == blank[0]
        if type(op) is Insert:
            assert blank.text == ERASED * len(op.text)  # its length in code points
        else:
            assert blank == op
    # no string is left but the format's own words: not a character of the text
    strings = {name for name, _ref, _index, _last in weave["ops"]} | {weave["type"]}
    assert strings <= {"ins", "del", "undel", "doc/edit"}
    assert all(type(last) is int for _name, _ref, _index, last in weave["ops"])


def test_each_kind_has_its_skeleton():
    assert skeleton(init_content("secret title")) == {"type": "doc/init"}
    assert parse_skeleton({"type": "doc/init"}) == DocInit("")
    first, last = AtomRef(ID1, 0), AtomRef(ID2, 3)
    comment = skeleton(comment_content("secret note", first, last))
    assert comment == {"range": [ID1, 0, ID2, 3], "type": "doc/comment"}
    assert parse_skeleton(comment) == DocComment("", (first, last))
    assert parse_skeleton(skeleton(comment_content("reply", None, None))) == DocComment("", None)
    include = include_content(AtomRef(ID1, 0), ID2, first, last)
    assert skeleton(include) == include
    assert skeleton({"type": "post", "text": "no document's"}) is None
    assert skeleton({"ops": [], "refs": [], "type": "doc/edit"}) is None  # not a valid edit


GOOD = {"ops": [["ins", 1, 0, 3], ["del", 0, 1, 2]], "refs": [ID1], "type": "doc/edit"}


@pytest.mark.parametrize(
    ("weave", "reason"),
    [
        (dict(GOOD, ops=[["ins", 1, 0, "abc"]]), DocReason.MALFORMED),  # characters
        (dict(GOOD, ops=[["ins", 1, 0, True]]), DocReason.MALFORMED),
        (dict(GOOD, ops=[["ins", 1, 0, 0]]), DocReason.BAD_OP),
        (dict(GOOD, ops=[["ins", 1, 0, MAX_ATOMS + 1]]), DocReason.TOO_MANY),
        (dict(GOOD, ops=[["ins", 1, 0, MAX_ATOMS], ["ins", 0, 0, 1]]), DocReason.TOO_MANY),
        (dict(GOOD, ops=[["ins", 1, 0, 2], ["ins", 0, 2, 1]]), DocReason.SELF_REF),
        (dict(GOOD, refs=[ID2, ID1]), DocReason.BAD_REF),
        (dict(GOOD, extra=1), DocReason.MALFORMED),
        ({"ops": GOOD["ops"], "refs": GOOD["refs"]}, DocReason.MALFORMED),  # no type
        (dict(GOOD, type="doc/other"), DocReason.MALFORMED),
        ({"title": "kept", "type": "doc/init"}, DocReason.MALFORMED),
        ({"text": "kept", "type": "doc/comment"}, DocReason.MALFORMED),
        ({"range": [ID1, 0, ID2], "type": "doc/comment"}, DocReason.MALFORMED),
        ([GOOD], DocReason.MALFORMED),
        (None, DocReason.MALFORMED),
    ],
)
def test_a_bad_skeleton_from_a_peer_is_refused_with_its_reason(weave, reason):
    with pytest.raises(DocumentError) as refused:
        parse_skeleton(weave)
    assert refused.value.reason is reason


def test_a_good_skeleton_stands_for_its_edit():
    parsed = parse_skeleton(GOOD)
    assert parsed == DocEdit((Insert(AtomRef(ID1, 0), ERASED * 3), Delete(AtomRef(SELF, 1), 2)), 5)
