"""structlog set-up: human-readable on a terminal, JSON lines otherwise, always on stderr."""

from __future__ import annotations

import logging
import sys

import structlog

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def configure_logging(log_format: str = "auto", level: str = "info") -> None:
    """`log_format` is "auto", "console" or "json"; "auto" picks by whether stderr is a tty."""
    if log_format == "auto":
        log_format = "console" if sys.stderr.isatty() else "json"
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
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
