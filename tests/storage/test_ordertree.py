import bisect
import tempfile

import lmdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage.ordertree import MAX_FANOUT, OrderTree, TreeState

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


def test_move_within_and_across_leaves(env):
    db = env.open_db(b"tree")
    state = TreeState()
    expected = [index.to_bytes(4, "big") for index in range(0, 4000, 2)]
    with env.begin(write=True) as txn:
        tree = OrderTree(txn, db, 1, state)
        for key in expected:
            tree.insert(key)
        for old, new in [(10, 13), (100, 3001), (3998, 5000), (0, 1)]:
            old_key, new_key = old.to_bytes(4, "big"), new.to_bytes(4, "big")
            src = expected.index(old_key)
            expected.remove(old_key)
            dst = bisect.bisect_left(expected, new_key)
            expected.insert(dst, new_key)
            assert tree.move(old_key, new_key) == (src, dst)
        assert tree.slice(0, len(expected)) == expected
        with pytest.raises(ValueError):
            tree.move((13).to_bytes(4, "big"), (12).to_bytes(4, "big"))
        with pytest.raises(KeyError):
            tree.insert(expected[5])
        with pytest.raises(KeyError):
            tree.delete(b"\xff\xff\xff\xff\xff")
