"""The weave file (protocol/weave_file.py) and its regular expressions (protocol/weave_regex.py):
written, read back, and refused at the first bad offset when hostile."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.protocol import weave_regex as wr
from tanglenode.protocol.weave_file import (
    BACKSPACE,
    END_ATOM,
    ROOT_ATOM,
    YARN_ATOMS,
    WeaveError,
    WeaveFile,
    WeaveReason,
    encode,
    parse_file,
    reach_weft2,
    validate,
)

A, B = b"\xaa" * 32, b"\xbb" * 32
DOC = b"\xdd" * 32


def example() -> tuple[str, tuple[bytes, ...]]:
    """docs/DOCUMENTS.md's worked example: A types "hi" (a0 a1), B adds "!" (b0) while A adds
    " there" (a2..a7); B writes "H" (b1) and deletes the h (b2); A deletes the "!" (a8),
    B undeletes it (b3). Atoms are (feed, n): n counts the feed's atoms in order."""
    a = [(A, n) for n in range(9)]
    b = [(B, n) for n in range(4)]
    atoms = [
        ("H", None, b[1]),
        ("h", None, a[0]),
        (BACKSPACE, a[0], b[2]),
        ("i", a[0], a[1]),
        *[(c, (a[1] if k == 0 else a[1 + k]), a[2 + k]) for k, c in enumerate(" there")],
        ("!", a[1], b[0]),
        (BACKSPACE, b[0], a[8]),
        (BACKSPACE, a[8], b[3]),
    ]
    return encode(atoms)


def test_the_worked_example_reads_at_every_weft_as_the_documents_table_says():
    weave, frame = example()
    assert frame == (B, A)  # yarns in the order feeds first appear: B's "H" comes first
    assert validate(weave, frame).atoms == 15  # the root, 11 text atoms, 2 backspaces, the end
    assert wr.revision(weave) == "Hi there!"

    def at(a_last: int, b_last: int) -> str:
        return wr.revision(weave, wr.weft2(reach_weft2(frame, {A: a_last, B: b_last})))

    assert at(1, -1) == "hi"
    assert at(1, 0) == "hi!"
    assert at(7, -1) == "hi there"
    assert at(7, 2) == "Hi there!"
    assert at(8, 0) == "hi there"  # a's backspace on the "!"
    assert at(8, 2) == "Hi there"
    assert at(8, 3) == "Hi there!"  # b's undelete of it
    assert wr.revision(wr.light(weave)) == "Hi there!"
    assert len(wr.light(weave)) == 5 * (2 + 9)  # the specials and the visible atoms
    text3 = wr.scour(weave)
    assert wr.text1(text3) == "Hi there!" and len(text3) == 3 * 9


def test_filtre_is_the_papers_pattern_and_keeps_the_specials():
    assert (
        wr.filtre(wr.weft2({1: 2, 2: 4})) == "\\x00.|\\u0001[\\x00-\\u0002]|\\u0002[\\x00-\\u0004]"
    )
    weave, _frame = example()
    assert wr.at_weft(weave, "") == ROOT_ATOM + END_ATOM


def test_hili3_dyes_who_inserted_and_who_removed():
    weave, frame = example()
    old = wr.weft2(reach_weft2(frame, {A: 1, B: 0}))  # "hi!"
    dyed = wr.hili3(weave, old, None)  # to "Hi there!"
    rows = [(dyed[i], ord(dyed[i + 1]), ord(dyed[i + 2])) for i in range(0, len(dyed), 3)]
    assert rows[:3] == [("H", 1, 0), ("h", 0, 1), ("i", 0, 0)]  # B is yarn 1
    assert "".join(r[0] for r in rows) == "Hhi there!"
    assert rows[-1] == ("!", 0, 0)  # shown in both, though deleted and undeleted between


def test_a_feed_past_50000_atoms_continues_on_a_yarn_after_every_first_yarn():
    run = [
        (chr(0x61 + n % 26), None if n == 0 else (A, n - 1), (A, n)) for n in range(YARN_ATOMS + 2)
    ]
    atoms = [*run, ("x", None, (B, 0))]
    weave, frame = encode(atoms)
    assert frame == (A, B, A)
    at = 5 * (1 + YARN_ATOMS)  # after the root, (A, 50000): yarn 3, offset 0
    assert weave[at + 3 : at + 5] == "\x03\x00"
    assert validate(weave, frame).yarns == 3
    assert reach_weft2(frame, {A: YARN_ATOMS}) == {1: YARN_ATOMS - 1, 3: 0}
    assert wr.revision(weave).endswith("dx") and len(wr.revision(weave)) == YARN_ATOMS + 3


def test_a_file_round_trips():
    weave, frame = example()
    data = WeaveFile("weave5c", DOC, frame, weave).render()
    assert parse_file(data) == WeaveFile("weave5c", DOC, frame, weave)


# -- hostile weaves: each refused with its reason at the first bad offset -------------------------


def atom(symbol: str, cause: tuple[int, int], own: tuple[int, int]) -> str:
    return symbol + chr(cause[0]) + chr(cause[1]) + chr(own[0]) + chr(own[1])


def refused(weave: str, frame=(A, B)) -> WeaveError:
    with pytest.raises(WeaveError) as caught:
        validate(weave, frame)
    return caught.value


def test_truncated():
    weave, frame = example()
    error = refused(weave[:-2], frame)
    assert (error.reason, error.offset) == (WeaveReason.TRUNCATED, len(weave) - 5)


def test_truncated_file():
    weave, frame = example()
    with pytest.raises(WeaveError) as caught:
        parse_file(WeaveFile("weave5c", DOC, frame, weave).render()[:-1])
    assert (caught.value.reason, caught.value.offset) == (WeaveReason.TRUNCATED, len(weave) - 5)


def test_duplicate_id():
    weave = ROOT_ATOM + atom("a", (0, 0), (1, 0)) + atom("b", (1, 0), (1, 0)) + END_ATOM
    error = refused(weave, (A,))
    assert (error.reason, error.offset) == (WeaveReason.DUPLICATE_ID, 13)


def test_missing_cause():
    weave = ROOT_ATOM + atom("a", (0, 0), (1, 0)) + atom("b", (1, 7), (1, 1)) + END_ATOM
    error = refused(weave, (A,))
    assert (error.reason, error.offset) == (WeaveReason.MISSING_CAUSE, 11)


def test_a_cause_whose_subtree_ended():
    weave = (
        ROOT_ATOM
        + atom("a", (0, 0), (1, 0))
        + atom("b", (1, 0), (1, 1))
        + atom("c", (0, 0), (2, 0))
        + atom("d", (1, 0), (2, 1))  # a's block ended at c
        + END_ATOM
    )
    error = refused(weave)
    assert (error.reason, error.offset) == (WeaveReason.NOT_PREORDER, 21)


def test_wrong_sibling_order():
    # A typed "a" then, later in its yarn, "b" after the root: b knows a, so b comes first
    weave = ROOT_ATOM + atom("a", (0, 0), (1, 0)) + atom("b", (0, 0), (1, 1)) + END_ATOM
    error = refused(weave, (A,))
    assert (error.reason, error.offset) == (WeaveReason.SIBLING_ORDER, 10)
    swapped = ROOT_ATOM + atom("b", (0, 0), (1, 1)) + atom("a", (0, 0), (1, 0)) + END_ATOM
    assert wr.revision(swapped) == "ba" and validate(swapped, (A,)).atoms == 4


def test_wrong_sibling_order_across_feeds():
    # B's "y" is caused by A's "a"... and sits before "x", which A typed before "a"? No: B knows
    # A's x through a, so B's sibling z of x under the root must come before x.
    weave = (
        ROOT_ATOM
        + atom("x", (0, 0), (1, 0))
        + atom("a", (1, 0), (1, 1))
        + atom("y", (1, 1), (2, 0))
        + atom("z", (0, 0), (2, 1))  # B's next atom: knows x (through y, a), yet after it
        + END_ATOM
    )
    error = refused(weave)
    assert (error.reason, error.offset) == (WeaveReason.SIBLING_ORDER, 20)


def test_a_backspace_after_its_atoms_text():
    weave = (
        ROOT_ATOM
        + atom("a", (0, 0), (1, 0))
        + atom("b", (1, 0), (1, 1))
        + atom(BACKSPACE, (1, 0), (1, 2))
        + END_ATOM
    )
    error = refused(weave, (A,))
    assert (error.reason, error.offset) == (WeaveReason.BAD_KIND, 15)


def test_text_typed_after_a_backspace():
    weave = (
        ROOT_ATOM
        + atom("a", (0, 0), (1, 0))
        + atom(BACKSPACE, (1, 0), (1, 1))
        + atom("b", (1, 1), (1, 2))
        + END_ATOM
    )
    assert refused(weave, (A,)).reason == WeaveReason.BAD_KIND


def test_surrogates_and_out_of_range_code_points():
    good = ROOT_ATOM + atom("a", (0, 0), (1, 0)) + END_ATOM
    assert validate(good, (A,)).atoms == 3
    for bad, offset in (
        ("\ud800" + good[6:10], 5),  # a surrogate symbol
        ("a\x00\x00\ud800\x00", 8),  # a yarn number past U+D7FF
        ("a\x00\x00\x01" + chr(YARN_ATOMS), 9),  # an offset past 49,999
        ("a\x00\x00\x05\x00", 8),  # a yarn the frame lacks
    ):
        error = refused(good[:5] + bad + good[10:], (A,))
        assert error.offset == offset, error


def test_surrogates_in_a_file_are_not_utf8():
    data = WeaveFile("weave5c", DOC, (A,), "").render() + ROOT_ATOM.encode() + b"\xed\xa0\x80"
    with pytest.raises(WeaveError) as caught:
        parse_file(data)
    assert (caught.value.reason, caught.value.offset) == (WeaveReason.NOT_UTF8, 5)


def test_no_root_no_end_and_stray_specials():
    a = atom("a", (0, 0), (1, 0))
    assert refused(a + END_ATOM, (A,)).reason == WeaveReason.NO_ROOT
    assert (refused(ROOT_ATOM + a, (A,)).reason, refused(ROOT_ATOM + a, (A,)).offset) == (
        WeaveReason.NO_END,
        5,
    )
    error = refused(ROOT_ATOM + END_ATOM + a + END_ATOM, (A,))
    assert (error.reason, error.offset) == (WeaveReason.BAD_SPECIAL, 5)


def test_a_yarn_with_a_gap_or_no_atoms():
    weave = ROOT_ATOM + atom("a", (0, 0), (1, 1)) + END_ATOM
    error = refused(weave, (A,))
    assert (error.reason, error.offset) == (WeaveReason.YARN_GAP, 5)
    error = refused(ROOT_ATOM + atom("a", (0, 0), (1, 0)) + END_ATOM, (A, B))
    assert (error.reason, error.offset) == (WeaveReason.UNUSED_YARN, 15)


def test_knowing_that_loops():
    # x (A0) is caused by B1; B1 follows B0 in B's feed; B0 is caused by A1, which follows x
    weave = (
        ROOT_ATOM
        + atom("p", (0, 0), (1, 1))
        + atom("q", (1, 1), (2, 0))
        + atom("r", (0, 0), (2, 1))
        + atom("x", (2, 1), (1, 0))
        + END_ATOM
    )
    assert refused(weave).reason in (WeaveReason.AWARENESS_LOOP, WeaveReason.SIBLING_ORDER)
    looped = (
        ROOT_ATOM
        + atom("r", (0, 0), (2, 1))
        + atom("x", (2, 1), (1, 0))
        + atom("p", (0, 0), (1, 1))
        + atom("q", (1, 1), (2, 0))
        + END_ATOM
    )
    assert refused(looped).reason == WeaveReason.AWARENESS_LOOP


def test_huge():
    with pytest.raises(WeaveError) as caught:
        parse_file(b"x" * 101, max_bytes=100)
    assert caught.value.reason == WeaveReason.TOO_LARGE


def test_feeds_that_know_each_other_too_densely_are_refused_as_too_large(monkeypatch):
    """Feeds interleaved in one causal chain: each atom knows every feed before it, so the
    awareness check's maps grow as atoms x feeds; past the bound the file is refused,
    fast, instead of the check taking that memory."""
    from tanglenode.protocol import weave_file

    feeds, per = 200, 10
    frame = tuple(bytes([n % 256, n // 256]) * 16 for n in range(feeds))
    parts, previous = [ROOT_ATOM], "\x00\x00"
    for k in range(feeds * per):
        own = chr(k % feeds + 1) + chr(k // feeds)
        parts.append("a" + previous + own)
        previous = own
    body = "".join([*parts, END_ATOM])
    validate(body, frame)  # within the bound as it stands
    monkeypatch.setattr(weave_file, "MAX_AWARENESS", 10_000)
    with pytest.raises(WeaveError) as caught:
        validate(body, frame)
    assert caught.value.reason == WeaveReason.TOO_LARGE
    assert "know each other" in str(caught.value)


@pytest.mark.parametrize(
    "header, line",
    [
        (b"tangled-weave 2\nform weave5c\n", 1),
        (b"tangled-weave 1\nform weave9\n", 2),
        (b"tangled-weave 1\nform weave5c\ndoc %nope\n", 3),
        (b"tangled-weave 1\nform weave5c\ndoc %" + b"A" * 43 + b"\nyarn @x\n", 4),
    ],
)
def test_bad_headers_name_their_line(header, line):
    with pytest.raises(WeaveError) as caught:
        parse_file(header + b"\n" + ROOT_ATOM.encode())
    assert (caught.value.reason, caught.value.line) == (WeaveReason.BAD_HEADER, line)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_change_to_a_weave_is_refused_by_reason_or_still_reads(data):
    weave, frame = example()
    at = data.draw(st.integers(0, len(weave) - 1))
    char = data.draw(st.characters(max_codepoint=0xE000) | st.sampled_from("\x00\x01\x02\x08\x0c"))
    changed = weave[:at] + char + weave[at + 1 :]
    try:
        validate(changed, frame)
    except WeaveError as error:
        assert error.offset is not None and 0 <= error.offset <= len(changed)
        return
    wr.revision(changed)  # a weave that passes reads without error
