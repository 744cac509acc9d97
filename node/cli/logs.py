"""Logging for `tangled`: human-readable on a terminal, JSON lines otherwise, always on stderr.

Two loggers share one format. `configure_logging` sets up structlog, which the
daemon's modules log through; the CLI arranges it with
`configure_logging_on_import`, at once for a command whose modules already
imported structlog, else when something first imports it (`tangled run`).
One-shot commands log their own few events through `command_log` (`log` in
node/cli/support.py), a small logger that writes the same lines as
structlog's JSON or console renderer would (`{..fields, "event", "level",
"timestamp"}`; `TIME [level    ] event    key=value`) without importing
structlog, whose import costs more than the rest of such a command's start.
"""

from __future__ import annotations

import json
import sys
import traceback
from datetime import UTC, datetime
from typing import Any

_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def resolve_format(log_format: str) -> str:
    """ "auto" becomes "console" on a terminal, "json" otherwise."""
    if log_format == "auto":
        return "console" if sys.stderr.isatty() else "json"
    return log_format


def configure_logging(log_format: str = "auto", level: str = "info") -> None:
    """Set up structlog (and `command_log`): `log_format` "auto", "console" or "json"."""
    import logging

    import structlog

    command_log.configure(log_format, level)
    log_format = resolve_format(log_format)
    # ConsoleRenderer formats exceptions itself; JSON needs them turned into a field first.
    renderers = (
        [structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())]
        if log_format == "console"
        else [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            *renderers,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def configure_logging_on_import(log_format: str = "auto", level: str = "info") -> None:
    """`configure_logging` now if structlog is loaded, else the moment anything imports it.

    A command that never logs through structlog never pays for its import, and one
    that does (the daemon's modules, loaded late by `run`) finds it configured: never
    structlog's default of console lines on stdout.
    """
    if "structlog" in sys.modules:
        configure_logging(log_format, level)
        return
    for finder in sys.meta_path:
        if isinstance(finder, _ConfigureOnImport):
            finder.settings = (log_format, level)
            return
    sys.meta_path.insert(0, _ConfigureOnImport((log_format, level)))


class _ConfigureOnImport:
    """A meta-path finder: finds structlog as the others do, and configures it once loaded."""

    def __init__(self, settings: tuple[str, str]) -> None:
        self.settings = settings

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if fullname != "structlog":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenConfigure(spec.loader, self.settings)
        return spec


class _ThenConfigure:
    """A loader: structlog's own, then `configure_logging`."""

    def __init__(self, loader: Any, settings: tuple[str, str]) -> None:
        self.loader = loader
        self.settings = settings

    def create_module(self, spec: object) -> object:
        return self.loader.create_module(spec)

    def exec_module(self, module: object) -> None:
        self.loader.exec_module(module)
        configure_logging(*self.settings)

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ... as the loader's
        return getattr(self.loader, name)


class CommandLog:
    """`info(event, **fields)` and the like: a line on stderr per event at or above the level."""

    def __init__(self) -> None:
        self._format = "auto"
        self._level = _LEVELS["info"]

    def configure(self, log_format: str = "auto", level: str = "info") -> None:
        self._format = log_format
        self._level = _LEVELS.get(level, _LEVELS["info"])

    def debug(self, event: str, **fields: Any) -> None:
        self._write("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._write("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._write("warning", event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._write("error", event, fields)

    def exception(self, event: str, **fields: Any) -> None:
        """An error with the exception being handled, its traceback included."""
        self._write("error", event, fields, traceback.format_exc())

    def _write(self, level: str, event: str, fields: dict[str, Any], trace: str = "") -> None:
        if _LEVELS[level] < self._level:
            return
        stamp = datetime.now(tz=UTC).isoformat().replace("+00:00", "Z")
        if resolve_format(self._format) == "json":
            record = {**fields, "event": event, "level": level, "timestamp": stamp}
            if trace:
                record["exception"] = trace.rstrip("\n")
            line = json.dumps(record, default=repr)
        else:
            pairs = "".join(f" {key}={value}" for key, value in sorted(fields.items()))
            line = f"{stamp} [{level:<9}] {event:<30}{pairs}".rstrip()
            if trace:
                line += "\n" + trace.rstrip("\n")
        print(line, file=sys.stderr, flush=True)


command_log = CommandLog()
