"""Private documents: sealed in a group, woven from what this node can open.

Theory of operation
-------------------
A private document (docs/DOCUMENTS.md, "Private documents") is a document
whose messages keep their `doc` tangle in the envelope, as every document
message does, but whose content is a group envelope (protocol.groups): the
`doc/init` or `doc/edit` content, boxed under the key of an epoch of the
document's group, with no seals. A replicating peer outside the group sees
that a document exists, how its messages link, who wrote them and when,
never its title or text.

**Keys.** The engine weaves at processing time, so the keys must be at
hand then. `doc-keys` holds them: epoch id -> [group id, key] for every
valid epoch of a group we are or were in, and `current` + group id -> the
epoch our next message to the group is sealed in (absent once we are no
longer a member). They are not derived from the messages by this layer:
the group's state (which epochs are valid) is read above it
(storage/groups/doc_keys.py) and handed in through
`store.documents.set_keys`. The keys only grow, as a group's valid
epochs only grow (each message is judged by its own causal past).

**Exclusions.** Beside the keys, `doc-keys` holds the group's valid
exclusions, handed in the same way (`excluded` + epoch + excluded feed +
the `exclude-member`'s id): a sealed message of epoch E by X whose
timeframe names a valid exclusion of X from E (its feed at or past it) was
written by a member that had processed its own exclusion, and is set aside
(`excluded`), as its group post in that position would be invalid
(protocol.group_state.excluded_in_past, the one rule for both). Every node
that holds E's key reads E's exclusions, so every node that could weave the
message decides it alike; an exclusion handed in late (its own group past
arrived late, or it came in the batch that brought the message) weaves the
documents its feed wrote in again (storage.documents.reweave), as a key
arriving late does.

**Opening.** A sealed document message names its epoch; with that epoch's
key at hand its box is opened and its content checked under the rules of
any content (canonical msgpack, finite floats, bounded depth). A box that
does not open, or holds something else, is set aside (`unreadable`) on
every node holding the key. Without the key the message *waits*:
`doc-waiting` (epoch + doc id + message id) and `doc-waits` (message id ->
epoch + doc id) hold it, and so does an edit that needs a waiting message
(its document's init, or an atom it cites), under the same epoch. When a
key arrives, every document with messages waiting for it is woven again
from all it holds, in processed order (storage.documents.reweave), so the
weave is the one a node that held the key from the start has: it depends
on the messages and the keys only.

A member's node therefore keeps the text in clear in its store, as for any
document; a node that never held the key keeps only the sealed messages,
and an excluded member keeps what the old epochs' keys open and never the
new epoch's edits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.document import TANGLE, DocReason, DocumentError, is_document
from tanglenode.protocol.group_state import Exclusion
from tanglenode.protocol.groups import GROUP_VERSION, GroupContent, GroupFormatError, open_value
from tanglenode.protocol.message import Message
from tanglenode.storage.documents.rows import DocumentTables, keys_with, pack, unpack

_CURRENT = b"current"  # + group id -> the epoch we post in
_EXCLUDED = b"excluded"  # + epoch + excluded feed + exclude-member id -> (empty)


@dataclass(frozen=True, slots=True)
class KeysKept:
    """What handing in keys and exclusions changed (`store.documents.set_keys`): true if
    anything did."""

    epochs: list[bytes]  # the epochs whose keys were new, ascending
    documents: list[bytes]  # the documents woven again, for a new key or a new exclusion

    def __bool__(self) -> bool:
        return bool(self.epochs or self.documents)


class Waiting(Exception):
    """A document message that needs the key of `epoch`, which this node does not hold."""

    def __init__(self, epoch: bytes) -> None:
        super().__init__(epoch.hex())
        self.epoch = epoch


def is_sealed(content: Any) -> bool:
    """Whether `content` claims to be a group envelope (valid or not)."""
    if not isinstance(content, dict):
        return False
    version = content.get("group")  # msgpack's true equals 1: a boolean is no version
    return type(version) is int and version == GROUP_VERSION


def is_document_message(message: Message) -> bool:
    """Whether the document engine has anything to do with `message` (valid or not)."""
    content = message.content
    return is_document(content) or (TANGLE in message.tangles and is_sealed(content))


class SealedMessages:
    """The keys, the opening and the waiting rows, inside one write transaction."""

    def __init__(self, txn: Any, tables: DocumentTables, max_depth: int) -> None:
        self._txn = txn
        self._tables = tables
        self._max_depth = max_depth

    # -- keys ------------------------------------------------------------------

    def key(self, epoch: bytes) -> tuple[bytes, bytes] | None:
        """(group, key) of `epoch`, if held."""
        return read_key(self._txn, self._tables, epoch)

    def add_keys(
        self, keys: Mapping[bytes, tuple[bytes, bytes]], current: Mapping[bytes, bytes | None]
    ) -> list[bytes]:
        """Keep `keys` (epoch -> (group, key)) and the epoch we post in per group (None: we
        post in none); the epochs whose keys are new, ascending."""
        txn, db = self._txn, self._tables.keys
        new = []
        for epoch, (group, key) in sorted(keys.items()):
            if txn.get(epoch, db=db) is None:
                txn.put(epoch, pack([group, key]), db=db)
                new.append(epoch)
        for group, posting in current.items():
            if posting is None:
                txn.delete(_CURRENT + group, db=db)
            else:
                txn.put(_CURRENT + group, posting, db=db)
        return new

    # -- exclusions --------------------------------------------------------------

    def add_exclusions(self, exclusions: Iterable[Exclusion]) -> list[tuple[bytes, bytes]]:
        """Keep valid exclusions (those of an epoch whose key is held); the (epoch,
        excluded feed) pairs that are new, ascending."""
        txn, db = self._txn, self._tables.keys
        new: set[tuple[bytes, bytes]] = set()
        for exclusion in exclusions:
            if txn.get(exclusion.epoch, db=db) is None:
                continue  # no key: no message of that epoch is woven here
            for member in sorted(exclusion.members):
                key = _EXCLUDED + exclusion.epoch + member + exclusion.id
                if txn.get(key, db=db) is None:
                    txn.put(key, b"", db=db)
                    new.add((exclusion.epoch, member))
        return sorted(new)

    def exclusions_of(self, epoch: bytes, member: bytes) -> list[Exclusion]:
        """The valid exclusions of `member` from `epoch` handed in."""
        prefix = _EXCLUDED + epoch + member
        return [
            Exclusion(bytes(key[len(prefix) :]), epoch, frozenset((member,)))
            for key in keys_with(self._txn, self._tables.keys, prefix)
        ]

    def forget_exclusions(self, msg_ids: Iterable[bytes]) -> list[tuple[bytes, bytes]]:
        """Drop the exclusions a proof removed; the (epoch, excluded feed) pairs they
        excluded."""
        removed = set(msg_ids)
        if not removed:
            return []
        dropped = [
            bytes(key)
            for key in keys_with(self._txn, self._tables.keys, _EXCLUDED)
            if bytes(key[-32:]) in removed
        ]
        for key in dropped:
            self._txn.delete(key, db=self._tables.keys)
        start = len(_EXCLUDED)
        return sorted({(key[start : start + 32], key[start + 32 : start + 64]) for key in dropped})

    # -- opening ---------------------------------------------------------------

    @staticmethod
    def envelope(content: Any) -> GroupContent:
        """The readable part of a sealed document message's content (or of an erased one's
        sealed weave): an epoch id and no seals; `DocumentError` otherwise."""
        try:
            envelope = GroupContent.from_content(content)
        except GroupFormatError as error:
            raise DocumentError(DocReason.MALFORMED, str(error)) from None
        if envelope.epoch is None or envelope.seals:
            raise DocumentError(
                DocReason.MALFORMED, "a sealed document message names its epoch and holds no seals"
            )
        return envelope

    def open(self, envelope: GroupContent) -> tuple[Any, bytes]:
        """The content `envelope` boxes and the group of its epoch; `Waiting` without the
        key, `DocumentError` when it does not open to canonical content."""
        assert envelope.epoch is not None
        found = self.key(envelope.epoch)
        if found is None:
            raise Waiting(envelope.epoch)
        group, key = found
        try:
            return open_value(envelope, key, self._max_depth), group
        except GroupFormatError as error:
            raise DocumentError(DocReason.UNREADABLE, str(error)) from None

    # -- waiting ---------------------------------------------------------------

    def wait(self, epoch: bytes, root: bytes, msg_id: bytes) -> None:
        self._txn.put(epoch + root + msg_id, b"", db=self._tables.waiting)
        self._txn.put(msg_id, epoch + root, db=self._tables.waits)

    def waiting(self, msg_id: bytes) -> tuple[bytes, bytes] | None:
        """(epoch, doc id) message `msg_id` waits under, if it waits (the epoch is a key's,
        or the id of a message whose skeleton is awaited: storage.documents.erased)."""
        raw = self._txn.get(msg_id, db=self._tables.waits)
        return None if raw is None else (bytes(raw[:32]), bytes(raw[32:64]))

    def waiting_on(self, msg_id: bytes) -> bytes | None:
        """The epoch whose key message `msg_id` waits for, if it waits."""
        raw = self._txn.get(msg_id, db=self._tables.waits)
        return None if raw is None else bytes(raw[:32])

    def take(self, epoch: bytes) -> list[tuple[bytes, bytes]]:
        """(doc id, message id) of every message waiting for `epoch`'s key, no longer
        waiting (the caller weaves them)."""
        taken = []
        cursor = self._txn.cursor(db=self._tables.waiting)
        if cursor.set_range(epoch):
            while cursor.key()[:32] == epoch:
                key = bytes(cursor.key())
                taken.append((key[32:64], key[64:]))
                if not cursor.delete():
                    break
        for _root, msg_id in taken:
            self._txn.delete(msg_id, db=self._tables.waits)
        return taken

    def forget(self, msg_ids: Iterable[bytes]) -> None:
        """Drop the waiting rows of messages a proof removed."""
        for msg_id in msg_ids:
            raw = self._txn.get(msg_id, db=self._tables.waits)
            if raw is not None:
                self._txn.delete(bytes(raw) + msg_id, db=self._tables.waiting)
                self._txn.delete(msg_id, db=self._tables.waits)


def read_key(txn: Any, tables: DocumentTables, epoch: bytes) -> tuple[bytes, bytes] | None:
    raw = txn.get(epoch, db=tables.keys)
    if raw is None:
        return None
    group, key = unpack(raw)
    return group, key


def current_key(txn: Any, tables: DocumentTables, group: bytes) -> tuple[bytes, bytes] | None:
    """(epoch, key) our next message to `group` is sealed in; None if we post in none."""
    epoch = txn.get(_CURRENT + group, db=tables.keys)
    if epoch is None:
        return None
    found = read_key(txn, tables, bytes(epoch))
    return None if found is None else (bytes(epoch), found[1])


def waits(txn: Any, tables: DocumentTables, msg_id: bytes) -> bool:
    """Whether message `msg_id` is a document message waiting for a key."""
    return txn.get(msg_id, db=tables.waits) is not None
