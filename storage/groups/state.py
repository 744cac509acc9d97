"""Private groups on a node: reading a group from the store, and writing to it.

Theory of operation
-------------------
Nothing about a group is kept apart from its messages. To read group G,
the node walks G's `group` tangle timeline, opens each message's readable
envelope, finds the epoch keys it can (an epoch's key is sealed to each of
its members in its `group/init`, and to each later member in the
`add-member` that added it), opens what those keys open, and derives the
state with `protocol.group_state.derive`. Writing publishes ordinary
messages with the tangles of docs/GROUPS.md ("Messages") and sealed content
(`protocol.groups`): a new epoch gets a fresh random key.

These functions are synchronous over a `FeedStore`; the IPC server runs
reads in worker threads and publishes through its store service.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from tanglenode.protocol.errors import TanglenodeError
from tanglenode.protocol.group_state import GroupEvent, GroupState, derive
from tanglenode.protocol.groups import (
    MAX_HISTORY,
    GroupContent,
    GroupFormatError,
    Kind,
    Private,
    new_epoch_key,
    open_message,
    open_seals,
    seal_message,
)
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.message import Message
from tanglenode.storage.errors import UnknownTimeline
from tanglenode.storage.store import FeedStore
from tanglenode.storage.timeline_reads import WriterPast
from tanglenode.storage.views.timelines import timeline_name, view_timeline

GROUP, EPOCH, MEMBERS = "group", "epoch", "members"


class GroupError(TanglenodeError):
    """A group operation that cannot be done: unknown group, not a member, ..."""


class UnknownGroup(GroupError):
    """No group has that root in the store (IPC: `not-found`, not `group`)."""


@dataclass
class GroupView:
    """A group as this node sees it: its messages, the keys it holds, the derived state."""

    root: bytes
    messages: dict[bytes, Message]
    keys: dict[bytes, bytes]  # epoch id -> key
    opened: dict[bytes, Private]
    state: GroupState
    events: list[GroupEvent] = field(default_factory=list)  # what `state` was derived from

    def key_of(self, epoch: bytes) -> bytes:
        key = self.keys.get(epoch)
        if key is None:
            raise GroupError("this node does not hold that epoch's key")
        return key


def read_group(store: FeedStore, keypair: Keypair, root: bytes) -> GroupView:
    try:
        messages = store.tangles.group_messages(root, GROUP)
    except UnknownTimeline:
        raise UnknownGroup("no such group in the store") from None
    envelopes: dict[bytes, GroupContent] = {}
    for msg_id, message in messages.items():
        try:
            envelopes[msg_id] = GroupContent.from_content(message.content)
        except GroupFormatError:
            continue  # not a group message: it never joins the state
    keys: dict[bytes, bytes] = {}
    for msg_id, envelope in envelopes.items():
        if envelope.seals:
            key = open_seals(list(envelope.seals), keypair)
            epoch = envelope.epoch or msg_id
            if key is not None and epoch not in keys and _opens_init(envelopes, epoch, key):
                keys[epoch] = key
    opened = _open_all(envelopes, keys)
    events = []
    for msg_id, envelope in envelopes.items():
        epoch = envelope.epoch or msg_id
        private = opened.get(msg_id)
        message = messages[msg_id]
        events.append(
            GroupEvent(
                msg_id,
                message.author,
                tuple(message.tangles[GROUP].previous or ()),
                epoch,
                tuple(message.tangles[EPOCH].previous or ()) if EPOCH in message.tangles else (),
                private,
            )
        )
    return GroupView(root, messages, keys, opened, derive(events, root), events)


def _opens_init(envelopes: dict[bytes, GroupContent], epoch: bytes, key: bytes) -> bool:
    """Whether `key` opens epoch `epoch`'s own `group/init`: a key sealed to us, or handed
    down, is believed only then (anyone may seal a key of their own making to us)."""
    init = envelopes.get(epoch)
    if init is None or init.epoch is not None:
        return False
    try:
        open_message(init, key)
    except GroupFormatError:
        return False
    return True


def _open_all(envelopes: dict[bytes, GroupContent], keys: dict[bytes, bytes]) -> dict:
    """Every message the keys open; an opened add-member's earlier epochs' keys join
    `keys` (each only if it opens its epoch's own `group/init`, so a member cannot hand
    out a wrong one), and what they open is opened in turn."""
    opened: dict[bytes, Private] = {}
    tried: set[bytes] = set()
    while True:
        for msg_id, envelope in envelopes.items():
            epoch = envelope.epoch or msg_id
            if msg_id in opened or msg_id in tried or epoch not in keys:
                continue
            tried.add(msg_id)
            try:
                opened[msg_id] = open_message(envelope, keys[epoch])
            except GroupFormatError:
                continue
        learnt = False
        for private in list(opened.values()):
            for epoch, key in private.history:
                if epoch not in keys and _opens_init(envelopes, epoch, key):
                    keys[epoch] = key
                    learnt = True
        if not learnt:
            return opened


# -- what to publish (content and tangles), given a view --------------------------------


def create(keypair: Keypair, name: str) -> tuple[dict[str, Any], dict[str, bytes | None]]:
    """A new group: its root `group/init` roots the group, epoch and members tangles."""
    private = Private(Kind.INIT, (keypair.public,), name=name)
    content = seal_message(private, new_epoch_key(), None, key_for=(keypair.public,))
    return content, {GROUP: None, EPOCH: None, MEMBERS: None}


def _current(view: GroupView, keypair: Keypair) -> bytes:
    epoch = view.state.current_epoch
    if epoch is None or keypair.public not in view.state.epochs[epoch].current_members:
        raise GroupError("we are not a member of this group's current epoch")
    return epoch


def add(view: GroupView, keypair: Keypair, members: list[bytes]) -> tuple[dict, dict]:
    epoch = _current(view, keypair)
    earlier = tuple(  # the newest epochs' keys, if there are more than a message holds
        (e, view.keys[e]) for e in view.state.epochs if e != epoch and e in view.keys
    )[-MAX_HISTORY:]
    content = seal_message(
        Private(Kind.ADD, tuple(members), history=earlier),
        view.key_of(epoch),
        epoch,
        key_for=tuple(members),
    )
    return content, {GROUP: view.root, MEMBERS: epoch}


def exclude(view: GroupView, keypair: Keypair, members: list[bytes]) -> tuple[dict, dict]:
    epoch = _current(view, keypair)
    content = seal_message(Private(Kind.EXCLUDE, tuple(members)), view.key_of(epoch), epoch)
    return content, {GROUP: view.root, MEMBERS: epoch}


def new_epoch(view: GroupView, keypair: Keypair) -> tuple[dict, dict]:
    """The `group/init` that follows every current epoch, keeping the current members."""
    _current(view, keypair)
    members = tuple(sorted(view.state.members))
    content = seal_message(Private(Kind.INIT, members), new_epoch_key(), None, key_for=members)
    return content, {GROUP: view.root, EPOCH: view.root, MEMBERS: None}


def exclusion(view: GroupView, keypair: Keypair, members: list[bytes]) -> list[tuple[dict, dict]]:
    """Excluding `members`: the `exclude-member` and the new epoch's `group/init`, to be
    published together, all or nothing (`store.writes.publish_batch(..., whole=True)`).

    The new epoch keeps the members the group has once the exclusion joins it,
    as reading the group back after publishing the exclusion alone would find
    them; it follows the exclusion in the group tangle, as the batch gives the
    second message the tips the first left. If there is no such epoch (we
    exclude ourselves), `GroupError` before anything is signed.
    """
    excluding = exclude(view, keypair, members)
    return [excluding, new_epoch(_after_excluding(view, keypair, members), keypair)]


_UNSIGNED = bytes(32)  # stands for the exclusion in the state derived before it is signed


def _after_excluding(view: GroupView, keypair: Keypair, members: list[bytes]) -> GroupView:
    """`view` with our exclusion of `members` joined, derived before it is signed: an event
    after every joined message (the tangle's tips), as `exclude` publishes it."""
    joined = set(view.state.order)
    followed = {p for event in view.events if event.id in joined for p in event.group_previous}
    excluding = GroupEvent(
        _UNSIGNED,
        keypair.public,
        tuple(sorted(joined - followed)),
        _current(view, keypair),
        private=Private(Kind.EXCLUDE, tuple(members)),
    )
    events = [*view.events, excluding]
    return replace(view, state=derive(events, view.root), events=events)


def post(view: GroupView, keypair: Keypair, content: Any) -> tuple[dict, dict]:
    epoch = _current(view, keypair)
    sealed = seal_message(Private(Kind.POST, content=content), view.key_of(epoch), epoch)
    return sealed, {GROUP: view.root}


def final(store: FeedStore, view: GroupView) -> int:
    """How many leading positions of the group timeline no current member can change.

    A valid future message of member X has in its past X's own last group
    message (X's node holds its own feed) and one of the messages that made
    X a member, so it ranks above both; the least such bound over the
    current members, and any member waiting for a missing message, bound
    what can still move (see `store.timelines.writers_final`).
    """
    state = view.state
    if not state.members:
        return 0  # we cannot tell who may still write (not a member, or no state yet)
    own: dict[bytes, list[bytes]] = {}
    intros: dict[bytes, list[bytes]] = {}
    for msg_id in state.valid:
        message = view.messages[msg_id]
        own.setdefault(message.author, []).append(msg_id)
        private = view.opened[msg_id]
        if private.kind in (Kind.INIT, Kind.ADD):
            for member in private.members:
                intros.setdefault(member, []).append(msg_id)
    writers = [
        WriterPast(all_of=tuple(own.get(member, ())), one_of=tuple(intros.get(member, ())))
        for member in state.members
    ]
    return store.timelines.writers_final(timeline_name(view.root, GROUP), writers)


# -- what to show ------------------------------------------------------------------------


def describe(view: GroupView) -> dict[str, Any]:
    state = view.state
    name = view.opened[view.root].name if view.root in view.opened else None
    return {
        "group": view.root,
        "name": name,
        "members": sorted(state.members),
        "current_epoch": state.current_epoch,
        "epochs": [
            {
                "id": epoch.id,
                "author": epoch.author,
                "follows": list(epoch.previous),
                "members": sorted(epoch.current_members),
                "excluded": sorted(epoch.excluded),
                "current": epoch.id in state.tips,
            }
            for epoch in state.epochs.values()
        ],
        "readable": view.root in view.keys,
        "invalid": {msg_id: why for msg_id, why in state.invalid.items()},
        "pending": sorted(state.pending),
    }


def timeline(
    store: FeedStore, view: GroupView, tangle: str = GROUP, order: str = "rank"
) -> list[dict[str, Any]]:
    """The group's (or its current epoch's members, or its epoch) tangle, opened where we can."""
    if tangle == GROUP:
        name = timeline_name(view.root, GROUP)
    elif tangle == EPOCH:
        name = timeline_name(view.root, EPOCH)
    else:
        epoch = view.state.current_epoch or view.root
        name = timeline_name(epoch, MEMBERS)
    if order == "causal-time":  # the stored causal-time timeline (storage.engine.causal_timeline)
        name = view_timeline(name, "all", "causal-time")
    ids = [msg_id for _key, msg_id in store.timelines.timeline(name)]
    rows = []
    for msg_id in ids:
        message = view.messages.get(msg_id) or store.feeds.get(msg_id)
        private = view.opened.get(msg_id)
        rows.append(
            {
                "id": msg_id,
                "author": message.author,
                "timestamp": message.timestamp,
                "type": str(private.kind) if private else None,
                "members": list(private.members) if private else None,
                "content": private.content if private else None,
                "valid": msg_id in view.state.valid,
                "erased": not message.has_content,  # erased by its author, or purged here
            }
        )
    return rows
