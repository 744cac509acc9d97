"""One writer per data directory: an OS lock on `<data_dir>/tangled.lock`.

Theory of operation
-------------------
LMDB itself lets many processes open a store and serialises their write
transactions, so nothing in LMDB stops a second `tangled run` (which would
take over the IPC socket, and delete it on exit) or an offline write racing
a running node's idea of its own feed. Every process that writes without the
daemon (`run`, `import`, `init`, `reindex`, a CLI write while the node is
stopped) first takes an exclusive `fcntl.flock` on the lock file, without
blocking, and writes its pid and what it is doing into it. The kernel drops
a flock when the last descriptor of its open file goes, so a process killed
with SIGKILL leaves no stale lock: the file stays, with a dead pid in it,
and the next `acquire` simply takes the lock again. A refused process reads
the holder's pid from the file to name it. Readers (`log`, `check`,
`export`) take no lock: LMDB readers never disturb the writer.

The descriptor is not inherited by child processes (Python's default), so
a lock is held exactly as long as the process that took it keeps it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from tanglenode.storage.errors import DataDirInUse

LOCK_NAME = "tangled.lock"


def lock_holder(path: Path) -> tuple[int | None, str]:
    """(pid, purpose) as written by the lock's holder; (None, "") if unreadable."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None, ""
    pid, _newline, purpose = text.partition("\n")
    try:
        return int(pid), purpose.strip()
    except ValueError:
        return None, ""


class DataDirLock:
    """An exclusive, non-blocking lock on a data directory, held until `release` or exit."""

    def __init__(self, data_dir: str | Path, purpose: str) -> None:
        self.data_dir = Path(data_dir)
        self.path = self.data_dir / LOCK_NAME
        self.purpose = purpose
        self._fd: int | None = None

    def acquire(self) -> DataDirLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid, purpose = lock_holder(self.path)
            who = f"process {pid}" if pid else "another process"
            if purpose:
                who += f" (tangled {purpose})"
            raise DataDirInUse(
                f"the data directory {self.data_dir} is in use by {who}", pid, purpose
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{self.purpose}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)  # no pid of ours left behind once we are done
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def __enter__(self) -> DataDirLock:
        return self if self.held else self.acquire()

    def __exit__(self, *exc_info: object) -> None:
        self.release()
