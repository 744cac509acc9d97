"""The document contents (protocol/document.py): round trips, each refusal's reason, the bounds."""

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.protocol.canonical import decode_canonical
from tanglenode.protocol.document import (
    EDIT,
    INIT,
    MAX_ATOMS,
    MAX_INDEX,
    MAX_OPS,
    SELF,
    TANGLE,
    AtomRef,
    Delete,
    DocEdit,
    DocInit,
    DocReason,
    DocumentError,
    Insert,
    Undelete,
    edit_content,
    edit_size,
    init_content,
    is_document,
    op_atoms,
    parse_document,
)
from tanglenode.protocol.errors import Reason, RemoteProtocolError
from tanglenode.protocol.identity import tag_of
from tanglenode.protocol.limits import DEFAULT_LIMITS
from tanglenode.protocol.message import Named, TangleLink, UnpublishableMessage, sign_message
from tests.factories import keypair

ID1, ID2, ID3 = (bytes([n]) * 32 for n in (1, 2, 3))
IDS = (ID1, ID2, ID3, b"\xff" * 32, bytes(32))


def edit(*ops, refs=(ID1,)):
    """A doc/edit content as a peer may send it, unchecked."""
    return {"ops": [list(op) for op in ops], "refs": list(refs), "type": EDIT}


def typed(ops):
    """Ops with their kinds: a Delete and an Undelete of the same atoms are equal tuples."""
    return [(type(op), op) for op in ops]


def refused(content) -> DocReason:
    with pytest.raises(DocumentError) as error:
        parse_document(content)
    assert error.value.detail and str(error.value).startswith(f"{error.value.reason}: ")
    return error.value.reason


# -- doc/init -----------------------------------------------------------------------------------


@pytest.mark.parametrize("title", ["Notes", "x" * 200, "é" * 100, "日本語のメモ", "a\u2028b"])
def test_an_init_round_trips(title):
    content = init_content(title)
    assert list(content) == ["title", "type"] and content["type"] == INIT
    assert is_document(content)
    assert parse_document(content) == DocInit(title)


BAD_TITLES = {
    "empty": "",
    "201 bytes": "x" * 201,
    "101 two-byte letters": "é" * 101,
    "a newline": "a\nb",
    "a tab": "\tx",
    "NUL": "a\x00",
    "DEL": "a\x7f",
    "a C1 control": "a\x85",
    "a lone surrogate": "a\ud800",
    "not a string": 7,
    "bytes": b"Notes",
    "None": None,
}


@pytest.mark.parametrize("title", BAD_TITLES.values(), ids=BAD_TITLES.keys())
def test_a_bad_title_is_refused_on_both_sides(title):
    assert refused({"title": title, "type": INIT}) is DocReason.BAD_TITLE
    with pytest.raises(DocumentError) as error:
        init_content(title)
    assert error.value.reason is DocReason.BAD_TITLE


@pytest.mark.parametrize(
    "content",
    [{"type": INIT}, {"title": "t", "type": INIT, "x": 1}, {"title": "t", "type": INIT, b"y": 1}],
)
def test_an_init_holds_exactly_its_keys(content):
    assert refused(content) is DocReason.MALFORMED


# -- what is a document -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, expected",
    [
        ({"type": INIT}, True),
        ({"type": EDIT, "junk": 1}, True),  # claims to be one: parse_document refuses it
        ({"type": "doc"}, False),
        ({"type": b"doc/edit"}, False),
        ({"type": ["doc/edit"]}, False),
        ({b"type": "doc/init"}, False),
        (["doc/init"], False),
        ("doc/init", False),
        (None, False),
    ],
)
def test_is_document(content, expected):
    assert is_document(content) is expected


@pytest.mark.parametrize("content", [["doc/edit"], {"type": "post"}, {}, None, "doc/init", 3])
def test_parse_document_refuses_what_is_not_a_document(content):
    assert refused(content) is DocReason.MALFORMED


# -- doc/edit round trips -----------------------------------------------------------------------


@st.composite
def op_lists(draw, max_ops=12):
    """Valid ops: outside atoms anywhere in range, own atoms only from earlier ops."""
    ops, atoms = [], 0
    for _ in range(draw(st.integers(1, max_ops))):
        kind = draw(st.sampled_from([Insert, Delete, Undelete]))
        own = atoms > 0 and draw(st.booleans())
        if kind is Insert:
            text = draw(st.text(min_size=1, max_size=8))
            index = draw(st.integers(0, atoms - 1 if own else MAX_INDEX))
            op = Insert(AtomRef(SELF if own else draw(st.sampled_from(IDS)), index), text)
        else:
            count = draw(st.integers(1, min(atoms, 6) if own else 6))
            index = draw(st.integers(0, (atoms if own else MAX_INDEX + 1) - count))
            op = kind(AtomRef(SELF if own else draw(st.sampled_from(IDS)), index), count)
        ops.append(op)
        atoms += op_atoms(op)
    return ops


@settings(max_examples=300, deadline=None)
@given(op_lists())
def test_an_edit_round_trips(ops):
    content = edit_content(ops)
    assert list(content) == ["ops", "refs", "type"] and content["type"] == EDIT
    assert content["refs"] == sorted({op[0].msg for op in ops} - {SELF})
    raw = msgpack.packb(content, use_bin_type=True)
    assert decode_canonical(raw) == content  # canonical as built: one encoding per edit
    assert edit_size(ops) == len(raw)
    assert is_document(content)
    parsed = parse_document(content)
    assert typed(parsed.ops) == typed(ops)
    assert parsed.atoms == sum(op_atoms(op) for op in ops)
    assert edit_content(parsed.ops) == content


def test_ref_numbers_follow_the_ids_byte_order_not_the_ops_order():
    ops = [Insert(AtomRef(ID3, 4), "ab"), Delete(AtomRef(ID1, 0), 2), Insert(AtomRef(SELF, 1), "c")]
    assert edit_content(ops) == edit(
        ["ins", 2, 4, "ab"], ["del", 1, 0, 2], ["ins", 0, 1, "c"], refs=(ID1, ID3)
    )


def test_atoms_are_code_points():
    assert op_atoms(Insert(AtomRef(ID1, 0), "h\u00e9\U0001f600")) == 3  # not bytes, not UTF-16
    assert op_atoms(Delete(AtomRef(ID1, 0), 5)) == op_atoms(Undelete(AtomRef(ID1, 0), 5)) == 5
    parsed = parse_document(edit(["ins", 1, 0, "\U0001f600\U0001f600"], ["del", 0, 1, 1]))
    ops = (Insert(AtomRef(ID1, 0), "\U0001f600\U0001f600"), Delete(AtomRef(SELF, 1), 1))
    assert parsed == DocEdit(ops, 3)


A1, A2, A3, A4, B1, B2 = (bytes([n]) * 32 for n in (0x11, 0x12, 0x13, 0x14, 0x21, 0x22))
EXAMPLE = {  # docs/DOCUMENTS.md's worked example: ids sort a1 < a2 < a3 < a4 < b1 < b2 < b3
    "a2": ([Insert(AtomRef(A1, 0), "hi")], edit(["ins", 1, 0, "hi"], refs=[A1])),
    "b1": ([Insert(AtomRef(A2, 1), "!")], edit(["ins", 1, 1, "!"], refs=[A2])),
    "a3": ([Insert(AtomRef(A2, 1), " there")], edit(["ins", 1, 1, " there"], refs=[A2])),
    "b2": (
        [Insert(AtomRef(A1, 0), "H"), Delete(AtomRef(A2, 0), 1)],
        edit(["ins", 1, 0, "H"], ["del", 2, 0, 1], refs=[A1, A2]),
    ),
    "a4": ([Delete(AtomRef(B1, 0), 1)], edit(["del", 1, 0, 1], refs=[B1])),
    "b3": ([Undelete(AtomRef(A4, 0), 1)], edit(["undel", 1, 0, 1], refs=[A4])),
    "ab then c": (
        [Insert(AtomRef(B2, 7), "ab"), Insert(AtomRef(SELF, 0), "c")],
        edit(["ins", 1, 7, "ab"], ["ins", 0, 0, "c"], refs=[B2]),
    ),
}


@pytest.mark.parametrize("ops, content", EXAMPLE.values(), ids=EXAMPLE.keys())
def test_the_documented_example_encodes_as_documented(ops, content):
    assert edit_content(ops) == content
    assert typed(parse_document(content).ops) == typed(ops)


def test_the_documented_init():
    assert init_content("Greeting") == {"title": "Greeting", "type": "doc/init"}


# -- doc/edit refusals, one class each ----------------------------------------------------------

HUGE = 2**70
HOSTILE_EDITS = {
    # the map
    "a missing key": ({"ops": [["ins", 1, 0, "a"]], "type": EDIT}, DocReason.MALFORMED),
    "an extra key": ({**edit(["ins", 1, 0, "a"]), "x": 1}, DocReason.MALFORMED),
    "ops not an array": ({**edit(), "ops": "ins"}, DocReason.MALFORMED),
    "ops a map": ({**edit(), "ops": {"ins": 1}}, DocReason.MALFORMED),
    "no ops": (edit(refs=()), DocReason.BAD_OP),
    "too many ops": (edit(*[["del", 1, 0, 1]] * (MAX_OPS + 1)), DocReason.TOO_MANY),
    # refs
    "refs not an array": ({**edit(["ins", 1, 0, "a"]), "refs": ID1}, DocReason.MALFORMED),
    "a ref that is text": (edit(["ins", 1, 0, "a"], refs=["x" * 32]), DocReason.BAD_REF),
    "a ref of 31 bytes": (edit(["ins", 1, 0, "a"], refs=[ID1[:31]]), DocReason.BAD_REF),
    "a ref of 33 bytes": (edit(["ins", 1, 0, "a"], refs=[ID1 + b"!"]), DocReason.BAD_REF),
    "a ref that is nil": (edit(["ins", 1, 0, "a"], refs=[None]), DocReason.BAD_REF),
    "refs descending": (
        edit(["ins", 1, 0, "a"], ["ins", 2, 0, "b"], refs=(ID2, ID1)),
        DocReason.BAD_REF,
    ),
    "a ref twice": (
        edit(["ins", 1, 0, "a"], ["ins", 2, 0, "b"], refs=(ID1, ID1)),
        DocReason.BAD_REF,
    ),
    "an unused ref": (edit(["ins", 2, 0, "a"], refs=(ID1, ID2)), DocReason.BAD_REF),
    "more refs than ops": (edit(["ins", 1, 0, "a"], refs=(ID1, ID2, ID3)), DocReason.BAD_REF),
    "a ref number past refs": (edit(["ins", 2, 0, "a"]), DocReason.BAD_REF),
    "a negative ref number": (edit(["ins", -1, 0, "a"]), DocReason.BAD_REF),
    "a huge ref number": (edit(["ins", HUGE, 0, "a"]), DocReason.BAD_REF),
    "no refs, so a first op citing itself": (edit(["ins", 0, 0, "a"], refs=()), DocReason.SELF_REF),
    # an op's shape and types
    "an op that is text": (edit("ins"), DocReason.MALFORMED),
    "an op that is a map": (edit({"ins": 1}), DocReason.MALFORMED),
    "an op of three": (edit(["ins", 1, 0]), DocReason.MALFORMED),
    "an op of five": (edit(["del", 1, 0, 1, 1]), DocReason.MALFORMED),
    "an empty op": (edit([]), DocReason.MALFORMED),
    "a name that is bytes": (edit([b"ins", 1, 0, "a"]), DocReason.MALFORMED),
    "a name that is an int": (edit([0, 1, 0, "a"]), DocReason.MALFORMED),
    "a bool ref": (edit(["ins", True, 0, "a"]), DocReason.MALFORMED),
    "a float ref": (edit(["ins", 1.0, 0, "a"]), DocReason.MALFORMED),
    "a nil ref": (edit(["ins", None, 0, "a"]), DocReason.MALFORMED),
    "a bool index": (edit(["ins", 1, False, "a"]), DocReason.MALFORMED),
    "a float index": (edit(["del", 1, 0.0, 1]), DocReason.MALFORMED),
    "an index as text": (edit(["del", 1, "0", 1]), DocReason.MALFORMED),
    "a bool count": (edit(["del", 1, 0, True]), DocReason.MALFORMED),
    "a count as text": (edit(["undel", 1, 0, "1"]), DocReason.MALFORMED),
    "a float count": (edit(["del", 1, 0, 1.0]), DocReason.MALFORMED),
    "ins of bytes": (edit(["ins", 1, 0, b"a"]), DocReason.MALFORMED),
    "ins of a count": (edit(["ins", 1, 0, 1]), DocReason.MALFORMED),
    "ins of a lone surrogate": (edit(["ins", 1, 0, "a\udc00"]), DocReason.MALFORMED),
    # an op's values
    "an unknown op": (edit(["move", 1, 0, 1]), DocReason.BAD_OP),
    "an op name in capitals": (edit(["INS", 1, 0, "a"]), DocReason.BAD_OP),
    "ins of empty text": (edit(["ins", 1, 0, ""]), DocReason.BAD_OP),
    "a negative index": (edit(["ins", 1, -1, "a"]), DocReason.BAD_OP),
    "an index past 2**32-1": (edit(["ins", 1, MAX_INDEX + 1, "a"]), DocReason.BAD_OP),
    "a huge index": (edit(["del", 1, HUGE, 1]), DocReason.BAD_OP),
    "a range past 2**32-1": (edit(["del", 1, MAX_INDEX, 2]), DocReason.BAD_OP),
    "a zero count": (edit(["del", 1, 0, 0]), DocReason.BAD_OP),
    "a negative count": (edit(["undel", 1, 0, -1]), DocReason.BAD_OP),
    # atoms
    "one op of too many atoms": (edit(["del", 1, 0, MAX_ATOMS + 1]), DocReason.TOO_MANY),
    "a huge count": (edit(["undel", 1, 0, HUGE]), DocReason.TOO_MANY),
    "too many atoms over two ops": (
        edit(["ins", 1, 0, "a" * MAX_ATOMS], ["del", 0, 0, 1]),
        DocReason.TOO_MANY,
    ),
    # self-references
    "a first op citing this edit": (
        edit(["del", 0, 0, 1], ["ins", 1, 0, "a"]),
        DocReason.SELF_REF,
    ),
    "ins caused by its own atom": (
        edit(["ins", 1, 0, "a"], ["ins", 0, 1, "bc"]),
        DocReason.SELF_REF,
    ),
    "del of its own atom": (edit(["ins", 1, 0, "ab"], ["del", 0, 2, 1]), DocReason.SELF_REF),
    "del running into its own atoms": (
        edit(["ins", 1, 0, "ab"], ["del", 0, 1, 2]),
        DocReason.SELF_REF,
    ),
    "an atom of a later op": (
        edit(["ins", 1, 0, "a"], ["ins", 0, 3, "b"], ["ins", 0, 0, "cd"]),
        DocReason.SELF_REF,
    ),
    "undel of an atom no op made": (edit(["del", 1, 0, 1], ["undel", 0, 5, 1]), DocReason.SELF_REF),
}


@pytest.mark.parametrize("content, reason", HOSTILE_EDITS.values(), ids=HOSTILE_EDITS.keys())
def test_a_hostile_edit_is_refused_with_its_reason(content, reason):
    assert refused(content) is reason


def test_the_reasons_are_the_specs():
    assert {reason.name: str(reason) for reason in DocReason} == {
        "MALFORMED": "malformed",
        "BAD_TITLE": "bad-title",
        "BAD_REF": "bad-ref",
        "BAD_OP": "bad-op",
        "TOO_MANY": "too-many",
        "SELF_REF": "self-ref",
        "UNKNOWN_DOC": "unknown-doc",
        "OUTSIDE_WEFT": "outside-weft",
        "UNKNOWN_ATOM": "unknown-atom",
        "WRONG_KIND": "wrong-kind",
        "WRONG_GROUP": "wrong-group",
        "UNREADABLE": "unreadable",
        "EXCLUDED": "excluded",
    }
    assert issubclass(DocumentError, RemoteProtocolError)


def test_citing_earlier_ops_of_the_same_edit_is_fine():
    parsed = parse_document(edit(["ins", 1, 0, "abc"], ["del", 0, 0, 3], ["undel", 0, 3, 3]))
    assert parsed.atoms == 9
    assert parsed.ops[2] == Undelete(AtomRef(SELF, 3), 3)


def test_the_largest_index_is_allowed():
    assert parse_document(edit(["del", 1, MAX_INDEX - 1, 2])).atoms == 2


def nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


DEEP = nested(100_000)
DEEP_CONTENTS = {
    "ops": ({**edit(["ins", 1, 0, "a"]), "ops": DEEP}, DocReason.MALFORMED),  # an op of one
    "refs": ({**edit(["ins", 1, 0, "a"]), "refs": DEEP}, DocReason.BAD_REF),
    "an op": (edit(DEEP), DocReason.MALFORMED),
    "a name": (edit([DEEP, 1, 0, "a"]), DocReason.MALFORMED),
    "a text": (edit(["ins", 1, 0, DEEP]), DocReason.MALFORMED),
    "a title": ({"title": DEEP, "type": INIT}, DocReason.BAD_TITLE),
}


@pytest.mark.parametrize("content, reason", DEEP_CONTENTS.values(), ids=DEEP_CONTENTS.keys())
def test_deep_nesting_is_refused_without_recursion(content, reason):
    assert refused(content) is reason


# -- hostile values anywhere: a DocumentError, never anything else -------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.sampled_from([0, 1, 2, -1, MAX_INDEX, MAX_INDEX + 1, MAX_ATOMS])
    | st.floats(allow_nan=False)
    | st.text(max_size=5)
    | st.sampled_from(["ins", "del", "undel", "doc/edit", "doc/init", "", "title", "type"])
    | st.binary(max_size=3)
    | st.sampled_from(IDS)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


def parses_or_refuses(content):
    try:
        parse_document(content)
    except DocumentError as error:
        assert isinstance(error.reason, DocReason) and error.detail


@settings(max_examples=300, deadline=None)
@given(VALUES, st.sampled_from([INIT, EDIT]))
def test_any_value_is_refused_as_a_document_error(value, kind):
    parses_or_refuses(value)
    parses_or_refuses({"type": kind, "title": value})
    parses_or_refuses({"type": kind, "ops": value, "refs": [ID1]})
    parses_or_refuses({"type": kind, "ops": [["ins", 1, 0, "a"]], "refs": value})


@settings(max_examples=500, deadline=None)
@given(op_lists(max_ops=4), st.data())
def test_a_valid_edit_with_one_value_swapped_is_refused_as_a_document_error(ops, data):
    content = edit_content(ops)
    op = data.draw(st.sampled_from(content["ops"]))
    op[data.draw(st.integers(0, 3))] = data.draw(VALUES)
    if data.draw(st.booleans()):
        content["ops"].append(data.draw(VALUES))
    if content["refs"] and data.draw(st.booleans()):
        content["refs"][data.draw(st.integers(0, len(content["refs"]) - 1))] = data.draw(VALUES)
    parses_or_refuses(content)


# -- building an edit from ops ------------------------------------------------------------------

BAD_OPS = {
    "not a list": (None, DocReason.MALFORMED),
    "a string": ("ins", DocReason.MALFORMED),
    "a generator": ((op for op in ()), DocReason.MALFORMED),
    "no ops": ([], DocReason.BAD_OP),
    "a plain tuple": ([("ins", AtomRef(ID1, 0), "a")], DocReason.MALFORMED),
    "a cause that is a plain tuple": ([Insert((ID1, 0), "a")], DocReason.MALFORMED),
    "a short id": ([Insert(AtomRef(ID1[:8], 0), "a")], DocReason.BAD_REF),
    "an id as text": ([Delete(AtomRef("x" * 32, 0), 1)], DocReason.BAD_REF),
    "a bool index": ([Delete(AtomRef(ID1, True), 1)], DocReason.MALFORMED),
    "a text that is bytes": ([Insert(AtomRef(ID1, 0), b"a")], DocReason.MALFORMED),
    "empty text": ([Insert(AtomRef(ID1, 0), "")], DocReason.BAD_OP),
    "a zero count": ([Undelete(AtomRef(ID1, 0), 0)], DocReason.BAD_OP),
    "a first op citing itself": ([Insert(AtomRef(SELF, 0), "a")], DocReason.SELF_REF),
    "too many atoms": (
        [Delete(AtomRef(ID1, 0), MAX_ATOMS), Delete(AtomRef(ID2, 0), 1)],
        DocReason.TOO_MANY,
    ),
}


@pytest.mark.parametrize("ops, reason", BAD_OPS.values(), ids=BAD_OPS.keys())
def test_edit_content_and_edit_size_refuse_what_a_receiver_would(ops, reason):
    for build in (edit_content, edit_size):
        with pytest.raises(DocumentError) as error:
            build(ops)
        assert error.value.reason is reason


@pytest.mark.parametrize(
    "op", [None, "ins", ("ins", 1, 0, "a"), AtomRef(ID1, 0), Insert(AtomRef(ID1, 0), 3)]
)
def test_op_atoms_refuses_what_is_not_an_op(op):
    with pytest.raises(DocumentError) as error:
        op_atoms(op)
    assert error.value.reason is DocReason.MALFORMED


# -- the bounds against the message limit -------------------------------------------------------

AUTHOR, OTHER = keypair("doc-author"), keypair("doc-other")
DOC = b"\x0d" * 32


def signed_edit(content):
    """An edit as its author would publish it: second in its feed, in the doc's tangle."""
    return sign_message(
        AUTHOR,
        seq=2,
        prev=DOC,
        timestamp=1_700_000_000_000,
        timeframe={OTHER.public: Named(40, tag_of(b"\x0e" * 32))},
        tangles={TANGLE: TangleLink(DOC, (DOC,))},
        content=content,
    )


def test_max_atoms_fit_in_one_message_and_one_more_is_the_edits_fault():
    most = [Delete(AtomRef(ID1, 0), MAX_ATOMS - 1), Insert(AtomRef(SELF, 0), "x")]
    message = signed_edit(edit_content(most))
    assert len(message.raw) <= DEFAULT_LIMITS.max_message_bytes
    assert parse_document(message.content).atoms == MAX_ATOMS
    over = signed_edit(edit(["del", 1, 0, MAX_ATOMS], ["ins", 0, 0, "x"]))  # a valid message
    assert refused(over.content) is DocReason.TOO_MANY


def largest(fits, high):
    """The largest n in 1..high for which fits(n) holds, fits(1) holding."""
    low = 1
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fits(middle) else (low, middle - 1)
    return low


def signs(content) -> bool:
    try:
        signed_edit(content)
    except UnpublishableMessage as error:
        assert error.reason is Reason.TOO_LARGE
        return False
    return True


def test_the_message_limit_keeps_an_edit_below_max_ops():
    """Every op takes at least 8 bytes, so 16 KiB hold about 2000: MAX_OPS bounds raised limits."""
    smallest = Delete(AtomRef(ID1, 0), 1)  # ["del", 1, 0, 1]: 1 + 4 + 1 + 1 + 1 bytes
    others = [Insert(AtomRef(ID1, 0), "a"), Undelete(AtomRef(ID1, 0), 1)]
    assert edit_size([smallest] * 20) - edit_size([smallest] * 19) == 8
    assert all(edit_size([smallest, op]) > edit_size([smallest] * 2) for op in others)
    most = largest(lambda n: signs(edit_content([smallest] * n)), MAX_OPS)
    assert 1900 < most < MAX_OPS
    assert len(parse_document(signed_edit(edit_content([smallest] * most)).content).ops) == most


def test_the_message_limit_keeps_a_paste_below_max_atoms():
    """One message holds a paste of about 16 000 ASCII letters: longer ones span messages."""
    assert not signs(edit_content([Insert(AtomRef(ID1, 0), "a" * MAX_ATOMS)]))
    most = largest(lambda n: signs(edit_content([Insert(AtomRef(ID1, 0), "a" * n)])), MAX_ATOMS)
    # 16 KiB less the header (with format 3's content hash and size) and the wire pair
    assert 15_900 < most < MAX_ATOMS
    wide = largest(lambda n: signs(edit_content([Insert(AtomRef(ID1, 0), "\U0001f600" * n)])), most)
    assert 3950 < wide < most // 4 + 1  # four UTF-8 bytes a code point
