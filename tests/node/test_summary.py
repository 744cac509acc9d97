"""One-line summaries of hostile content, the names that label feeds, and a message as the
CLI's JSON shows it."""

import base64
import json

import pytest

from tanglenode.node.cli.names import Names, short_feed
from tanglenode.node.cli.summary import MAX_SUMMARY, Summaries, fit
from tanglenode.node.cli.support import render_body
from tanglenode.node.present.render import TIME_WIDTH, format_timestamp, message_dict, tag_text
from tanglenode.protocol.identity import feed_text, message_text, tag_of
from tests.factories import Feed

ALICE, BOB = Feed("summary-alice"), Feed("summary-bob")


def line(content) -> str:
    return Summaries(short_feed).line(ALICE.append(content))


@pytest.mark.parametrize(
    ("content", "shown"),
    [
        ({"type": "post", "text": "hi \tthere\u202e"}, "hi there?"),  # a bidi override seen
        ({"type": "post", "text": "\n\n red\x1b[2J\x9b0m\nmore"}, "red?[2J?0m …"),  # line 1
        ({"type": "post", "text": "👨\u200d👩\u200d👧\u200d"}, "👨\u200d👩\u200d👧?"),
        ({"text": "untyped"}, "untyped"),
        ({"type": "other", "text": "x"}, 'other {"text":"x"}'),
        ({"type": "x\x1b]52;c;AAAA\x07", "n": "\x1b"}, 'x?]52;c;AAAA? {"n":"\\u001b"}'),
        ("a string", "a string"),
        (12, "12"),
        (b"\x00\x01", '{"$bytes":"AAE="}'),
        ({"type": "about", "about": "not a feed", "name": "n"}, "calls not a feed “n”"),
        ({"type": "about", "about": 7, "name": "n"}, '{"about":7,"name":"n","type":"about"}'),
        ({"type": "doc/init", "title": ["no"]}, 'doc/init {"title":["no"]}'),
        ({"type": "doc/init", "title": "t" * 100}, f"new document “{'t' * 59}…”"),
        ({"type": "doc/edit", "ops": "no"}, '{"ops":"no","type":"doc/edit"}'),
        ({"type": "doc/edit", "ops": [1, ["ins"], ["del", 1, 0, "2"]]}, "+0 -0 in a document"),
        ({"type": "doc/edit", "ops": [["undel", 1, 0, 3]]}, "+0 -0, 3 restored in a document"),
        (
            {"type": "doc/edit", "ops": [["ins", 1, 0, "a😀"], ["del", 1, 0, 2]] * 3},
            "+6 -6 in a document",
        ),
        ({"type": "contact", "contact": feed_text(BOB.public), "following": True}, "follows @"),
        ({"type": "contact", "contact": "nobody", "following": True}, "contact {"),
        ({"group": 1, "box": b"x"}, "[group] sealed"),  # no keys, no store: never opened
    ],
)
def test_summaries_of_hostile_content_are_one_bounded_line(content, shown):
    if shown.endswith(("@", "{")):  # a feed's short id, JSON: their start
        assert line(content).startswith(shown)
    else:
        assert line(content) == shown


def test_a_summary_is_bounded_and_deep_content_is_cut():
    assert len(line({"text": "x" * 10_000})) == MAX_SUMMARY
    deep: list = []
    for _ in range(60):
        deep = [deep]
    # deeper than a node accepts now, as an older store may hold: cut, never a crash
    assert (
        Summaries(short_feed)
        .content_line(deep)
        .endswith('[{"$too-deep":true}]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]')
    )


def test_an_about_of_another_feed_is_labelled_by_our_names():
    names = Names(petnames={BOB.public: "Bob"}, abouts={BOB.public: "bobby"})
    content = {"type": "about", "about": feed_text(BOB.public), "name": "robert"}
    assert Summaries(names.label).line(ALICE.append(content)) == "calls Bob “robert”"
    own = {"type": "about", "about": feed_text(ALICE.public), "name": "al"}
    assert Summaries(names.label).line(ALICE.append(own)) == "names itself “al”"


def test_labels_prefer_petnames_then_self_chosen_names_then_short_ids():
    names = Names({BOB.public: "Bob"}, {BOB.public: "bobby", ALICE.public: "al"}, ALICE.public)
    assert names.label(BOB.public) == "Bob"
    assert names.label(ALICE.public) == "~al"
    carol = Feed("summary-carol").public
    assert names.label(carol) == feed_text(carol)[:9] + "…" and names.name(carol) is None
    assert names.is_ours(ALICE.public) and not names.is_ours(BOB.public)
    assert not Names().is_ours(ALICE.public)


def test_times_and_widths():
    assert format_timestamp(0) == "1970-01-01 00:00:00Z"
    assert format_timestamp(1_795_000_123_456) == "2026-11-18 11:08:43Z"  # to the second
    from tanglenode.node.cli.timelines import ClaimedTime  # --from-time takes it back

    assert ClaimedTime().convert("2026-11-18 11:08:43Z", None, None) == 1_795_000_123_000
    assert format_timestamp(2**64 - 1) == str(2**64 - 1)  # no date: the number...
    assert len(str(2**64 - 1)) <= TIME_WIDTH  # ...which fits the column all the same
    assert fit("abcdef", 4) == "abc…" and fit("abc", 4) == "abc" and fit("abc", None) == "abc"
    assert fit("名前名前名前", 6) == "名前…" and fit("a名前", 5) == "a名前"  # wide: two columns


def test_a_message_as_json_shows_each_timeframe_entry_with_its_tag_as_text():
    head = BOB.append("b")
    message = ALICE.append("a", timeframe={BOB.public: head})
    body = message_dict(message)
    tag = tag_text(tag_of(head.id))
    assert body["timeframe"] == {feed_text(BOB.public): [head.seq, tag]}
    # URL-safe base64 without padding, as ids are shown, so it reads as the id's start
    assert len(tag) == 22 and tag[:21] == message_text(head.id)[1:22]
    assert base64.urlsafe_b64decode(tag + "==") == head.id[:16]
    assert json.loads(json.dumps(body)) == body
    assert message_dict(BOB.append("no timeframe"))["timeframe"] == {}


def test_a_status_reply_names_feeds_as_feeds_in_its_forks_and_stalls():
    feed, other, tag = b"\x01" * 32, b"\x02" * 32, b"\x03" * 16
    rendered = render_body(
        {
            "forks": [[feed, 3]],
            "stalls": [{"feed": other, "seq": 2, "waits_for": [feed, 3], "waits_for_tag": tag}],
        }
    )
    assert rendered["forks"] == [[feed_text(feed), 3]]
    assert rendered["stalls"][0]["feed"] == feed_text(other)
    assert rendered["stalls"][0]["waits_for"] == [feed_text(feed), 3]
