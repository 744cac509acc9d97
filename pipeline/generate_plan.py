"""The shape of a generated archive, planned on the driver: who writes what, naming what.

Theory of operation
-------------------
`tangled pipeline generate` (pipeline/generate.py) writes an archive shaped
like real social feeds; this module decides its shape, cheaply and
deterministically from the seed, and leaves the signing to Spark's tasks
(pipeline/generate_sign.py).

**Sizes.** Every feed writes at least one message; the other N - F are
shared out by Pareto's law: the feed ranked i (from 0) weighs (i + 1) ** (-1 /
`PARETO_SHAPE`), about the i-th largest of F draws from a Pareto distribution
of that shape, so a few feeds write most messages, as in ssb-fixtures (whose
sizes are Pareto's of shape 2; 1.16, the 80-20 rule's, is heavier: the
largest fifth of 50 feeds writes 57 % of 2,000 messages). The shares are
rounded by largest remainder, so the sizes sum to N exactly. Feed 0 is the
largest.

**Steps.** The feeds' messages are shuffled into one global order (the
*schedule*): step t is written by feed `schedule[t]`, its next seq, stamped
`BASE_MS + t * STEP_MS`. A feed's first message names it (`about`); each
later one is drawn from `MIX`: a post (the root of a `thread` tangle), a
reply in a recent thread, a contact (mostly follows, some unfollows, of
feeds drawn by the same weights: the large feeds are the followed ones), a
new name, or a document message (a `doc/init`, at most `documents(N)` of
them, or a `doc/edit` typing a line after its author's last line there, or
after the document's root).

**Rounds.** A message's id is the hash of its signed header, so a task can
name another feed's message (a timeframe's tag, a tangle's root and
`previous`, an edit's cited atom) only once that message is signed. The
steps are cut into rounds; a message of round r names only messages of
rounds before r, whose ids the driver learnt from round r - 1's tasks, and
messages of its own feed (its task signs them in order). So each message's
timeframe names the heads, as the last round ended, of a few feeds that
wrote in that round (`recently heard`), plus the feeds it must name: the
thread's root's, or for an edit the document's init's (an edit whose
timeframe does not reach the init is set aside by every node,
docs/DOCUMENTS.md). A reply's `previous` is the thread's tips as the author
knows them: the tips after round r - 1, and after its own replies of this
round (each of which it then names instead, as a node would); the lowest
`MAX_PREVIOUS` ids when there are more. Replies go to the `THREADS_KEPT`
newest threads, the newest likeliest, so the driver keeps no older ones.

**Groups.** Each round's work is cut by feed: the feeds are dealt into
groups, the largest first, each to the lightest group (so the one large
feed that writes a fifth of everything is one group's work); a group's
messages of one round are one Spark task and one Parquet file. Rounds and
groups depend on N and F only, never on the cluster, so a seed gives the
same bytes on any master.

The driver holds the schedule, each feed's head, and the kept threads and
documents; never the messages.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import random
from array import array
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import repeat
from typing import NamedTuple

from tanglenode.protocol.identity import Keypair, tag_of

PARETO_SHAPE = 1.16  # the 80-20 rule's
BASE_MS = 1_700_000_000_000  # the first step's timestamp
STEP_MS = 10_000  # between steps
ROUND_MESSAGES = 10_000  # a round's messages, roughly
MIN_ROUNDS, MAX_ROUNDS = 8, 256
GROUP_MESSAGES = 1_000  # a task's messages in a round, roughly
MAX_GROUPS = 64
THREADS_KEPT = 1_000  # the newest threads replies go to
MAX_PREVIOUS = 16  # a tangle link's `previous`, as a node publishes it
MAX_DOCUMENTS = 100
TIMEFRAME_FEEDS = (1, 4)  # recently heard feeds a timeframe names, at least and at most
EDIT_CHARS = (10, 80)  # a doc/edit's line
FOLLOW_SHARE = 0.9  # of contacts; the rest unfollow

ABOUT, POST, REPLY, CONTACT, DOC = "about", "post", "reply", "contact", "doc"
DOC_INIT, DOC_EDIT = "doc-init", "doc-edit"
MIX = ((POST, 0.28), (REPLY, 0.42), (CONTACT, 0.20), (ABOUT, 0.04), (DOC, 0.06))
TANGLE_KINDS = {POST: "thread", REPLY: "thread", DOC_INIT: "doc", DOC_EDIT: "doc"}

Ref = bytes | int  # a message id, or the seq of an earlier message of the same feed this round


class Planned(NamedTuple):
    """One message as planned: all but its content's words, which its task draws."""

    feed: int
    seq: int
    step: int
    kind: str
    timeframe: tuple[tuple[bytes, int, bytes], ...]  # (feed key, seq, tag)
    root: bytes | None = None  # the tangle's root (None: a root, or in no tangle)
    previous: tuple[Ref, ...] = ()
    contact: bytes | None = None  # a contact's feed key
    following: bool = True
    cause: Ref | None = None  # the message of the atom an edit types after
    cause_index: int = 0
    length: int = 0  # an edit's characters


class FeedWork(NamedTuple):
    """One feed's messages of one round, and where its chain stood before them."""

    feed: int
    prev_seq: int
    prev_id: bytes | None
    messages: list[Planned]


class Unit(NamedTuple):
    """One task: a group's feeds in one round."""

    round: int
    group: int
    feeds: list[FeedWork]


def feed_keypair(seed: int, feed: int) -> Keypair:
    """Feed `feed`'s key, from the seed alone (every task derives its own)."""
    secret = hashlib.blake2b(f"tanglenode generate {seed} {feed}".encode(), digest_size=32)
    return Keypair(secret.digest())


def feed_sizes(messages: int, feeds: int) -> list[int]:
    """Each feed's messages: one each, the rest by Pareto weights (feed 0 the largest)."""
    weights = [(rank + 1) ** (-1 / PARETO_SHAPE) for rank in range(feeds)]
    total = sum(weights)
    extra = messages - feeds
    shares = [extra * weight / total for weight in weights]
    sizes = [1 + math.floor(share) for share in shares]
    left = messages - sum(sizes)
    by_remainder = sorted(range(feeds), key=lambda n: (-(shares[n] % 1), n))
    for n in by_remainder[:left]:
        sizes[n] += 1
    return sizes


def documents(messages: int) -> int:
    return max(1, min(MAX_DOCUMENTS, messages // 1_000))


def deal_groups(sizes: list[int], groups: int) -> list[list[int]]:
    """Feeds into `groups` groups, the largest first, each to the lightest (then lowest)."""
    heap = [(0, group) for group in range(groups)]
    dealt: list[list[int]] = [[] for _ in range(groups)]
    for feed in sorted(range(len(sizes)), key=lambda n: (-sizes[n], n)):
        load, group = heapq.heappop(heap)
        dealt[group].append(feed)
        heapq.heappush(heap, (load + sizes[feed], group))
    return [sorted(members) for members in dealt]


@dataclass(frozen=True)
class Shape:
    messages: int
    feeds: int
    seed: int
    sizes: list[int]
    rounds: int
    groups: list[list[int]]

    @classmethod
    def of(cls, messages: int, feeds: int, seed: int) -> Shape:
        sizes = feed_sizes(messages, feeds)
        rounds = min(messages, max(MIN_ROUNDS, min(MAX_ROUNDS, -(-messages // ROUND_MESSAGES))))
        per_round = -(-messages // rounds)
        groups = min(feeds, MAX_GROUPS, max(2, -(-per_round // GROUP_MESSAGES)))
        return cls(messages, feeds, seed, sizes, rounds, deal_groups(sizes, groups))

    def round_steps(self, number: int) -> range:
        return range(
            number * self.messages // self.rounds, (number + 1) * self.messages // self.rounds
        )


@dataclass
class Tangle:
    """A thread or a document the driver keeps: its root, tips, and this round's members."""

    root: bytes
    author: int
    root_seq: int
    tips: set[bytes]
    added: list[tuple[int, int, tuple[Ref, ...]]] = field(default_factory=list)
    # a document's: each editor's last edit, (seq, id once known, its characters)
    edits: dict[int, tuple[int, bytes | None, int]] = field(default_factory=dict)


class Planner:
    """Plans one round at a time (`plan_round`), and learns its ids after (`learn`)."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.keys = [feed_keypair(shape.seed, feed).public for feed in range(shape.feeds)]
        schedule = array("i")  # 4 bytes a step: 400 MB at 10**8
        for feed, size in enumerate(shape.sizes):
            schedule.extend(repeat(feed, size))
        random.Random(f"schedule {shape.seed}").shuffle(schedule)
        self.schedule = schedule
        self.rng = random.Random(f"plan {shape.seed}")
        self.written = [0] * shape.feeds  # seqs planned
        self.heads: list[tuple[int, bytes | None]] = [(0, None)] * shape.feeds  # as signed
        self.recent: list[int] = []  # the feeds that wrote in the last round
        self.threads: deque[Tangle] = deque(maxlen=THREADS_KEPT)
        self.docs: list[Tangle] = []
        self.doc_count = 0  # planned, known or not
        self.thread_count = 0
        self.new_roots: list[tuple[str, int, int]] = []  # (kind, feed, seq) of this round
        self.kinds = [kind for kind, _share in MIX]
        self.shares = [share for _kind, share in MIX]
        self.cumulative_weights = list(_accumulate(shape.sizes))

    def plan_round(self, number: int) -> list[Unit]:
        work: dict[int, FeedWork] = {}
        known: dict[tuple[int, int], set[Ref]] = {}  # (feed, id(tangle)): its tips as it knows
        for step in self.shape.round_steps(number):
            feed = self.schedule[step]
            self.written[feed] += 1
            seq = self.written[feed]
            if feed not in work:
                head_seq, head_id = self.heads[feed]
                work[feed] = FeedWork(feed, head_seq, head_id, [])
            planned = self._plan(feed, seq, step, known)
            work[feed].messages.append(planned)
        units = []
        for group, members in enumerate(self.shape.groups):
            feeds = [work[feed] for feed in members if feed in work]
            if feeds:
                units.append(Unit(number, group, feeds))
        return units

    def _plan(self, feed: int, seq: int, step: int, known: dict) -> Planned:
        rng = self.rng
        kind = ABOUT if seq == 1 else rng.choices(self.kinds, self.shares)[0]
        if kind == DOC:
            if self.doc_count < documents(self.shape.messages) and (
                not self.docs or rng.random() < 0.2
            ):
                kind = DOC_INIT
            else:
                kind = DOC_EDIT if self.docs else POST
        if kind == REPLY and not self.threads:
            kind = POST
        named = self._recently_heard(feed)
        if kind == CONTACT:
            target = self._weighted_feed()
            if target == feed:
                kind = POST
            else:
                return Planned(
                    feed,
                    seq,
                    step,
                    kind,
                    self._timeframe(named),
                    contact=self.keys[target],
                    following=rng.random() < FOLLOW_SHARE,
                )
        if kind in (POST, DOC_INIT):
            self.new_roots.append((kind, feed, seq))
            if kind == DOC_INIT:
                self.doc_count += 1
            else:
                self.thread_count += 1
            return Planned(feed, seq, step, kind, self._timeframe(named))
        if kind == ABOUT:
            return Planned(feed, seq, step, kind, self._timeframe(named))
        if kind == REPLY:
            back = int(rng.random() ** 2 * len(self.threads))  # the newest likeliest
            tangle = self.threads[len(self.threads) - 1 - back]
        else:
            tangle = self.docs[rng.randrange(len(self.docs))]
        if tangle.author != feed:
            named.add(tangle.author)
        tips = known.setdefault((feed, id(tangle)), set(tangle.tips))
        previous = _lowest(tips)
        tips.difference_update(previous)
        tips.add(seq)
        tangle.added.append((feed, seq, previous))
        planned = Planned(feed, seq, step, kind, self._timeframe(named), tangle.root, previous)
        if kind == REPLY:
            return planned
        length = rng.randrange(*EDIT_CHARS)
        last = tangle.edits.get(feed)
        cause: Ref
        if last is None:
            cause, index = tangle.root, 0
        else:
            last_seq, last_id, last_length = last
            cause, index = (last_seq if last_id is None else last_id), last_length - 1
        tangle.edits[feed] = (seq, None, length)
        return planned._replace(cause=cause, cause_index=index, length=length)

    def _recently_heard(self, feed: int) -> set[int]:
        if not self.recent:
            return set()
        wanted = self.rng.randint(*TIMEFRAME_FEEDS)
        drawn = self.rng.sample(self.recent, min(len(self.recent), wanted + 1))  # self, maybe
        return set([other for other in drawn if other != feed][:wanted])

    def _timeframe(self, feeds: Iterable[int]) -> tuple[tuple[bytes, int, bytes], ...]:
        entries = []
        for other in sorted(feeds):
            seq, head = self.heads[other]
            if head is not None:
                entries.append((self.keys[other], seq, tag_of(head)))
        return tuple(entries)

    def _weighted_feed(self) -> int:
        return self.rng.choices(range(self.shape.feeds), cum_weights=self.cumulative_weights)[0]

    def learn(self, heads: dict[int, tuple[int, bytes]], ids: dict[tuple[int, int], bytes]) -> None:
        """What the round's tasks signed: each feed's new head, and the ids of the
        messages of threads and documents."""
        for feed, head in heads.items():
            self.heads[feed] = head
        self.recent = sorted(heads)

        def resolve(feed: int, ref: Ref) -> bytes:
            return ids[(feed, ref)] if isinstance(ref, int) else ref

        for tangle in (*self.threads, *self.docs):
            if not tangle.added:
                continue
            named = {resolve(feed, ref) for feed, _s, previous in tangle.added for ref in previous}
            members = {ids[(feed, seq)] for feed, seq, _previous in tangle.added}
            tangle.tips = (tangle.tips | members) - named
            tangle.added.clear()
            for editor, (seq, known_id, length) in tangle.edits.items():
                if known_id is None:
                    tangle.edits[editor] = (seq, ids[(editor, seq)], length)
        for kind, feed, seq in self.new_roots:
            root = ids[(feed, seq)]
            tangle = Tangle(root, feed, seq, {root})
            (self.threads if kind == POST else self.docs).append(tangle)
        self.new_roots.clear()


def _lowest(tips: set[Ref]) -> tuple[Ref, ...]:
    """What a member names as `previous`: its own earlier members first, then the lowest
    ids, `MAX_PREVIOUS` at most."""
    own: list[Ref] = sorted(ref for ref in tips if isinstance(ref, int))
    ids: list[Ref] = sorted(ref for ref in tips if isinstance(ref, bytes))
    return tuple((own + ids)[:MAX_PREVIOUS])


def _accumulate(sizes: list[int]) -> Iterable[int]:
    total = 0
    for size in sizes:
        total += size
        yield total
