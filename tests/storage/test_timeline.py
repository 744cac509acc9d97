import random

import pytest
from scuttlesort import Timeline as ReferenceTimeline

from tanglenode.storage.engine.timeline import (
    CycleError,
    Delete,
    DuplicateEvent,
    Insert,
    Move,
    TimelineError,
    TimelineWriter,
    UnknownEvent,
    apply_commands,
)
from tanglenode.storage.tools.simulate import paper_tangle, random_feed
from tests.timeline_oracle import EngineHarness, expected_rows


@pytest.fixture
def engine(tmp_path):
    harness = EngineHarness(tmp_path / "tl")
    yield harness
    harness.close()


def test_pending_reference_is_placed_provisionally_then_corrected(engine):
    assert engine.add(b"b", [b"a"]) == [Insert(0, b"b")]  # a is missing: b ranks 0
    assert engine.add(b"c") == [Insert(1, b"c")]
    commands = engine.add(b"a")  # a (rank 0) sorts first; b rises to rank 1, past c
    assert commands == [Insert(0, b"a"), Move(1, 2)]
    assert engine.order() == [b"a", b"c", b"b"]
    with engine.env.begin() as txn:
        placement = engine.reader(txn).placement(b"t", b"b")
    assert (placement.position, placement.rank) == (2, 1)


def test_forks_and_dangling_links(engine):
    events = [(b"d1", [b"d0"]), (b"d3", [b"d0"]), (b"d2", [b"d1"]), (b"x", [b"d2", b"d3"])]
    array: list[bytes] = []
    for ref, after in events:
        apply_commands(array, engine.add(ref, after))
    assert array == engine.order() == [b"d1", b"d3", b"d2", b"x"]
    apply_commands(array, engine.add(b"d0"))
    assert array == engine.order() == [b"d0", b"d1", b"d3", b"d2", b"x"]


def test_cycle_is_rejected_and_changes_nothing(engine):
    engine.add_batch([(b"a", [b"c"]), (b"b", [b"a"])])
    before = (engine.order(), engine.version())
    with pytest.raises(CycleError):
        engine.add(b"c", [b"b"])
    with pytest.raises(CycleError):
        engine.add(b"z", [b"z"])
    assert (engine.order(), engine.version()) == before
    engine.add(b"c")  # the same id, without the cycle, is still welcome
    assert engine.order() == [b"c", b"a", b"b"]


def test_cycle_inside_a_batch_keeps_the_events_before_it(engine):
    with engine.env.begin(write=True) as txn:
        writer = TimelineWriter(txn, engine.tables)
        writer.add(b"t", b"a", [b"b"])
        with pytest.raises(CycleError):
            writer.add(b"t", b"b", [b"a"])
        writer.add(b"t", b"c", [b"a"])
        writer.finish()
    assert engine.order() == [b"a", b"c"]


def test_duplicates_and_bad_refs_are_refused(engine):
    engine.add(b"a")
    with pytest.raises(DuplicateEvent):
        engine.add(b"a", [b"x"])
    with pytest.raises(TimelineError):
        engine.add(b"y" * 300)
    with pytest.raises(TimelineError):
        engine.add(b"y", [b""])
    assert engine.order() == [b"a"]
    assert engine.version() == 1


def test_command_log_replays_from_any_version(engine):
    rng = random.Random(3)
    events = random_feed(paper_tangle(300, 5, rng), rng)
    for batch_start in range(0, len(events), 37):
        engine.add_batch(
            [
                (e.name.encode(), [a.encode() for a in e.after])
                for e in events[batch_start : batch_start + 37]
            ]
        )
    version = engine.version()
    with engine.env.begin() as txn:
        reader = engine.reader(txn)
        everything = reader.commands_since(b"t", 0, limit=version + 10)
        assert len(everything) == version
        for since in range(version + 2):  # every start, inside an event's commands or not
            assert reader.commands_since(b"t", since) == everything[since:]
            assert reader.commands_since(b"t", since, limit=3) == everything[since : since + 3]
    assert apply_commands([], everything) == engine.order()


@pytest.mark.parametrize("feeds", [2, 4, 16])
def test_agrees_with_the_reference_scuttlesort_after_every_event(engine, feeds):
    rng = random.Random(feeds)
    events = random_feed(paper_tangle(1500, feeds, rng), rng)
    reference_commands = []
    reference = ReferenceTimeline(lambda *command: reference_commands.append(command))
    array: list[bytes] = []
    ours = reference_total = 0
    for event in events:
        after = [link.encode() for link in event.after]
        commands = engine.add(event.name.encode(), after)
        del reference_commands[:]
        reference.add(event.name, list(event.after))
        apply_commands(array, commands)
        assert [name.encode() for name in reference] == array
        ours += len(commands)
        reference_total += len(reference_commands)
    assert array == engine.order()
    assert ours <= reference_total


# -- removal ------------------------------------------------------------------


def ranks(engine) -> dict[bytes, int]:
    with engine.env.begin() as txn:
        return {sort_id: rank for rank, sort_id in engine.reader(txn).entries(b"t")}


def replayed(engine) -> list[bytes]:
    with engine.env.begin() as txn:
        return apply_commands([], engine.reader(txn).commands_since(b"t", 0, limit=10**6))


def assert_as_if_only(engine, events) -> None:
    """The engine's rows and order are those of a fresh engine fed only `events`."""
    assert engine.rows() == expected_rows(events)
    assert engine.order() == replayed(engine)


def test_removing_a_leaf_deletes_it_and_nothing_else(engine):
    engine.add_batch([(b"a", []), (b"b", [b"a"]), (b"c", [b"b", b"gone"])])
    version = engine.version()
    assert engine.remove(b"c") == [Delete(2)]
    assert engine.version() == version + 1
    assert engine.order() == [b"a", b"b"]
    assert_as_if_only(engine, [(b"a", []), (b"b", [b"a"])])  # c's rows under b and gone too


def test_removing_a_member_lowers_its_successors(engine):
    #   a -> b -> c -> e        d (rank 0), f -> b (rank 2)
    #        x -> e             g -> missing
    events = [
        (b"a", []),
        (b"b", [b"a"]),
        (b"c", [b"b"]),
        (b"d", []),
        (b"x", [b"d"]),
        (b"e", [b"c", b"x"]),
        (b"f", [b"b", b"d"]),
        (b"g", [b"missing"]),
    ]
    engine.add_batch(events)
    assert ranks(engine) == {b"a": 0, b"d": 0, b"g": 0, b"b": 1, b"x": 1, b"c": 2, b"f": 2, b"e": 3}
    array = engine.order()
    version = engine.version()
    commands = engine.remove(b"b")
    assert isinstance(commands[0], Delete) and all(isinstance(c, Move) for c in commands[1:])
    assert engine.version() == version + len(commands)
    # c and f fall to 0 (their other links: none / d at 0 gives f rank 1), e to 2
    assert ranks(engine) == {b"a": 0, b"c": 0, b"d": 0, b"g": 0, b"f": 1, b"x": 1, b"e": 2}
    assert apply_commands(array, commands) == engine.order()
    assert engine.order() == [b"a", b"c", b"d", b"g", b"f", b"x", b"e"]
    # c and f wait for b again; g still waits for its missing link
    with engine.env.begin() as txn:
        assert sorted(engine.reader(txn).pending_ranks(b"t")) == [0, 0, 1]
    assert (b"b", b"c") in engine.rows()["succ"] and (b"b", b"f") in engine.rows()["succ"]
    remaining = [event for event in events if event[0] != b"b"]
    assert_as_if_only(engine, remaining)
    assert dict(engine.rows()["pending"]) == {b"c": 1, b"f": 1, b"g": 1}


def test_removing_a_root_drops_its_whole_chain_to_rank_zero(engine):
    chain = [(b"r", [])] + [(b"n%d" % i, [b"r" if i == 0 else b"n%d" % (i - 1)]) for i in range(5)]
    engine.add_batch([*chain, (b"z", [])])
    assert engine.remove(b"r")[0] == Delete(0)
    # only n0 loses its only present link; the rest of the chain falls by one
    assert ranks(engine) == {b"n0": 0, b"n1": 1, b"n2": 2, b"n3": 3, b"n4": 4, b"z": 0}
    assert engine.order() == [b"n0", b"z", b"n1", b"n2", b"n3", b"n4"]
    assert_as_if_only(engine, [*chain[1:], (b"z", [])])
    assert dict(engine.rows()["pending"]) == {b"n0": 1}


def test_remove_then_add_again_restores_the_state(engine):
    events = [(b"a", []), (b"b", [b"a"]), (b"c", [b"b", b"a"]), (b"d", [b"c", b"q"])]
    engine.add_batch(events)
    before = (engine.order(), engine.rows(), ranks(engine))
    engine.remove(b"b")
    assert engine.order() == [b"a", b"c", b"d"]
    engine.add(b"b", [b"a"])
    assert (engine.order(), engine.rows(), ranks(engine)) == before
    assert replayed(engine) == before[0]
    engine.remove(b"a")
    engine.remove(b"b")
    assert engine.order() == [b"c", b"d"]
    assert_as_if_only(engine, events[2:])
    engine.add_batch([(b"b", [b"a"]), (b"a", [])])
    assert (engine.order(), engine.rows(), ranks(engine)) == before


def test_add_and_remove_in_one_transaction(engine):
    links = {b"b": [b"a"], b"c": [b"b"]}
    with engine.env.begin(write=True) as txn:
        writer = TimelineWriter(txn, engine.tables)
        array: list[bytes] = []
        apply_commands(array, writer.add(b"t", b"b", [b"a"]))
        apply_commands(array, writer.add(b"t", b"a"))
        apply_commands(array, writer.add(b"t", b"c", [b"b"]))
        apply_commands(array, writer.add(b"t", b"d"))
        assert array == [b"a", b"d", b"b", b"c"]
        commands = writer.remove(b"t", b"a", [], links.__getitem__)  # b and c fall by one
        assert commands == [Delete(0), Move(1, 0)]  # c keeps its position
        apply_commands(array, commands)
        apply_commands(array, writer.remove(b"t", b"c", [b"b"], links.__getitem__))
        apply_commands(array, writer.add(b"t", b"c", [b"b"]))
        writer.finish()
    assert array == engine.order() == replayed(engine) == [b"b", b"d", b"c"]
    assert_as_if_only(engine, [(b"b", [b"a"]), (b"c", [b"b"]), (b"d", [])])


def test_removing_an_unknown_ref_changes_nothing(engine):
    engine.add_batch([(b"a", []), (b"b", [b"a", b"x"])])
    before = (engine.order(), engine.version(), engine.rows())
    for ref in (b"x", b"zz"):  # x: a pending reference, never a member
        with pytest.raises(UnknownEvent):
            engine.remove(ref)
    with engine.env.begin(write=True) as txn:
        writer = TimelineWriter(txn, engine.tables)
        with pytest.raises(UnknownEvent):
            writer.remove(b"no such timeline", b"a", [], lambda ref: [])
        with pytest.raises(TimelineError):  # a was not added with a link to x
            writer.remove(b"t", b"a", [b"x"], lambda ref: [])
        with pytest.raises(TimelineError):  # nor without its link to x
            writer.remove(b"t", b"b", [b"a"], lambda ref: [])
        writer.finish()
    assert (engine.order(), engine.version(), engine.rows()) == before
    with engine.env.begin() as txn:
        assert not engine.reader(txn).exists(b"no such timeline")
    engine.remove(b"b")
    with pytest.raises(UnknownEvent):
        engine.remove(b"b")
    assert engine.order() == [b"a"]
