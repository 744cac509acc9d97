"""An order-statistic B+-tree of byte keys, kept in LMDB.

Theory of operation
-------------------
A timeline's order is a set of keys (rank, then sort id, see
`storage.engine.timeline`). LMDB keeps keys sorted but cannot say how many keys
precede one without walking them, so the order lives in a B+-tree of our own
whose inner nodes count the keys below each child. A key's position is the
sum of the counts left of the path from the root to its leaf, so `position`,
`insert`, `delete` and `select` each read one root-to-leaf path:
O(log n) nodes, whatever the keys look like (a rank shared by a million
messages costs the same as a rank of two).

Each node is one row, `tree number (u32) + node number (u32) -> msgpack`:

    leaf    [0, keys]                      keys sorted ascending
    inner   [1, children, counts, lows]    lows[i] <= every key under children[i]
                                           < lows[i + 1]; lows[0] is not consulted

Leaves hold at most `MAX_FANOUT` keys and inner nodes at most `MAX_FANOUT`
children; a node that falls under a quarter of that is merged with a
sibling (and split again evenly if the two together are too many), so the
depth stays logarithmic however keys come and go.

`MAX_FANOUT` is a local layout (positions and commands do not depend on it),
chosen for LMDB's pages: at 32, a leaf of rank-order keys (36 bytes each) is
at most about 1.2 KiB, so several nodes share a 4 KiB page. At 64 a full
leaf (2.4 KiB) passed the largest value LMDB keeps in a leaf page (about
2 KiB) and took an overflow page of its own, and nodes just under it shared
pages only in pairs. Measured on `bench/ingest.py --messages 30000
--timeframe-feeds 4` (150,000 keys in 770 trees), compacted: `tl-tree` took
12.6 MiB at 64, 10.6 at 48, 9.9 at 32 and 9.8 at 24.

A tree object serves one transaction. It caches the nodes it decodes and
writes the changed ones back in `flush()`, so a node touched by many keys of
a batch (the root, the leaf at the end of a busy timeline) is written once.
Its memory is bounded by the nodes one transaction touches, never by the
size of the tree. The tree's own state (root node, next node number, key
count) is a `TreeState` that the owner persists.

This module is one of the engine's two hot modules (with
`storage.engine.engine_core`): `ordertree.pxd` beside it gives Cython the types, and
`make install` compiles the same source to `ordertree_native` (see
`storage.engine.native`). The plain module is the reference; the tests run both.
"""

from __future__ import annotations

import struct
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgpack

if TYPE_CHECKING:
    from tanglenode.storage.engine.txn import Db, Txn

MAX_FANOUT = 32  # see the module docstring: nodes that fit LMDB's pages
MIN_FANOUT = MAX_FANOUT // 4
_NODE = struct.Struct(">II")
_LEAF, _INNER = 0, 1


class Leaf:
    __slots__ = ("keys",)

    def __init__(self, keys: list[bytes]) -> None:
        self.keys = keys

    def __len__(self) -> int:
        return len(self.keys)


class Inner:
    __slots__ = ("children", "counts", "lows")

    def __init__(self, children: list[int], counts: list[int], lows: list[bytes]) -> None:
        self.children = children
        self.counts = counts
        self.lows = lows

    def __len__(self) -> int:
        return len(self.children)


Node = Leaf | Inner


@dataclass(slots=True)
class TreeState:
    """What the owner stores about a tree: its root, the next free node number, its size."""

    root: int = 0
    next_node: int = 1
    size: int = 0


def _decode(raw: bytes) -> Node:
    fields = msgpack.unpackb(raw)
    if fields[0] == _LEAF:
        return Leaf(fields[1])
    return Inner(fields[1], fields[2], fields[3])


def _encode(node: Node) -> bytes:
    if isinstance(node, Leaf):
        return msgpack.packb([_LEAF, node.keys])
    return msgpack.packb([_INNER, node.children, node.counts, node.lows])


class OrderTree:
    """The order-statistic tree `tree_no` of table `db`, within transaction `txn`."""

    def __init__(self, txn: Txn, db: Db, tree_no: int, state: TreeState) -> None:
        self._txn = txn
        self._db = db
        self._tree_no = tree_no
        self.state = state
        self._nodes: dict[int, Node] = {}
        self._dirty: set[int] = set()
        self._freed: set[int] = set()
        if state.size == 0 and self._load(state.root) is None:
            self._nodes[state.root] = Leaf([])
            self._dirty.add(state.root)

    def __len__(self) -> int:
        return self.state.size

    # -- queries -----------------------------------------------------------

    def position(self, key: bytes) -> int:
        """How many keys are less than `key`."""
        _path, _leaf_no, leaf, before = self._descend(key)
        return before + bisect_left(leaf.keys, key)

    def select(self, index: int) -> tuple[Leaf, int]:
        """The leaf holding the key at `index`, and the key's place in that leaf."""
        if not 0 <= index < self.state.size:
            raise IndexError(index)
        node = self._node(self.state.root)
        while isinstance(node, Inner):
            for child, count in zip(node.children, node.counts, strict=True):
                if index < count:
                    node = self._node(child)
                    break
                index -= count
        return node, index

    def slice(self, start: int, stop: int) -> list[bytes]:
        """The keys at positions start..stop-1 (clamped to the tree)."""
        start, stop = max(start, 0), min(stop, self.state.size)
        keys: list[bytes] = []
        while start < stop:
            leaf, offset = self.select(start)
            taken = leaf.keys[offset : offset + stop - start]
            keys.extend(taken)
            start += len(taken)
        return keys

    # -- changes -----------------------------------------------------------

    def insert(self, key: bytes) -> int:
        """Add `key` (absent before); returns its position."""
        path, leaf_no, leaf, before = self._descend(key)
        index = bisect_left(leaf.keys, key)
        if index < len(leaf.keys) and leaf.keys[index] == key:
            raise KeyError(key)
        leaf.keys.insert(index, key)
        self._touch(path, leaf_no, +1)
        if len(leaf.keys) > MAX_FANOUT:
            self._split(path, leaf)
        return before + index

    def delete(self, key: bytes) -> int:
        """Remove `key` (present); returns the position it had."""
        path, leaf_no, leaf, before = self._descend(key)
        index = bisect_left(leaf.keys, key)
        if index >= len(leaf.keys) or leaf.keys[index] != key:
            raise KeyError(key)
        del leaf.keys[index]
        self._touch(path, leaf_no, -1)
        if len(leaf.keys) < MIN_FANOUT and path:
            self._rebalance(path, leaf)
        return before + index

    def apply(self, keys: list[bytes], deltas: list[int]) -> list[int]:
        """Insert (delta +1) or delete (delta -1) many keys at once.

        `keys` are distinct and ascending. Returns, for each key, how many
        keys of the tree *before* the batch were less than it: its old
        position if deleted, its insertion point if inserted. One walk visits
        each touched node once, so changes that share a leaf share its path;
        a leaf that gets many changes is rebuilt in one pass. On the way back
        up, each inner node cuts a child the batch made too big into pieces
        and merges one made too small into its left neighbour (the first
        child, into its right one once the walk is past it), so the batch
        costs its keys, never a path per key.
        """
        ranks = array("q", bytes(8 * len(keys)))
        self.apply_into(keys, array("b", deltas), ranks)
        return ranks.tolist()

    def apply_into(self, keys: list[bytes], deltas: array[int], ranks: array[int]) -> None:
        """`apply`, for the engine: `deltas` (signed bytes) in, `ranks` (int64) filled in."""
        state = self.state
        if keys:
            state.size += self._apply_node(state.root, keys, deltas, 0, len(keys), 0, ranks)
        self._fix_root()

    def flush(self) -> None:
        """Write every changed node back; the tree stays usable."""
        for node_no in self._freed:
            self._txn.delete(self._row(node_no), db=self._db)
        for node_no in self._dirty:
            self._txn.put(self._row(node_no), _encode(self._nodes[node_no]), db=self._db)
        self._freed.clear()
        self._dirty.clear()

    # -- internals ---------------------------------------------------------

    def _row(self, node_no: int) -> bytes:
        return _NODE.pack(self._tree_no, node_no)

    def _load(self, node_no: int) -> Node | None:
        raw = self._txn.get(self._row(node_no), db=self._db)
        if raw is None:
            return None
        node = self._nodes[node_no] = _decode(raw)
        return node

    def _node(self, node_no: int) -> Node:
        node = self._nodes.get(node_no)
        if node is None:
            node = self._load(node_no)
            if node is None:
                raise LookupError(f"order tree {self._tree_no} lacks node {node_no}")
        return node

    def _descend(self, key: bytes) -> tuple[list[tuple[int, Inner, int]], int, Leaf, int]:
        """Path of (node number, inner node, child index) to `key`'s leaf, the leaf
        (number and node) and how many keys precede the leaf."""
        path: list[tuple[int, Inner, int]] = []
        before = 0
        node_no = self.state.root
        node = self._node(node_no)
        while isinstance(node, Inner):
            index = bisect_right(node.lows, key, 1) - 1
            counts = node.counts
            for child in range(index):
                before += counts[child]
            path.append((node_no, node, index))
            node_no = node.children[index]
            node = self._node(node_no)
        return path, node_no, node, before

    def _touch(self, path: list[tuple[int, Inner, int]], leaf_no: int, change: int) -> None:
        self._dirty.add(leaf_no)
        for node_no, inner, index in path:
            inner.counts[index] += change
            self._dirty.add(node_no)
        self.state.size += change

    def _apply_node(
        self,
        node_no: int,
        keys: list[bytes],
        deltas: array[int],
        lo: int,
        hi: int,
        base: int,
        ranks: array[int],
    ) -> int:
        """Apply keys[lo:hi] under `node_no`, which `base` keys precede; returns the net change.

        The node may come back out of its size bounds: its parent (or
        `_fix_root`) puts that right.
        """
        node = self._node(node_no)
        if isinstance(node, Inner):
            inner: Inner = node
            counts, lows, children = inner.counts, inner.lows, inner.children
            net = 0  # already applied to the children left of the current one
            child = 0
            before = base  # keys left of child `child`, as they are now
            first_touched = False
            while lo < hi:
                found = bisect_right(lows, keys[lo], 1) - 1
                while child < found:
                    before += counts[child]
                    child += 1
                stop = hi if child == len(lows) - 1 else bisect_left(keys, lows[child + 1], lo, hi)
                change = self._apply_node(
                    children[child], keys, deltas, lo, stop, before - net, ranks
                )
                counts[child] += change
                net += change
                lo = stop
                size = _size(self._node(children[child]))
                if size > MAX_FANOUT:
                    self._cut_child(inner, child)  # pieces follow it: `before` still holds
                elif size < MIN_FANOUT and child > 0:
                    before -= counts[child - 1]  # the pair becomes child - 1 (or two pieces)
                    self._merge_children(inner, child - 1)
                    child -= 1
                elif child == 0:
                    first_touched = True
            while (
                first_touched and len(children) > 1 and _size(self._node(children[0])) < MIN_FANOUT
            ):
                first_touched = self._merge_children(inner, 0)
            self._dirty.add(node_no)
            return net
        leaf: list[bytes] = node.keys
        net = 0
        size = len(leaf)
        places = []  # each key's place in the leaf as it is
        at = 0
        for index in range(lo, hi):
            key = keys[index]
            at = bisect_left(leaf, key, at)  # keys ascend: search from the last place on
            present = at < size and leaf[at] == key
            delta = deltas[index]
            if present != (delta < 0):
                raise KeyError(key)
            ranks[index] = base + at
            places.append(at)
            net += delta
        if hi - lo <= 8:
            # From the right, so that the places of the keys to the left still hold.
            for index in range(hi - 1, lo - 1, -1):
                at = places[index - lo]
                if deltas[index] > 0:
                    leaf.insert(at, keys[index])
                else:
                    del leaf[at]
        else:  # many changes: one merge of the leaf with them
            rebuilt = []
            kept = 0
            for index in range(lo, hi):
                at = places[index - lo]
                rebuilt.extend(leaf[kept:at])
                if deltas[index] > 0:
                    rebuilt.append(keys[index])
                    kept = at
                else:
                    kept = at + 1
            rebuilt.extend(leaf[kept:])
            node.keys = rebuilt
        self._dirty.add(node_no)
        return net

    def _cut_child(self, parent: Inner, index: int) -> None:
        """Cut the too big child `index` into even pieces, hung after it in `parent`."""
        child_no = parent.children[index]
        pieces = _cut(self._node(child_no))
        self._dirty.add(child_no)
        numbers = [self._allocate(piece) for piece in pieces[1:]]
        parent.children[index + 1 : index + 1] = numbers
        parent.counts[index : index + 1] = [_weight(piece) for piece in pieces]
        parent.lows[index + 1 : index + 1] = [_low(piece) for piece in pieces[1:]]

    def _merge_children(self, parent: Inner, left_index: int) -> bool:
        """Merge child `left_index + 1` into child `left_index`, splitting evenly if too big.

        Returns whether one child is left where the two were.
        """
        left_no, right_no = parent.children[left_index], parent.children[left_index + 1]
        left, right = self._node(left_no), self._node(right_no)
        joint = _size(left)
        _merge_into(left, right, parent.lows[left_index + 1])
        if isinstance(left, Inner):
            self._repair_joint(left, joint)
        if _size(left) > MAX_FANOUT:
            new_right, low, left_size, right_size = _split_node(left)
            self._nodes[right_no] = new_right
            self._dirty.add(left_no)
            self._dirty.add(right_no)
            parent.counts[left_index] = left_size
            parent.counts[left_index + 1] = right_size
            parent.lows[left_index + 1] = low
            return False
        self._absorb_right(parent, left_index, left_no, right_no)
        return True

    def _absorb_right(self, parent: Inner, left_index: int, left_no: int, right_no: int) -> None:
        """The child at `left_index` took in its right neighbour's keys: drop the neighbour."""
        self._dirty.add(left_no)
        self._free(right_no)
        parent.counts[left_index] += parent.counts[left_index + 1]
        del parent.children[left_index + 1]
        del parent.counts[left_index + 1]
        del parent.lows[left_index + 1]

    def _repair_joint(self, inner: Inner, joint: int) -> None:
        """Two inner nodes were joined, the second's children from `joint` on: a child
        each of them could not mend (it had no sibling) is merged with a neighbour."""
        children = inner.children
        while len(children) > 1:
            small = -1
            for index in (joint - 1, joint):
                if 0 <= index < len(children) and _size(self._node(children[index])) < MIN_FANOUT:
                    small = index
                    break
            if small < 0:
                return
            self._merge_children(inner, small - 1 if small > 0 else 0)

    def _fix_root(self) -> None:
        """After a batch: a too big root gets a new root above its pieces; a root with one
        child gives way to it."""
        state = self.state
        root = self._node(state.root)
        while _size(root) > MAX_FANOUT:
            top = Inner([state.root], [_weight(root)], [b""])
            state.root = self._allocate(top)
            self._cut_child(top, 0)
            root = top
        while isinstance(root, Inner) and len(root.children) == 1:
            self._free(state.root)
            state.root = root.children[0]
            root = self._node(state.root)

    def _allocate(self, node: Node) -> int:
        node_no = self.state.next_node
        self.state.next_node += 1
        self._nodes[node_no] = node
        self._dirty.add(node_no)
        return node_no

    def _free(self, node_no: int) -> None:
        self._nodes.pop(node_no, None)
        self._dirty.discard(node_no)
        self._freed.add(node_no)

    def _split(self, path: list[tuple[int, Inner, int]], node: Node) -> None:
        """Split an overfull node in two halves and hang the right one in its parent."""
        node_no = path[-1][1].children[path[-1][2]] if path else self.state.root
        right, low, left_size, right_size = _split_node(node)
        right_no = self._allocate(right)
        self._dirty.add(node_no)
        if not path:
            self.state.root = self._allocate(
                Inner([node_no, right_no], [left_size, right_size], [b"", low])
            )
            return
        parent_no, parent, index = path[-1]
        parent.children.insert(index + 1, right_no)
        parent.counts[index] = left_size
        parent.counts.insert(index + 1, right_size)
        parent.lows.insert(index + 1, low)
        self._dirty.add(parent_no)
        if len(parent) > MAX_FANOUT:
            self._split(path[:-1], parent)

    def _rebalance(self, path: list[tuple[int, Inner, int]], node: Node) -> None:
        """Merge an underfull node with a sibling, splitting evenly if the pair is too big."""
        parent_no, parent, index = path[-1]
        if len(parent) == 1:
            self._collapse_root(path)
            return
        left_index = index - 1 if index > 0 else index
        left_no, right_no = parent.children[left_index], parent.children[left_index + 1]
        left, right = self._node(left_no), self._node(right_no)
        _merge_into(left, right, parent.lows[left_index + 1])
        self._dirty.add(parent_no)
        if len(left) > MAX_FANOUT:
            new_right, low, left_size, right_size = _split_node(left)
            self._nodes[right_no] = new_right
            self._dirty.update((left_no, right_no))
            parent.counts[left_index : left_index + 2] = [left_size, right_size]
            parent.lows[left_index + 1] = low
            return
        self._absorb_right(parent, left_index, left_no, right_no)
        if len(path) == 1:
            self._collapse_root(path)
        elif len(parent) < MIN_FANOUT:
            self._rebalance(path[:-1], parent)

    def _collapse_root(self, path: list[tuple[int, Inner, int]]) -> None:
        root_no, root, _index = path[0]
        if len(path) == 1 and len(root) == 1:
            self._free(root_no)
            self.state.root = root.children[0]


def _split_node(node: Node) -> tuple[Node, bytes, int, int]:
    """Cut `node` in half in place; returns the right half, its low key and both sizes."""
    if isinstance(node, Leaf):
        half = len(node.keys) // 2
        right = Leaf(node.keys[half:])
        del node.keys[half:]
        return right, right.keys[0], len(node.keys), len(right.keys)
    half = len(node.children) // 2
    right_inner = Inner(node.children[half:], node.counts[half:], node.lows[half:])
    del node.children[half:], node.counts[half:], node.lows[half:]
    return right_inner, right_inner.lows[0], sum(node.counts), sum(right_inner.counts)


def _merge_into(left: Node, right: Node, right_low: bytes) -> None:
    if isinstance(left, Leaf) and isinstance(right, Leaf):
        left.keys.extend(right.keys)
        return
    assert isinstance(left, Inner) and isinstance(right, Inner)
    left.children.extend(right.children)
    left.counts.extend(right.counts)
    left.lows.append(right_low)  # the parent's bound for `right` bounds its first child
    left.lows.extend(right.lows[1:])


def _size(node: Node) -> int:
    """Keys of a leaf, children of an inner node: what the fanout bounds."""
    if isinstance(node, Leaf):
        return len(node.keys)
    return len(node.children)


def _weight(node: Node) -> int:
    """How many keys are under `node`."""
    if isinstance(node, Leaf):
        return len(node.keys)
    total = 0
    for count in node.counts:
        total += count
    return total


def _low(node: Node) -> bytes:
    return node.keys[0] if isinstance(node, Leaf) else node.lows[0]


def _cut(node: Node) -> list[Node]:
    """Cut a too big node into pieces of about 3/4 of the fanout; the node keeps the first."""
    size = _size(node)
    count = -(-size // (MAX_FANOUT * 3 // 4))
    bounds = [size * piece // count for piece in range(count + 1)]
    if isinstance(node, Leaf):
        keys = node.keys
        pieces: list[Node] = [node]
        pieces += [Leaf(keys[bounds[i] : bounds[i + 1]]) for i in range(1, count)]
        node.keys = keys[: bounds[1]]
        return pieces
    children, counts, lows = node.children, node.counts, node.lows
    pieces = [node]
    pieces += [
        Inner(
            children[bounds[i] : bounds[i + 1]],
            counts[bounds[i] : bounds[i + 1]],
            lows[bounds[i] : bounds[i + 1]],
        )
        for i in range(1, count)
    ]
    node.children, node.counts, node.lows = (
        children[: bounds[1]],
        counts[: bounds[1]],
        lows[: bounds[1]],
    )
    return pieces
