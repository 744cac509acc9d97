"""The weave as a file: a document's whole history in the causal-tree paper's forms (docs/WEAVE.md).

Theory of operation
-------------------
A file is a short header, then one string. The header names the form, the
document and the *frame*: the feed of each yarn, yarn 1 first. The string
is `weave5c` (every atom ever, five code points each: symbol, cause's id,
own id), `text3` (the visible atoms: symbol, id) or `hili3` (the atoms
visible in either of two revisions: symbol, inserting yarn, removing yarn).
An id is two code points, a yarn number and an offset along that yarn,
both below U+D800; a yarn holds at most `YARN_ATOMS` atoms, and a feed
with more continues on further yarns. Yarn 0 holds the two specials: the
root (0, 0), caused by itself, and the end (0, 1), caused by the root.

`encode` numbers the yarns and writes the weave from atoms named by
(feed, n), n counting the feed's atoms in the document from 0: feeds take
yarns 1, 2, ... in the order their first atom appears in the weave, and a
feed's further yarns (atoms 50,000 on) come after all first yarns, in the
same order. So the same atoms give the same file on every node.

`validate` reads a weave5c string as hostile and refuses it with the first
bad place (`WeaveError`: a reason and the code point offset in the
string). One pass, left to right, checks each atom: its code points, the
root first and the end last, ids unique, the cause already read and still
open (an atom's cause is the atom before it or one of that atom's
ancestors: the weave is a depth-first preorder of its causal tree), the
kinds (text caused by the root or text; a backspace on text, before that
atom's text children; an undelete on a backspace, none on an undelete).
Then every yarn must be whole (offsets 0 .. count-1, a feed's yarns but its
last full). Then the order: an atom *knows* its cause and the atoms before
it in its feed, and whatever those know (the paper's awareness); knowing
may not loop, and of two siblings the one that knows the other must come
first, as the engine's sibling rule puts it (docs/DOCUMENTS.md, "The weave
and the sibling rule"). The order of siblings that do not know each other
comes from the wefts of their messages, which the file does not carry: the
check takes it as written.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tanglenode.protocol.errors import BadIdentifier, RemoteProtocolError
from tanglenode.protocol.identity import feed_text, message_text, parse_feed
from tanglenode.protocol.identity import parse_message_id as _parse_message_id

YARN_ATOMS = 50_000  # offsets 0 .. 49,999 along a yarn
ID_LIMIT = 0xD800  # yarn numbers and offsets are code points below this
MAX_YARNS = 10_000  # a frame's lines
MAX_ATOMS = 2_000_000  # atoms in one weave5c
# Entries of the awareness maps the check builds (`_Walk.order`: what each atom knows of
# other feeds), in all: a file whose feeds know each other too densely is refused.
MAX_AWARENESS = 2_000_000
MAX_FILE_BYTES = 64 << 20
ROOT_SYMBOL, END_SYMBOL, BACKSPACE = "\u0950", "\u06dd", "\x08"
ROOT_ID, END_ID = "\x00\x00", "\x00\x01"
ROOT_ATOM = ROOT_SYMBOL + ROOT_ID + ROOT_ID
END_ATOM = END_SYMBOL + ROOT_ID + END_ID
MAGIC = "tangled-weave 1"
FORMS = {"weave5c": 5, "text3": 3, "hili3": 3}

AtomKey = tuple[bytes, int] | None  # (feed, its n-th atom in the document); None: the root


class WeaveReason(enum.StrEnum):
    TOO_LARGE = "too-large"
    NOT_UTF8 = "not-utf8"
    BAD_HEADER = "bad-header"
    TRUNCATED = "truncated"
    BAD_CODE_POINT = "bad-code-point"
    NO_ROOT = "no-root"
    NO_END = "no-end"
    BAD_SPECIAL = "bad-special"
    UNKNOWN_YARN = "unknown-yarn"
    DUPLICATE_ID = "duplicate-id"
    MISSING_CAUSE = "missing-cause"
    NOT_PREORDER = "not-preorder"
    BAD_KIND = "bad-kind"
    YARN_GAP = "yarn-gap"
    UNUSED_YARN = "unused-yarn"
    AWARENESS_LOOP = "awareness-loop"
    SIBLING_ORDER = "sibling-order"


class WeaveError(RemoteProtocolError):
    """A weave file refused: `reason`, and where: `offset` (code points into the string
    after the header) or `line` (of the header), `detail` says how."""

    def __init__(
        self,
        reason: WeaveReason,
        detail: str,
        *,
        offset: int | None = None,
        line: int | None = None,
    ) -> None:
        where = f"offset {offset}" if offset is not None else f"line {line}"
        super().__init__(f"{where}: {reason}: {detail}")
        self.reason, self.detail, self.offset, self.line = reason, detail, offset, line


@dataclass(frozen=True, slots=True)
class WeaveFile:
    form: str  # weave5c | text3 | hili3
    doc: bytes
    frame: tuple[bytes, ...]  # the feed of yarn 1, 2, ...
    body: str

    def render(self) -> bytes:
        lines = [MAGIC, f"form {self.form}", f"doc {message_text(self.doc)}"]
        lines += [f"yarn {feed_text(feed)}" for feed in self.frame]
        return ("\n".join(lines) + "\n\n" + self.body).encode("utf-8")


def parse_file(data: bytes, max_bytes: int = MAX_FILE_BYTES) -> WeaveFile:
    """A weave file's header and string, checked as far as the form goes (`validate` checks
    a weave5c's atoms); `WeaveError` for the first thing wrong."""
    if len(data) > max_bytes:
        raise WeaveError(WeaveReason.TOO_LARGE, f"over {max_bytes} bytes", offset=0)
    head, sep, rest = data.partition(b"\n\n")
    if not sep:
        raise WeaveError(WeaveReason.BAD_HEADER, "no empty line ends the header", line=1)
    try:
        lines = head.decode("utf-8").split("\n")
    except UnicodeDecodeError as error:
        raise WeaveError(WeaveReason.NOT_UTF8, f"header byte {error.start}", line=1) from None
    try:
        body = rest.decode("utf-8")
    except UnicodeDecodeError as error:
        at = len(rest[: error.start].decode("utf-8"))
        raise WeaveError(WeaveReason.NOT_UTF8, f"byte {error.start}", offset=at) from None
    if lines[0] != MAGIC:
        raise WeaveError(WeaveReason.BAD_HEADER, f"the first line is not {MAGIC!r}", line=1)
    form = _field(lines, 1, "form")
    if form not in FORMS:
        raise WeaveError(
            WeaveReason.BAD_HEADER, f"form {form[:20]!r}: not one of {sorted(FORMS)}", line=2
        )
    try:
        doc = _parse_message_id(_field(lines, 2, "doc"))
    except BadIdentifier as error:
        raise WeaveError(WeaveReason.BAD_HEADER, str(error), line=3) from None
    frame: list[bytes] = []
    for number in range(4, len(lines) + 1):
        if len(frame) >= MAX_YARNS:
            raise WeaveError(WeaveReason.TOO_LARGE, f"over {MAX_YARNS} yarns", line=number)
        try:
            frame.append(parse_feed(_field(lines, number - 1, "yarn")))
        except BadIdentifier as error:
            raise WeaveError(WeaveReason.BAD_HEADER, str(error), line=number) from None
    if len(body) % FORMS[form]:
        at = len(body) - len(body) % FORMS[form]
        raise WeaveError(WeaveReason.TRUNCATED, f"a partial {form} atom at the end", offset=at)
    return WeaveFile(form, doc, tuple(frame), body)


def _field(lines: list[str], index: int, name: str) -> str:
    line = lines[index] if index < len(lines) else ""
    key, sep, value = line.partition(" ")
    if key != name or not sep:
        raise WeaveError(WeaveReason.BAD_HEADER, f"expected `{name} ...`", line=index + 1)
    return value


# -- writing ---------------------------------------------------------------------------------


def number_yarns(first_seen: Iterable[bytes], atoms_of: dict[bytes, int]) -> tuple[bytes, ...]:
    """The frame: each feed's first yarn in `first_seen` order, then the further yarns of
    feeds with more than `YARN_ATOMS` atoms (`atoms_of`), in the same order."""
    order = list(first_seen)
    frame = list(order)
    for feed in order:
        frame += [feed] * ((atoms_of[feed] - 1) // YARN_ATOMS)
    if len(frame) >= ID_LIMIT:
        raise ValueError(f"{len(frame)} yarns: ids stop at {ID_LIMIT - 1}")
    return tuple(frame)


def yarn_ids(frame: tuple[bytes, ...]) -> dict[bytes, list[int]]:
    """Each feed's yarn numbers, in order."""
    found: dict[bytes, list[int]] = {}
    for number, feed in enumerate(frame, start=1):
        found.setdefault(feed, []).append(number)
    return found


def encode(atoms: list[tuple[str, AtomKey, AtomKey]]) -> tuple[str, tuple[bytes, ...]]:
    """(weave5c, frame) of the text atoms and backspaces `atoms` in weave order, each as
    (symbol, cause, own); the root and the end are added."""
    first_seen: dict[bytes, None] = {}
    atoms_of: dict[bytes, int] = {}
    for _symbol, _cause, own in atoms:
        feed, n = own  # type: ignore[misc]
        first_seen.setdefault(feed, None)
        atoms_of[feed] = max(atoms_of.get(feed, 0), n + 1)
    frame = number_yarns(first_seen, atoms_of)
    yarns = yarn_ids(frame)

    def code(key: AtomKey) -> str:
        if key is None:
            return ROOT_ID
        feed, n = key
        return chr(yarns[feed][n // YARN_ATOMS]) + chr(n % YARN_ATOMS)

    parts = [ROOT_ATOM]
    parts += [symbol + code(cause) + code(own) for symbol, cause, own in atoms]
    parts.append(END_ATOM)
    return "".join(parts), frame


def reach_weft2(frame: tuple[bytes, ...], reach: dict[bytes, int]) -> dict[int, int]:
    """A weft in yarns: for each feed the n of its last atom inside (`reach`), as each of
    its yarns' last offset inside; yarns of nothing inside are left out."""
    weft: dict[int, int] = {}
    for feed, numbers in yarn_ids(frame).items():
        last = reach.get(feed, -1)
        for chunk, number in enumerate(numbers):
            if last >= chunk * YARN_ATOMS:
                weft[number] = min(last - chunk * YARN_ATOMS, YARN_ATOMS - 1)
    return weft


# -- checking --------------------------------------------------------------------------------

_TEXT, _DELETE, _UNDELETE, _ROOT, _END = range(5)


@dataclass(frozen=True, slots=True)
class Checked:
    atoms: int
    yarns: int


def validate(body: str, frame: tuple[bytes, ...]) -> Checked:
    """Check a weave5c string against its frame (see the module doc); `WeaveError` for the
    first bad place."""
    if len(body) > MAX_ATOMS * 5:
        raise WeaveError(WeaveReason.TOO_LARGE, f"over {MAX_ATOMS} atoms", offset=MAX_ATOMS * 5)
    walk = _Walk(body, frame)
    walk.structure()
    walk.yarns_whole()
    walk.order()
    return Checked(len(walk.kind), len(frame))


class _Walk:
    def __init__(self, body: str, frame: tuple[bytes, ...]) -> None:
        self.body, self.frame = body, frame
        feeds: dict[bytes, int] = {}
        self.feed_of = [0] + [feeds.setdefault(feed, len(feeds) + 1) for feed in frame]
        chunks: dict[bytes, int] = {}
        self.chunk_of = [0]
        self.next_yarn = [0] * (len(frame) + 1)  # a feed's next yarn, 0 for its last
        last_yarn: dict[bytes, int] = {}
        for number, feed in enumerate(frame, start=1):
            self.chunk_of.append(chunks.get(feed, 0))
            chunks[feed] = chunks.get(feed, 0) + 1
            if feed in last_yarn:
                self.next_yarn[last_yarn[feed]] = number
            last_yarn[feed] = number
        self.index: dict[str, int] = {}  # id -> atom number
        self.ids: list[str] = []
        self.kind: list[int] = []
        self.cause: list[int] = []
        self.first_child: dict[int, int] = {}
        self.siblings: dict[int, list[int]] = {}

    def fail(self, reason: WeaveReason, detail: str, offset: int) -> None:
        raise WeaveError(reason, detail, offset=offset)

    def structure(self) -> None:
        body, index = self.body, self.index
        whole = len(body) - len(body) % 5
        if whole < 10:
            self.fail(WeaveReason.NO_ROOT, "a weave holds at least the root and the end", 0)
        if body[:5] != ROOT_ATOM:
            self.fail(WeaveReason.NO_ROOT, "the first atom is not the root ॐ (0,0) (0,0)", 0)
        stack: list[int] = []
        depth: dict[int, int] = {}
        has_text: set[int] = set()
        for at in range(0, whole, 5):
            atom = len(self.ids)
            symbol, cause_id, own = body[at], body[at + 1 : at + 3], body[at + 3 : at + 5]
            self._code_points(body, at)
            if atom == 0:
                kind, cause = _ROOT, 0
            else:
                if own in index:
                    self.fail(WeaveReason.DUPLICATE_ID, "an id met before", at + 3)
                cause = index.get(cause_id, -1)
                if cause < 0:
                    self.fail(WeaveReason.MISSING_CAUSE, "the cause is not before it", at + 1)
                if cause not in depth:
                    self.fail(WeaveReason.NOT_PREORDER, "the cause's subtree has ended", at + 1)
                kind = self._kind(symbol, own, cause, cause_id, at, whole)
                if kind == _TEXT:
                    has_text.add(cause)
                elif kind != _END and cause in has_text:
                    self.fail(WeaveReason.BAD_KIND, "a backspace after its atom's text", at)
                while stack[-1] != cause:
                    del depth[stack.pop()]
                if kind != _END:
                    self._child(cause * 2 + (kind == _TEXT), atom)
            stack.append(atom)
            depth[atom] = len(stack)
            index[own] = atom
            self.ids.append(own)
            self.kind.append(kind)
            self.cause.append(cause)
        if whole != len(body):
            self.fail(WeaveReason.TRUNCATED, "a partial atom at the end", whole)
        if self.kind[-1] != _END:
            self.fail(WeaveReason.NO_END, "the last atom is not the end ۝ (0,0) (0,1)", whole - 5)

    def _code_points(self, body: str, at: int) -> None:
        if 0xD800 <= ord(body[at]) <= 0xDFFF:
            self.fail(WeaveReason.BAD_CODE_POINT, "a surrogate is not a character", at)
        for field in (1, 3):
            yarn, offset = ord(body[at + field]), ord(body[at + field + 1])
            if yarn >= ID_LIMIT:
                self.fail(WeaveReason.BAD_CODE_POINT, f"yarn U+{yarn:04X} past U+D7FF", at + field)
            if offset >= YARN_ATOMS:
                self.fail(
                    WeaveReason.BAD_CODE_POINT,
                    f"offset {offset} past {YARN_ATOMS - 1}",
                    at + field + 1,
                )
            if yarn > len(self.frame):
                self.fail(
                    WeaveReason.UNKNOWN_YARN,
                    f"yarn {yarn}: the frame has {len(self.frame)}",
                    at + field,
                )

    def _kind(self, symbol: str, own: str, cause: int, cause_id: str, at: int, whole: int) -> int:
        if own[0] == "\x00" or cause_id == END_ID:
            if own == END_ID and at == whole - 5 and symbol == END_SYMBOL and cause == 0:
                return _END
            self.fail(WeaveReason.BAD_SPECIAL, "yarn 0 holds only the root and, last, the end", at)
        cause_kind = self.kind[cause]
        if symbol != BACKSPACE:
            if cause_kind not in (_TEXT, _ROOT):
                self.fail(WeaveReason.BAD_KIND, "text typed after a backspace", at + 1)
            return _TEXT
        if cause_kind == _TEXT:
            return _DELETE
        if cause_kind == _DELETE:
            return _UNDELETE
        self.fail(WeaveReason.BAD_KIND, "a backspace on the root or on an undelete", at + 1)
        return _END  # not reached

    def _child(self, group: int, atom: int) -> None:
        """Siblings in groups: an atom's backspaces (`group` 2 x cause), its text (+ 1)."""
        first = self.first_child.setdefault(group, atom)
        if first != atom:
            self.siblings.setdefault(group, [first]).append(atom)

    def yarns_whole(self) -> None:
        yarns = len(self.frame)
        count, top, top_at, first_at = (
            [0] * (yarns + 1),
            [-1] * (yarns + 1),
            [0] * (yarns + 1),
            [-1] * (yarns + 1),
        )
        for atom, own in enumerate(self.ids):
            yarn, offset = ord(own[0]), ord(own[1])
            count[yarn] += 1
            if first_at[yarn] < 0:
                first_at[yarn] = atom
            if offset > top[yarn]:
                top[yarn], top_at[yarn] = offset, atom
        bad: list[tuple[int, str]] = []
        for yarn in range(1, yarns + 1):
            if count[yarn] == 0:
                bad.append((len(self.ids), f"yarn {yarn} holds no atom"))
            elif count[yarn] != top[yarn] + 1:
                bad.append((top_at[yarn], f"yarn {yarn} lacks offsets below {top[yarn]}"))
            elif self.next_yarn[yarn] and count[yarn] != YARN_ATOMS:
                later = self.next_yarn[yarn]
                bad.append(
                    (max(first_at[later], 0), f"yarn {later} continues yarn {yarn}, not full")
                )
        if bad:
            atom, detail = min(bad)
            reason = WeaveReason.UNUSED_YARN if "holds no atom" in detail else WeaveReason.YARN_GAP
            self.fail(reason, detail, atom * 5)

    def _previous(self, atom: int) -> int:
        """The atom before `atom` in its feed, -1 for none."""
        own = self.ids[atom]
        yarn, offset = ord(own[0]), ord(own[1])
        if offset:
            return self.index[own[0] + chr(offset - 1)]
        if yarn == 0 or self.chunk_of[yarn] == 0:
            return -1
        earlier = self.next_yarn.index(yarn)
        return self.index[chr(earlier) + chr(YARN_ATOMS - 1)]

    def _n(self, atom: int) -> int:
        own = self.ids[atom]
        return self.chunk_of[ord(own[0])] * YARN_ATOMS + ord(own[1])

    def order(self) -> None:
        """Knowing never loops, and a sibling that knows another comes first."""
        count = len(self.ids)
        feed = [self.feed_of[ord(own[0])] for own in self.ids]
        known: list[dict[int, int] | None] = [None] * count  # other feeds' last atom known
        state = bytearray(count)
        empty: dict[int, int] = {}
        budget = [MAX_AWARENESS]  # entries of new maps still allowed
        for start in range(count):
            stack = [start]
            while stack:
                atom = stack[-1]
                if state[atom] == 2:
                    stack.pop()
                    continue
                deps = [
                    d for d in (self.cause[atom] if atom else -1, self._previous(atom)) if d >= 0
                ]
                if state[atom] == 0:
                    state[atom] = 1
                    for dep in deps:
                        if state[dep] == 1:
                            self.fail(
                                WeaveReason.AWARENESS_LOOP,
                                "it knows an atom that knows it",
                                atom * 5,
                            )
                        if state[dep] == 0:
                            stack.append(dep)
                    if stack[-1] != atom:
                        continue
                mine = empty
                for dep in deps:
                    mine = _join(mine, known[dep], budget)  # type: ignore[arg-type]
                    if feed[dep] != feed[atom]:
                        mine = _join(mine, {feed[dep]: self._n(dep)}, budget)
                if budget[0] < 0:
                    self.fail(
                        WeaveReason.TOO_LARGE,
                        f"its feeds know each other past {MAX_AWARENESS} entries to check",
                        atom * 5,
                    )
                known[atom] = mine
                state[atom] = 2
                stack.pop()
        self._siblings(feed, known)

    def _siblings(self, feed: list[int], known: list[Any]) -> None:
        bad: list[int] = []
        for children in self.siblings.values():
            lowest: dict[int, int] = {}  # feed -> the lowest n of the siblings before
            for child in children:
                n, mine = self._n(child), known[child]
                for other, low in lowest.items():
                    if (low <= n) if other == feed[child] else (mine.get(other, -1) >= low):
                        bad.append(child)
                        break
                if lowest.get(feed[child], n + 1) > n:
                    lowest[feed[child]] = n
        if bad:
            self.fail(WeaveReason.SIBLING_ORDER, "it knows a sibling before it", min(bad) * 5)


def _join(a: dict[int, int], b: dict[int, int], budget: list[int]) -> dict[int, int]:
    """The highest of each entry; `a` or `b` itself when it holds the other. A new map's
    entries are taken from `budget[0]`."""
    if a is b or not b:
        return a
    if not a:
        return b
    if all(a.get(k, -1) >= v for k, v in b.items()):
        return a
    if all(b.get(k, -1) >= v for k, v in a.items()):
        return b
    joined = dict(a)
    for k, v in b.items():
        if joined.get(k, -1) < v:
            joined[k] = v
    budget[0] -= len(joined)
    return joined
