"""The group recipe and the state every member derives from it (docs/GROUPS.md).

Theory of operation
-------------------
Input: a group's messages as `GroupEvent`s, each with its place in the
tangles and, where this node can open it, its private part. The recipe:

1. **The group tangle.** Starting from the root `group/init`, a candidate
   joins once every message in its `group` previous has joined; the others
   are set aside (`pending`). Joined messages are then visited in (rank,
   id) order, a topological order every node computes alike.
2. **Validity from the causal past.** Each message sees the membership
   events (inits, adds, excludes) among its ancestors, and only those. An
   epoch's members, as seen by a message, are the members listed in the
   epoch's `group/init` plus those added by valid `add-member`s of that
   epoch in the message's past, minus those excluded by valid
   `exclude-member`s in its past. Then:
   - the root `group/init` is valid if its author lists itself as member;
   - a later `group/init` (a new epoch) is valid if its author is a member
     of an epoch it follows (its `epoch` previous, all valid and in its
     past), lists itself, and lists no one who is not a member of one of
     those epochs: an epoch never adds people, `add-member` does;
   - `add-member`, `exclude-member` and `group/post` are valid if their
     epoch's init is in their past and their author is a member of that
     epoch as seen from them; an excluded feed must be a member.
   A message that is not valid is left out of the state, on every node.
   A member excluded later keeps what it wrote before: validity looks only
   at the message's own past.
3. **The state.** Epochs are the valid inits; each epoch's members are its
   init's plus all its valid adds, minus all its valid excludes. The
   current epochs are the epoch tangle's tips (valid inits no valid init
   follows). **Concurrent epochs** (two tips, e.g. two members excluded
   different people at once): the group's members are those of every tip
   (the intersection: an exclusion in any branch holds), and the epoch to
   post in is the tip with the lowest id, until someone publishes an init
   that follows all tips, which merges them.
4. **The exclusion rule, shared.** "A message sealed in epoch E by X is
   invalid when its past holds a valid exclusion of X from E" is
   `excluded_in_past`, the one function both the group messages (here: the
   past is the group-tangle ancestry) and a private document's messages
   (storage/documents/engine.py: the past is what the message's timeframe
   names) ask, so that the two rules cannot drift. `GroupState.exclusions`
   lists the valid exclusions, which the node hands to its document engine
   (storage/groups/doc_keys.py).

Everything here is a function of the set of messages, never of arrival
order, so every node that holds the same messages derives the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tanglenode.protocol.groups import Kind, Private


@dataclass(frozen=True, slots=True)
class GroupEvent:
    id: bytes
    author: bytes
    group_previous: tuple[bytes, ...]  # () for the root
    epoch: bytes  # the epoch it belongs to; an init's own id
    epoch_previous: tuple[bytes, ...] = ()  # an init's predecessors in the epoch tangle
    private: Private | None = None  # None when this node cannot open it


@dataclass(frozen=True, slots=True)
class Exclusion:
    """A valid `exclude-member` (`id`): `members` are out of `epoch` for every message
    whose past holds it."""

    id: bytes
    epoch: bytes
    members: frozenset[bytes]


EXCLUDED_IN_PAST = "its author was excluded from its epoch in its past"


def excluded_in_past(
    author: bytes,
    epoch: bytes,
    exclusions: Iterable[Exclusion],
    in_past: Callable[[bytes], bool],
) -> Exclusion | None:
    """The exclusion that makes a message by `author` sealed in `epoch` invalid, if any:
    one of `exclusions` (valid ones) of `author` from `epoch` that the message's past
    holds (`in_past(exclusion id)`).

    The one rule for every message written with an epoch's key: a group's
    own messages (`derive`: their past is their group-tangle ancestry) and a
    private document's (storage/documents/engine.py: their past is what their
    timeframe names). A message written concurrently with the exclusion,
    without it in its past, still counts; one written after its author
    processed its own exclusion, and saying so, does not.
    """
    for exclusion in exclusions:
        if exclusion.epoch == epoch and author in exclusion.members and in_past(exclusion.id):
            return exclusion
    return None


@dataclass
class Epoch:
    id: bytes
    author: bytes
    previous: tuple[bytes, ...]
    members: set[bytes] = field(default_factory=set)
    excluded: set[bytes] = field(default_factory=set)

    @property
    def current_members(self) -> set[bytes]:
        return self.members - self.excluded


@dataclass
class GroupState:
    root: bytes
    order: list[bytes]  # the group tangle's members in (rank, id) order
    valid: set[bytes]
    invalid: dict[bytes, str]  # id -> why it was left out
    unreadable: set[bytes]  # joined, but this node cannot open them
    pending: set[bytes]  # candidates whose previous are not all present
    epochs: dict[bytes, Epoch]
    tips: list[bytes]  # current epochs, lowest id first
    exclusions: list[Exclusion] = field(default_factory=list)  # the valid ones, in order

    @property
    def members(self) -> set[bytes]:
        """The group's members now: those of every current epoch."""
        if not self.tips:
            return set()
        sets = [self.epochs[tip].current_members for tip in self.tips]
        return set.intersection(*sets)

    @property
    def current_epoch(self) -> bytes | None:
        return self.tips[0] if self.tips else None


def _join(events: dict[bytes, GroupEvent], root: bytes) -> tuple[list[bytes], set[bytes]]:
    """The recipe's step 1: joined ids in (rank, id) order, and the pending rest."""
    rank: dict[bytes, int] = {root: 0}
    waiting = {i: e for i, e in events.items() if i != root}
    progress = True
    while progress:
        progress = False
        for event_id, event in list(waiting.items()):
            if event.group_previous and all(p in rank for p in event.group_previous):
                rank[event_id] = 1 + max(rank[p] for p in event.group_previous)
                del waiting[event_id]
                progress = True
    order = sorted(rank, key=lambda i: (rank[i], i))
    return order, set(waiting)


def derive(events: Iterable[GroupEvent], root: bytes) -> GroupState:
    by_id = {event.id: event for event in events}
    if root not in by_id:
        return GroupState(root, [], set(), {}, set(), set(by_id), {}, [])
    order, pending = _join(by_id, root)
    past: dict[bytes, frozenset[bytes]] = {}  # id -> valid membership events before it
    valid: set[bytes] = set()
    invalid: dict[bytes, str] = {}
    unreadable: set[bytes] = set()
    for event_id in order:
        event = by_id[event_id]
        seen: frozenset[bytes] = frozenset().union(
            *(
                past[p] | ({p} if _changes_membership(by_id[p], valid) else set())
                for p in event.group_previous
            )
        )
        past[event_id] = seen
        if event.private is None:
            unreadable.add(event_id)
            continue
        why = _why_invalid(event, by_id, seen, root)
        if why is None:
            valid.add(event_id)
        else:
            invalid[event_id] = why
    epochs = _epochs(by_id, order, valid)
    followed = {p for epoch in epochs.values() for p in epoch.previous}
    tips = sorted(epoch_id for epoch_id in epochs if epoch_id not in followed)
    exclusions = [
        _exclusion(by_id[i]) for i in order if i in valid and _held(by_id[i]).kind is Kind.EXCLUDE
    ]
    return GroupState(root, order, valid, invalid, unreadable, pending, epochs, tips, exclusions)


def _exclusion(event: GroupEvent) -> Exclusion:
    assert event.private is not None and event.private.kind is Kind.EXCLUDE
    return Exclusion(event.id, event.epoch, frozenset(event.private.members))


def _held(event: GroupEvent) -> Private:
    """The private part of a readable event: every event the membership rules meet."""
    assert event.private is not None, "an unreadable event has no part in membership"
    return event.private


def _changes_membership(event: GroupEvent, valid: set[bytes]) -> bool:
    return event.id in valid and event.private is not None and event.private.kind is not Kind.POST


def _members_seen(
    epoch: bytes, by_id: dict[bytes, GroupEvent], seen: frozenset[bytes]
) -> set[bytes] | None:
    """Members of `epoch` as a message with membership past `seen` sees them."""
    init = by_id.get(epoch)
    if init is None or epoch not in seen:
        return None
    members = set(_held(init).members)
    for event_id in seen:
        event = by_id[event_id]
        if event.epoch != epoch or _held(event).kind is Kind.INIT:
            continue
        if _held(event).kind is Kind.ADD:
            members |= set(_held(event).members)
    for event_id in seen:
        event = by_id[event_id]
        if event.epoch == epoch and _held(event).kind is Kind.EXCLUDE:
            members -= set(_held(event).members)
    return members


def _why_invalid(
    event: GroupEvent, by_id: dict[bytes, GroupEvent], seen: frozenset[bytes], root: bytes
) -> str | None:
    private = event.private
    assert private is not None
    if private.kind is Kind.INIT:
        if event.id != event.epoch:
            return "an init opens its own epoch"
        if event.author not in private.members:
            return "an init's author must be among its members"
        if event.id == root:
            return None if not event.epoch_previous else "the root follows no epoch"
        if not event.epoch_previous:
            return "a later init must follow an epoch"
        eligible: set[bytes] = set()
        author_is_member = False
        for previous in event.epoch_previous:
            members = _members_seen(previous, by_id, seen)
            if members is None:
                return "it follows an epoch that is not valid in its past"
            eligible |= members
            author_is_member |= event.author in members
        if not author_is_member:
            return "its author is not a member of the epoch it follows"
        if not set(private.members) <= eligible:
            return "a new epoch may only keep members, not add them"
        return None
    members = _members_seen(event.epoch, by_id, seen)
    if members is None:
        return "its epoch is not valid in its past"
    exclusions = (
        _exclusion(by_id[i]) for i in sorted(seen) if _held(by_id[i]).kind is Kind.EXCLUDE
    )
    if excluded_in_past(event.author, event.epoch, exclusions, seen.__contains__):
        return EXCLUDED_IN_PAST
    if event.author not in members:
        return "its author is not a member of its epoch"
    if private.kind is Kind.EXCLUDE and not set(private.members) <= members:
        return "it excludes someone who is not a member"
    return None


def _epochs(
    by_id: dict[bytes, GroupEvent], order: list[bytes], valid: set[bytes]
) -> dict[bytes, Epoch]:
    epochs: dict[bytes, Epoch] = {}
    for event_id in order:
        event = by_id[event_id]
        if event_id in valid and _held(event).kind is Kind.INIT:
            epochs[event_id] = Epoch(
                event_id, event.author, event.epoch_previous, set(_held(event).members)
            )
    for event_id in order:
        event = by_id[event_id]
        if event_id not in valid or event.epoch not in epochs:
            continue
        if _held(event).kind is Kind.ADD:
            epochs[event.epoch].members |= set(_held(event).members)
        elif _held(event).kind is Kind.EXCLUDE:
            epochs[event.epoch].excluded |= set(_held(event).members)
    return epochs
