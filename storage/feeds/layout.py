"""The LMDB layout: named databases and how their keys are built.

    messages       arrival(u64 BE) -> stored form      every accepted message, in the order
                                                       it arrived (appended: pages fill); the
                                                       value is the signed bytes without
                                                       the author and with timeframe keys
                                                       as feed numbers (storage.feeds.stored_form)
    message-at     author + seq(u64 BE) -> arrivals    where each message is, in runs of 64
                                                       seqs: a feed is one contiguous key
                                                       range (storage.feeds.message_at)
    feeds          feed key -> number (u32 BE)         feed numbers, assigned once, never
                   number (u32 BE) -> feed key         reused (told apart by key length)
    message-ids    id -> feed number + seq + ref no.   the index by message id, and the
                                                       timeline engine's number of the id
                                                       (storage.feeds.message_ids)
    heads          author -> seq(u64 BE) + id          the frontier, one row per feed
    invalid        author -> seq(u64 BE) + proof id    the feed is invalid from seq on
                                                       (storage.feeds.invalidation)
    proofs         proof id -> msgpack [kind, [id...]] the proofs `invalid` rows name
    evidence       id -> signed bytes                  the bodies of those proofs' messages
    proof-order    "n" + number(u64 BE) -> proof id    the order proofs were kept in, and
                   "i" + proof id -> number            back (storage.feeds.proof_order)
    meta           name -> value                       schema version; each derived view's
                                                       version (`view-version:NAME`,
                                                       storage.feeds.derived); the scope's hops
    scope          feed -> why                         the feeds this node carries (storage.scope)
    proc-*         the causal processor's order and frontier (storage.feeds.processor;
                   `proc-log` and `proc-position`: storage.feeds.processor_rows)

The derived views' tables are theirs: each view declares them
(storage.feeds.derived, `DerivedView.tables`) and documents their layout,
and the store opens them beside these: `tangle-*` (storage.views.tangles,
storage.views.joined), `about-names` (storage.views.abouts), `contacts`
(storage.views.contacts), `tl-*` (storage.engine.timeline,
storage.views.timelines), `doc-*` (storage.documents.rows).

Messages are found by position, not by id: ids are hashes, so a batch keyed by
id would dirty one B-tree leaf per message, while each feed's new messages
land together at the end of its range (measured: commit cost per message
about 3x lower for small messages). The bodies themselves are appended in
arrival order, behind the small `message-at` index (storage.feeds.bodies).

A feed is invalid (proven forked) iff it has a row
in `invalid`; it then holds no message at or above that seq. A tangle key
is root id + one length byte + name (UTF-8), so keys of different tangles never prefix one another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import lmdb

from tanglenode.storage.engine.keys import U32, U64, timeline_label  # noqa: F401 (re-exported)
from tanglenode.storage.feeds.bodies import Bodies
from tanglenode.storage.feeds.message_ids import MessageIds, MessageRefs
from tanglenode.storage.feeds.stored_form import parse_stored  # noqa: F401 (re-exported)

# 11: messages of format 2 (tagged timeframes), heads, suspects; 12: timeline rows keyed by
# ref numbers (storage.engine.ref_numbers), bodies in arrival order behind `message-at`;
# 13: messages of format 3 (a signed header, the content beside it); 14: the processed
# order's `proc-log` names feeds by number, `proc-position` in runs of 64 seqs
# (storage.feeds.processor_rows); 15: `message-ids` rows name the feed by number and hold
# the id's ref number, `tl-refs` only refs that are not ids, spacetime refs' feeds by number
# (storage.feeds.message_ids)
SCHEMA_VERSION = b"15"
# Schemas of this format whose store is rewritten in place when opened: the rows they
# change (storage.store).
MIGRATED_SCHEMAS = {
    b"13": "the processed order's rows, the ids' rows and the ref numbers",
    b"14": "the ids' rows and the ref numbers",
}
# Schemas whose messages are of an earlier format, which no build of this one's accepts
# again: the format each holds.
PREVIOUS_FORMAT_SCHEMAS = {
    **{str(n).encode(): 1 for n in range(1, 11)},
    **{str(n).encode(): 2 for n in range(11, 13)},
}
EMPTY = b""  # the value of rows whose key says everything


def feed_key(author: bytes, seq: int) -> bytes:
    return author + U64.pack(seq)


def split_feed_key(key: bytes) -> tuple[bytes, int]:
    return bytes(key[:32]), U64.unpack(key[32:40])[0]


def head_value(seq: int, msg_id: bytes) -> bytes:
    return U64.pack(seq) + msg_id


def split_head_value(value: bytes) -> tuple[int, bytes]:
    return U64.unpack(value[:8])[0], bytes(value[8:40])


def tangle_key(root: bytes, name: str) -> bytes:
    encoded = name.encode()
    return root + bytes([len(encoded)]) + encoded


@dataclass(frozen=True, slots=True)
class Tables:
    """Handles of the feed store's own named databases (each derived view declares its
    own, which the store opens beside these: storage.feeds.derived)."""

    messages: Any  # arrival -> stored form: read it through `bodies`
    message_at: Any  # author + first seq of a run -> arrivals (storage.feeds.message_at)
    message_ids: Any
    heads: Any
    invalid: Any
    proofs: Any
    evidence: Any
    proof_order: Any  # kept proofs numbered in the order kept (storage.feeds.proof_order)
    meta: Any
    feeds: Any
    scope: Any  # the feeds this node carries, and why (storage.scope)
    bodies: Bodies  # `message-at` and `messages` through the stored form
    ids: MessageIds  # `message-ids` (storage.feeds.message_ids)

    @classmethod
    def open(cls, env: lmdb.Environment) -> Tables:
        with env.begin(write=True) as txn:
            messages = env.open_db(b"messages", txn=txn)
            message_at = env.open_db(b"message-at", txn=txn)
            feeds = env.open_db(b"feeds", txn=txn)
            message_ids = env.open_db(b"message-ids", txn=txn)
            bodies = Bodies(messages, message_at, feeds)
            return cls(
                messages=messages,
                message_at=message_at,
                message_ids=message_ids,
                heads=env.open_db(b"heads", txn=txn),
                invalid=env.open_db(b"invalid", txn=txn),
                proofs=env.open_db(b"proofs", txn=txn),
                evidence=env.open_db(b"evidence", txn=txn),
                proof_order=env.open_db(b"proof-order", txn=txn),
                meta=env.open_db(b"meta", txn=txn),
                feeds=feeds,
                scope=env.open_db(b"scope", txn=txn),
                bodies=bodies,
                ids=MessageIds(message_ids, bodies),
            )

    def ref_homes(self) -> MessageRefs:
        """Where the timeline engine finds the numbers of ids (storage.feeds.message_ids)."""
        return MessageRefs(self.ids, self.bodies)


# The feed store's own tables, the processor's, the witnesses', and those the registered
# views declare (storage.feeds.derived.Table), with room for views to come.
MAX_NAMED_DATABASES = 128
