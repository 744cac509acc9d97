"""The engine's two builds (storage/engine/native.py): the compiled hot modules and the plain ones
give the same commands, orders, rows and errors, event for event, and both match the
reference ScuttleSort. When Cython and a C compiler are installed, `make install` must
have built the compiled modules from the current sources."""

import bisect
import importlib.util
import random
import shutil
import struct
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scuttlesort import Timeline as ReferenceTimeline

from tanglenode.storage.engine import native, timeline
from tanglenode.storage.engine.ordertree import MAX_FANOUT, TreeState
from tanglenode.storage.engine.timeline import TimelineWriter, apply_commands
from tanglenode.storage.errors import TimelineError
from tanglenode.storage.tools.simulate import in_order, paper_tangle, random_feed
from tests.timeline_oracle import EngineHarness, rank_order

BUILT = all(native.compiled(name) for name in native.HOT_MODULES)
needs_native = pytest.mark.skipif(not BUILT, reason="the compiled engine is not built")


@contextmanager
def engine_build(kind: str) -> Iterator[None]:
    before = timeline.engine_build()
    timeline.use_engine_build(kind)
    try:
        yield
    finally:
        timeline.use_engine_build(before)


def test_make_install_built_the_current_sources():
    if importlib.util.find_spec("Cython") is None:
        pytest.skip("Cython is not installed: the engine runs plain")
    compiler = (sysconfig.get_config_var("CC") or "gcc").split()[0]  # native_build's
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) on PATH: the engine runs plain")
    stale = [name for name in native.HOT_MODULES if native.compiled(name) is None]
    assert stale == [], f"{stale}: not built or built from older sources; run `make install`"
    assert timeline.engine_build() == "native"


def run_steps(kind: str, steps, cuts=()) -> tuple[list, list[bytes], dict]:
    """Run ("add", ref, links) / ("remove", ref) steps with one build; every outcome."""
    outcomes: list = []
    with engine_build(kind), tempfile.TemporaryDirectory() as directory:
        engine = EngineHarness(Path(directory) / "tl")
        try:
            links: dict[bytes, list[bytes]] = {}
            start = 0
            for stop in [*cuts, len(steps)]:
                with engine.env.begin(write=True) as txn:
                    writer = TimelineWriter(txn, engine.tables)
                    for kind_, ref, *after in steps[start:stop]:
                        try:
                            if kind_ == "add":
                                outcomes.append(writer.add(b"t", ref, after[0]))
                                links[ref] = list(after[0])
                            else:
                                outcomes.append(
                                    writer.remove(b"t", ref, links.get(ref, ()), links.get)
                                )
                                del links[ref]
                        except TimelineError as error:
                            outcomes.append((type(error).__name__, getattr(error, "loop", None)))
                    writer.finish()
                start = stop
            return outcomes, engine.order(), engine.rows()
        finally:
            engine.close()


def paper_steps(events: int, feeds: int, seed: int, delivery=random_feed) -> list:
    rng = random.Random(seed)
    delivered = delivery(paper_tangle(events, feeds, rng), rng)
    return [("add", e.name.encode(), [a.encode() for a in e.after]) for e in delivered]


@needs_native
@pytest.mark.parametrize(
    ("events", "feeds", "seed"), [(3000, 4, 1), (3000, 16, 2), (4000, 64, 3), (2000, 256, 4)]
)
def test_both_builds_give_the_same_commands_on_paper_workloads(events, feeds, seed):
    steps = paper_steps(events, feeds, seed)
    cuts = list(range(700, events, 700))
    plain = run_steps("plain", steps, cuts)
    assert run_steps("native", steps, cuts) == plain
    assert plain[1] == rank_order([(ref, after) for _kind, ref, after in steps])


@pytest.mark.parametrize("kind", ["plain", pytest.param("native", marks=needs_native)])
@pytest.mark.parametrize("delivery", [random_feed, in_order])
def test_each_build_tracks_the_reference_and_emits_no_more_commands(kind, delivery):
    steps = paper_steps(2500, 8, 5, delivery)
    commands: list = []
    reference = ReferenceTimeline(lambda *command: commands.append(command))
    outcomes, order, _rows = run_steps(kind, steps, cuts=list(range(500, 2500, 500)))
    array: list[bytes] = []
    for (_kind, ref, after), ours in zip(steps, outcomes, strict=True):
        before = len(commands)
        reference.add(ref.decode(), [link.decode() for link in after])
        apply_commands(array, ours)
        assert array == [name.encode() for name in reference]
        assert len(ours) <= len(commands) - before
    assert array == order


@st.composite
def scripts(draw):
    """Adds and removes over a random DAG with dangling links, duplicates and cycles."""
    count = draw(st.integers(1, 30))
    ids = [f"e{index:02d}".encode() for index in range(count)]
    steps = []
    present: set[bytes] = set()
    for _ in range(draw(st.integers(1, 3 * count))):
        ref = draw(st.sampled_from(ids))
        if ref in present and draw(st.integers(0, 3)) == 0:
            steps.append(("remove", ref))
            present.discard(ref)
            continue
        links = draw(st.lists(st.sampled_from([*ids, b"missing"]), max_size=3))
        steps.append(("add", ref, links))  # may be a duplicate or close a cycle
        present.add(ref)
    cuts = sorted(draw(st.sets(st.integers(1, len(steps)), max_size=4)))
    return steps, cuts


@needs_native
@settings(max_examples=150, deadline=None)
@given(scripts())
def test_both_builds_agree_on_random_scripts(script):
    steps, cuts = script
    assert run_steps("native", steps, cuts) == run_steps("plain", steps, cuts)


def assert_well_formed(txn, db, state) -> None:
    """Every node but the root within its fanout bounds, every count and low right."""
    import msgpack

    def walk(node_no: int, is_root: bool) -> list[bytes]:
        kind, *fields = msgpack.unpackb(txn.get(struct.pack(">II", 1, node_no), db=db))
        size = len(fields[0])
        assert size <= MAX_FANOUT
        assert is_root or size >= MAX_FANOUT // 4
        if kind == 0:
            return fields[0]
        children, counts, lows = fields
        keys: list[bytes] = []
        for index, child in enumerate(children):
            below = walk(child, False)
            assert len(below) == counts[index]
            assert index == 0 or (below and below[0] >= lows[index] > keys[-1])
            keys.extend(below)
        return keys

    assert len(walk(state.root, True)) == state.size


@needs_native
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.tuples(st.booleans(), st.binary(min_size=1, max_size=3)), max_size=300),
        min_size=1,
        max_size=4,
    )
)
def test_both_order_trees_agree(batches):
    import lmdb

    results = []
    for module in (native.plain("ordertree"), native.compiled("ordertree")):
        with tempfile.TemporaryDirectory() as directory:
            env = lmdb.open(directory, map_size=2**28, max_dbs=2)
            db = env.open_db(b"tree")
            state = TreeState()
            seen = []
            for batch in batches:
                with env.begin(write=True) as txn:
                    tree = module.OrderTree(txn, db, 1, state)
                    changes = {}
                    for is_insert, key in batch:
                        changes[key] = is_insert
                    present = set(tree.slice(0, len(tree)))
                    keys = sorted(k for k, ins in changes.items() if ins != (k in present))
                    seen.append(tree.apply(keys, [1 if k not in present else -1 for k in keys]))
                    seen.append(tree.slice(0, len(tree)))
                    tree.flush()
                    assert_well_formed(txn, db, state)
            env.close()
            results.append(seen)
    assert results[0] == results[1]


@pytest.mark.parametrize("kind", ["plain", pytest.param("native", marks=needs_native)])
def test_big_batches_crowding_and_emptying_regions_keep_the_tree_well_formed(kind):
    """Batches like a big wave's: thousands of keys into one narrow range, and out of another."""
    import lmdb

    module = native.plain("ordertree") if kind == "plain" else native.compiled("ordertree")
    rng = random.Random(7)
    expected: list[bytes] = []
    with tempfile.TemporaryDirectory() as directory:
        env = lmdb.open(directory, map_size=2**30, max_dbs=2)
        db = env.open_db(b"tree")
        state = TreeState()
        for round_ in range(12):
            present = set(expected)
            start = rng.randrange(0, 2**32 - 2**20)
            crowd = {(start + rng.randrange(2**20)).to_bytes(4, "big") for _ in range(3000)}
            leaving = set(rng.sample(expected, min(len(expected), rng.randrange(0, 4000))))
            if round_ % 3 == 2 and expected:  # empty one contiguous stretch
                cut = rng.randrange(len(expected))
                leaving |= set(expected[cut : cut + 2500])
            changes = {key: 1 for key in crowd - present} | {key: -1 for key in leaving}
            keys = sorted(changes)
            with env.begin(write=True) as txn:
                tree = module.OrderTree(txn, db, 1, state)
                ranks = tree.apply(keys, [changes[key] for key in keys])
                assert ranks == [bisect.bisect_left(expected, key) for key in keys]
                expected = sorted(present - leaving | crowd)
                assert tree.slice(0, len(tree)) == expected
                tree.flush()
                assert_well_formed(txn, db, state)
        env.close()


@pytest.mark.parametrize("kind", ["plain", pytest.param("native", marks=needs_native)])
def test_log_rows_are_the_msgpack_of_the_commands(kind):
    import msgpack

    from tanglenode.storage.engine.engine_commands import Delete, Insert, Move, decode_commands

    core = native.plain("engine_core") if kind == "plain" else native.compiled("engine_core")
    rng = random.Random(11)
    numbers = [0, 1, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**40]

    def number() -> int:
        return rng.choice([*numbers, rng.randrange(10**6)])

    for length in [0, 1, 15, 16, 17, 40, 65535, 65536] + [rng.randrange(60) for _ in range(300)]:
        commands = []
        for _ in range(length):
            pick = rng.randrange(3)
            if pick == 0:
                size = rng.choice([1, 11, 255, 256, 300])
                commands.append(Insert(number(), rng.randbytes(size)))
            elif pick == 1:
                commands.append(Move(number(), number()))
            else:
                commands.append(Delete(number()))
        expected = msgpack.packb(
            [
                (0, *c) if type(c) is Insert else (1, *c) if type(c) is Move else (2, *c)
                for c in commands
            ]
        )
        row = core.encode_log(commands)
        assert row == expected
        assert decode_commands(row) == commands
