"""The private groups we are in, or were in: found among the `group` tangles, a page at a time.

Theory of operation
-------------------
Nothing about a group is stored apart from its messages (storage/groups/state.py),
so the groups we belong to are found where their keys are. A group is a
`group` tangle whose root is a group's first `group/init`; the tangle
listing (`store.tangles.tangle_page` with `name="group"`) gives them in root
order, a bounded page at a time.

We are, or were, in a group when one of its seals opens with our key. An
epoch's key is sealed in the messages of that epoch's `members` tangle
only (its `group/init`, which roots it, and the `add-member`s that extend
it), and the epochs are the members of the group's `epoch` tangle. So the
test reads those few messages, never the group's posts, and a group we only
replicate costs a handful of reads and seal openings. A group that passes
is read whole (`storage.groups.state.read_group`) for its name, members and
epochs: the cost of `tangled group members` for each group of ours on the
page.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from tanglenode.protocol.groups import GroupContent, GroupFormatError, open_seals
from tanglenode.protocol.identity import Keypair
from tanglenode.storage.errors import UnknownTimeline
from tanglenode.storage.groups.state import EPOCH, GROUP, MEMBERS, GroupView, read_group
from tanglenode.storage.store import FeedStore
from tanglenode.storage.tangle_reads import SCAN, Cursor, TangleInfo

MAX_TRIED = 10_000  # messages whose seals one group's test looks at, at most


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """A group of ours as `group_page` lists it."""

    group: bytes  # its id: the root `group/init`
    name: str | None  # None when the root's own box cannot be opened
    author: bytes  # who created it
    members: int  # current members
    member: bool  # whether we are one of them (False: excluded, or left out of a new epoch)
    epoch: bytes | None  # the current epoch (the one to post in)
    epochs: int
    messages: int  # members of its `group` tangle, whatever their state
    last: int | None  # the newest claimed time (ms) of one of them


def group_page(
    store: FeedStore,
    keypair: Keypair,
    after: Cursor | None = None,
    limit: int = 20,
    *,
    scan: int = SCAN,
) -> tuple[list[GroupInfo], Cursor | None]:
    """Our groups among the next `limit` `group` tangles after `after`, and the next cursor."""
    tangles, following = store.tangles.tangle_page(after, limit, name=GROUP, scan=scan)
    return [info for info in map(_ours(store, keypair), tangles) if info], following


def _ours(store: FeedStore, keypair: Keypair):
    def describe(tangle: TangleInfo) -> GroupInfo | None:
        if tangle.author is None or not holds_a_key(store, keypair, tangle.root):
            return None
        view = read_group(store, keypair, tangle.root)
        state, root = view.state, view.opened.get(tangle.root)
        return GroupInfo(
            group=tangle.root,
            name=root.name if root is not None else None,
            author=tangle.author,
            members=len(state.members),
            member=keypair.public in state.members,
            epoch=state.current_epoch,
            epochs=len(state.epochs),
            messages=tangle.messages,
            last=tangle.last,
        )

    return describe


def holds_a_key(store: FeedStore, keypair: Keypair, group: bytes) -> bool:
    """Whether a seal of one of the group's epochs opens with our key (see the module doc).

    Looks at `MAX_TRIED` messages at most: past that (a group's tangles flooded
    with messages that carry no seal of ours), the group counts as not ours."""
    tried = 0
    epochs = _members(store, group, EPOCH)
    for epoch in [group, *(e for e in epochs if e != group)]:
        for msg_id in _members(store, epoch, MEMBERS):
            tried += 1
            if tried > MAX_TRIED:
                return False
            message = store.feeds.get(msg_id)
            if message is None or GROUP not in message.tangles:
                continue
            try:
                seals = GroupContent.from_content(message.content).seals
            except GroupFormatError:
                continue
            if seals and open_seals(list(seals), keypair) is not None:
                return True
    return False


def _members(store: FeedStore, root: bytes, tangle: str) -> list[bytes]:
    """The first `MAX_TRIED` ids of the timeline of tangle (`tangle`, `root`); none if it
    is not held."""
    name = store.timelines.timeline_name(root, tangle)
    try:
        return [msg_id for _rank, msg_id in store.timelines.timeline(name, 0, MAX_TRIED)]
    except UnknownTimeline:
        return []


MAX_GROUPS_SCANNED = 1_000  # `group` tangles `group_members` looks at, at most


def our_groups(store: FeedStore, keypair: Keypair) -> Iterator[GroupView]:
    """Each group we are or were in (a seal opens with our key), read whole, among the
    first `MAX_GROUPS_SCANNED` `group` tangles, in root order."""
    after: Cursor | None = None
    scanned = 0
    while scanned < MAX_GROUPS_SCANNED:
        tangles, after = store.tangles.tangle_page(after, 50, name=GROUP, scan=SCAN)
        scanned += 50
        for tangle in tangles:
            if tangle.author is not None and holds_a_key(store, keypair, tangle.root):
                yield read_group(store, keypair, tangle.root)
        if after is None:
            break


def group_members(store: FeedStore, keypair: Keypair) -> dict[bytes, bytes]:
    """Member feed -> a group it is in with us (the lowest group id), over every group we
    are a current member of among the first `MAX_GROUPS_SCANNED` `group` tangles: the
    feeds a node carries for its groups (storage/scope.py)."""
    members: dict[bytes, bytes] = {}
    for view in our_groups(store, keypair):
        if keypair.public not in view.state.members:
            continue
        for member in view.state.members:
            if member not in members or view.root < members[member]:
                members[member] = view.root
    return members
