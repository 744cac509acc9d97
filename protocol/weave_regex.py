"""A document's history as one string, read with regular expressions alone (docs/WEAVE.md).

Theory of operation
-------------------
A `weave5c` string (protocol/weave_file.py writes and checks it) is every
atom a document ever had, in weave order, five code points each: the
symbol, the two-code-point id of the atom that caused it, its own
two-code-point id. An id is (yarn, offset) as two code points; yarn 0 holds
the two specials, the root (0, 0) and the end (0, 1). A backspace (symbol
U+0008) follows the atom it deletes, before that atom's text; an undelete
is a backspace caused by a backspace, and follows it.

Every operation here is a substitution over the whole string, anchored to
atoms by construction: each alternative consumes a multiple of five code
points and the last one, `.{5}`, always matches, so no match ever starts
inside an atom.

- `filtre(weft2)` turns a weft (for each yarn, the last offset it holds; a
  string of (yarn, offset) pairs) into a pattern matching the ids inside
  it, as the causal-tree paper does: `a[0-2]|b[0-4]`.
- `at_weft(weave, weft2)` is the weave as it was at that weft: one
  substitution keeping the atoms whose own id the filtre matches. Wefts are
  closed, so every cause kept is kept too.
- `scour(weave)` gives `text3` (each visible atom as its symbol and id) in
  one substitution: the specials go, an atom goes with all its backspaces
  when one of them has no undelete after it, a backspace with an undelete
  after it goes with its undeletes (it is undone), every other atom keeps
  its symbol and id.
- `light(weave)` drops the deleted atoms and all backspaces: the paper's
  prefiltered weave of the current text, still weave5c.
- `text1(text3)` keeps the symbols; `revision(weave, weft2)` chains the three.
- `hili3(weave, old, new)` dyes two revisions (the paper's "hilight"):
  each atom visible in either, followed by the yarn that inserted it and
  the yarn that removed it between the two (U+0000: neither).
"""

from __future__ import annotations

import re

BACKSPACE = "\x08"
NONE = "\x00"  # yarn 0: the specials' yarn, and "no yarn" in hili3

# One atom is 5 code points; (?s) so that `.` matches every code point, "\n" included.
_DELETED = (
    r".{3}(..)(?:\x08\1(..)(?:\x08\2..)+)*"  # an atom, its undone backspaces ...
    r"\x08\1(..)(?!\x08\3)"  # ... a backspace no undelete follows ...
    r"(?:\x08\1(..)(?:\x08\4..)*)*"  # ... and the rest of its backspaces
)
_KEPT = r"(.)..(..)(?:\x08\6(..)(?:\x08\7..)+)*"  # an atom and its undone backspaces
_SCOUR = re.compile(r"(?s)...\x00.|" + _DELETED + r"|\x08.{4}|" + _KEPT)
_TEXT1 = re.compile(r"(?s)(.)..")
_PAIR = re.compile(r"(?s)(.)(.)")
_UNDONE = re.compile(r"(?s)\x08..(..)(?:\x08\1..)+|(.{5})")
_DEAD = re.compile(r"(?s)...(..)(?:\x08\1..)+|(.{5})")  # an atom and its live backspaces
_ATOM = re.compile(r"(?s)(.)(..)(..)")


def _escape(char: str) -> str:
    return f"\\u{ord(char):04x}"


def weft2(reach: dict[int, int]) -> str:
    """A weft as the paper's `weft2` string: (yarn, last offset) pairs, by yarn."""
    return "".join(chr(yarn) + chr(last) for yarn, last in sorted(reach.items()))


def filtre(weft: str) -> str:
    """The pattern matching the two-code-point ids inside `weft` (a weft2 string); the
    specials' yarn is always inside."""
    return _PAIR.sub(lambda m: f"|{_escape(m[1])}[\\x00-{_escape(m[2])}]", weft).join(
        ("\\x00.", "")
    )


def at_weft(weave: str, weft: str) -> str:
    """The weave5c as it was at `weft`: one substitution by its filtre."""
    return re.sub(f"(?s)(...(?:{filtre(weft)}))|.{{5}}", r"\1", weave)


def scour(weave: str) -> str:
    """The text3 of a weave5c: each visible atom's symbol and id, in text order."""
    return _SCOUR.sub(r"\5\6", weave)


def light(weave: str) -> str:
    """The weave5c without what the text no longer shows: the paper's prefiltered weave (the
    root, the end, and each visible atom with its cause and id)."""
    return _DEAD.sub(r"\2", _UNDONE.sub(r"\2", weave))


def text1(text3: str) -> str:
    """The text of a text3 string."""
    return _TEXT1.sub(r"\1", text3)


def revision(weave: str, weft: str | None = None) -> str:
    """The text at `weft` (a weft2 string; None: all of the weave)."""
    return text1(scour(weave if weft is None else at_weft(weave, weft)))


def hili3(weave: str, old: str | None, new: str | None) -> str:
    """Every text atom visible at `old` or at `new` (weft2 strings; None: all of the weave)
    as its symbol, the yarn that inserted it between the two and the yarn that removed it
    (U+0000 for neither; the yarn of the first backspace live at `new`)."""
    before, after = (weave if w is None else at_weft(weave, w) for w in (old, new))
    was = set(_ids(scour(before)))
    now = set(_ids(scour(after)))
    live: dict[str, str] = {}
    for symbol, cause, own in _ATOM.findall(_UNDONE.sub(r"\2", after)):
        if symbol == BACKSPACE and cause not in live:
            live[cause] = own
    out: list[str] = []
    for symbol, _cause, own in _ATOM.findall(weave):
        shown_then, shown_now = own in was, own in now
        if symbol == BACKSPACE or own[0] == NONE or not (shown_then or shown_now):
            continue
        inserted = own[0] if shown_now and not shown_then else NONE
        by = live.get(own) if shown_then and not shown_now else None
        removed = NONE if by is None else by[0]
        out.append(symbol + inserted + removed)
    return "".join(out)


def _ids(text3: str) -> list[str]:
    return [text3[at + 1 : at + 3] for at in range(0, len(text3), 3)]
