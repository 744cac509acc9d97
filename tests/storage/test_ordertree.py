import bisect
import tempfile

import lmdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.storage.engine.ordertree import MAX_FANOUT, OrderTree, TreeState

keys = st.binary(min_size=1, max_size=3)
operations = st.lists(st.tuples(st.booleans(), keys), min_size=1, max_size=600)


@pytest.fixture
def env(tmp_path):
    environment = lmdb.open(str(tmp_path / "tree"), map_size=2**28, max_dbs=2)
    yield environment
    environment.close()


def run_batches(env, batches):
    """Apply (is_insert, key) batches, one transaction each, against a sorted list."""
    db = env.open_db(b"tree")
    state = TreeState()
    expected: list[bytes] = []
    for batch in batches:
        with env.begin(write=True) as txn:
            tree = OrderTree(txn, db, 3, state)
            for is_insert, key in batch:
                index = bisect.bisect_left(expected, key)
                present = index < len(expected) and expected[index] == key
                if is_insert and not present:
                    assert tree.insert(key) == index
                    expected.insert(index, key)
                elif not is_insert and present:
                    assert tree.delete(key) == index
                    del expected[index]
            tree.flush()
        with env.begin() as txn:
            tree = OrderTree(txn, db, 3, state)
            assert len(tree) == len(expected)
            assert tree.slice(0, len(expected)) == expected
            for key in expected[:: max(1, len(expected) // 20)]:
                assert tree.position(key) == expected.index(key)
    return expected


@settings(max_examples=60, deadline=None)
@given(st.lists(operations, min_size=1, max_size=4))
def test_positions_match_a_sorted_list_across_transactions(batches):
    with tempfile.TemporaryDirectory() as directory:
        environment = lmdb.open(directory, map_size=2**28, max_dbs=2)
        try:
            run_batches(environment, batches)
        finally:
            environment.close()


def test_deep_tree_grows_splits_and_shrinks_back(env):
    count = MAX_FANOUT**2 * 2  # three levels
    grow = [(True, index.to_bytes(4, "big")) for index in range(0, count * 7, 7)]
    grow = grow[::2] + grow[1::2]  # not in key order
    shrink = [(False, key) for _insert, key in grow[: count - 3]]
    remaining = run_batches(env, [grow, shrink])
    assert len(remaining) == 3


def apply_against_list(tree, expected, inserts, deletes):
    """Apply one batch to the tree and the list; the tree must report the list's places."""
    changes = {key: 1 for key in inserts} | {key: -1 for key in deletes}
    keys = sorted(changes)
    ranks = tree.apply(keys, [changes[key] for key in keys])
    assert ranks == [bisect.bisect_left(expected, key) for key in keys]
    expected[:] = sorted(set(expected) - set(deletes) | set(inserts))
    assert len(tree) == len(expected)
    assert tree.slice(0, len(expected)) == expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 5000), max_size=400, unique=True),
    st.lists(st.lists(st.integers(0, 5000), max_size=150, unique=True), min_size=1, max_size=5),
)
def test_apply_reports_positions_before_the_batch(initial, batches):
    with tempfile.TemporaryDirectory() as directory:
        environment = lmdb.open(directory, map_size=2**28, max_dbs=2)
        db = environment.open_db(b"tree")
        with environment.begin(write=True) as txn:
            tree = OrderTree(txn, db, 1, TreeState())
            expected: list[bytes] = []
            encode = [number.to_bytes(2, "big") for number in range(5001)]
            apply_against_list(tree, expected, [encode[n] for n in initial], [])
            for batch in batches:
                present = set(expected)
                toggled = [encode[n] for n in batch]
                apply_against_list(
                    tree,
                    expected,
                    [key for key in toggled if key not in present],
                    [key for key in toggled if key in present],
                )
        environment.close()


def test_apply_crowding_one_leaf_splits_and_emptying_leaves_merges(env):
    db = env.open_db(b"tree")
    with env.begin(write=True) as txn:
        tree = OrderTree(txn, db, 1, TreeState())
        expected: list[bytes] = []
        spread = [index.to_bytes(4, "big") for index in range(0, 40_000, 10)]
        apply_against_list(tree, expected, spread, [])
        crowd = [index.to_bytes(4, "big") for index in range(5001, 5001 + 6 * MAX_FANOUT, 2)]
        apply_against_list(tree, expected, crowd, [])
        apply_against_list(tree, expected, [], spread[: len(spread) - 5])
        with pytest.raises(KeyError):
            tree.apply([spread[0]], [-1])
        with pytest.raises(KeyError):
            tree.apply([expected[0]], [1])
