"""An editor's view of a text: its atom ids, in order, in blocks of an int array.

The trace replay (`storage.clients.trace_replay`) keeps one per agent and turns each
patch's positions into atom ids with it. Blocks keep an edit's cost to one
block's length, and a lookup starts from the block of the previous one, so
an editor typing in one place costs O(1) block steps; a jump across the text
costs O(blocks).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator

BLOCK = 512  # atoms per block (a block splits past twice this)


class AtomView:
    """A text as a sequence of atom ids (ints), in blocks: an edit moves one block only.

    Lookups start from the block of the previous one, so an editor's local
    edits cost O(1) block steps; a jump across the text costs O(blocks).
    """

    __slots__ = ("_at", "_at_start", "_blocks", "_length")

    def __init__(self, atoms: Iterable[int] = ()) -> None:
        data = array("q", atoms)
        self._blocks = [data[i : i + BLOCK] for i in range(0, len(data), BLOCK)] or [array("q")]
        self._length = len(data)
        self._at, self._at_start = 0, 0  # the last block found and its first position

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[int]:
        for block in self._blocks:
            yield from block

    def _seek(self, position: int) -> tuple[array, int]:
        """The block holding `position` (the last block for the end) and its start."""
        blocks, at, start = self._blocks, self._at, self._at_start
        block = blocks[at]
        if start <= position < start + len(block):  # an editor's next edit: mostly here
            return block, start
        while position < start:
            at -= 1
            start -= len(blocks[at])
        last = len(blocks) - 1
        while at < last and position >= start + len(blocks[at]):
            start += len(blocks[at])
            at += 1
        self._at, self._at_start = at, start
        return blocks[at], start

    def copy(self) -> AtomView:
        twin = AtomView()
        twin._blocks = [block[:] for block in self._blocks]
        twin._length = self._length
        return twin

    def get(self, position: int) -> int:
        block, start = self._seek(position)
        return block[position - start]

    def insert(self, position: int, first: int, count: int) -> None:
        """Insert atoms first .. first+count-1 at `position`."""
        block, start = self._seek(position)
        offset = position - start
        if count == 1:
            block.insert(offset, first)
        else:
            block[offset:offset] = array("q", range(first, first + count))
        self._length += count
        if len(block) > 2 * BLOCK:
            self._blocks[self._at : self._at + 1] = [
                block[i : i + BLOCK] for i in range(0, len(block), BLOCK)
            ]

    def delete(self, position: int, count: int) -> array:
        """Remove `count` atoms from `position` on; returns them in text order."""
        removed = array("q")
        self._length -= count
        while count:
            block, start = self._seek(position)
            offset = position - start
            taken = min(count, len(block) - offset)
            removed.extend(block[offset : offset + taken])
            del block[offset : offset + taken]
            count -= taken
            if not block and len(self._blocks) > 1:
                del self._blocks[self._at]
                if self._at == len(self._blocks):
                    self._at -= 1
                    self._at_start -= len(self._blocks[self._at])
        return removed
