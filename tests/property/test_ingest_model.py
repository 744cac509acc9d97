"""Hypothesis: the store agrees with a small model of the feed rules, whatever arrives.

Feeds (one with a fork twin), corrupted copies and re-deliveries arrive in
random batches in random order. The model applies the rules of
docs/STORAGE.md to one message at a time, in the order the store promises
(a batch sorted by author, then seq); the store must give the same outcome
for every message, pass `check` after every batch, and end with the same
frontier.
"""

import tempfile
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tanglenode.protocol.errors import InvalidMessage, Reason
from tanglenode.protocol.identity import message_id
from tanglenode.protocol.message import Message, decode_message
from tanglenode.storage.feeds.ingest import Outcome
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, sign_raw, unsigned_fields


class FeedModel:
    """The ingest rules over plain dicts."""

    def __init__(self) -> None:
        self.chain: dict[bytes, list[bytes]] = {}  # author -> ids by seq
        self.invalid: dict[bytes, int] = {}  # author -> seq its feed is invalid from
        self.evidence: dict[bytes, set[bytes]] = {}  # author -> ids of its one proof

    def apply(self, message: Message) -> tuple[Outcome, Reason | None]:
        chain = self.chain.setdefault(message.author, [])
        boundary = self.invalid.get(message.author)
        if boundary is not None and message.seq >= boundary:
            if message.id in self.evidence[message.author]:
                return Outcome.DUPLICATE, None
            return Outcome.REJECTED, Reason.FORKED_FEED
        if message.seq <= len(chain):
            if chain[message.seq - 1] == message.id:
                return Outcome.DUPLICATE, None
            # A fork: the pair is the feed's proof, and the feed ends before it.
            self.evidence[message.author] = {chain[message.seq - 1], message.id}
            self.invalid[message.author] = message.seq
            del chain[message.seq - 1 :]
            return Outcome.FORK, Reason.FORKED_FEED
        if message.seq > len(chain) + 1:
            return Outcome.REJECTED, Reason.MISSING_PREVIOUS
        if chain and message.prev != chain[-1]:
            return Outcome.REJECTED, Reason.CHAIN_MISMATCH
        chain.append(message.id)
        return Outcome.ACCEPTED, None


def corrupt(raw: bytes, position: int) -> bytes:
    damaged = bytearray(raw)
    damaged[position % len(damaged)] ^= 0x40
    return bytes(damaged)


@st.composite
def deliveries(draw):
    """A pool of raw messages (with forks and corruption) cut into random batches."""
    feeds = [Feed(f"model-{i}") for i in range(draw(st.integers(1, 3)))]
    for feed in feeds:
        for n in range(draw(st.integers(1, 5))):
            feed.append({"n": n})
    twin = Feed(feeds[0].keypair)  # same key, different history: a fork
    twin.messages = feeds[0].messages[: draw(st.integers(0, len(feeds[0].messages) - 1))]
    for n in range(draw(st.integers(1, 3))):
        twin.append({"twin": n})
    pool = [m.raw for feed in [*feeds, twin] for m in feed.messages]
    # One past each chain's end, validly signed, chained to nothing: a chain mismatch once the
    # chain is complete, a gap before.
    pool += [
        sign_raw(
            feed.keypair,
            unsigned_fields(
                feed.keypair, seq=len(feed.messages) + 1, prev=b"\x07" * 32, content="stray"
            ),
        )
        for feed in feeds
    ]
    pool += [
        corrupt(raw, draw(st.integers(0, 10_000)))
        for raw in draw(st.lists(st.sampled_from(pool), max_size=3))
    ]
    arrivals = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=40))
    cuts = sorted(draw(st.sets(st.integers(1, len(arrivals)), max_size=5)) | {len(arrivals)})
    return [
        arrivals[start:end] for start, end in zip([0, *cuts], cuts, strict=False) if end > start
    ]


@given(deliveries())
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_store_outcomes_match_the_model(batches):
    model = FeedModel()
    with tempfile.TemporaryDirectory() as tmp, FeedStore(Path(tmp), map_size=2**24) as store:
        for batch in batches:
            results = store.writes.ingest(batch)
            expected: dict[int, tuple[Outcome, Reason | None]] = {}
            seen: set[bytes] = set()  # ids decoded earlier in the batch
            decodable = []
            # The store looks ids up before the batch (storage.store): one held then is a
            # duplicate even if a fork later in the batch cuts it away. An id is its header's
            # hash, so copies that differ around one header (garbled content, broken framing)
            # are one message: a repeat of an id decoded earlier in the batch is a duplicate,
            # a repeat of one refused is decoded on its own.
            held = {i for chain in model.chain.values() for i in chain}
            held |= {i for ids in model.evidence.values() for i in ids}
            for index, raw in enumerate(batch):
                if message_id(raw) in seen or message_id(raw) in held:
                    expected[index] = (Outcome.DUPLICATE, None)
                    continue
                try:
                    message = decode_message(raw)
                except InvalidMessage as error:  # the store must refuse it with the same reason
                    expected[index] = (Outcome.REJECTED, error.reason)
                    continue
                seen.add(message.id)
                decodable.append((index, message))
            for index, message in sorted(decodable, key=lambda p: (p[1].author, p[1].seq)):
                expected[index] = model.apply(message)
            assert [(r.outcome, r.reason) for r in results] == [
                expected[i] for i in range(len(batch))
            ]
            report = store.feeds.check()
            assert report.ok, report.problems
            # What a feed holds is each message's header, with the content of the copy
            # accepted (none where that copy's content did not match its header).
            chained = {i for chain in model.chain.values() for i in chain}
            for result in results:
                if result.outcome is Outcome.ACCEPTED and result.id in chained:
                    stored = replace(result.message, content_refused=None)
                    assert store.feeds.get(result.id) == stored
        assert store.feeds.frontier() == {a: len(c) for a, c in model.chain.items() if c}
        assert store.feeds.invalid_feeds() == model.invalid
