"""Errors of the storage layer, part of the project's single error tree."""

from __future__ import annotations

from tanglenode.protocol.errors import TanglenodeError


class StorageError(TanglenodeError):
    """The store cannot do what was asked."""


class StoreNotFound(StorageError):
    """No store exists at the given path (and we were asked not to create one)."""


class IncompatibleStore(StorageError):
    """The store was written by an incompatible schema version."""


class StoreFull(StorageError):
    """LMDB's map is full; raise `storage.map_size` in the config."""


class NoIdentity(StorageError):
    """Publishing needs the node's keypair, and the store was opened without one."""


class UnknownTangle(StorageError):
    """A publish named a tangle root this store does not hold: the tangle (`name`, `root`)
    has no tips here."""

    def __init__(self, message: str, name: str | None = None, root: bytes | None = None) -> None:
        super().__init__(message)
        self.name, self.root = name, root


class OwnFeedForked(StorageError):
    """Our own feed has fork evidence: the secret key has been used elsewhere."""


class TimelineError(StorageError):
    """An event cannot be added to or removed from a timeline; the timeline is unchanged."""


class DuplicateEvent(TimelineError):
    """The ref is already a member of the timeline."""


class CycleError(TimelineError):
    """The event's links would make it precede itself.

    `loop` lists refs each of which follows the next, the last following the
    new event (the first); empty when the event links to itself.
    """

    def __init__(self, message: str, loop: list[bytes] | None = None) -> None:
        super().__init__(message)
        self.loop = loop or []


class UnknownEvent(TimelineError):
    """The ref to remove is not a member of the timeline."""


class UnknownTimeline(StorageError):
    """No timeline of that name exists."""


class ViewOff(StorageError):
    """A read of an optional view this store does not keep (turned off, or on and not built)."""


class BelowLogFloor(StorageError):
    """A read of a timeline's command log from a version below its floor: the commands after
    it are gone (the log's retention dropped them, or a rebuild restarted the log), so the
    reader must start again from the order itself (storage/engine/command_log.py)."""

    def __init__(self, since: int, floor: int) -> None:
        super().__init__(
            f"the log holds only the commands after version {floor}, not those after {since} "
            "(its retention dropped older ones, or a rebuild restarted it): read the timeline again"
        )
        self.since = since
        self.floor = floor


class StoreDamaged(StorageError):
    """The store's files are damaged (cut short, emptied, corrupted); it must be restored."""


class DataDirInUse(StorageError):
    """Another process holds the data directory's lock (a running node, an offline write)."""

    def __init__(self, message: str, pid: int | None, purpose: str = "") -> None:
        super().__init__(message)
        self.pid = pid
        self.purpose = purpose  # what the holder said it does: "run", "import", ...


class OwnFeedBehind(StorageError):
    """The store holds less of our own feed than we published: publishing would fork it."""


class UnknownDocument(StorageError):
    """No document with that id is held (or its doc/init was set aside)."""


class SealedDocument(UnknownDocument):
    """A private document this node holds but cannot read: its group's key is not ours."""


class NotInGroup(StorageError):
    """Writing to a private document (or creating one) in a group whose current epoch this
    node does not post in: not a member, or the group's keys not yet read."""


class BadSplice(StorageError):
    """A text splice that does not fit the document's text: position or length out of range."""


class VersionConflict(StorageError):
    """An edit made against one version of a document arrived after another was woven in."""
