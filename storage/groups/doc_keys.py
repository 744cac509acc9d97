"""The keys of our groups' epochs, handed to the document engine (storage/documents/sealed.py).

Theory of operation
-------------------
A private document is woven at processing time from what this node can
open, so the engine keeps the epoch keys it may need. Which epochs are
valid, and which one we post in, is the group's state, read here from the
group's messages (storage/groups/state.py): every valid epoch of a group
we are or were in whose key we hold, and the group's current epoch while
we are one of its members. With them go the group's valid exclusions
(`GroupState.exclusions`): a document message sealed in an epoch by a feed
whose timeframe names its own exclusion from it is set aside, as its group
post there would be invalid (protocol.group_state.excluded_in_past).
`refresh_document_keys` hands them to `store.documents.set_keys`, which
weaves whatever waited for a new key, and again whatever a new exclusion
sets aside. The running node calls it when a message that changes a
group's members is stored (node/service/store_service.py), with the replication scope; a
command run on a stopped node calls it before it writes to a group's
document.
"""

from __future__ import annotations

from tanglenode.protocol.group_state import Exclusion
from tanglenode.protocol.identity import Keypair
from tanglenode.storage.documents.sealed import KeysKept
from tanglenode.storage.groups.listing import our_groups
from tanglenode.storage.groups.state import GroupView, read_group
from tanglenode.storage.store import FeedStore

Keys = dict[bytes, tuple[bytes, bytes]]  # epoch -> (group, key)
Current = dict[bytes, bytes | None]  # group -> the epoch we post in, None: none


def _keys_of(
    view: GroupView, me: bytes, keys: Keys, current: Current, exclusions: list[Exclusion]
) -> None:
    state = view.state
    for epoch in state.epochs:  # the valid epochs only: a forged init is none of them
        if epoch in view.keys:
            keys[epoch] = (view.root, view.keys[epoch])
    exclusions += [exclusion for exclusion in state.exclusions if exclusion.epoch in view.keys]
    posting = state.current_epoch
    member = me in state.members and posting in view.keys
    current[view.root] = posting if member else None


def document_keys(store: FeedStore, keypair: Keypair) -> tuple[Keys, Current, list[Exclusion]]:
    """The keys and exclusions of every group of ours (storage.groups.listing.our_groups)."""
    keys: Keys = {}
    current: Current = {}
    exclusions: list[Exclusion] = []
    for view in our_groups(store, keypair):
        _keys_of(view, keypair.public, keys, current, exclusions)
    return keys, current, exclusions


def group_keys(
    store: FeedStore, keypair: Keypair, group: bytes
) -> tuple[Keys, Current, list[Exclusion]]:
    """The keys and exclusions of one group (`UnknownGroup` if it is not held)."""
    keys: Keys = {}
    current: Current = {}
    exclusions: list[Exclusion] = []
    view = read_group(store, keypair, group)
    _keys_of(view, keypair.public, keys, current, exclusions)
    return keys, current, exclusions


def refresh_document_keys(
    store: FeedStore, keypair: Keypair, group: bytes | None = None
) -> KeysKept:
    """Hand the document engine our groups' keys and exclusions (only `group`'s, if given);
    the epochs whose keys were new and the documents woven again."""
    if group is None:
        keys, current, exclusions = document_keys(store, keypair)
    else:
        keys, current, exclusions = group_keys(store, keypair, group)
    return store.documents.set_keys(keys, current, exclusions)
