"""No helper process outlives the command that made it, nor holds its pipes.

Theory of operation
-------------------
`ingest_batches` (storage/feeds/ingest_pipeline.py) prepares batches in a worker
process forked by a `forkserver`, which multiprocessing spawns from the command
(with its resource tracker). Killed with SIGKILL, the command runs no cleanup:
left alone, the forkserver and its worker lived on, and with them the command's
standard output, so `tangled import ... | cat` never ended.

So each helper ends with its parent. The forkserver, started by
`start_forkserver` with the command's pid in its environment (`FORKSERVER_OF`,
set for that moment only), imports this module first
(`set_forkserver_preload`): a thread of its own waits on the command's pidfd
and exits the forkserver when the command ends (whichever of the command's
threads started it), and its standard streams go to /dev/null, so the
command's pipes end when the command does. A worker, forked by the
forkserver's one thread, asks the kernel for SIGKILL when that thread dies
(`prctl(PR_SET_PDEATHSIG)`, `guard_worker`, the pool's initializer). The
resource tracker then reads the end of its pipe and exits on its own. A parent
that died before the guard took hold left the helper adopted: each checks
that its parent is the one it had, and exits at once otherwise. Elsewhere than
Linux these requests are skipped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import signal
import sys
import threading
from multiprocessing import forkserver

PR_SET_PDEATHSIG = 1  # linux/prctl.h
FORKSERVER_OF = "TANGLENODE_FORKSERVER_OF"  # the pid of the process the forkserver serves


def _die_with_parent(parent: int) -> None:
    """SIGKILL this process when its parent, `parent`, dies (the thread that forked it, to
    the kernel); exit now if it has died already."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:  # it died before the request took hold
        os._exit(1)


def _exit_with(parent: int) -> None:
    """Exit this whole process when process `parent` ends, whichever of its threads made
    this one: a thread waits on the parent's pidfd (Linux); elsewhere, `_die_with_parent`."""
    try:
        watched = os.pidfd_open(parent)
    except (AttributeError, OSError):
        _die_with_parent(parent)
        return
    if os.getppid() != parent:
        os._exit(1)

    def watch() -> None:
        select.select([watched], [], [])  # readable once the process has ended
        os._exit(1)

    threading.Thread(target=watch, name="tanglenode-parent-watch", daemon=True).start()


def _detach_standard_streams() -> None:
    """Standard input, output and error to /dev/null: the command's pipes are its own."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def guard_worker() -> None:
    """The pool's initializer: the worker dies with the forkserver that forked it."""
    _die_with_parent(os.getppid())


def start_forkserver() -> None:
    """Start multiprocessing's forkserver now, telling it whom it serves (`FORKSERVER_OF`,
    in its environment only): a no-op when it runs already."""
    os.environ[FORKSERVER_OF] = str(os.getpid())
    try:
        forkserver.ensure_running()
    finally:
        del os.environ[FORKSERVER_OF]


def _guard_if_forkserver() -> None:
    """In the forkserver, which imports this module first: end with the process it serves,
    and leave that process's pipes alone."""
    served = os.environ.pop(FORKSERVER_OF, None)  # the workers it forks are not servers
    if served is None or not served.isdigit():
        return
    _exit_with(int(served))
    _detach_standard_streams()


_guard_if_forkserver()
