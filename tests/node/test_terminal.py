"""`terminal.safe` and `terminal.safe_json`: the one filter between others' text and a terminal."""

import json

import pytest

from tanglenode.node.cli.terminal import safe, safe_json

UNSAFE = [
    "\x1b",  # Cc: ESC, starts CSI and OSC
    "\x07",  # Cc: BEL, ends OSC
    "\x9b",  # Cc: C1 CSI
    "\n",  # Cc
    "\u202e",  # Cf: right-to-left override
    "\u200b",  # Cf: zero-width space
    "\ue000",  # Co: private use
    "\U000f0000",  # Co: supplementary private use
    "\ud800",  # Cs: a lone surrogate
    "\u2028",  # Zl
    "\u2029",  # Zp
]


@pytest.mark.parametrize("char", UNSAFE)
def test_each_unsafe_character_shows_as_a_question_mark(char):
    assert safe(f"chat{char}x") == "chat?x"


def test_safe_keeps_ordinary_text_and_cuts_to_a_limit():
    assert safe("ü 日本 \U0001f600 a\u00a0b") == "ü 日本 \U0001f600 a\u00a0b"
    assert safe(None) == ""
    assert safe("chat\x1b]52;c;AAAA\x07", 6) == "chat?]…"


def test_safe_json_escapes_what_json_dumps_leaves_raw_and_stays_equal_json():
    value = {"text": "l\u202er\x9b\ue000\U000f0000\u2028ü\x1b", "k\u200b": 1}
    shown = safe_json(value, indent=2)
    assert not any(char in shown for char in UNSAFE if char != "\n")  # newlines: the layout
    assert json.loads(shown.replace("\n", "")) == value  # none inside a string
    assert "\\u202e" in shown and "\\u009b" in shown and "\\udb80\\udc00" in shown
    assert "ü" in shown  # printable text stays as it is
    assert json.loads(shown) == value
