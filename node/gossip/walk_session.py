"""How one session's clock reaches its peer: the walk carried out, or the whole clock told.

Theory of operation
-------------------
node/gossip/walk.py keeps what a walk with the peer knows, on plain data;
this module carries it out for one session (node/gossip/session.py holds a
`Walker` and hands it what of the connection concerns the walk):

- *whether to walk.* A node that walks sends an empty HELLO clock and the
  offer (`hello`); it walks with a peer whose first frame after its HELLO
  is the offer (`offered` opens the walk). Any other frame first or a HELLO
  that names feeds (`sees`), or nothing at all for `UNDECIDED_WAIT` seconds
  after the peer's HELLO (`await_peer_kind`), and the peer hears our whole
  clock in CLOCK frames, as a node before the walk would have told it
  (`tell_whole_clock`; docs/PEERS.md, "Reconciling clocks").
- *the walk.* Each of the peer's messages of the walk is answered
  (`walk_on`); once it ended, the peer's clock goes to the policy as a
  HELLO's would, and the first WANT names the feeds alike at both ends by
  position (WANT_AGREED, `_want_by_position`).
- *feeds named by position.* From then on the connection's tables
  (node/gossip/feed_names.py) name feeds in our CLOCK notes and WANTs
  (`notes`, `want`) and read the peer's (`peer_clock`, `notes_in`,
  `wants_in`, `wanted`); a frame by position before the walk ended is the
  peer's breach (`reconcile`).

The walker sends through the session (`send`, `send_soon`), gives it the
policy's actions to carry out (`act`), and tells it when the peer has come
to know our clock (`told`), so that its writer tells CLOCK notes from then
on (`may_note`). It runs no task of its own but `await_peer_kind`, which
the session starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from tanglenode.node.gossip.feed_names import FeedNames
from tanglenode.node.gossip.policy import GossipPolicy, SendWant
from tanglenode.node.gossip.walk import Walk
from tanglenode.node.net.transport import SecureStream
from tanglenode.protocol.errors import LocalProtocolError
from tanglenode.protocol.gossip import (
    Breach,
    Clock,
    GossipConnection,
    GossipError,
    PeerHello,
    PeerOffersReconcile,
)

UNDECIDED_WAIT = 3.0  # seconds after which a peer that said nothing past HELLO hears our clock


class Walker:
    """One session's walk carried out (see the module's theory of operation)."""

    def __init__(
        self,
        connection: GossipConnection,
        policy: GossipPolicy,
        secure: SecureStream,
        *,
        walks: bool,
        send: Callable[[bytes], Awaitable[None]],
        send_soon: Callable[[bytes], None],
        act: Callable[[list[Any]], Awaitable[None]],
        told: Callable[[bool], None],
    ) -> None:
        self.connection = connection
        self.policy = policy
        self.secure = secure
        self.walks = walks  # offer the walk; False: speak as a version-5 node before it did
        self._send, self._send_soon, self._act, self._told = send, send_soon, act, told
        self.ours_at_hello: dict | None = None  # our clock when we said HELLO, for the walk
        self.walk: Walk | None = None  # the walk with the peer (node/gossip/walk.py)
        self.names: FeedNames | None = None  # once walked: feeds named by position
        self._peer_hello = trio.Event()
        self._peer_told_hello = False  # its HELLO named feeds: a node that does not walk
        self.clock_told = False  # the peer knows our clock (walked, or told in CLOCK): the
        # writer tells it what moves
        self._peer_kind_known = trio.Event()  # it offered the walk, or showed it does not

    def hello(self, hello: Clock) -> bytes:
        """Our first frames: an empty HELLO and the offer (which offers presence too), or,
        not walking, the whole clock in HELLO, as told, and our offer of presence."""
        self.ours_at_hello = hello
        connection = self.connection
        if self.walks:
            return connection.hello({}) + connection.offer_reconcile()
        self.policy.advertised = dict(hello)
        self.clock_told = True
        self._peer_kind_known.set()
        return connection.hello(hello) + connection.offer_presence()

    @property
    def may_note(self) -> bool:
        """Whether the writer tells CLOCK notes: the walk tells the peer our clock first (and
        no table moves meanwhile)."""
        return self.clock_told and (self.walk is None or self.walk.done)

    # -- whether the peer walks --------------------------------------------------------

    def sees(self, event: object) -> None:
        """Every frame of the peer's, before the session handles it: before its kind is
        known, one that shows it does not walk has it hear our whole clock."""
        if not self._peer_kind_known.is_set() and _shows_no_walk(event):
            self.tell_whole_clock()

    def tell_whole_clock(self) -> None:
        """The peer does not walk: it hears every head in CLOCK, as not yet told, and our
        offer of presence as a node before the walk makes it."""
        self._peer_kind_known.set()
        if not self.clock_told:
            self.clock_told, self.ours_at_hello = True, None
            self._send_soon(self.connection.offer_presence())
            self._told(True)

    async def await_peer_kind(self) -> None:
        """A peer that says nothing past its HELLO may be one that does not walk and has
        nothing to say: it hears our clock `UNDECIDED_WAIT` after its HELLO came."""
        await self._peer_hello.wait()
        with trio.move_on_after(UNDECIDED_WAIT):
            await self._peer_kind_known.wait()
        if not self._peer_kind_known.is_set():
            self.tell_whole_clock()

    def peer_clock(self, changes: Clock, *, hello: bool) -> None:
        """The peer's HELLO or CLOCK by key, before the policy reads it."""
        if hello:
            self._peer_hello.set()
            self._peer_told_hello = bool(changes)
        elif self.names is not None:
            self.names.keyed_in(changes)  # the peer names these by position from now on

    # -- the walk (protocol/reconcile.py) ----------------------------------------------

    async def offered(self) -> None:
        """The peer offered the walk: a node that walks tells nothing in its HELLO."""
        if self.walks and not self._peer_told_hello:
            await self._open_walk()

    async def _open_walk(self) -> None:
        self._peer_kind_known.set()
        ours = self.ours_at_hello  # None once told in CLOCK (the offer came late): as it is now
        ours = self.policy.our_clock() if ours is None else ours
        self.ours_at_hello = None
        secure = self.secure
        max_items = 2 * self.policy.max_feeds
        self.walk = Walk(ours, secure.session_salt, secure.leads, max_items)
        await self._send(self.connection.reconcile(self.walk.opening()))

    def _walked(self) -> Walk:
        """The walk, over (what the peer names by position is on its list)."""
        if self.walk is None or not self.walk.done:
            raise GossipError(Breach.RECONCILE, "a frame of a walk not yet over")
        return self.walk

    def _named(self) -> FeedNames:
        if self.names is None:
            raise GossipError(Breach.RECONCILE, "a feed named by position before the walk ended")
        return self.names

    async def walk_on(self, ranges: list) -> None:
        """The peer's message of the walk: our reply; once it ended, the peer's clock is
        known (as a HELLO's would be) and what moves since is told in CLOCK."""
        walk = self.walk
        if walk is None or walk.done:
            raise GossipError(Breach.RECONCILE, "RECONCILE outside a walk")
        reply = walk.receive(ranges)
        if reply is not None:
            try:
                frames = self.connection.reconcile(reply)
            except LocalProtocolError as error:  # a range too large for a frame: the peer's
                raise GossipError(Breach.RECONCILE, f"an answer past a frame: {error}") from None
            await self._send(frames)
        await trio.lowlevel.checkpoint()  # the walk's work never holds the loop for long
        if not walk.done:
            return
        self.connection.walk_over = True
        heads, walk.peer_heads = walk.peer_heads, {}
        actions = self.policy.reconciled(walk.ours, heads, trio.current_time())
        walk.ours = {}  # what the peer learned of us is in the policy's `advertised` now
        self.names = FeedNames(walk.agreed)
        self.clock_told = True
        self._told(False)
        for action in actions:  # in order, the first WANT split (`_want_by_position`)
            if isinstance(action, SendWant):
                await self._send(self._want_by_position(action.wants, walk))
            else:
                await self._act([action])

    def _want_by_position(self, wants: dict, walk: Walk) -> bytes:
        """The walk's first WANT names the feeds alike at both ends, wanted after the head
        both hold, by position (WANT_AGREED): a bit or a run where a key took 35 bytes."""
        chosen, rest = walk.wants_by_position(wants)
        agreed = self.connection.want_agreed(chosen) if chosen is not None else b""
        return agreed + (self.want(rest) if rest else b"")

    # -- feeds named by position (node/gossip/feed_names.py) ---------------------------

    def want(self, wants: dict[bytes, int]) -> bytes:
        """A WANT, by position the feeds the peer named before."""
        if self.names is None:
            return self.connection.want(wants)
        flat, keyed = self.names.wants_out(wants)
        named = self.connection.want_named(flat) if flat else b""
        return named + (self.connection.want(keyed) if keyed else b"")

    def notes(self, changes: Clock) -> bytes:
        """CLOCK notes, by position the feeds we named before (node/gossip/feed_names.py).
        Only the writer tells notes, one frame after another: the tables stay in step."""
        if self.names is None:
            return self.connection.clock(changes)
        flat, keyed = self.names.notes_out(changes)
        by_key = self.connection.clock(keyed) if keyed else b""
        return (self.connection.clock_named(flat) if flat else b"") + by_key

    def wanted(self, selection: Any) -> dict[bytes, int]:
        """The peer's WANT_AGREED, as a WANT by key."""
        return self._walked().wanted(selection)

    def notes_in(self, entries: list[tuple[int, int, bytes]]) -> Clock:
        """The peer's CLOCK_NAMED, as notes by key."""
        return self._named().notes_in(entries)

    def wants_in(self, entries: list[tuple[int, int]]) -> dict[bytes, int]:
        """The peer's WANT_NAMED, as a WANT by key."""
        return self._named().wants_in(entries)


def _shows_no_walk(event: object) -> bool:
    """Whether a frame of the peer's, before its kind is known, shows it does not walk: a HELLO
    that tells its clock, or a first frame after HELLO other than the offer."""
    if isinstance(event, PeerHello):
        return bool(event.clock)
    return not isinstance(event, PeerOffersReconcile)
