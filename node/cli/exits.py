"""The exit codes of `tangled`, in a module of their own so `tangled --help` loads only this."""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    OK = 0
    INTERNAL = 1
    USAGE = 2
    BAD_INPUT = 3
    NOT_FOUND = 4
    CHECK_FAILED = 5
    INTERRUPTED = 130  # 128 + SIGINT, as shells report a ^C


EXIT_CODES = {
    ExitCode.OK: "success",
    ExitCode.INTERNAL: "internal or environment failure (the node not running, a damaged store)",
    ExitCode.USAGE: "bad usage (an unknown command or option, a missing argument)",
    ExitCode.BAD_INPUT: "bad input (invalid config, content, id or message; a refused request)",
    ExitCode.NOT_FOUND: "not found (no such store, feed, message, tangle or group)",
    ExitCode.CHECK_FAILED: (
        "check or pipeline verify found problems, pipeline audit differences, "
        "doc replay a different text"
    ),
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); import says what it committed and how to go on",
}


class Interrupted(Exception):
    """A command stopped by Ctrl-C, saying what it had done and how to go on (exit 130)."""
