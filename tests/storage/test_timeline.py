import random

import pytest
from scuttlesort import Timeline as ReferenceTimeline

from storage.simulate import paper_tangle, random_feed
from storage.timeline import (
    CycleError,
    DuplicateEvent,
    Insert,
    Move,
    TimelineError,
    TimelineWriter,
    apply_commands,
)
from tests.timeline_oracle import EngineHarness


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
