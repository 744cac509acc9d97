"""Tangle tips: the joined members no joined member names in `previous`.

Theory of operation
-------------------
`publish` cites a tangle's tips as its new message's `previous`
(docs/FORMAT.md, "Tangles"), so only joined members are tips: a pending or
invalid member is never cited, and a member that names one does not stop
it being a tip. storage.views.joined decides when a member joins, and calls
`tip_joined`: a member joins only after every member it names, and before
any joined member can name it, so at that moment it becomes a tip and each
of its previous stops being one. That is two row writes per link, on the
tangle's few `tangle-tips` rows; nothing here grows with the tangle.

When joined members leave the view (their feed was cut back,
storage.feeds.invalidation), `untip_left` drops them as tips and makes tips
again of the joined members they named that no remaining joined member
names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tanglenode.storage.engine.timeline import TimelineTables
from tanglenode.storage.feeds.derived import Table
from tanglenode.storage.feeds.layout import tangle_key

if TYPE_CHECKING:
    from tanglenode.storage.context import StoreContext
    from tanglenode.storage.feeds.message_ids import MessageIds

# The joined view's own tables (storage.views.joined: states, waiting rows, counts), with the
# tips kept here.
TANGLE_TABLES = (
    Table(b"tangle-state"),
    Table(b"tangle-pending"),
    Table(b"tangle-tips", dupsort=True),
    Table(b"tangle-joined"),
)


@dataclass(frozen=True, slots=True)
class TangleTables:
    """The handles of `TANGLE_TABLES` a store opened, the index by id the joined view
    reads, and the timelines' tables whose numbers key `tangle-state`."""

    tangle_state: Any  # tangle timeline no. + member ref no. -> state (storage.views.joined)
    tangle_pending: Any  # id + tangle key + id -> "": a member waits on that id
    tangle_tips: Any  # tangle key -> id (dupsort): its tips
    tangle_joined: Any  # tangle key -> u32: how many of its members are joined
    ids: MessageIds  # the feed store's `message-ids` (storage.feeds.message_ids)
    timelines: TimelineTables  # tl-names (tangle key -> number), tl-refs/tl-ref-names

    @classmethod
    def of(cls, ctx: StoreContext) -> TangleTables:
        handles = ctx.view_tables
        return cls(
            *(handles[table.name] for table in TANGLE_TABLES),
            ctx.tables.ids,
            ctx.timeline_tables,
        )


def tip_joined(
    txn, tables: TangleTables, key: bytes, member: bytes, previous: Sequence[bytes]
) -> None:
    """`member` of the tangle with this key just joined, naming `previous` (all joined)."""
    for named in previous:
        txn.delete(key, named, db=tables.tangle_tips)
    txn.put(key, member, db=tables.tangle_tips, dupdata=True)


def untip_left(
    txn,
    tables: TangleTables,
    key: bytes,
    left: Iterable[bytes],
    previous: Mapping[bytes, Sequence[bytes]],
    tip_again: Callable[[bytes], bool],
) -> None:
    """Members `left` are no longer joined (their rows already say so); repair the tips.

    `previous[m]` is what each of them named; `tip_again(p)` whether p is a
    joined member that no joined member names any more.
    """
    left = list(left)
    gone = set(left)
    for member in left:
        txn.delete(key, member, db=tables.tangle_tips)
    for member in left:
        for named in previous[member]:
            if named not in gone and tip_again(named):
                txn.put(key, named, db=tables.tangle_tips, dupdata=True)


def tips_of(txn, tables: TangleTables, root: bytes, name: str) -> list[bytes]:
    """The current tips of tangle (name, root), ascending by id."""
    key = tangle_key(root, name)
    cursor = txn.cursor(db=tables.tangle_tips)
    if not cursor.set_key(key):
        return []
    return [bytes(value) for value in cursor.iternext_dup(keys=False)]
