"""Our own feed's head, kept beside the store, so a restored store cannot fork our feed.

Theory of operation
-------------------
Our feed's next seq comes from the store's head of our feed. If the store
is replaced by an older copy (a backup, a snapshot, a wiped store that a
fresh `run` recreated), that head is behind what we already published and
peers hold: the next publish would sign a second message at a seq we have
used — a fork of our own feed, which every peer then holds as evidence
against us, for good.

So after each publish commits, the store writes (seq, id) of our head to
`<store>.own-head` beside the store directory (outside it, so copying a
store directory back does not bring an old head file with it). The record
is JSON padded to `RECORD_BYTES`, less than one disk sector. The first time
(or over a file of another size) it goes to a temporary file, fsync, rename
over the old one, fsync of the directory; after that it is rewritten in
place, one `pwrite` of the whole record and one `fdatasync` (the file's
size and blocks never change, so no journal commit is needed: a fraction
of the cost of the rename's two). A disk writes a sector whole, which is
what PostgreSQL's pg_control relies on too, so a crash leaves the old
record or the new one; were a write ever torn, the file would not parse,
and publishing stops with an error (it never forks). The file may lag the
store by the one publish (or batch of publishes) in flight, never lead
it. Before each publish batch the store compares: while its head of our
feed is below the file's seq, publishing raises `OwnFeedBehind`. An open
store parses the file again only when a `stat` shows it changed
(`OwnHeadFile`). Messages of our own feed ingested again (fetched from
peers by gossip, or `tangled import` of a backup) bring the store level,
and publishing works again. `tangled run` warns at start when
the store is behind. A record that cannot be written after its commit (no
descriptor left, a full disk) fails no publish: the message is stored, the
record lags (safe, as above), and the next publish writes it
(`Writes.own_head_unrecorded` says why meanwhile; the IPC `status` shows it).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import feed_text, message_text, parse_feed, parse_message_id
from tanglenode.storage.errors import OwnFeedBehind, StorageError

SUFFIX = ".own-head"
RECORD_BYTES = 256  # a padded record; the longest one (a 20-digit seq) takes about 170


@dataclass(frozen=True, slots=True)
class OwnHead:
    feed: bytes
    seq: int
    id: bytes


def head_path(store_dir: str | Path) -> Path:
    store_dir = Path(store_dir)
    return store_dir.with_name(store_dir.name + SUFFIX)


def read_own_head(path: Path) -> OwnHead | None:
    """The recorded head, None if none was recorded; StorageError if the file is damaged."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if record is None:
            return None
        feed, seq, msg_id = record["feed"], int(record["seq"]), record["id"]
        head = OwnHead(parse_feed(feed), seq, parse_message_id(msg_id))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, BadIdentifier) as error:
        raise StorageError(
            f"the own-feed head file {path} is unreadable ({error}); delete it only if the "
            "store surely holds all of our feed"
        ) from None
    if head.seq < 1:
        raise StorageError(f"the own-feed head file {path} gives seq {head.seq}")
    return head


def write_own_head(path: Path, head: OwnHead) -> None:
    """Record `head` durably: in place over a record of ours, else by an atomic replace."""
    record = {"feed": feed_text(head.feed), "seq": head.seq, "id": message_text(head.id)}
    data = (json.dumps(record) + "\n").encode().ljust(RECORD_BYTES - 1) + b"\n"
    try:
        descriptor = os.open(path, os.O_WRONLY)
    except FileNotFoundError:
        pass
    else:
        try:
            if os.fstat(descriptor).st_size == RECORD_BYTES:
                os.pwrite(descriptor, data, 0)
                os.fdatasync(descriptor)
                return
        finally:
            os.close(descriptor)
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def behind(path: Path, feed: bytes, stored_seq: int) -> OwnHead | None:
    """The recorded head if the store (at `stored_seq` of our feed) is behind it, else None."""
    return _behind(read_own_head(path), feed, stored_seq)


def _behind(head: OwnHead | None, feed: bytes, stored_seq: int) -> OwnHead | None:
    if head is None or head.feed != feed or stored_seq >= head.seq:
        return None
    return head


class OwnHeadFile:
    """The own-head file of one open store, parsed again only when it changed.

    The store reads it before every publish batch and writes it after each
    commit; a `stat` (inode, size, modification time) tells whether the file
    is still the one last read or written here, so the record is parsed
    again only when something else replaced or damaged it. The data
    directory's lock keeps other writers of the same store out while it is
    open; what the check guards against is a store replaced while closed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._known: tuple[tuple[int, int, int], OwnHead | None] | None = None

    def read(self) -> OwnHead | None:
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            self._known = None
            return None
        stamp = (found.st_ino, found.st_size, found.st_mtime_ns)
        if self._known is not None and self._known[0] == stamp:
            return self._known[1]
        head = read_own_head(self.path)  # after the stat: a change in between shows next time
        self._known = (stamp, head)
        return head

    def write(self, head: OwnHead) -> None:
        write_own_head(self.path, head)
        written = os.stat(self.path)
        self._known = ((written.st_ino, written.st_size, written.st_mtime_ns), head)

    def refuse_if_behind(self, feed: bytes, stored_seq: int) -> None:
        _refuse(_behind(self.read(), feed, stored_seq), stored_seq)


def refuse_if_behind(path: Path, feed: bytes, stored_seq: int) -> None:
    _refuse(behind(path, feed, stored_seq), stored_seq)


def _refuse(head: OwnHead | None, stored_seq: int) -> None:
    if head is not None:
        raise OwnFeedBehind(
            f"the store holds our feed up to seq {stored_seq}, but we published up to seq "
            f"{head.seq} ({message_text(head.id)}); publishing now would fork our own feed. "
            "Let the node fetch the feed back from peers, or `tangled import` a backup, first"
        )
