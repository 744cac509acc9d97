"""Text others chose, on a terminal: node/present/text.py's filter, and `for_stdout`.

The filter itself (`safe`, `safe_lines`, `safe_json`: unsafe characters as `?`
or `\\uXXXX`) is node/present/text.py's, shared with the web view; its names
are kept here for the commands and tests that import them from the CLI.
"""

from __future__ import annotations

import sys

# re-exported: the names the commands and tests import from the CLI
from tanglenode.node.present.text import (
    REPLACEMENT as REPLACEMENT,
)
from tanglenode.node.present.text import (
    UNSAFE_CATEGORIES as UNSAFE_CATEGORIES,
)
from tanglenode.node.present.text import safe as safe
from tanglenode.node.present.text import safe_json as safe_json
from tanglenode.node.present.text import safe_lines as safe_lines
from tanglenode.node.present.text import unsafe as unsafe


def for_stdout(text: str) -> str:
    """`safe_lines(text)` when stdout is a terminal; else the exact text (a file, a pipe)."""
    return safe_lines(text) if sys.stdout.isatty() else text
