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
on. An UNHELD, or the end of the session asked, passes it to another
session. The entry is *given up*, and met from then on, once every
connected session has said it does not hold it, or `PATIENCE` seconds after
it was first seen wanted: a node never stalls long on what it chose not to
carry. A node with no session asks nobody and gives up nothing; its
processing goes on once a peer connects.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable

import trio

from tanglenode.protocol.errors import InvalidMessage, RemoteProtocolError
from tanglenode.protocol.gossip import MAX_ASK, MAX_ASKING, GossipConnection
from tanglenode.storage.feeds.witnesses import Entry

PATIENCE = 20.0  # seconds an entry may stay wanted with peers connected, at most
WANTED_READ = 1024  # witnesses read per store version, at most


class WitnessFetch:
    """Which session is asked for which witness, shared by the node's sessions."""

    def __init__(self) -> None:
        self.version = -1  # the store version `wanted` was read at
        self.wanted: list[Entry] = []
        self.first_seen: dict[Entry, float] = {}
        self.asking: dict[Entry, Hashable] = {}  # entry -> the session asked now
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
                self.version = service.version
                self.wanted = (
                    []
                    if service.scope.hops is None
                    else await service.read(lambda store: store.feeds.witnesses_wanted(WANTED_READ))
                )
                now, still = trio.current_time(), set(self.wanted)
                for entry in self.wanted:
                    self.first_seen.setdefault(entry, now)
                for book in (self.first_seen, self.asking, self.refused, self.answered_here):
                    for entry in [entry for entry in book if entry not in still]:
                        del book[entry]
        return self.wanted

    def to_ask(self, session: Hashable, room: int) -> list[Entry]:
        """Up to `room` wanted entries nobody is asked for now and `session` never refused;
        they are `session`'s to ask."""
        found = []
        for entry in self.wanted:
            if len(found) >= room:
                break
            if (
                entry not in self.asking
                and entry not in self.answered_here
                and session not in self.refused.get(entry, ())
            ):
                self.asking[entry] = session
                found.append(entry)
        return found

    def answered(self, session: Hashable, entries: Collection[Entry]) -> None:
        """`session`'s peer sent these (kept by the store: never asked again)."""
        self._release(session, entries)
        self.answered_here.update(dict.fromkeys(entries))

    def _release(self, session: Hashable, entries: Collection[Entry]) -> None:
        for entry in entries:
            if self.asking.get(entry) is session:
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
        for entry in [entry for entry, asked in self.asking.items() if asked is session]:
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
        send_soon: Callable[[bytes], None],
        sessions: Collection[Hashable],
    ) -> None:
        self.session = session
        self.service = service
        self.connection = connection
        self.send_soon = send_soon
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
                gone = fetch.hopeless(self.sessions, trio.current_time())
                if gone and await service.give_up_witnesses(gone):
                    continue
                room = MAX_ASKING - len(self.connection.asking)
                entries = fetch.to_ask(self.session, room)
                for start in range(0, len(entries), MAX_ASK):
                    self.send_soon(self.connection.ask(entries[start : start + MAX_ASK]))
                with trio.move_on_after(PATIENCE / 4):
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
                self.send_soon(self.connection.witnesses(chunk))
                chunk = []
            chunk.append(raw)
        if chunk:
            self.send_soon(self.connection.witnesses(chunk))
        missing = [entry for entry in entries if entry not in found]
        if missing:
            self.send_soon(self.connection.unheld(missing))

    async def take(self, answered: dict[Entry, bytes]) -> None:
        """The peer's WITNESS: the store checks and keeps each, and processes what waited."""
        try:
            await self.service.add_witnesses(list(answered.values()))
        except InvalidMessage as error:
            raise BadWitness(f"sent a witness that fails its checks: {error}") from None
        self.fetch.answered(self.session, answered.keys())

    def unheld(self, entries: list[Entry]) -> None:
        self.fetch.unheld(self.session, entries)
