"""The edit that turns one text into another, in whole words and lines: `edit_splices`.

Theory of operation
-------------------
Where a program infers an edit from two texts (`tangled doc edit FILE`),
the splices it publishes are what blame credits and what links and
comments anchor to (docs/DOCUMENTS.md): a letter-level diff of "worm bins
(bob builds)" into "(cancelled)" keeps the letters the two happen to share
(`n`, `l`, ...) and credits them to the old author, so a link on the new
phrase resolves to a piece of each. People edit words; this diff does too:

- `tokens` cuts a text into words (runs of letters, digits and `_`, with
  the combining marks, variation selectors and emoji modifiers after them
  and the characters a zero-width joiner joins, so an accented letter or an
  emoji sequence stays whole), runs of spaces, each line break (`\n` or
  `\r\n`) and any other character alone: an edit starts and ends at the
  edge of a word, a space or a line. Scripts written without spaces between
  words (Han, kana, Thai, Lao, Tibetan, Khmer, Myanmar) are a token per
  letter, else one edited character would replace a whole sentence;
- each distinct token becomes one code point (diff-match-patch's
  `linesToChars`, generalised from lines to tokens: from U+0100 up,
  surrogates skipped; the old text may take half of them, and a text that
  reaches its share ends in one token of all the rest, which is still
  exact, only coarser); the two token strings are diffed by
  diff-match-patch's Myers diff in C++ (`fast_diff_match_patch`) with its
  semantic cleanup, which folds the small equalities between changes into
  them (the "(" both phrases start with), so a replaced phrase is one
  deletion and one insertion;
- the token diff is mapped back to code points (`word_diff`) and rebased
  into splices (`edit_splices`: `["del", pos, n]`, `["ins", pos, text]`,
  each position in the text as the splices before it left it, so
  `doc_ipc.apply_splices(old, splices) == new` whatever the texts).

Positions and lengths are code points, as everywhere in the documents. The
CLI's `doc edit` (and `--force`, `--exclusive`) calls it through
`node/cli/docs.py`; anything in Python that infers an edit from two texts
calls this one function, so that all of them credit the same words. The
browser's editor (node/web/view.js) infers nothing across revisions: it
publishes each change of its textarea as typed, and widens a replacement
(a paste over a selection) to whole words of the same letters, digits, `_`
and marks (`editOps`), which is as far as a script can follow this module.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import fast_diff_match_patch

# Letters of scripts written without spaces between words: a token each.
_UNSPACED = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u0f00-\u0fff"  # Tibetan
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u30ff\u31f0-\u31ff"  # kana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han
    "\U00020000-\U0003134f"  # Han, supplementary
)
_TOKEN = re.compile(rf"[^\W{_UNSPACED}]+|[^\S\r\n]+|\r?\n|.", re.DOTALL)
_ZWJ = "\u200d"
_FIRST_CODE = 0x100  # the code point of the first token (none is a control character)
_SURROGATES = 0x800  # code points from U+D800 that a str must not hold alone: skipped
_CODES = 0x110000 - _FIRST_CODE - _SURROGATES  # distinct tokens the two texts can have


def _joins(char: str) -> bool:
    """A character that belongs with the one before it: a combining mark (accents,
    variation selectors), an emoji skin-tone modifier, a zero-width joiner."""
    return (
        unicodedata.category(char)[0] == "M" or "\U0001f3fb" <= char <= "\U0001f3ff" or char == _ZWJ
    )


def tokens(text: str) -> list[str]:
    """`text` cut into words, runs of spaces, newlines and other characters, in order:
    `"".join(tokens(text)) == text`."""
    found: list[str] = []
    for match in _TOKEN.finditer(text):
        token = match.group()
        if found and not token.isspace() and (_joins(token[0]) or found[-1][-1] == _ZWJ):
            found[-1] += token
        else:
            found.append(token)
    return found


def _code(index: int) -> str:
    number = _FIRST_CODE + index
    return chr(number + _SURROGATES if number >= 0xD800 else number)


def _index(code: str) -> int:
    number = ord(code)
    return (number - _SURROGATES if number >= 0xD800 else number) - _FIRST_CODE


def _encoded(text: str, codes: dict[str, str], table: list[str], limit: int) -> str:
    """`text` as one code point per token, the new tokens added to `codes` and `table`
    (`table[_index(code)]` is the code's token) while it holds fewer than `limit`: at the
    last one, the rest of the text is one token."""
    out: list[str] = []
    cut = tokens(text)
    for at, token in enumerate(cut):
        last = len(table) >= limit - 1
        if last:
            token = "".join(cut[at:])
        code = codes.get(token)
        if code is None:
            code = codes[token] = _code(len(table))
            table.append(token)
        out.append(code)
        if last:
            break
    return "".join(out)


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """The diff of `old` into `new` in whole tokens, semantically cleaned up: `("=", text)`,
    `("-", text)`, `("+", text)` in order (the `=` and `-` texts make `old`, the `=` and `+`
    texts make `new`)."""
    if old == new:
        return [("=", old)] if old else []
    codes: dict[str, str] = {}
    table: list[str] = []
    # as diff-match-patch does, the first text may take half the codes: the second has room
    left = _encoded(old, codes, table, _CODES // 2)
    right = _encoded(new, codes, table, _CODES)
    return [
        (op, "".join(table[_index(code)] for code in coded))
        for op, coded in fast_diff_match_patch.diff(
            left, right, counts_only=False, cleanup="Semantic", checklines=False
        )
    ]


def edit_splices(old: str, new: str) -> list[list[Any]]:
    """The splices that turn `old` into `new`, in whole words and lines (`word_diff`),
    each position in the text the splices before it left: `[]` when they are equal."""
    splices: list[list[Any]] = []
    pos = 0  # where the next splice goes in the text being edited
    for op, text in word_diff(old, new):
        if op == "=":
            pos += len(text)
        elif op == "-":
            splices.append(["del", pos, len(text)])
        else:
            splices.append(["ins", pos, text])
            pos += len(text)
    return splices
