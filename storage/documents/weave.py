"""A document's weave in LMDB: its text atoms in weave order, as runs, in a counted B-tree.

Theory of operation
-------------------
The weave (docs/DOCUMENTS.md) orders every text atom a document ever had.
Atoms typed in one run stay together unless something is later inserted
between them or part of them is deleted, so the weave is stored as a
sequence of *pieces*: consecutive atoms of one message,

    [mno, start, text, flags, cause_mno, cause_index]

`mno` is the message's number within the document (its place in this
node's processed order of the document), `start` the index of the piece's
first atom in that message, `text` one code point per atom, `flags` bit 0
"visible at the processed frontier", bit 1 "some backspace ever named
an atom of this piece" and bit 2 "erased": the message's content was
erased, its atoms keep their places but `text` holds `ERASED` for each and
the piece is never visible (docs/DOCUMENTS.md, "Erased edits"); and the
cause the atom the first atom was typed after (every later atom of the
piece is caused by the one before it).

Pieces live in leaves of at most `MAX_PIECES`; inner nodes hold up to
`MAX_CHILDREN` children with the count of visible atoms under each, so a
text position is found, and a piece's position counted, in O(depth x
fanout) without touching the rest of the document. Leaves are chained left
to right for the walks that read a whole revision. `doc-pieces` maps (mno,
start) of every piece to its leaf, so an atom id finds its piece with one
cursor seek.

    doc-nodes   docno + node (u32)           -> msgpack node
                leaf:  [0, parent, next, [piece, ...]]
                inner: [1, parent, [child, ...], [visible count, ...]]
    doc-pieces  docno + mno + start (u32 each) -> leaf (u32)

Nodes are decoded once per transaction and written back by `flush`, so a
message touching one leaf many times costs one read and one write of it.
Memory is what one transaction touches; nothing is held across them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgpack

from tanglenode.protocol.document import ERASED
from tanglenode.storage.feeds.layout import U32

LEAF, INNER = 0, 1
MAX_PIECES = 64
MAX_CHILDREN = 64
VISIBLE, TOUCHED, ERASED_PIECE = 1, 2, 4
NO_PARENT = 0xFFFFFFFF

# Piece fields.
MNO, START, TEXT, FLAGS, CAUSE_MNO, CAUSE_INDEX = range(6)


def _pack(node: list) -> bytes:
    return msgpack.packb(node, use_bin_type=True)


def _unpack(raw: bytes) -> list:
    return msgpack.unpackb(raw, use_list=True, raw=False)


def visible_length(piece: list) -> int:
    return len(piece[TEXT]) if piece[FLAGS] & VISIBLE else 0


class Weave:
    """One document's weave inside one LMDB transaction (read or write)."""

    def __init__(self, txn, nodes_db, pieces_db, docno: int, root: int, next_node: int) -> None:
        self._txn = txn
        self._nodes_db = nodes_db
        self._pieces_db = pieces_db
        self._prefix = U32.pack(docno)
        self.root = root
        self.next_node = next_node
        self._cache: dict[int, list] = {}
        self._dirty: set[int] = set()

    # -- creation and persistence ------------------------------------------------

    @classmethod
    def create(cls, txn, nodes_db, pieces_db, docno: int, root_piece: list) -> Weave:
        """A new weave holding just the root piece, in leaf 0."""
        weave = cls(txn, nodes_db, pieces_db, docno, 0, 1)
        weave._cache[0] = [LEAF, NO_PARENT, NO_PARENT, [root_piece]]
        weave._dirty.add(0)
        weave._index(root_piece, 0)
        return weave

    def flush(self) -> None:
        """Write every node changed in this transaction."""
        put, prefix, db = self._txn.put, self._prefix, self._nodes_db
        for node_id in self._dirty:
            put(prefix + U32.pack(node_id), _pack(self._cache[node_id]), db=db)
        self._dirty.clear()

    def _node(self, node_id: int) -> list:
        node = self._cache.get(node_id)
        if node is None:
            raw = self._txn.get(self._prefix + U32.pack(node_id), db=self._nodes_db)
            if raw is None:
                raise LookupError(f"weave node {node_id} is missing")
            node = self._cache[node_id] = _unpack(raw)
        return node

    def _touch(self, node_id: int) -> list:
        self._dirty.add(node_id)
        return self._node(node_id)

    def _index(self, piece: list, leaf_id: int) -> None:
        key = self._prefix + U32.pack(piece[MNO]) + U32.pack(piece[START])
        self._txn.put(key, U32.pack(leaf_id), db=self._pieces_db)

    # -- finding pieces ------------------------------------------------------------

    def locate(self, mno: int, index: int) -> tuple[int, int] | None:
        """(leaf, slot) of the piece holding atom (mno, index), None if no piece does."""
        prefix = self._prefix + U32.pack(mno)
        cursor = self._txn.cursor(db=self._pieces_db)
        key = prefix + U32.pack(index)
        if cursor.set_range(key):
            if cursor.key() != key and not cursor.prev():
                return None
        elif not cursor.last():
            return None
        found = cursor.key()
        if found[:8] != prefix:
            return None
        start = U32.unpack(found[8:12])[0]
        leaf_id = U32.unpack(cursor.value())[0]
        pieces = self._node(leaf_id)[3]
        for slot, piece in enumerate(pieces):
            if piece[START] == start and piece[MNO] == mno:
                if index < start + len(piece[TEXT]):
                    return leaf_id, slot
                return None
        raise LookupError(f"piece ({mno}, {start}) is not in its leaf {leaf_id}")

    def piece(self, leaf_id: int, slot: int) -> list:
        return self._node(leaf_id)[3][slot]

    def next_slot(self, leaf_id: int, slot: int) -> tuple[int, int] | None:
        """The piece after (leaf, slot) in weave order, None at the end."""
        leaf = self._node(leaf_id)
        if slot + 1 < len(leaf[3]):
            return leaf_id, slot + 1
        while leaf[2] != NO_PARENT:
            leaf_id = leaf[2]
            leaf = self._node(leaf_id)
            if leaf[3]:
                return leaf_id, 0
        return None

    def visible_before(self, leaf_id: int, slot: int) -> int:
        """How many visible atoms come before piece (leaf, slot)."""
        leaf = self._node(leaf_id)
        count = sum(visible_length(piece) for piece in leaf[3][:slot])
        child, parent_id = leaf_id, leaf[1]
        while parent_id != NO_PARENT:
            parent = self._node(parent_id)
            at = parent[2].index(child)
            count += sum(parent[3][:at])
            child, parent_id = parent_id, parent[1]
        return count

    def visible_total(self) -> int:
        node = self._node(self.root)
        if node[0] == INNER:
            return sum(node[3])
        return sum(visible_length(piece) for piece in node[3])

    def at_visible(self, position: int) -> tuple[int, int, int]:
        """(leaf, slot, offset) of the visible atom at text position `position`."""
        node_id = self.root
        node = self._node(node_id)
        while node[0] == INNER:
            for child, count in zip(node[2], node[3], strict=True):
                if position < count:
                    node_id = child
                    break
                position -= count
            else:
                raise IndexError("position past the end of the text")
            node = self._node(node_id)
        for slot, piece in enumerate(node[3]):
            length = visible_length(piece)
            if position < length:
                return node_id, slot, position
            position -= length
        raise IndexError("position past the end of the text")

    def leaves(self) -> Iterator[list[list]]:
        """Every leaf's pieces, left to right (the first leaf is node 0)."""
        node_id = 0
        while node_id != NO_PARENT:
            leaf = self._node(node_id)
            yield leaf[3]
            node_id = leaf[2]

    # -- changing the weave -----------------------------------------------------

    def split(self, leaf_id: int, slot: int, offset: int) -> tuple[int, int]:
        """Cut piece (leaf, slot) before its `offset`-th atom; returns the right part's place."""
        piece = self._touch(leaf_id)[3][slot]
        text = piece[TEXT]
        right = [
            piece[MNO],
            piece[START] + offset,
            text[offset:],
            piece[FLAGS],
            piece[MNO],
            piece[START] + offset - 1,
        ]
        piece[TEXT] = text[:offset]
        return self._insert(leaf_id, slot + 1, right, 0)

    def insert_before(self, leaf_id: int, slot: int, piece: list) -> tuple[int, int]:
        """Put a new piece right before (leaf, slot); returns its place."""
        return self._insert(leaf_id, slot, piece, visible_length(piece))

    def insert_after(self, leaf_id: int, slot: int, piece: list) -> tuple[int, int]:
        """Put a new piece right after (leaf, slot); returns its place."""
        return self._insert(leaf_id, slot + 1, piece, visible_length(piece))

    def extend(self, leaf_id: int, slot: int, text: str) -> None:
        """Append atoms to a visible piece (the next atoms of its message, typed after it)."""
        piece = self._touch(leaf_id)[3][slot]
        piece[TEXT] += text
        if piece[FLAGS] & VISIBLE:
            self._add_visible(leaf_id, len(text))

    def set_visible(self, leaf_id: int, slot: int, visible: bool) -> None:
        """Show or hide a whole piece at the frontier (marking it touched by a backspace);
        an erased piece stays hidden."""
        piece = self._touch(leaf_id)[3][slot]
        was = piece[FLAGS] & VISIBLE
        erased = piece[FLAGS] & ERASED_PIECE
        visible = visible and not erased
        piece[FLAGS] = (VISIBLE if visible else 0) | TOUCHED | erased
        if bool(was) != visible:
            length = len(piece[TEXT])
            self._add_visible(leaf_id, length if visible else -length)

    def erase(self, leaf_id: int, slot: int) -> int:
        """Take piece (leaf, slot)'s characters out: each atom keeps its place, holding
        `ERASED`, and the piece is hidden for good; how many atoms were visible."""
        piece = self._touch(leaf_id)[3][slot]
        shown = visible_length(piece)
        piece[TEXT] = ERASED * len(piece[TEXT])
        piece[FLAGS] = (piece[FLAGS] & TOUCHED) | ERASED_PIECE
        if shown:
            self._add_visible(leaf_id, -shown)
        return shown

    def _add_visible(self, node_id: int, delta: int) -> None:
        parent_id = self._node(node_id)[1]
        while parent_id != NO_PARENT:
            parent = self._touch(parent_id)
            parent[3][parent[2].index(node_id)] += delta
            node_id, parent_id = parent_id, parent[1]

    def _insert(self, leaf_id: int, slot: int, piece: list, visible: int) -> tuple[int, int]:
        leaf = self._touch(leaf_id)
        leaf[3].insert(slot, piece)
        self._index(piece, leaf_id)
        if visible:
            self._add_visible(leaf_id, visible)
        if len(leaf[3]) <= MAX_PIECES:
            return leaf_id, slot
        right_id = self._split_leaf(leaf_id)
        half = len(leaf[3])
        return (leaf_id, slot) if slot < half else (right_id, slot - half)

    def _new_node(self, node: list) -> int:
        node_id = self.next_node
        self.next_node += 1
        self._cache[node_id] = node
        self._dirty.add(node_id)
        return node_id

    def _split_leaf(self, leaf_id: int) -> int:
        leaf = self._touch(leaf_id)
        half = len(leaf[3]) // 2
        moved = leaf[3][half:]
        del leaf[3][half:]
        right_id = self._new_node([LEAF, leaf[1], leaf[2], moved])
        leaf[2] = right_id
        for piece in moved:
            self._index(piece, right_id)
        self._attach(leaf_id, right_id, sum(visible_length(piece) for piece in moved))
        return right_id

    def _attach(self, left_id: int, right_id: int, right_visible: int) -> None:
        """Hang new node `right_id` beside `left_id` under their parent (a new root if none)."""
        left = self._node(left_id)
        parent_id = left[1]
        if parent_id == NO_PARENT:
            total = (
                sum(left[3])
                if left[0] == INNER
                else sum(visible_length(piece) for piece in left[3])
            )
            root_id = self._new_node(
                [INNER, NO_PARENT, [left_id, right_id], [total, right_visible]]
            )
            left[1] = root_id
            self._touch(right_id)[1] = root_id
            self.root = root_id
            return
        parent = self._touch(parent_id)
        at = parent[2].index(left_id)
        parent[2].insert(at + 1, right_id)
        parent[3].insert(at + 1, right_visible)
        parent[3][at] -= right_visible
        if len(parent[2]) > MAX_CHILDREN:
            self._split_inner(parent_id)

    def _split_inner(self, node_id: int) -> None:
        node = self._touch(node_id)
        half = len(node[2]) // 2
        children, counts = node[2][half:], node[3][half:]
        del node[2][half:], node[3][half:]
        right_id = self._new_node([INNER, node[1], children, counts])
        for child in children:
            self._touch(child)[1] = right_id
        self._attach(node_id, right_id, sum(counts))


def read_node(txn, nodes_db, docno: int, node_id: int) -> Any:
    raw = txn.get(U32.pack(docno) + U32.pack(node_id), db=nodes_db)
    return None if raw is None else _unpack(raw)
