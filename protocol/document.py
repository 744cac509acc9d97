"""Documents on the wire: the content of `doc/init` and `doc/edit` messages.

Theory of operation
-------------------
A document (docs/DOCUMENTS.md) is the tangle named `doc` rooted at a
`doc/init` message; its edits are `doc/edit` messages of that tangle. Its
text is a causal tree of atoms (docs/DOCUMENTS.md, "The model"): an atom is one code point or a
special (the root, a backspace), named by (message id, index), where index
counts the atoms a message introduces from 0 in the order its ops list them.
The init introduces one atom, the root, at index 0. The contents:

    {"title": str, "type": "doc/init"}
    {"ops": [op, ...], "refs": [bin 32, ...], "type": "doc/edit"}
    {"range": [bin 32, index, bin 32, index], "text": str, "type": "doc/comment"}
    {"text": str, "type": "doc/comment"}
    {"at": [bin 32, index], "from": [bin 32, bin 32, index, bin 32, index],
     "type": "doc/include"}

    ["ins", ref, index, text]     text typed after atom (ref, index): its first
                                  code point is caused by that atom, each next
                                  one by the one before; len(text) atoms
    ["del", ref, index, count]    a backspace on each of atoms index ..
                                  index + count - 1 of message ref; count atoms
    ["undel", ref, index, count]  the same on backspace atoms: an undelete

`ref` 0 names this message, k >= 1 names refs[k - 1]: each cited id is
written once, refs ascend strictly and every one is used, so an edit has one
encoding. A reference to this message may cite only atoms of earlier ops.

A comment (docs/DOCUMENTS.md, "Comments") is a message of the document's
tangle that changes no text: with `range`, the first and last atoms (message
id, index) of the text it is about; without, a reply, whose envelope places
it in the `comment` tangle rooted at the comment it answers. Its text is 1
to `MAX_COMMENT_BYTES` bytes of Unicode.

An inclusion (docs/DOCUMENTS.md, "Transclusion") places a live range of
another document right after atom `at` of this one (the root for the
start): `from` names that document and the first and last atoms of the
range, as a link does.

An erase request of a document message (protocol/erase.py) carries its
*skeleton* (`skeleton`): the same value without its characters, an insert
carrying its length instead of its text, an init no title, a comment no
text. `parse_skeleton` checks one from a peer as strictly as a content, and
gives the message it stands for with `ERASED` in place of each character,
so the engine weaves an erased edit's atoms where they belong on a node
that never saw them (docs/DOCUMENTS.md, "Erased edits").

This module checks what the content alone can show, in one pass over the ops
without recursion: types (a bool is not an int), arities, names, bounds,
refs, self-references. Each failure is a `DocumentError` with a `DocReason`.
What needs the document - the cited message is in it and inside the edit's
weft, the atom exists, it is of the kind the op needs - is checked by the
engine (storage/documents/engine.py), which names its failures with the last four
reasons.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import msgpack

from tanglenode.protocol.errors import RemoteProtocolError

INIT, EDIT, COMMENT, INCLUDE = "doc/init", "doc/edit", "doc/comment", "doc/include"
TANGLE = "doc"
COMMENT_TANGLE = "comment"  # a comment's thread: its replies
MAX_COMMENT_BYTES = 8192
SELF = None  # AtomRef.msg for "this message"
ERASED = "\x00"  # what an erased atom holds in place of its character (`parse_skeleton`)

MAX_OPS = 4096
MAX_ATOMS = 16384  # atoms one edit introduces
MAX_INDEX = 2**32 - 1  # the highest atom index an op may cite
MAX_TITLE_BYTES = 200
ID_BYTES = 32

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # Unicode's Cc: C0, DEL and C1


class DocReason(enum.StrEnum):
    """Why a document message is set aside. The values are stable CLI/IPC strings."""

    # The content alone (this module).
    MALFORMED = "malformed"
    BAD_TITLE = "bad-title"
    BAD_REF = "bad-ref"
    BAD_OP = "bad-op"
    TOO_MANY = "too-many"
    SELF_REF = "self-ref"
    # Against the document (the engine sets these).
    UNKNOWN_DOC = "unknown-doc"
    OUTSIDE_WEFT = "outside-weft"
    UNKNOWN_ATOM = "unknown-atom"
    WRONG_KIND = "wrong-kind"
    # Private documents (sealed in a group: storage/documents/sealed.py).
    WRONG_GROUP = "wrong-group"
    UNREADABLE = "unreadable"
    EXCLUDED = "excluded"  # its timeframe names its author's exclusion from its epoch


class DocumentError(RemoteProtocolError):
    """A document message breaks a rule; `reason` says which, `detail` says how."""

    def __init__(self, reason: DocReason, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class AtomRef(NamedTuple):
    """An atom's id: its message (SELF for the message that cites it) and index."""

    msg: bytes | None
    index: int  # type: ignore[assignment]  # a field named as tuple's method index, by design


class Insert(NamedTuple):
    cause: AtomRef
    text: str


class Delete(NamedTuple):
    target: AtomRef
    count: int  # type: ignore[assignment]  # shadows tuple.count, the op's own word


class Undelete(NamedTuple):
    target: AtomRef
    count: int  # type: ignore[assignment]  # shadows tuple.count, the op's own word


Op = Insert | Delete | Undelete

_NAMES: dict[type, str] = {Insert: "ins", Delete: "del", Undelete: "undel"}
_KINDS: dict[str, type[Op]] = {name: kind for kind, name in _NAMES.items()}
_INIT_KEYS = frozenset(("title", "type"))
_EDIT_KEYS = frozenset(("ops", "refs", "type"))
_COMMENT_KEYS = frozenset(("range", "text", "type"))
_REPLY_KEYS = frozenset(("text", "type"))
_INCLUDE_KEYS = frozenset(("at", "from", "type"))


@dataclass(frozen=True, slots=True)
class DocInit:
    title: str


@dataclass(frozen=True, slots=True)
class DocEdit:
    ops: tuple[Op, ...]
    atoms: int  # atoms introduced


@dataclass(frozen=True, slots=True)
class DocComment:
    text: str
    range: tuple[AtomRef, AtomRef] | None  # its first and last atoms; None for a reply
    atoms = 0  # a comment introduces none


@dataclass(frozen=True, slots=True)
class DocInclude:
    at: AtomRef  # the included text goes right after this atom of the including document
    source: bytes  # the included document
    first: AtomRef  # the first and last atoms of its range
    last: AtomRef
    atoms = 0  # an inclusion introduces none


def is_document(content: Any) -> bool:
    """Whether `content` claims to be a document message (valid or not)."""
    return isinstance(content, dict) and content.get("type") in (INIT, EDIT, COMMENT, INCLUDE)


def parse_document(content: Any) -> DocInit | DocEdit | DocComment | DocInclude:
    """The init or edit `content` holds, or `DocumentError` saying why it is refused."""
    kind = content.get("type") if isinstance(content, dict) else None
    if type(kind) is str and kind == INIT:
        if content.keys() != _INIT_KEYS:
            raise DocumentError(DocReason.MALFORMED, "a doc/init holds exactly title and type")
        return DocInit(_checked_title(content["title"]))
    if type(kind) is str and kind == EDIT:
        if content.keys() != _EDIT_KEYS:
            raise DocumentError(DocReason.MALFORMED, "a doc/edit holds exactly ops, refs and type")
        return _parse_edit(content["ops"], content["refs"])
    if type(kind) is str and kind == COMMENT:
        return _parse_comment(content)
    if type(kind) is str and kind == INCLUDE:
        return _parse_include(content)
    raise DocumentError(DocReason.MALFORMED, "not a document message's content")


def init_content(title: str) -> dict[str, Any]:
    """The content of a new document's `doc/init`."""
    return {"title": _checked_title(title), "type": INIT}


def edit_content(ops: Sequence[Op]) -> dict[str, Any]:
    """The canonical content of an edit of `ops`, checked as a receiver checks it.

    An AtomRef's msg is a 32-byte message id, or SELF for the edit itself.
    """
    if not isinstance(ops, list | tuple):
        raise DocumentError(DocReason.MALFORMED, "ops are a list of Insert, Delete and Undelete")
    cited: set[bytes] = set()
    for number, op in enumerate(ops):
        if type(op) not in _NAMES or type(op[0]) is not AtomRef:
            raise DocumentError(
                DocReason.MALFORMED, f"op {number}: an Insert, Delete or Undelete of an AtomRef"
            )
        msg = op[0].msg
        if msg is not SELF:
            if type(msg) is not bytes or len(msg) != ID_BYTES:
                raise DocumentError(DocReason.BAD_REF, f"op {number}: a message id is 32 bytes")
            cited.add(msg)
    refs = sorted(cited)
    numbers = {msg: number for number, msg in enumerate(refs, 1)}
    content = {
        "ops": [
            [_NAMES[type(op)], 0 if op[0].msg is SELF else numbers[op[0].msg], op[0].index, op[1]]
            for op in ops
        ],
        "refs": refs,
        "type": EDIT,
    }
    _parse_edit(content["ops"], refs)
    return content


def comment_content(text: str, first: AtomRef | None, last: AtomRef | None) -> dict[str, Any]:
    """The content of a comment on the range `first`..`last` (message ids and indexes), or,
    with neither, of a reply; checked as a receiver checks it."""
    content: dict[str, Any] = {"text": text, "type": COMMENT}
    if first is not None and last is not None:
        content["range"] = [first.msg, first.index, last.msg, last.index]
    _parse_comment(content)
    return content


def _parse_comment(content: dict[str, Any]) -> DocComment:
    keys = content.keys()
    if keys != _COMMENT_KEYS and keys != _REPLY_KEYS:
        raise DocumentError(
            DocReason.MALFORMED, "a doc/comment holds text and type, and range unless a reply"
        )
    text = _sized_text(
        content["text"], "a comment", MAX_COMMENT_BYTES, DocReason.MALFORMED, DocReason.TOO_MANY
    )
    if "range" not in content:
        return DocComment(text, None)
    ends = content["range"]
    if type(ends) is not list or len(ends) != 4:
        raise DocumentError(DocReason.MALFORMED, "a range is [id, index, id, index]")
    return DocComment(text, (_atom_ref(ends[:2]), _atom_ref(ends[2:])))


def include_content(at: AtomRef, source: bytes, first: AtomRef, last: AtomRef) -> dict[str, Any]:
    """The content of an inclusion of `source`'s range `first`..`last` right after atom
    `at`; checked as a receiver checks it."""
    content = {
        "at": [at.msg, at.index],
        "from": [source, first.msg, first.index, last.msg, last.index],
        "type": INCLUDE,
    }
    _parse_include(content)
    return content


def _parse_include(content: dict[str, Any]) -> DocInclude:
    if content.keys() != _INCLUDE_KEYS:
        raise DocumentError(DocReason.MALFORMED, "a doc/include holds exactly at, from and type")
    at, source = content["at"], content["from"]
    if type(at) is not list or len(at) != 2 or type(source) is not list or len(source) != 5:
        raise DocumentError(
            DocReason.MALFORMED, "at is [id, index]; from is [doc, id, index, id, index]"
        )
    if type(source[0]) is not bytes or len(source[0]) != ID_BYTES:
        raise DocumentError(DocReason.BAD_REF, "from names a document by its 32-byte id")
    at_ref, first, last = (_atom_ref(pair) for pair in (at, source[1:3], source[3:5]))
    return DocInclude(at_ref, source[0], first, last)


def _atom_ref(pair: list[Any]) -> AtomRef:
    msg, index = pair
    if type(msg) is not bytes or len(msg) != ID_BYTES:
        raise DocumentError(DocReason.BAD_REF, "an atom names a 32-byte message id")
    if type(index) is not int or not 0 <= index <= MAX_INDEX:
        raise DocumentError(DocReason.BAD_OP, f"an atom's index is 0..{MAX_INDEX}")
    return AtomRef(msg, index)


def op_atoms(op: Op) -> int:
    """How many atoms `op` introduces."""
    if type(op) is Insert and type(op.text) is str:
        return len(op.text)
    if (type(op) is Delete or type(op) is Undelete) and type(op.count) is int:
        return op.count
    raise DocumentError(DocReason.MALFORMED, "not an Insert, Delete or Undelete")


def edit_size(ops: Sequence[Op]) -> int:
    """Bytes of the canonical encoding of `edit_content(ops)`."""
    return len(msgpack.packb(edit_content(ops), use_bin_type=True))


def _sized_text(value: Any, what: str, limit: int, bad: DocReason, too_long: DocReason) -> str:
    """`value` if it is Unicode text of 1 to `limit` UTF-8 bytes; else `DocumentError`
    (`bad` for what is no text, `too_long` for a size outside those bounds)."""
    if type(value) is not str:
        raise DocumentError(bad, f"{what}'s text is a string")
    try:
        size = len(value.encode())
    except UnicodeEncodeError:
        raise DocumentError(bad, f"{what}'s text is not valid Unicode text") from None
    if not 1 <= size <= limit:
        raise DocumentError(too_long, f"{size} bytes, {what}'s text has 1 to {limit}")
    return value


def _checked_title(title: Any) -> str:
    _sized_text(title, "a title", MAX_TITLE_BYTES, DocReason.BAD_TITLE, DocReason.BAD_TITLE)
    if _CONTROL.search(title):
        raise DocumentError(DocReason.BAD_TITLE, "a title has no control characters")
    return str(title)


def skeleton(content: Any) -> dict[str, Any] | None:
    """The structure of document message `content` without its characters: what an erase
    request of it carries as `weave` (protocol/erase.py), so that a node that never saw
    the characters weaves the same atoms (docs/DOCUMENTS.md, "Erased edits").

    An edit keeps its ops and refs, each inserted text replaced by its length in code
    points (`["ins", ref, index, length]`); an init keeps no title; a comment keeps its
    range (a reply: nothing but its type); an inclusion holds no characters and is kept
    as it is. Canonical like the content it comes from, and never larger. None when
    `content` is no valid document message: its request then carries no weave, and
    every node counts the erased message as no document message."""
    try:
        parsed = parse_document(content)
    except DocumentError:
        return None
    if isinstance(parsed, DocInit):
        return {"type": INIT}
    if isinstance(parsed, DocComment):
        return {key: value for key, value in content.items() if key != "text"}
    if isinstance(parsed, DocInclude):
        return dict(content)
    ops = [
        [name, ref, index, len(last) if name == "ins" else last]
        for name, ref, index, last in content["ops"]
    ]
    return {"ops": ops, "refs": list(content["refs"]), "type": EDIT}


def parse_skeleton(value: Any) -> DocInit | DocEdit | DocComment | DocInclude:
    """The document message a skeleton from a peer (an erase request's `weave`) stands
    for, or `DocumentError` saying why it is refused: the content's own checks and
    bounds, an insert carrying its length (an integer >= 1) instead of its text.

    Each inserted atom's text is `ERASED` (one code point each, `length` of them), an
    init's title and a comment's text empty: the engine weaves them without characters."""
    kind = value.get("type") if isinstance(value, dict) else None
    if type(kind) is str and kind == INIT:
        if value.keys() != {"type"}:
            raise DocumentError(DocReason.MALFORMED, "an init's weave holds its type alone")
        return DocInit("")
    if type(kind) is str and kind == EDIT:
        if value.keys() != _EDIT_KEYS:
            raise DocumentError(DocReason.MALFORMED, "an edit's weave holds ops, refs and type")
        return _parse_edit(value["ops"], value["refs"], erased=True)
    if type(kind) is str and kind == COMMENT:
        keys = value.keys()
        if keys != {"range", "type"} and keys != {"type"}:
            raise DocumentError(
                DocReason.MALFORMED, "a comment's weave holds its type, and range unless a reply"
            )
        if "range" not in value:
            return DocComment("", None)
        ends = value["range"]
        if type(ends) is not list or len(ends) != 4:
            raise DocumentError(DocReason.MALFORMED, "a range is [id, index, id, index]")
        return DocComment("", (_atom_ref(ends[:2]), _atom_ref(ends[2:])))
    if type(kind) is str and kind == INCLUDE:
        return _parse_include(value)
    raise DocumentError(DocReason.MALFORMED, "not the weave of a document message")


def _parse_edit(ops: Any, refs: Any, erased: bool = False) -> DocEdit:
    if type(ops) is not list:
        raise DocumentError(DocReason.MALFORMED, "ops is an array")
    if not ops:
        raise DocumentError(DocReason.BAD_OP, "an edit has at least one op")
    if len(ops) > MAX_OPS:
        raise DocumentError(DocReason.TOO_MANY, f"{len(ops)} ops, the limit is {MAX_OPS}")
    if type(refs) is not list:
        raise DocumentError(DocReason.MALFORMED, "refs is an array")
    if len(refs) > len(ops):
        raise DocumentError(DocReason.BAD_REF, f"{len(refs)} refs for {len(ops)} ops: unused refs")
    for position, ref in enumerate(refs):
        if type(ref) is not bytes or len(ref) != ID_BYTES:
            raise DocumentError(DocReason.BAD_REF, f"refs[{position}] is not a 32-byte id")
        if position and refs[position - 1] >= ref:
            raise DocumentError(DocReason.BAD_REF, "refs are not strictly ascending")
    used = [True] + [False] * len(refs)  # by ref number; 0 (this message) may go unused
    parsed: list[Op] = []
    atoms = 0
    for number, op in enumerate(ops):
        parsed.append(_parse_op(op, number, refs, atoms, used, erased))
        atoms += op_atoms(parsed[-1])
    if not all(used):
        raise DocumentError(DocReason.BAD_REF, f"refs[{used.index(False) - 1}] is unused")
    return DocEdit(tuple(parsed), atoms)


def _parse_op(
    op: Any, number: int, refs: list[bytes], before: int, used: list[bool], erased: bool
) -> Op:
    """One op, given the atoms the ops before it introduced; marks its ref used. `erased`:
    an insert carries its length instead of its text (`parse_skeleton`)."""
    if type(op) is not list or len(op) != 4:
        raise DocumentError(DocReason.MALFORMED, f"op {number}: an op is an array of 4")
    name, ref, index, last = op
    if type(name) is not str:
        raise DocumentError(DocReason.MALFORMED, f"op {number}: the op's name is a string")
    kind = _KINDS.get(name)
    if kind is None:
        raise DocumentError(DocReason.BAD_OP, f"op {number}: unknown op {name[:20]!r}")
    if type(ref) is not int:
        raise DocumentError(DocReason.MALFORMED, f"op {number}: ref is an integer")
    if not 0 <= ref <= len(refs):
        raise DocumentError(DocReason.BAD_REF, f"op {number}: ref {ref} with {len(refs)} refs")
    if type(index) is not int:
        raise DocumentError(DocReason.MALFORMED, f"op {number}: index is an integer")
    if not 0 <= index <= MAX_INDEX:
        raise DocumentError(DocReason.BAD_OP, f"op {number}: index outside 0..{MAX_INDEX}")
    if kind is Insert and erased:
        if type(last) is not int:
            raise DocumentError(DocReason.MALFORMED, f"op {number}: ins carries its length")
        if last < 1:
            raise DocumentError(DocReason.BAD_OP, f"op {number}: ins of {last} atoms")
        if last > MAX_ATOMS:
            raise DocumentError(
                DocReason.TOO_MANY, f"op {number}: more than {MAX_ATOMS} atoms in one edit"
            )
        count, highest = last, index
        last = ERASED * last
    elif kind is Insert:
        if type(last) is not str:
            raise DocumentError(DocReason.MALFORMED, f"op {number}: ins carries a string")
        if not last:
            raise DocumentError(DocReason.BAD_OP, f"op {number}: ins of empty text")
        try:
            last.encode()
        except UnicodeEncodeError:
            raise DocumentError(DocReason.MALFORMED, f"op {number}: text is not Unicode") from None
        count, highest = len(last), index  # an insert cites one atom
    else:
        if type(last) is not int:
            raise DocumentError(DocReason.MALFORMED, f"op {number}: {name} carries a count")
        if last < 1:
            raise DocumentError(DocReason.BAD_OP, f"op {number}: {name} of {last} atoms")
        count, highest = last, index + last - 1
    if before + count > MAX_ATOMS:
        raise DocumentError(
            DocReason.TOO_MANY, f"op {number}: more than {MAX_ATOMS} atoms in one edit"
        )
    if highest > MAX_INDEX:
        raise DocumentError(DocReason.BAD_OP, f"op {number}: atoms past index {MAX_INDEX}")
    if ref == 0 and highest >= before:
        raise DocumentError(
            DocReason.SELF_REF,
            f"op {number}: cites atom {highest} of this edit, whose earlier ops have {before}",
        )
    used[ref] = True
    return kind(AtomRef(SELF if ref == 0 else refs[ref - 1], index), last)
