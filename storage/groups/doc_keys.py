"""The keys of our groups' epochs, handed to the document engine (storage/documents/sealed.py).

Theory of operation
-------------------
A private document is woven at processing time from what this node can
open, so the engine keeps the epoch keys it may need. Which epochs are
valid, and which one we post in, is the group's state, read here from the
group's messages (storage/groups/state.py): every valid epoch of a group
we are or were in whose key we hold, and the group's current epoch while
we are one of its members. `refresh_document_keys` hands them to
`store.documents.set_keys`, which weaves whatever waited for a new key.
The running node calls it when a message that changes a group's members is
stored (node/service.py), with the replication scope; a command run on a
stopped node calls it before it writes to a group's document.
"""

from __future__ import annotations

from tanglenode.protocol.identity import Keypair
from tanglenode.storage.groups.listing import our_groups
from tanglenode.storage.groups.state import GroupView, read_group
from tanglenode.storage.store import FeedStore

Keys = dict[bytes, tuple[bytes, bytes]]  # epoch -> (group, key)
Current = dict[bytes, bytes | None]  # group -> the epoch we post in, None: none


def _keys_of(view: GroupView, me: bytes, keys: Keys, current: Current) -> None:
    state = view.state
    for epoch in state.epochs:  # the valid epochs only: a forged init is none of them
        if epoch in view.keys:
            keys[epoch] = (view.root, view.keys[epoch])
    epoch = state.current_epoch
    member = me in state.members and epoch in view.keys
    current[view.root] = epoch if member else None


def document_keys(store: FeedStore, keypair: Keypair) -> tuple[Keys, Current]:
    """The keys of every group of ours (storage.groups.listing.our_groups)."""
    keys: Keys = {}
    current: Current = {}
    for view in our_groups(store, keypair):
        _keys_of(view, keypair.public, keys, current)
    return keys, current


def group_keys(store: FeedStore, keypair: Keypair, group: bytes) -> tuple[Keys, Current]:
    """The keys of one group (`UnknownGroup` if it is not held)."""
    keys: Keys = {}
    current: Current = {}
    _keys_of(read_group(store, keypair, group), keypair.public, keys, current)
    return keys, current


def refresh_document_keys(
    store: FeedStore, keypair: Keypair, group: bytes | None = None
) -> list[bytes]:
    """Hand the document engine our groups' keys (only `group`'s, if given); the epochs
    whose keys were new."""
    if group is None:
        keys, current = document_keys(store, keypair)
    else:
        keys, current = group_keys(store, keypair, group)
    return store.documents.set_keys(keys, current)
