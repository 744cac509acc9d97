"""Replaying editing traces (storage.clients.trace_file, storage.clients.trace_replay)
through the real path."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from tanglenode.protocol.limits import DEFAULT_LIMITS, TIMEFRAME_CAP
from tanglenode.storage.clients.trace_replay import (
    AtomView,
    BadTrace,
    ReplayError,
    agent_keypair,
    boundaries,
    load_trace,
    replay,
)

TRACES = Path(__file__).resolve().parents[1] / "data" / "editing-traces"  # its README: tests/data
T0 = "2021-04-19T06:06:58.000Z"


def write(tmp_path: Path, trace: dict | bytes, name: str = "trace.json") -> Path:
    path = tmp_path / name
    data = trace if isinstance(trace, bytes) else json.dumps(trace).encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


def sequential(*patches_per_txn, start: str = "", end: str | None = None, times=None) -> dict:
    txns = [
        {"time": T0 if times is None else times[i], "patches": [list(p) for p in patches]}
        for i, patches in enumerate(patches_per_txn)
    ]
    trace = {"startContent": start, "txns": txns}
    if end is not None:
        trace["endContent"] = end
    return trace


def concurrent(agents: int, *txns, end: str | None = None) -> dict:
    """txns: (agent, parents, patches)."""
    trace = {
        "kind": "concurrent",
        "numAgents": agents,
        "txns": [
            {"agent": a, "parents": list(p), "time": T0, "patches": [list(x) for x in patches]}
            for a, p, patches in txns
        ],
    }
    if end is not None:
        trace["endContent"] = end
    return trace


def replayed(open_store, tmp_path, trace: dict, **options):
    store = open_store(f"store-{random.random()}")
    return replay(load_trace(write(tmp_path, trace)), store, **options), store


def edits_of(store, agent: int = 0, session: int = 0) -> list:
    """The contents of an agent's doc/edit messages, in feed order."""
    author = agent_keypair(agent, session).public
    return [m for m in store.feeds.read_feed(author) if m.content["type"] == "doc/edit"]


# -- the traces in tests/data --------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "friendsforever_flat",
        # 35 s of the suite's 8 minutes: with the slow tests (`make test-slow`)
        pytest.param("friendsforever_concurrent", marks=pytest.mark.slow),
        "automerge-paper",
        pytest.param("seph-blog1", marks=pytest.mark.slow),  # 10 s; automerge-paper is as long
    ],
)
def test_every_shipped_trace_replays_to_its_end_content(open_store, name):
    trace = load_trace(TRACES / f"{name}.json.gz")
    store = open_store(map_size=2**30)
    report = replay(trace, store, title=name)
    assert report.matches is True
    assert report.text == trace.end
    assert store.documents.document_text(report.doc) == trace.end
    assert store.documents.document_set_aside(report.doc) == []
    assert report.edits == trace.edits and report.txns == len(trace)
    assert report.feeds == trace.agents  # these traces never edit an old version of their own


@pytest.mark.slow
def test_the_concurrent_trace_also_replays_reading_every_view_from_the_store(open_store):
    trace = load_trace(TRACES / "friendsforever_concurrent.json.gz")
    report = replay(trace, open_store(), share_views=False)
    assert report.matches is True and report.shared == 0


# -- hand-written traces -------------------------------------------------------------------


def test_concurrent_inserts_at_two_places_and_a_concurrent_delete_merge(open_store, tmp_path):
    trace = concurrent(
        2,
        (0, [], [(0, 0, "hello world")]),
        (1, [0], [(0, 0, "Hey! ")]),  # at the start, unaware of txns 2 and 3
        (0, [0], [(11, 0, " again")]),  # at the end, unaware of txn 1
        (0, [2], [(6, 1, "W")]),
        (1, [1, 3], [(22, 0, "!")]),  # sees both: "Hey! hello World again"
        end="Hey! hello World again!",
    )
    report, store = replayed(open_store, tmp_path, trace)
    assert report.matches is True
    assert report.messages == 5  # init, txn 0 | txns 2-3 (agent 0); txn 1 | txn 4 (agent 1)
    zero, one = agent_keypair(0).public, agent_keypair(1).public
    assert [m.timeframe for m in edits_of(store, 0)] == [{}, {}]
    # each message's timeframe is what its txn's parents saw: agent 0 up to txn 0, then 3
    assert [m.timeframe for m in edits_of(store, 1)] == [{zero: 2}, {zero: 3}]
    assert store.documents.document_revision(report.doc, {zero: 2, one: 1}) == "Hey! hello world"
    assert store.documents.document_revision(report.doc, {zero: 3}) == "hello World again"


def test_concurrent_inserts_at_one_place_keep_both(open_store, tmp_path):
    trace = concurrent(
        2,
        (0, [], [(0, 0, "ab")]),
        (0, [0], [(1, 0, "X")]),
        (1, [0], [(1, 0, "Y")]),
        (0, [1, 2], [(0, 0, ">")]),
    )
    report, _store = replayed(open_store, tmp_path, trace)
    assert report.text in (">aXYb", ">aYXb")
    again, _store = replayed(open_store, tmp_path, trace)
    assert again.text == report.text  # the weave's order, the same every time


def test_an_agent_editing_an_older_version_continues_on_a_new_feed(open_store, tmp_path):
    trace = concurrent(
        1,
        (0, [], [(0, 0, "ab")]),
        (0, [0], [(0, 0, "X")]),  # "Xab"
        (0, [0], [(2, 0, "Y")]),  # "abY": typed on txn 0 again, a branch
        (0, [1, 2], [(4, 0, "!")]),
        end="XabY!",
    )
    report, store = replayed(open_store, tmp_path, trace)
    assert report.matches is True
    assert report.feeds == 2
    assert len(edits_of(store, 0, session=1)) == 2  # txn 2, then txn 3 (it saw both branches)


def test_an_agent_that_catches_up_copies_the_view_it_needs(open_store, tmp_path):
    trace = concurrent(
        2,
        (0, [], [(0, 0, "one")]),
        (1, [0], [(3, 0, " two")]),
        (0, [1], [(7, 0, " three")]),  # exactly agent 1's version: no store read needed
        end="one two three",
    )
    report, _store = replayed(open_store, tmp_path, trace)
    assert report.matches is True
    assert report.shared == 2  # agent 1 took agent 0's first view, then agent 0 agent 1's
    assert report.refreshes == 0
    unshared, _store = replayed(open_store, tmp_path, trace, share_views=False)
    assert (unshared.shared, unshared.refreshes, unshared.text) == (0, 2, report.text)


def test_start_content_is_typed_by_the_creator_and_every_agent_starts_there(open_store, tmp_path):
    trace = concurrent(2, (1, [], [(0, 5, "HELLO")]), (0, [], [(5, 0, "!")]), end="HELLO!")
    trace["startContent"] = "hello"
    report, _store = replayed(open_store, tmp_path, trace)
    assert report.matches is True


def test_a_txn_with_no_patches_still_counts_as_a_version(open_store, tmp_path):
    trace = concurrent(
        2,
        (0, [], [(0, 0, "ab")]),
        (1, [0], []),
        (0, [1], [(2, 0, "c"), (0, 0, "")]),
        (1, [2], [(0, 1, "")]),
        end="bc",
    )
    report, _store = replayed(open_store, tmp_path, trace)
    assert report.matches is True


def test_an_unknown_end_content_is_reported_as_unchecked(open_store, tmp_path):
    report, _store = replayed(open_store, tmp_path, sequential([(0, 0, "abc")]))
    assert (report.text, report.expected, report.matches) == ("abc", None, None)
    wrong, _store = replayed(open_store, tmp_path, sequential([(0, 0, "abc")], end="abd"))
    assert wrong.matches is False


# -- how edits become messages -------------------------------------------------------------


def test_typing_is_cut_every_64_edits_into_one_insert_each(open_store, tmp_path):
    trace = sequential(*([(i, 0, "a")] for i in range(200)))
    report, store = replayed(open_store, tmp_path, trace)
    edits = edits_of(store)
    assert [m.content["ops"] for m in edits] == [
        [["ins", 1, 0, "a" * 64]],  # after the root, atom 0 of the init
        [["ins", 1, 63, "a" * 64]],  # after the previous message's last atom
        [["ins", 1, 63, "a" * 64]],
        [["ins", 1, 63, "a" * 8]],
    ]
    assert report.messages == 5 and report.text == "a" * 200
    assert all(m.timeframe == {} for m in edits)  # agent 0 is the creator: its own feed
    assert all(m.tangles["doc"].previous == (m.prev,) for m in edits)


def test_a_message_spans_at_most_one_second_of_recorded_time(open_store, tmp_path):
    times = [f"2021-04-19T06:06:{s}Z" for s in ("00.000", "00.500", "01.000", "01.001", "05.0")]
    trace = sequential(*([(i, 0, "x")] for i in range(5)), times=times)
    _report, store = replayed(open_store, tmp_path, trace)
    edits = edits_of(store)
    assert [len(m.content["ops"][0][3]) for m in edits] == [3, 1, 1]
    start = 1618812360000  # 2021-04-19T06:06:00Z
    assert [m.timestamp - start for m in edits] == [1000, 1001, 5000]


def test_backspaces_over_consecutive_atoms_become_one_delete(open_store, tmp_path):
    trace = sequential(
        [(0, 0, "abcdef")],
        *([(5 - i, 1, "")] for i in range(3)),  # backspace, backspace, backspace
        [(0, 2, "")],  # and a forward delete of two
        times=[T0, *["2021-04-19T06:07:30.000Z"] * 4],
    )
    report, store = replayed(open_store, tmp_path, trace)
    assert report.text == "c"
    first = edits_of(store)[0].id
    assert edits_of(store)[1].content == {
        "ops": [["del", 1, 3, 3], ["del", 1, 0, 2]],
        "refs": [first],
        "type": "doc/edit",
    }


def test_a_long_paste_spans_messages_within_the_size_limit(open_store, tmp_path):
    rng = random.Random(1)
    text = "".join(rng.choice("aé€😀 \n") for _ in range(30_000))
    trace = sequential([(0, 0, text)], [(10, 29_980, "")], end=text[:10] + text[-10:])
    report, store = replayed(open_store, tmp_path, trace)
    assert report.matches is True
    raws = [m.raw for m in edits_of(store)]
    assert len(raws) >= 5  # about 75 KB of UTF-8, and the deletes
    assert all(len(raw) <= DEFAULT_LIMITS.max_message_bytes for raw in raws)


def test_a_delete_across_many_messages_names_each_one(open_store, tmp_path):
    times = [f"2021-04-19T07:{i // 30:02}:{i % 30 * 2:02}Z" for i in range(101)]  # 2 s apart
    trace = sequential(*([(i, 0, "z")] for i in range(100)), [(0, 100, "")], times=times)
    report, store = replayed(open_store, tmp_path, trace)
    assert report.text == ""
    last = edits_of(store)[-1].content
    assert len(last["refs"]) == 100 and len(last["ops"]) == 100


def test_replays_are_reproducible(open_store, tmp_path):
    short = concurrent(2, (0, [], [(0, 0, "ab")]), (1, [0], [(0, 0, "c")]))
    first, one = replayed(open_store, tmp_path, short)
    second, two = replayed(open_store, tmp_path, short)
    assert first.doc == second.doc
    assert list(one.feeds.iter_raw()) == list(two.feeds.iter_raw())


def test_a_second_replay_into_the_same_store_is_refused(open_store, tmp_path):
    trace = load_trace(write(tmp_path, sequential([(0, 0, "abc")])))
    store = open_store()
    replay(trace, store)
    with pytest.raises(ReplayError, match="already holds"):
        replay(trace, store)


def crowd(authors: int) -> dict:
    """`authors` agents each sign their own line of the start content at once; agent 0 then
    merges all their work and adds a line (its timeframe cannot name every head); agent 1
    then strikes every signature in one txn (citing every author's message)."""
    lines = [f"line {i:03}\n" for i in range(authors)]
    ends = [sum(map(len, lines[: i + 1])) - 1 for i in range(authors)]  # each line's newline
    txns = [(i, [], [(ends[i], 0, f" by {i}")]) for i in range(authors)]
    signed = "".join(line[:-1] + f" by {i}\n" for i, line in enumerate(lines))
    txns.append((0, list(range(authors)), [(len(signed), 0, "the end\n")]))
    strikes = [  # from the last line up, so each position counts in the text as it stands
        (ends[i] + len("".join(f" by {j}" for j in range(i))), len(f" by {i}"), "")
        for i in reversed(range(authors))
    ]
    txns.append((1, [authors], strikes))
    trace = concurrent(authors, *txns, end="".join(lines) + "the end\n")
    trace["startContent"] = "".join(lines)
    return trace


def test_a_merge_of_more_heads_than_a_timeframe_names_names_them_as_a_node_does(
    open_store, tmp_path
):
    authors = 70
    report, store = replayed(open_store, tmp_path, crowd(authors))
    assert report.matches is True and report.agents == authors
    signers = {agent_keypair(agent).public: agent for agent in range(authors)}
    edits = [m for author in signers for m in store.feeds.read_feed(author)]
    assert max(len(m.timeframe) for m in edits) == TIMEFRAME_CAP
    merge = edits_of(store, 0)[2]  # after the start content and agent 0's own line
    assert merge.content["ops"] == [
        ["ins", 1, len(crowd(authors)["startContent"]) - 1, "the end\n"]
    ]
    # Its cause is the creator's own (no feed cited): the tips it links first, then the
    # heads newest signed first. Agent i signed its line i-th, so newest is highest.
    tips = {store.feeds.get(tip).author for tip in merge.tangles["doc"].previous}
    assert len(tips) == DEFAULT_LIMITS.max_previous and tips <= set(merge.timeframe)
    newest = [a for a in range(authors - 1, 0, -1) if agent_keypair(a).public not in tips]
    rest = {signers[feed] for feed in merge.timeframe if feed not in tips}
    assert rest == set(newest[: TIMEFRAME_CAP - len(tips)])
    # The strike cites every author's line: cut into messages that cite at most 31 other
    # feeds each, the root's (agent 0's) keeping its place.
    strikes = edits_of(store, 1)[1:]
    assert len(strikes) == 3
    for strike in strikes:
        cited = {store.feeds.get(ref).author for ref in strike.content["refs"]}
        assert len(cited - {agent_keypair(1).public}) <= TIMEFRAME_CAP
        assert agent_keypair(0).public in strike.timeframe and len(strike.timeframe) <= 32


def test_boundaries_are_the_txns_cited_other_than_by_their_agents_next():
    trace = concurrent(
        2,
        (0, [], [(0, 0, "a")]),
        (0, [0], [(1, 0, "b")]),
        (1, [0], [(0, 0, "c")]),  # cites 0 across agents
        (0, [1, 2], [(0, 0, "d")]),  # a merge: 1 and 2 end their messages
        (0, [3], [(0, 0, "e")]),
    )
    assert boundaries(load_trace_from(trace)) == {0, 1, 2}
    assert boundaries(load_trace_from(sequential([(0, 0, "a")], [(1, 0, "b")]))) == set()


def load_trace_from(trace: dict):
    from tanglenode.storage.clients.trace_file import parse_trace

    return parse_trace(json.dumps(trace).encode())


# -- hostile traces ------------------------------------------------------------------------


def good() -> dict:
    return sequential([(0, 0, "ab")], [(1, 1, "x")])


def with_txn(index: int, **changes) -> dict:
    trace = good()
    trace["txns"][index].update(changes)
    return trace


HOSTILE = {
    "not json": (b"{txns: ]", None),
    "not an object": ([1, 2], None),
    "no txns": ({"startContent": ""}, None),
    "txns not a list": ({"txns": {"0": {}}}, None),
    "a txn without patches": ({"txns": [{"time": T0}]}, 0),
    "a patch of two": (with_txn(1, patches=[[1, 1]]), 1),
    "a patch of four": (with_txn(1, patches=[[1, 1, "x", 0]]), 1),
    "a float position": (with_txn(1, patches=[[1.0, 1, "x"]]), 1),
    "a string position": (with_txn(1, patches=[["1", 1, "x"]]), 1),
    "a negative delete": (with_txn(1, patches=[[1, -1, "x"]]), 1),
    "a huge position": (with_txn(1, patches=[[2**64, 0, "x"]]), 1),
    "a huger position": (with_txn(0, patches=[[10**30, 0, "x"]]), 0),
    "inserted text not a string": (with_txn(1, patches=[[1, 1, 7]]), 1),
    "a position past the end": (with_txn(1, patches=[[3, 0, "x"]]), 1),
    "a delete past the end": (with_txn(1, patches=[[1, 2, ""]]), 1),
    "a time that is no date": (with_txn(1, time="yesterday"), 1),
    "a time not a string": (with_txn(0, time=5), 0),
    "parents without numAgents": (with_txn(1, parents=[0]), 1),
    "an agent without numAgents": (with_txn(1, agent=1), 1),
    "numAgents zero": ({**concurrent(1, (0, [], [])), "numAgents": 0}, None),
    "numAgents huge": ({**concurrent(1, (0, [], [])), "numAgents": 2**63}, None),
    "agent past numAgents": (concurrent(2, (0, [], []), (2, [0], [])), 1),
    "a negative agent": (concurrent(2, (0, [], []), (-1, [0], [])), 1),
    "no parents": ({**concurrent(1, (0, [], [])), "txns": [{"agent": 0, "patches": []}]}, 0),
    "no agent": ({**concurrent(1, (0, [], [])), "txns": [{"parents": [], "patches": []}]}, 0),
    "a parent pointing forward": (concurrent(1, (0, [], []), (0, [2], []), (0, [1], [])), 1),
    "a parent pointing at itself": (concurrent(1, (0, [], []), (0, [1], [])), 1),
    "a huge parent": (concurrent(1, (0, [], []), (0, [2**64], [])), 1),
    "a negative parent": (concurrent(1, (0, [], []), (0, [-1], [])), 1),
    "a repeated parent": (concurrent(1, (0, [], []), (0, [0, 0], [])), 1),
    "too many parents": (concurrent(1, (0, [], []), (0, list(range(2000)), [])), 1),
    "startContent not a string": ({**good(), "startContent": 3}, None),
    "endContent not a string": ({**good(), "endContent": ["a"]}, None),
    "a lone surrogate": (b'{"txns": [{"patches": [[0, 0, "\\ud800"]]}]}', None),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_traces_are_refused_naming_the_txn(tmp_path, case):
    trace, txn = HOSTILE[case]
    with pytest.raises(BadTrace) as raised:
        load_trace(write(tmp_path, trace))
    assert raised.value.txn == txn
    if txn is not None:
        assert str(raised.value).startswith(f"txn {txn}: ")


def test_a_concurrent_patch_outside_its_agents_text_is_refused_as_it_replays(open_store, tmp_path):
    trace = concurrent(2, (0, [], [(0, 0, "abc")]), (1, [], [(1, 0, "x")]))  # 1 saw ""
    with pytest.raises(BadTrace, match=r"^txn 1: "):
        replayed(open_store, tmp_path, trace)


def test_too_many_feeds_is_refused(open_store, tmp_path):
    txns = [(0, [], [(0, 0, "a")])] + [(0, [0], [(0, 0, "b")]) for _ in range(300)]
    with pytest.raises(BadTrace, match="feeds"):
        replayed(open_store, tmp_path, concurrent(1, *txns))


def test_reading_is_bounded_and_gzip_is_recognised(tmp_path):
    trace = good()
    assert len(load_trace(write(tmp_path, trace, "t.json.gz"))) == 2
    assert len(load_trace(write(tmp_path, trace, "t.json"))) == 2
    with pytest.raises(BadTrace, match="more than 100 bytes"):
        load_trace(write(tmp_path, {**trace, "pad": "x" * 200}, "big.json.gz"), max_bytes=100)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(json.dumps(trace).encode())[:-12])
    with pytest.raises(BadTrace):
        load_trace(cut)
    with pytest.raises(BadTrace, match="cannot read"):
        load_trace(tmp_path / "absent.json")


# -- an editor's view ----------------------------------------------------------------------


def test_the_atom_view_behaves_like_a_list():
    rng = random.Random(7)
    model: list[int] = list(range(3000))
    view = AtomView(model)
    for step in range(4000):
        if model and rng.random() < 0.45:
            position = rng.randrange(len(model))
            count = min(rng.choice([1, 1, 2, 700]), len(model) - position)
            assert list(view.delete(position, count)) == model[position : position + count]
            del model[position : position + count]
        else:
            position = rng.randrange(len(model) + 1)
            count = rng.choice([1, 1, 3, 1500])
            view.insert(position, 10**6 * step, count)
            model[position:position] = range(10**6 * step, 10**6 * step + count)
        if model:
            probe = rng.randrange(len(model))
            assert view.get(probe) == model[probe]
        assert len(view) == len(model)
    assert list(view) == model
    twin = view.copy()
    twin.insert(0, -1, 1)
    assert list(view) == model and list(twin) == [-1, *model]
