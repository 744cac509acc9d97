"""The pure parts of `tangled doc`: diff to splices, request groups, revisions, rendering."""

import itertools

import click
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tanglenode.node.cli import doc_render, doc_revisions, docs
from tanglenode.node.cli.names import Names
from tanglenode.node.cli.support import BadInput
from tanglenode.protocol import doc_diff, ipc
from tanglenode.protocol.doc_ipc import MAX_SPLICE_CHARS, MAX_SPLICES, apply_splices
from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import feed_text, message_text
from tests.factories import keypair

ALICE, BOB = keypair("alice").public, keypair("bob").public
TEXT = st.text(alphabet=st.sampled_from("ab \n😀é\u0301"), max_size=40)


# any text of code points a str may hold in a file: astral ones, newlines, combining marks
ANY_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
WORDS = st.lists(
    st.sampled_from(["worm", "bins", "(", ")", " ", "  ", "\n", "\r\n", "é\u0301", "猫", "😀"]),
    max_size=20,
).map("".join)


@given(st.one_of(TEXT, ANY_TEXT, WORDS), st.one_of(TEXT, ANY_TEXT, WORDS))
@example("", "")
@example("", "\U0001f600\n\U00010348")
@example("\U0010fffd a\r\n", "")
@example("\U00020000\U00020001 x", "\U00020001\U00020000 x")
def test_the_splices_of_a_diff_turn_the_old_text_into_the_new(old, new):
    splices = docs.edit_splices(old, new)
    assert apply_splices(old, splices) == new
    assert (splices == []) == (old == new)


@given(st.one_of(TEXT, WORDS), st.one_of(TEXT, WORDS))
def test_a_diff_cuts_only_between_whole_tokens(old, new):
    pieces = doc_diff.word_diff(old, new)
    assert "".join(t for op, t in pieces if op != "+") == old
    assert "".join(t for op, t in pieces if op != "-") == new
    for text, side in ((old, "+"), (new, "-")):  # each text's pieces start at its tokens
        edges = {0, *itertools.accumulate(len(t) for t in doc_diff.tokens(text))}
        starts = itertools.accumulate((len(t) for op, t in pieces if op != side), initial=0)
        assert set(starts) <= edges


def test_a_replaced_phrase_is_one_deletion_and_one_insertion():
    old, new = "compost worm bins (bob builds) on sat\n", "compost (cancelled) on sat\n"
    assert docs.edit_splices(old, new) == [["del", 8, 21], ["ins", 8, "(cancelled"]]
    assert docs.edit_splices("one teh two", "one the two") == [
        ["del", 4, 3],
        ["ins", 4, "the"],
    ]  # a word, not its letters
    assert docs.edit_splices("a cafe\u0301 b", "a cafe\u0300 b")[0] == ["del", 2, 5]  # "café"


@given(ANY_TEXT, ANY_TEXT)
def test_texts_of_more_tokens_than_code_points_left_still_diff_exactly(old, new):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(doc_diff, "_CODES", 6)  # the old text 3 tokens, both 6: then the rest
        assert apply_splices(old, docs.edit_splices(old, new)) == new


def test_a_small_change_to_a_long_text_is_a_small_edit():
    old = "line\n" * 10_000
    new = old[:25_000] + "inserted " + old[25_000:-5]
    splices = docs.edit_splices(old, new)
    assert apply_splices(old, splices) == new
    assert sum(len(v) if k == "ins" else v for k, _p, v in splices) <= len("inserted ") + 5


@given(TEXT, TEXT)
def test_request_groups_applied_in_order_are_the_whole_edit(old, new):
    splices = docs.edit_splices(old, new)
    text = old
    for group in docs.requests(splices):
        text = apply_splices(text, group)
    assert text == new


def test_requests_stay_within_the_ipc_bounds():
    long_insert = [["ins", 3, "x" * (2 * MAX_SPLICE_CHARS + 5)]]
    groups = list(docs.requests(long_insert))
    assert [len(g[0][2]) for g in groups] == [MAX_SPLICE_CHARS, MAX_SPLICE_CHARS, 5]
    assert [g[0][1] for g in groups] == [3, 3 + MAX_SPLICE_CHARS, 3 + 2 * MAX_SPLICE_CHARS]
    many = [["del", 0, 1]] * (2 * MAX_SPLICES + 1)
    assert [len(g) for g in docs.requests(many)] == [MAX_SPLICES, MAX_SPLICES, 1]
    for group in docs.requests(long_insert + many):
        ipc.parse_request("doc-edit", {"doc": bytes(32), "splices": group}, None)


def test_a_revision_is_a_message_id_a_version_or_a_weft():
    msg = bytes(range(32))
    assert doc_revisions.parse_at(message_text(msg)) == msg
    assert doc_revisions.parse_at("v12") == doc_revisions.parse_at("12") == 12
    weft = f"{feed_text(ALICE)}=3, {feed_text(BOB)}=0"
    assert doc_revisions.parse_at(weft) == {ALICE: 3, BOB: 0}
    assert (
        doc_revisions.parse_at("now") is None and doc_revisions.parse_at("HEAD") is None
    )  # the current text
    assert doc_revisions.parse_at("%AbCdEfG") == "%AbCdEfG" and isinstance(
        doc_revisions.parse_at("%AbCdEf"), str
    )
    for bad in ("yesterday", "v", "v-1", "@nope=1", f"{feed_text(ALICE)}=x", "%sho", "%…"):
        with pytest.raises((BadInput, BadIdentifier)):  # both exit 3
            doc_revisions.parse_at(bad)


def test_blame_gives_each_line_the_author_of_most_of_it_and_that_authors_main_edit():
    spans = [
        {"text": "ab", "author": ALICE, "msg": b"a1"},
        {"text": "c", "author": BOB, "msg": b"b1"},
        {"text": "de\nx", "author": BOB, "msg": b"b2"},
        {"text": "yz\n\nlast", "author": ALICE, "msg": b"a2"},
    ]
    assert doc_render.blame_lines(spans) == [
        (BOB, b"b2", "abcde"),  # bob typed 4 of 6 (the newline counts), 3 of them in b2
        (ALICE, b"a2", "xyz"),
        (ALICE, b"a2", ""),
        (ALICE, b"a2", "last"),
    ]
    one = [{"text": "one\n", "author": BOB, "msg": b"b1"}]
    assert doc_render.blame_lines(one) == [(BOB, b"b1", "one")]
    assert doc_render.blame_lines([]) == []


def test_an_erased_edit_shows_where_its_atoms_are_and_weighs_nothing():
    request = bytes(range(32))
    erased = {"text": "", "author": BOB, "msg": b"b1", "erased": request, "atoms": 9}
    spans = [{"text": "ab", "author": ALICE, "msg": b"a1"}, erased]
    spans.append({"text": "c\n", "author": ALICE, "msg": b"a2"})
    marked = doc_render.blame_lines(spans, docs._erased_marker)
    assert marked == [(ALICE, b"a1", f"ab⟦erased 9 by {message_text(request)[:9]}⟧c")]
    assert doc_render.blame_lines(spans) == [(ALICE, b"a1", "abc")]
    alone = doc_render.blame_lines([dict(erased, erased=b"")], docs._erased_marker)
    assert alone == [(BOB, b"b1", "⟦erased 9 purged here⟧")]  # a last line of erased atoms
    assert docs._erased_json(erased) == {"erased": message_text(request), "atoms": 9}
    assert docs._erased_json(spans[0]) == {}


def test_dyed_spans_name_their_authors_as_the_other_commands_do():
    names = Names(petnames={ALICE: "alice"}, abouts={BOB: "bobby"})
    marked = [doc_render.dyed(span, tty=False, label=names.label) for span in SPANS[1:]]
    assert marked == ['{+new "one"+}(alice)', "[-old</pre>-](~bobby)"]
    page = doc_render.diff_page("d", SPANS, names.label)
    assert f'title="alice {feed_text(ALICE)}"' in page and "~bobby" in page


SPANS = [
    {"text": "<kept> & ", "inserted_by": None, "removed_by": None},
    {"text": 'new "one"', "inserted_by": ALICE, "removed_by": None},
    {"text": "old</pre>", "inserted_by": None, "removed_by": BOB},
]


def test_the_html_page_escapes_everything_and_titles_changes_by_author():
    page = doc_render.diff_page("<doc> & co", SPANS)
    assert "<title>&lt;doc&gt; &amp; co</title>" in page
    assert "&lt;kept&gt; &amp; " in page
    assert f'<ins title="{feed_text(ALICE)}">new &quot;one&quot;</ins>' in page
    assert f'<del title="{feed_text(BOB)}">old&lt;/pre&gt;</del>' in page
    assert page.count("<pre>") == page.count("</pre>") == 1


def test_a_terminal_sees_colours_and_a_pipe_sees_marks():
    plain = "".join(doc_render.dyed(span, tty=False) for span in SPANS)
    who = doc_render.short_feed(ALICE), doc_render.short_feed(BOB)
    assert plain == f'<kept> & {{+new "one"+}}({who[0]})[-old</pre>-]({who[1]})'
    coloured = "".join(doc_render.dyed(span, tty=True) for span in SPANS)
    assert click.style('new "one"', fg="green", underline=True) in coloured
    assert click.style("old</pre>", fg="red", strikethrough=True) in coloured
    assert click.unstyle(coloured) == f'<kept> & new "one"({who[0]})old</pre>({who[1]})'
