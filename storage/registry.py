"""The derived views, listed once: the one place a new index is registered.

`BatchWriter` (storage/feeds/ingest.py) calls each view as messages are stored and
cut back, the store calls each after the causal processor moves, and
`tangled check` and `tangled reindex` (storage/reindex.py) walk the same
list. Order matters where one view reads another's rows in the same
transaction: the timelines come before their causal-time twins and before
the joined views, which place members in timelines the rank engine keeps.
The interface is storage/feeds/derived.py's `DerivedView`.
"""

from __future__ import annotations

from tanglenode.storage.context import StoreContext
from tanglenode.storage.documents.view import DocumentsView
from tanglenode.storage.feeds.derived import DerivedView
from tanglenode.storage.views.abouts_view import AboutsView
from tanglenode.storage.views.causal_view import CausalTimeView
from tanglenode.storage.views.joined_view import JoinedView
from tanglenode.storage.views.timelines import TimelinesView

VIEWS = (TimelinesView, CausalTimeView, JoinedView, AboutsView, DocumentsView)
"""Every derived view, in the order they are called (a new view: one line here)."""


def open_views(ctx: StoreContext) -> tuple[DerivedView, ...]:
    """Every derived view over the store `ctx` opened."""
    return tuple(kind(ctx) for kind in VIEWS)


def view_names() -> tuple[str, ...]:
    return tuple(kind.name for kind in VIEWS)
