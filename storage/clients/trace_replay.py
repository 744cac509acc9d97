"""Replaying a recorded editing trace into a store, through the real write path.

Theory of operation
-------------------
A trace (josephg/editing-traces; tests/data/README.md, "The editing traces") is a
list of transactions ("txns"), each a list of patches `[pos, delCount, insStr]`
in code points, applied in order. A sequential trace has one author, each txn
typed on the one before it; a concurrent one names each txn's `agent` and its
`parents`, the earlier txns it was typed against. `storage.clients.trace_file` reads
and checks one (`load_trace`, `BadTrace`); this module replays it.

Each agent writes its own feed, signed with a keypair derived from its number
(`agent_keypair`), so a replay is reproducible; agent 0 creates the document
(doc/init) and types the start content. An agent behaves like an editor: it
holds its text as atom ids (`AtomView`) and turns each patch into ops on them.
An insert is caused by the atom left of its position (the root at 0); a delete
names the atoms it removes, as runs of consecutive indices of one message. Its
own edits update the view directly. When a txn's parents bring in work it has
not seen, it copies another agent's view if one shows exactly that version
(one agent catching up with the other), else it reads the view from the store
(`document_atoms` at the parents' weft) once the queued messages are ingested.

Messages are cut as an editor flushes its buffer: consecutive edits of one
agent while its awareness is unchanged (each txn's parents are just that
agent's previous txn), at most `MESSAGE_EDITS` edits and `MESSAGE_SPAN_MS` of
recorded time per message, within the message limits (kept by an upper bound
of each op's encoded size, so adding an edit costs O(1), not an `edit_size`
of the whole message; `sign_message` checks the result), citing the messages
of at most `TIMEFRAME_CAP` feeds, the document root's among them.

What an agent has *seen* is the closed vector clock of its first txn's
parents: every feed at the highest seq they reach, transitively. Its
message's timeframe names that as the agent's node would
(storage.feeds.timeframe: `choose_entries`, the one rule), from the replay's
clocks: first the feeds of the messages it cites, then of the document's
root and of the message's `previous` (the tips of what it saw), each at the
end the agent saw, then the *heads* of what it saw, the entries no other
entry's weft reaches, newest signed first; at most `TIMEFRAME_CAP` (32),
never its own feed. The replay keeps each message's weft as the engine
reads it through that timeframe (storage/documents/wefts.py: the join of
its own feed at its seq, its feed's weft before it, and the weft of each
message named), and finds heads and tips by those wefts. When the places
hold every head, the edit's weft is exactly the version its author saw,
provided two things hold, and the replay makes them hold:

- a txn that another txn cites, other than as its author's next edit, ends
  its message (`boundaries`): a weft cannot stop in the middle of a message;
- an agent whose txn does not follow its own previous one (it edits an older
  version) continues on a new feed, as a second device would: a feed is one
  line of versions.

When they do not (a merge of 65 concurrent authors' work), the weft holds
what the named entries reach, as on a node, and the heads left out are
named by later messages. Every atom the edit cites is inside it still (the
cited feeds come first); an insert beside a concurrent sibling that the
weft left out may sort otherwise than the trace had it, as it would among
nodes, and the report's `matches` says so.

Signed messages go to `store.writes.ingest` in batches, where they are verified,
stored, processed and woven like any message from a peer.
"""

from __future__ import annotations

import hashlib
import time
from array import array
from dataclasses import dataclass

from tanglenode.protocol.document import (
    MAX_ATOMS,
    MAX_OPS,
    TANGLE,
    AtomRef,
    Delete,
    Insert,
    edit_content,
    init_content,
)
from tanglenode.protocol.groups import Kind, Private, seal_message, seal_value
from tanglenode.protocol.identity import Keypair, tag_of
from tanglenode.protocol.limits import TIMEFRAME_CAP
from tanglenode.protocol.message import (
    ROOT_LINK,
    Named,
    TangleLink,
    UnpublishableMessage,
    sign_message,
)
from tanglenode.storage.clients.trace_file import MAX_AGENTS, BadTrace, Trace, load_trace
from tanglenode.storage.documents.atom_view import AtomView
from tanglenode.storage.errors import StorageError
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.feeds.timeframe import Candidate, choose_entries
from tanglenode.storage.store import FeedStore

__all__ = [
    "AtomView",
    "BadTrace",
    "ReplayError",
    "ReplayReport",
    "Trace",
    "agent_keypair",
    "boundaries",
    "load_trace",
    "replay",
]

MESSAGE_EDITS = 64  # an editor's buffer: at most this many edits per message
MESSAGE_SPAN_MS = 1000  # ... typed within this much recorded time
BATCH_MESSAGES = 256  # messages per `ingest` call (one commit each)

# Upper bounds of encoded sizes (canonical msgpack), for cutting messages in time:
# A doc/edit message but its content, timeframe and previous: the format-2 fields (224),
# format 3's content hash (bin 32) and size (uint 32), and the wire pair: its array header
# and two bin 32 headers (1 + 5 + 5).
_ENVELOPE_BYTES = 224 + 34 + 5 + 11
_TIMEFRAME_ENTRY_BYTES = 62  # bin 32 + [an int, bin 16]
_LINK_BYTES = 34  # bin 32, in `previous` or in `refs`
_CONTENT_BYTES = 32  # {"ops": [..], "refs": [..], "type": "doc/edit"} but ops and refs
SEAL_BYTES = 128  # what sealing adds to a content: nonce, tag, the envelope's keys, epoch
_OP_BYTES = 18  # ["ins"|"del", ref, index, count | str header]; an insert adds its UTF-8

_INDEX_BITS = 16  # an atom in a view is handle << 16 | index (index < MAX_ATOMS)
_INDEX_MASK = (1 << _INDEX_BITS) - 1
_INS, _DEL = 0, 1


class ReplayError(StorageError):
    """The store did not accept what the replay built (a bug here or in the engine)."""


def boundaries(trace: Trace) -> set[int]:
    """The txns that end their message: those a txn cites other than as its agent's next."""
    found: set[int] = set()
    if not trace.concurrent:
        return found
    last = [-1] * trace.agents
    for txn in range(len(trace)):
        agent, parents = trace.txn_agent[txn], trace.parents_of(txn)
        if not (len(parents) == 1 and parents[0] == last[agent]):
            found.update(parents)
        last[agent] = txn
    return found


def agent_keypair(agent: int, session: int = 0) -> Keypair:
    """The keypair a replay signs an agent's edits with (`session` > 0: a further feed)."""
    label = f"tanglenode trace replay: agent {agent}, session {session}".encode()
    return Keypair(hashlib.blake2b(label, digest_size=32).digest())


# -- replaying -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReplayReport:
    doc: bytes  # the document's id (its doc/init message)
    txns: int
    edits: int  # patches applied
    agents: int
    feeds: int  # one per agent, and one more each time an agent edits an older version
    messages: int  # signed and ingested, doc/init included
    batches: int  # `ingest` calls
    refreshes: int  # views read from the store
    shared: int  # views copied from another agent's that showed the same version
    seconds: float
    text: str
    expected: str | None  # the trace's endContent

    @property
    def matches(self) -> bool | None:
        return None if self.expected is None else self.text == self.expected


def replay(
    trace: Trace,
    store: FeedStore,
    *,
    title: str = "trace",
    batch: int = BATCH_MESSAGES,
    share_views: bool = True,
    group_key: bytes | None = None,
) -> ReplayReport:
    """Replay `trace` into `store` as a new document and return what became of it.

    The store must not hold the replay's feeds yet (a fresh store): they are
    deterministic, so a second replay into one store would fork them. Raises
    `BadTrace` for a patch outside its agent's text (concurrent traces are only
    checked here) and `ReplayError` if the store refuses a message.

    `share_views=False` reads every view an agent needs from the store, even
    when another agent holds that very version (tests the engine's reads).
    With `group_key`, the document is private (docs/DOCUMENTS.md, "Private
    documents"): agent 0's first message is a group's `group/init` sealed with
    that key, which the store is handed, and every document message is sealed
    in that epoch (each keeps `SEAL_BYTES` of room for it).
    """
    return _Replay(trace, store, title, batch, share_views, group_key).run()


class _Feed:
    __slots__ = ("agent", "author", "head", "ids", "keypair", "order", "seq", "timestamp", "wefts")

    def __init__(self, agent: int, keypair: Keypair) -> None:
        self.agent = agent
        self.keypair = keypair
        self.author = keypair.public
        self.seq, self.head, self.timestamp = 0, None, 0
        self.ids: list[bytes] = []  # by seq - 1
        self.wefts: list[int] = []  # by seq - 1: the message's weft as the engine reads it
        # through its timeframe (an index into _Replay.wefts)
        self.order: list[int] = []  # by seq - 1: when the replay signed it (newest: highest)


class _Draft:
    """An agent's message being typed: ops as lists, atoms as view ints, sizes as bounds."""

    __slots__ = (
        "atoms",
        "authors",
        "budget",
        "cited",
        "edits",
        "feed",
        "handle",
        "hi",
        "lo",
        "ops",
        "previous",
        "refs",
        "seen",
        "seq",
        "size",
        "weft",
    )

    def __init__(
        self, feed, handle, seq, seen, weft, previous, budget, moment, authors, root
    ) -> None:
        self.feed, self.handle, self.seq, self.seen, self.weft = feed, handle, seq, seen, weft
        self.previous, self.budget = previous, budget
        # [_INS, cause, [text, ...], first atom, count] | [_DEL, first atom, count]
        self.ops: list[list] = []
        self.refs: set[int] = set()  # handles of the other messages cited
        self.authors = authors  # handle -> its message's author (the replay's list)
        # The feeds the message cites, but its own: each takes a place of its timeframe, and
        # the document root's feed keeps one, so the timeframe covers the root.
        self.cited: set[bytes] = {root} - {feed.author}
        self.atoms = self.size = self.edits = 0
        self.lo = self.hi = moment

    def _room_to_cite(self, handle: int) -> bool:
        """Whether citing message `handle` keeps the feeds cited within a timeframe."""
        author = self.authors[handle]
        return author == self.feed.author or author in self.cited or len(self.cited) < TIMEFRAME_CAP

    def _cite(self, handle: int) -> None:
        self.refs.add(handle)
        if self.authors[handle] != self.feed.author:
            self.cited.add(self.authors[handle])

    def insert(self, cause: int, text: str) -> int:
        """Add as much of `text` as fits, typed after atom `cause`; returns the count added."""
        ops = self.ops
        last = ops[-1] if ops else None
        merged = last is not None and last[0] == _INS and cause == last[3] + last[4] - 1
        cited = cause >> _INDEX_BITS
        extra = 0
        if not merged:
            if len(ops) >= MAX_OPS:
                return 0
            extra = _OP_BYTES
            if cited != self.handle and cited not in self.refs:
                if not self._room_to_cite(cited):
                    return 0
                extra += _LINK_BYTES
        room = self.budget - self.size - extra
        count = len(text)
        if count > MAX_ATOMS - self.atoms:
            count = MAX_ATOMS - self.atoms
            text = text[:count]
        size = count if text.isascii() else len(text.encode())
        if size > room:
            text = text.encode()[: max(room, 0)].decode(errors="ignore")  # whole characters
            count = len(text)
            size = len(text.encode())
        if not count:
            return 0
        if merged:
            last[2].append(text)
            last[4] += count
        else:
            ops.append([_INS, cause, [text], self.handle << _INDEX_BITS | self.atoms, count])
            if cited != self.handle:
                self._cite(cited)
        self.atoms += count
        self.size += extra + size
        return count

    def delete(self, first: int, count: int) -> int:
        """Add backspaces on atoms first .. first+count-1 (one message's); returns how many."""
        ops = self.ops
        if ops and self.atoms + count <= MAX_ATOMS:
            last = ops[-1]
            if last[0] == _DEL and last[1] >> _INDEX_BITS == first >> _INDEX_BITS:
                if last[1] + last[2] == first:
                    last[2] += count
                    self.atoms += count
                    return count
                if first + count == last[1]:
                    last[1] = first
                    last[2] += count
                    self.atoms += count
                    return count
        cited = first >> _INDEX_BITS
        extra = _OP_BYTES
        if cited != self.handle and cited not in self.refs:
            if not self._room_to_cite(cited):
                return 0
            extra += _LINK_BYTES
        count = min(count, MAX_ATOMS - self.atoms)
        if len(ops) >= MAX_OPS or self.size + extra > self.budget or not count:
            return 0
        ops.append([_DEL, first, count])
        if cited != self.handle:
            self._cite(cited)
        self.atoms += count
        self.size += extra
        return count


class _Replay:
    def __init__(
        self,
        trace: Trace,
        store: FeedStore,
        title: str,
        batch: int,
        share_views: bool,
        group_key: bytes | None,
    ) -> None:
        self.trace, self.store, self.title, self.batch = trace, store, title, batch
        self.share_views = share_views
        self.group_key = group_key
        self.epoch = b""  # the group's id and its one epoch's, when the document is private
        self.seal_room = 0 if group_key is None else SEAL_BYTES
        self.limits = store.limits
        self.ids: list[bytes | None] = []  # handle -> message id (None while a draft)
        self.authors: list[bytes] = []  # handle -> its message's author
        self.position: dict[bytes, tuple[_Feed, int]] = {}  # message id -> its feed and seq
        self.maximal: dict[int, list[tuple[_Feed, int]]] = {}  # weft index -> `_maximal`
        self.first_atom: dict[bytes, int] = {}  # message id -> its atom 0, as a view int
        self.wefts: list[dict[bytes, int]] = []  # closed vector clocks, by index
        self.feed_of_author: dict[bytes, _Feed] = {}
        agents = trace.agents
        self.feed: list[_Feed] = [self._new_feed(agent, 0) for agent in range(agents)]
        self.sessions = [0] * agents
        self.base = [0] * agents  # weft of what each agent has seen, but its open draft
        self.draft: list[_Draft | None] = [None] * agents
        self.view: list[AtomView | None] = [None] * agents  # None: to read from the store
        self.queue: list[bytes] = []
        self.messages = self.batches = self.refreshes = self.shared = 0
        self.doc = b""
        self.root = 0  # the root atom, as a view int
        self.root_author = self.feed[0].author  # the doc/init's feed
        self.start = 0

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> ReplayReport:
        started = time.perf_counter()
        trace = self.trace
        held = self.store.feeds.frontier()
        if any(feed.author in held for feed in self.feed):
            raise ReplayError("the store already holds this replay's feeds: replay into a new one")
        self._create(trace.txn_time[0] if len(trace) else 0)
        txn_weft = array("q", bytes(8 * len(trace)))
        ends = boundaries(trace)
        last = [-1] * trace.agents
        patch_end, pos, dels, ins = (
            trace.patch_end,
            trace.patch_pos,
            trace.patch_del,
            trace.patch_ins,
        )
        first = 0
        for txn in range(len(trace)):
            agent = trace.agent_of(txn)
            if trace.concurrent or not txn:
                parents = trace.parents_of(txn)
                if not (len(parents) == 1 and parents[0] == last[agent]):
                    self._aware(agent, [txn_weft[p] for p in parents])
            moment = trace.txn_time[txn]
            end = patch_end[txn]
            for k in range(first, end):
                self._patch(txn, agent, pos[k], dels[k], ins[k], moment)
            first = end
            draft = self.draft[agent]
            txn_weft[txn] = self.base[agent] if draft is None else draft.weft
            last[agent] = txn
            if txn in ends:
                self._close(agent)
        for agent in range(trace.agents):
            self._close(agent)
        self._flush()
        text = self.store.documents.document_text(self.doc)
        aside = self.store.documents.document_set_aside(self.doc)
        if aside:
            _msg_id, reason, detail = aside[0]
            raise ReplayError(f"{len(aside)} edits set aside, the first for {reason}: {detail}")
        return ReplayReport(
            doc=self.doc,
            txns=len(trace),
            edits=trace.edits,
            agents=trace.agents,
            feeds=sum(feed.seq > 0 for feed in self.feed_of_author.values()),
            messages=self.messages,
            batches=self.batches,
            refreshes=self.refreshes,
            shared=self.shared,
            seconds=time.perf_counter() - started,
            text=text,
            expected=trace.end,
        )

    def seal(self, content: dict) -> dict:
        if self.group_key is None:
            return content
        return seal_value(content, self.group_key, self.epoch)

    def _open_group(self, feed: _Feed, moment: int) -> None:
        """Agent 0's group, its `group/init` sealed with `group_key`, handed to the store."""
        assert self.group_key is not None
        private = Private(Kind.INIT, (feed.keypair.public,), name=self.title)
        group = sign_message(
            feed.keypair,
            seq=1,
            prev=None,
            timestamp=max(moment, 0),
            timeframe={},
            tangles={"group": ROOT_LINK, "epoch": ROOT_LINK, "members": ROOT_LINK},
            content=seal_message(private, self.group_key, None, (feed.keypair.public,)),
            limits=self.limits,
        )
        self.store.writes.ingest([group.raw])
        self.epoch = group.id
        self.store.documents.set_keys({group.id: (group.id, self.group_key)}, {})
        feed.seq, feed.head, feed.timestamp = 1, group.id, group.timestamp
        feed.ids.append(group.id)
        feed.wefts.append(self._weft_index({}))  # no document message: an empty weft
        feed.order.append(-1)
        self.position[group.id] = feed, 1

    def _create(self, moment: int) -> None:
        """Agent 0 roots the document and types the start content; every agent starts there."""
        feed = self.feed[0]
        if self.group_key is not None:
            self._open_group(feed, moment)
        init = sign_message(
            feed.keypair,
            seq=feed.seq + 1,
            prev=feed.head,
            timestamp=max(moment, 0),
            timeframe={},
            tangles={TANGLE: ROOT_LINK},
            content=self.seal(init_content(self.title)),
            limits=self.limits,
        )
        self.doc = init.id
        handle = self._new_handle(feed.author)
        self.root = handle << _INDEX_BITS
        self._signed(feed, handle, init, self._weft_index({feed.author: init.seq}))
        self.base[0] = feed.wefts[-1]
        self.view[0] = AtomView()
        if self.trace.start:
            self._insert(0, 0, self.trace.start, moment)
            self._close(0)
        self.start = self.base[0]  # the weft of the start: every agent begins there
        self.base = [self.start] * len(self.base)

    def _aware(self, agent: int, parent_wefts: list[int]) -> None:
        """A txn whose parents are not just its agent's previous txn: what has it seen?"""
        self._close(agent)
        seen = dict(self.wefts[self.start])
        for index in parent_wefts:
            for feed, seq in self.wefts[index].items():
                if seq > seen.get(feed, 0):
                    seen[feed] = seq
        own = self.feed[agent]
        if own.seq > seen.get(own.author, 0):  # it edits a version without its own last edits
            self.sessions[agent] += 1
            self.feed[agent] = self._new_feed(agent, self.sessions[agent])
            self.view[agent] = None
        if seen != self.wefts[self.base[agent]]:
            self.base[agent] = self._weft_index(seen)
            self.view[agent] = None
        if self.view[agent] is None and self.share_views:
            self._share(agent, seen)

    def _share(self, agent: int, seen: dict[bytes, int]) -> None:
        """Take a copy of another agent's view if it shows exactly `seen` (no store read)."""
        for author, seq in seen.items():
            feed = self.feed_of_author[author]
            other = feed.agent
            if (
                other != agent
                and self.feed[other] is feed
                and feed.seq == seq
                and self.draft[other] is None
                and self.view[other] is not None
                and self.wefts[self.base[other]] == seen
            ):
                self.view[agent] = self.view[other].copy()
                self.base[agent] = self.base[other]
                self.shared += 1
                return

    def _patch(self, txn: int, agent: int, pos: int, deleted: int, text: str, moment: int) -> None:
        view = self.view[agent]
        if view is None:
            view = self._refresh(agent)
        if pos + deleted > len(view):
            raise BadTrace(txn, f"patch at {pos} deleting {deleted}, text of {len(view)}")
        if not (deleted or text):
            return
        draft = self.draft[agent]
        if draft is not None and (
            draft.edits >= MESSAGE_EDITS
            or moment - draft.lo > MESSAGE_SPAN_MS
            or draft.hi - moment > MESSAGE_SPAN_MS
        ):
            self._close(agent)
        if deleted:
            removed = view.delete(pos, deleted)
            start = 0
            for k in range(1, len(removed) + 1):
                if k == len(removed) or removed[k] != removed[k - 1] + 1:
                    self._delete(agent, removed[start], k - start, moment)
                    start = k
        if text:
            self._insert(agent, pos, text, moment)
        self.draft[agent].edits += 1

    def _insert(self, agent: int, pos: int, text: str, moment: int) -> None:
        view = self.view[agent]
        cause = view.get(pos - 1) if pos else self.root
        while text:
            draft = self._draft(agent, moment)
            first = draft.handle << _INDEX_BITS | draft.atoms
            count = draft.insert(cause, text)
            if count:
                view.insert(pos, first, count)
                pos += count
                cause = first + count - 1
                text = text[count:]
            if text:
                self._full(agent, draft)

    def _delete(self, agent: int, first: int, count: int, moment: int) -> None:
        while count:
            draft = self._draft(agent, moment)
            taken = draft.delete(first, count)
            first += taken
            count -= taken
            if count:
                self._full(agent, draft)

    def _full(self, agent: int, draft: _Draft) -> None:
        if not draft.ops:
            raise ReplayError("an empty message has no room for one edit")
        self._close(agent)

    # -- messages ----------------------------------------------------------------------------

    def _draft(self, agent: int, moment: int) -> _Draft:
        draft = self.draft[agent]
        if draft is None:
            feed = self.feed[agent]
            seen = self.wefts[self.base[agent]]
            weft = dict(seen)  # what it has seen once this message is typed
            weft[feed.author] = feed.seq + 1
            previous = self._tips(self.base[agent])
            entries = min(len(seen) - (feed.author in seen), TIMEFRAME_CAP)
            budget = (
                self.limits.max_message_bytes
                - _ENVELOPE_BYTES
                - _CONTENT_BYTES
                - _TIMEFRAME_ENTRY_BYTES * entries
                - _LINK_BYTES * len(previous)
                - self.seal_room
            )
            draft = _Draft(
                feed,
                self._new_handle(feed.author),
                feed.seq + 1,
                self.base[agent],
                self._weft_index(weft),
                previous,
                budget,
                moment,
                self.authors,
                self.root_author,
            )
            self.draft[agent] = draft
        elif moment < draft.lo:
            draft.lo = moment
        elif moment > draft.hi:
            draft.hi = moment
        return draft

    def _maximal(self, seen: int) -> list[tuple[_Feed, int]]:
        """The messages of closed vector clock `seen` (a weft index) that no other one's weft
        reaches: the doc tangle's tips inside it, and the heads a node that processed it
        holds (every message here is a document's, named through its weft)."""
        found = self.maximal.get(seen)
        if found is None:
            entries = [(self.feed_of_author[f], seq) for f, seq in self.wefts[seen].items()]
            found = self.maximal[seen] = [
                (feed, seq)
                for feed, seq in entries
                if not any(
                    other is not feed and self.wefts[other.wefts[s - 1]].get(feed.author, 0) >= seq
                    for other, s in entries
                )
            ]
        return found

    def _tips(self, seen: int) -> tuple[bytes, ...]:
        """The doc tangle's tips inside `seen`, as `previous` (at most `max_previous`)."""
        tips = sorted(feed.ids[seq - 1] for feed, seq in self._maximal(seen))
        return tuple(tips[: self.limits.max_previous])

    def _timeframe(self, draft: _Draft) -> dict[bytes, Named]:
        """The timeframe the draft's author's node would sign (the module's docstring)."""
        me, seen = draft.feed.author, self.wefts[draft.seen]

        def candidate(msg_id: bytes) -> Candidate:
            feed, seq = self.position[msg_id]
            end = seen.get(feed.author, 0)
            if feed.author == me or end < seq:
                return None
            return feed.author, Named(end, tag_of(feed.ids[end - 1]))

        cites = {self.ids[handle] for handle in draft.refs}
        if self.epoch:  # a sealed edit cites its epoch too (storage.documents.ops)
            cites.add(self.epoch)
        heads = sorted(self._maximal(draft.seen), key=lambda head: -head[0].order[head[1] - 1])
        return choose_entries(
            me,
            map(candidate, sorted(cites)),
            map(candidate, [self.doc, *draft.previous]),
            ((feed.author, Named(seq, tag_of(feed.ids[seq - 1]))) for feed, seq in heads),
        )

    def _woven_weft(self, feed: _Feed, seq: int, timeframe: dict[bytes, Named]) -> int:
        """The weft the engine reads through message (`feed`, `seq`)'s timeframe, as an index
        (storage/documents/wefts.py): every message of a replay's feed is the document's."""
        woven = {feed.author: seq}
        named = [(feed, seq - 1)] + [(self.feed_of_author[f], e.seq) for f, e in timeframe.items()]
        for other, upto in named:
            if upto:
                for author, reached in self.wefts[other.wefts[upto - 1]].items():
                    if reached > woven.get(author, 0):
                        woven[author] = reached
        return self._weft_index(woven)

    def _close(self, agent: int) -> None:
        draft = self.draft[agent]
        if draft is None:
            return
        self.draft[agent] = None
        ids, own = self.ids, draft.handle

        def ref(atom: int) -> AtomRef:
            handle = atom >> _INDEX_BITS
            return AtomRef(None if handle == own else ids[handle], atom & _INDEX_MASK)

        ops = [
            Insert(ref(op[1]), "".join(op[2])) if op[0] == _INS else Delete(ref(op[1]), op[2])
            for op in draft.ops
        ]
        feed = draft.feed
        moment = max(draft.hi, feed.timestamp, 0)
        timeframe = self._timeframe(draft)
        try:
            message = sign_message(
                feed.keypair,
                seq=draft.seq,
                prev=feed.head,
                timestamp=moment,
                timeframe=timeframe,
                tangles={TANGLE: TangleLink(self.doc, draft.previous)},
                content=self.seal(edit_content(ops)),
                limits=self.limits,
            )
        except UnpublishableMessage as error:
            raise ReplayError(f"a replayed message cannot be signed: {error}") from error
        self._signed(feed, own, message, self._woven_weft(feed, draft.seq, timeframe))
        self.base[agent] = draft.weft

    def _signed(self, feed: _Feed, handle: int, message, weft: int) -> None:
        feed.seq, feed.head, feed.timestamp = message.seq, message.id, message.timestamp
        feed.ids.append(message.id)
        feed.wefts.append(weft)
        feed.order.append(self.messages)
        self.position[message.id] = feed, message.seq
        self.ids[handle] = message.id
        self.first_atom[message.id] = handle << _INDEX_BITS
        self.queue.append(message.raw)
        self.messages += 1
        if len(self.queue) >= self.batch:
            self._flush()

    def _flush(self) -> None:
        if not self.queue:
            return
        results = self.store.writes.ingest(self.queue)
        self.queue = []
        self.batches += 1
        for result in results:
            if result.outcome is not Outcome.ACCEPTED:
                raise ReplayError(
                    f"the store refused a replayed message: {result.outcome}, "
                    f"{result.reason}: {result.detail}"
                )

    def _refresh(self, agent: int) -> AtomView:
        """Read an agent's view from the store: the revision at what it has seen."""
        self._flush()
        first = self.first_atom
        atoms = self.store.documents.document_atoms(self.doc, dict(self.wefts[self.base[agent]]))
        view = AtomView(array("q", [first[msg_id] | index for msg_id, index in atoms]))
        self.view[agent] = view
        self.refreshes += 1
        return view

    # -- bookkeeping -------------------------------------------------------------------------

    def _new_feed(self, agent: int, session: int) -> _Feed:
        feed = _Feed(agent, agent_keypair(agent, session))
        if len(self.feed_of_author) >= MAX_AGENTS:  # agents, and agents' further sessions
            raise BadTrace(None, f"the replay needs more than {MAX_AGENTS} feeds")
        self.feed_of_author[feed.author] = feed
        return feed

    def _new_handle(self, author: bytes) -> int:
        self.ids.append(None)
        self.authors.append(author)
        return len(self.ids) - 1

    def _weft_index(self, weft: dict[bytes, int]) -> int:
        self.wefts.append(weft)
        return len(self.wefts) - 1
