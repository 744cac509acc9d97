"""Fetching the witnesses the causal processor waits for, from the node's peers.

Theory of operation
-------------------
The store records each witness its processor waits for: a message of a
feed the node does not carry, named by a timeframe, read to learn what it
implies (storage/feeds/witnesses.py). One `WitnessFetch` per node
(`service.shared`) reads them at most once per store version, whatever the
number of sessions, and deals them out: each entry is asked of one session
at a time (gossip ASK), and of each session at most once. A WITNESS
answers it: the store checks the message and keeps it, and processing goes
on. An UNHELD, no answer within `ASK_WAIT` seconds, or the end of the
session asked, passes it to another session. The entry is *given up*, and
met from then on, once every connected session has refused it so, or
`PATIENCE` seconds after it was first seen wanted: a node never stalls long
on what it chose not to carry. A node with no session asks nobody and gives
up nothing; its processing goes on once a peer connects.

The dealing is decided on plain data and a time it is told (`update`,
`deal`, `asked`, `answered`, `unheld`, `leave`); only `read` (the store),
the wake-ups and `WitnessExchange` (the session's part: asking, answering)
touch Trio.

Answers to a peer's ASK are sent before its next frame is read, so a peer
that asks and never reads stops being read, and costs no memory beyond one
frame of answers.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Hashable

import trio

from tanglenode.protocol.errors import InvalidMessage, RemoteProtocolError
from tanglenode.protocol.gossip import GossipConnection
from tanglenode.storage.feeds.witnesses import Entry

PATIENCE = 20.0  # seconds an entry may stay wanted with peers connected, at most
ASK_WAIT = 5.0  # seconds a peer has to answer an ask before another peer is asked
WANTED_READ = 1024  # witnesses read per store version, at most


class WitnessFetch:
    """Which session is asked for which witness, shared by the node's sessions."""

    def __init__(self) -> None:
        self.version = -1  # the store version `wanted` was read at
        self.wanted: list[Entry] = []
        self.first_seen: dict[Entry, float] = {}
        self.asking: dict[Entry, tuple[Hashable, float]] = {}  # entry -> (asked of, when)
        self.refused: dict[Entry, set[Hashable]] = {}  # entry -> sessions that do not hold it
        # Answered and kept: wanted no more, though a read begun before the store kept it
        # may still list it.
        self.answered_here: dict[Entry, None] = {}
        self._lock = trio.Lock()
        self._wakers: dict[Hashable, trio.Event] = {}

    async def read(self, service) -> list[Entry]:
        """The wanted witnesses as of the service's version (read again if it moved). A node
        carrying every feed wants none (it witnesses no blocked feed), and reads nothing."""
        async with self._lock:
            if service.version != self.version:
                version = service.version
                wanted = (
                    []
                    if service.scope.hops is None
                    else await service.read(lambda store: store.feeds.witnesses_wanted(WANTED_READ))
                )
                self.update(version, wanted, trio.current_time())
        return self.wanted

    def update(self, version: int, wanted: list[Entry], now: float) -> None:
        """The store at `version` wants these: each is wanted since it was first seen; what
        it no longer wants is forgotten."""
        self.version, self.wanted, still = version, wanted, set(wanted)
        for entry in wanted:
            self.first_seen.setdefault(entry, now)
        for book in (self.first_seen, self.asking, self.refused, self.answered_here):
            for entry in [entry for entry in book if entry not in still]:
                del book[entry]

    def deal(
        self, session: Hashable, sessions: Collection[Hashable], now: float
    ) -> tuple[list[Entry], list[Entry]]:
        """What `session` does at `now`: the entries to give up (every connected session
        refused them, or `PATIENCE` ran out), and those it may ask its peer (nobody is asked
        for them now, and it never refused them), after the asks unanswered for `ASK_WAIT`
        count as refused. How many go in one ASK is the wire's bound (`may_ask`)."""
        self.expire(now)
        return self.hopeless(sessions, now), self.candidates(session)

    def candidates(self, session: Hashable) -> list[Entry]:
        """The wanted entries nobody is asked for now that `session` never refused."""
        return [
            entry
            for entry in self.wanted
            if entry not in self.asking
            and entry not in self.answered_here
            and session not in self.refused.get(entry, ())
        ]

    def asked(self, session: Hashable, entries: Collection[Entry], now: float) -> None:
        """`session` asked its peer for these."""
        for entry in entries:
            self.asking[entry] = (session, now)

    def expire(self, now: float) -> None:
        """An ask unanswered for `ASK_WAIT` counts as refused: another session may ask."""
        late = [e for e, (_s, when) in self.asking.items() if now - when > ASK_WAIT]
        for entry in late:
            session, _when = self.asking.pop(entry)
            self.refused.setdefault(entry, set()).add(session)
        if late:
            self.wake()

    def answered(self, session: Hashable, entries: Collection[Entry]) -> None:
        """`session`'s peer sent these (kept by the store: never asked again)."""
        self._release(session, entries)
        self.answered_here.update(dict.fromkeys(entries))

    def _release(self, session: Hashable, entries: Collection[Entry]) -> None:
        for entry in entries:
            if self.asking.get(entry, (None,))[0] is session:
                del self.asking[entry]

    def unheld(self, session: Hashable, entries: Collection[Entry]) -> None:
        """`session`'s peer does not hold these: another session may be asked."""
        self._release(session, entries)
        for entry in entries:
            if entry in self.first_seen:
                self.refused.setdefault(entry, set()).add(session)
        self.wake()

    def due(self, session: Hashable) -> trio.Event:
        """A fresh event for `session` to wait on, set when there may be something new to
        ask (`wake`)."""
        event = self._wakers[session] = trio.Event()
        return event

    def leave(self, session: Hashable) -> None:
        """`session` ended: what it was asked goes to the others."""
        self._wakers.pop(session, None)
        for entry in [entry for entry, (asked, _) in self.asking.items() if asked is session]:
            del self.asking[entry]
        for refused in self.refused.values():
            refused.discard(session)
        self.wake()

    def wake(self) -> None:
        for event in self._wakers.values():
            event.set()

    def hopeless(self, sessions: Collection[Hashable], now: float) -> list[Entry]:
        """Entries to give up: every connected session refused them, or they waited past
        `PATIENCE` with a session connected."""
        if not sessions:
            return []
        return [
            entry
            for entry in self.wanted
            if entry not in self.answered_here
            and (
                now - self.first_seen.get(entry, now) > PATIENCE
                or all(session in self.refused.get(entry, ()) for session in sessions)
            )
        ]


class BadWitness(RemoteProtocolError):
    """A peer answered an ask with a message that fails its checks: it is dropped."""


class WitnessExchange:
    """One gossip session's part in fetching witnesses: it answers its peer's asks from the
    messages the store holds (never from witnesses of its own, which are not passed on),
    and asks its peer for what the node's `WitnessFetch` deals it."""

    def __init__(
        self,
        session: Hashable,
        service,
        connection: GossipConnection,
        send: Callable[[bytes], Awaitable[None]],
        sessions: Collection[Hashable],
    ) -> None:
        self.session = session
        self.service = service
        self.connection = connection
        self.send = send
        self.sessions = sessions  # every session of the node, this one included
        self.fetch = service.shared(WitnessFetch)
        self._due = trio.Event()

    def _wake(self) -> None:
        self._due.set()

    async def run(self) -> None:
        """Deal, ask, give up: whenever the store changes, a peer refuses, or a while passed."""
        fetch, service = self.fetch, self.service
        service.watch(self._wake)
        try:
            while True:
                self._due = fetch.due(self.session)
                await fetch.read(service)
                now = trio.current_time()
                gone, candidates = fetch.deal(self.session, self.sessions, now)
                if gone:
                    if await service.give_up_witnesses(gone):
                        continue
                    candidates = fetch.candidates(self.session)  # as of after the wait
                while chosen := self.connection.may_ask(candidates):
                    fetch.asked(self.session, chosen, now)
                    await self.send(self.connection.ask(chosen))
                    candidates = [entry for entry in candidates if entry not in chosen]
                with trio.move_on_after(ASK_WAIT):
                    await self._due.wait()
        finally:
            service.unwatch(self._wake)
            fetch.leave(self.session)

    async def answer(self, entries: list[Entry]) -> None:
        """The peer's ASK: what we hold goes back in WITNESS frames, the rest in an UNHELD."""
        found = await self.service.read(
            lambda store, asked: store.feeds.witness_answers(asked), entries
        )
        budget = self.connection.max_frame - 1024
        chunk: list[bytes] = []
        for raw in (found[entry] for entry in entries if entry in found):
            if chunk and sum(map(len, chunk)) + len(raw) > budget:
                await self.send(self.connection.witnesses(chunk))
                chunk = []
            chunk.append(raw)
        if chunk:
            await self.send(self.connection.witnesses(chunk))
        missing = [entry for entry in entries if entry not in found]
        if missing:
            await self.send(self.connection.unheld(missing))

    async def take(self, answered: dict[Entry, bytes]) -> None:
        """The peer's WITNESS: the store checks and keeps each, and processes what waited."""
        try:
            await self.service.add_witnesses(list(answered.values()))
        except InvalidMessage as error:
            raise BadWitness(f"sent a witness that fails its checks: {error}") from None
        self.fetch.answered(self.session, answered.keys())

    def unheld(self, entries: list[Entry]) -> None:
        self.fetch.unheld(self.session, entries)
