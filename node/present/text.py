"""Text others chose, made safe to show: one filter for every human view, terminal or page.

A tangle, group or document name, a feed's name, an address, an error a peer sent,
a message's content: any of them may hold characters a terminal acts on (ESC and
CSI sequences, OSC 52 that writes the clipboard, C1 controls such as U+009B) or
that make text read other than it is (bidi overrides, zero-width characters).
`click.echo` strips CSI only when stdout is not a terminal and never strips OSC,
so every human view of the CLI passes such text through `safe` (or JSON through
`safe_json`) before printing, and the web view shows it as the terminal does
(after `safe`, HTML-escaped: node/web/page.py). `--json` output stays exact.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Any

# control, format (bidi overrides, zero-width), private use, surrogates, line/paragraph separators
UNSAFE_CATEGORIES = frozenset(("Cc", "Cf", "Co", "Cs", "Zl", "Zp"))
REPLACEMENT = "?"  # visible: `chat\x1b[31m` shows as `chat?[31m`, never as `chat`


def unsafe(char: str) -> bool:
    return unicodedata.category(char) in UNSAFE_CATEGORIES


def safe(text: str | None, limit: int | None = None) -> str:
    """`text` to show: each unsafe character shown as `?`; cut to `limit` (with `…`)."""
    text = text or ""
    cut = text[:limit] if limit else text
    if cut.isprintable():  # the common case, at C speed: no unsafe category in it
        shown = cut
    else:
        shown = "".join(REPLACEMENT if unsafe(char) else char for char in cut)
    return shown + ("…" if limit and len(text) > limit else "")


def safe_lines(text: str) -> str:
    """Text of many lines to show: each unsafe character shown as `?`, one for one,
    but line breaks and tabs kept (a document's text keeps its layout and its positions)."""
    if text.replace("\n", "").replace("\t", "").replace("\r", "").isprintable():
        return text  # the common case, at C speed
    return "".join(REPLACEMENT if char not in "\n\t\r" and unsafe(char) else char for char in text)


def safe_json(value: Any, **dumps: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, **dumps)` with every unsafe character escaped
    as \\uXXXX (json.dumps escapes only those below U+0020): still valid, equal JSON."""
    text = json.dumps(value, ensure_ascii=False, **dumps)
    if text.isprintable():
        return text
    # below U+0020 json.dumps escaped every character in a string: what is left is layout
    return "".join(_escaped(c) if c >= " " and unsafe(c) else c for c in text)


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a surrogate pair, as JSON spells a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
