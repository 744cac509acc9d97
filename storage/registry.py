"""The derived views, listed once: the one place a new index is registered.

`BatchWriter` (storage/feeds/ingest.py) calls each view as messages are stored and
cut back, the store calls each after the causal processor moves, and
`tangled check` and `tangled reindex` (storage/reindex.py) walk the same
list. Order matters where one view reads another's rows in the same
transaction: the timelines come before their causal-time twins and before
the joined views, which place members in timelines the rank engine keeps.
The interface is storage/feeds/derived.py's `DerivedView`.

`OPTIONAL` lists the views a node may turn off, with their footprint and
default (storage/view_choice.py decides at open which ones a store keeps).
`REGISTRY` is both, as `FeedStore` takes them (`registry=`): a view owns
its tables and its version (storage/feeds/derived.py), so the store opens,
feeds, checks, rebuilds and upgrades whatever a registry lists, and a
registry with one more view (tests/storage/author_counts.py) is a store
with one more index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tanglenode.storage.context import StoreContext
from tanglenode.storage.documents.view import DocumentsView
from tanglenode.storage.feeds.derived import DerivedView, ViewCost
from tanglenode.storage.view_choice import OptionalView
from tanglenode.storage.views.abouts_view import AboutsView
from tanglenode.storage.views.causal_view import CausalTimeView
from tanglenode.storage.views.contacts_view import ContactsView
from tanglenode.storage.views.joined_view import JOINED_ORDER, JoinedView
from tanglenode.storage.views.timelines import TimelinesView

VIEWS = (TimelinesView, CausalTimeView, JoinedView, AboutsView, ContactsView, DocumentsView)
"""Every derived view, in the order they are called (a new view: one line here)."""


OPTIONAL = (
    # Both off by default (docs/STORAGE.md, "Optional views"): each holds a second copy
    # of members the rank orders hold, for one reader; the web view and every default
    # command read the rank orders and the joined states.
    OptionalView(
        CausalTimeView.name,
        timeline_kind=b"\x03",
        own_tables=(b"ct-nodes", b"ct-time"),
        default=False,
        setting="causal_time",
        built_by=CausalTimeView.name,
        cost=CausalTimeView.cost,
    ),
    OptionalView(
        JOINED_ORDER,
        timeline_kind=b"\x02",
        own_tables=(),
        default=False,
        setting="joined_order",
        built_by=JoinedView.name,
        cost=ViewCost(222, 0.07, "`--view joined`: the joined members as timelines, streamed"),
    ),
)
"""The views a node may turn off (`[views]` in tangled.toml): a view of `VIEWS` whose
name they bear, or a part another view writes (`built_by`) when the store keeps it."""


@dataclass(frozen=True, slots=True)
class Registry:
    """The view classes a store keeps, in call order, and the ones among them a node may
    turn off. Each class is built as `kind(ctx)` and declares its `name`, `tables`,
    `version` and `optional` (storage/feeds/derived.py)."""

    views: Sequence[Any]  # classes whose instances are `DerivedView`s
    optional: Sequence[OptionalView]

    def open(self, ctx: StoreContext) -> tuple[DerivedView, ...]:
        """The derived views over the store `ctx` opened: every required view, and the
        optional ones `ctx.views` keeps."""
        optional = {view.name for view in self.optional}
        return tuple(
            kind(ctx)
            for kind in self.views
            if kind.name not in optional or ctx.views.keeps(kind.name)
        )

    def names(self) -> tuple[str, ...]:
        return tuple(kind.name for kind in self.views)


REGISTRY = Registry(VIEWS, OPTIONAL)
"""The store's views: what `FeedStore` opens unless handed another registry."""


def view_names() -> tuple[str, ...]:
    return REGISTRY.names()
