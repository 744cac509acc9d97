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
"""

from __future__ import annotations

from tanglenode.storage.context import StoreContext
from tanglenode.storage.documents.view import DocumentsView
from tanglenode.storage.feeds.derived import DerivedView
from tanglenode.storage.view_choice import OptionalView, ViewState
from tanglenode.storage.views.abouts_view import AboutsView
from tanglenode.storage.views.causal_view import CausalTimeView
from tanglenode.storage.views.joined_view import JoinedView
from tanglenode.storage.views.timelines import TimelinesView

VIEWS = (TimelinesView, CausalTimeView, JoinedView, AboutsView, DocumentsView)
"""Every derived view, in the order they are called (a new view: one line here)."""


OPTIONAL = (
    # Off by default: it doubles the timelines' rows and a fifth of ingest time (its
    # cost), for one reader (`--order causal-time`); the web view and every default
    # command read the rank order.
    OptionalView(
        CausalTimeView.name,
        timeline_kind=b"\x03",
        own_tables=(b"ct-nodes", b"ct-time"),
        default=False,
        setting="causal_time",
    ),
)
"""The views a node may turn off (`[views]` in tangled.toml), each a view of `VIEWS`."""

DEFAULT_OPTIONAL = frozenset(view.name for view in OPTIONAL if view.default)


def open_views(ctx: StoreContext, state: ViewState | None = None) -> tuple[DerivedView, ...]:
    """The derived views over the store `ctx` opened: every required view, and the optional
    ones `state` keeps (all of them without a state)."""
    optional = {view.name for view in OPTIONAL}
    return tuple(
        kind(ctx)
        for kind in VIEWS
        if kind.name not in optional or state is None or state.keeps(kind.name)
    )


def view_names() -> tuple[str, ...]:
    return tuple(kind.name for kind in VIEWS)
