"""A small store for the pipeline's tests: one tangle, out-of-order arrival, a fork; and
archives written row by row, of this format and older ones."""

import random

import pyarrow as pa
import pyarrow.parquet as pq

from tanglenode.pipeline.schema import FORMAT_KEY, MESSAGE_SCHEMA
from tanglenode.protocol.identity import TAG_BYTES
from tanglenode.protocol.message import ROOT_LINK, TangleLink
from tanglenode.storage.store import FeedStore
from tests.factories import Feed


def build_store(path, rng: random.Random) -> tuple[FeedStore, list]:
    """Three feeds in one tangle, timeframes naming each other, arriving out of order, a fork."""
    feeds = [Feed(f"pipe-{n}") for n in range(3)]
    root = feeds[0].append("root", tangles={"chat": ROOT_LINK})
    members = [root]
    for _ in range(40):
        author = rng.choice(feeds)
        others = [f for f in feeds if f is not author and f.messages]
        timeframe = {f.public: f.messages[-1] for f in others if rng.random() < 0.7}
        previous = tuple(sorted(rng.sample([m.id for m in members], min(2, len(members)))))
        message = author.append(
            {"n": len(members)},
            timeframe=timeframe,
            tangles={"chat": TangleLink(root.id, previous)},
        )
        members.append(message)
    store = FeedStore(path, map_size=2**26)
    queues = [list(f.messages) for f in feeds]
    delivered = 0
    while any(queues):  # per feed in order, feeds interleaved at random: pending references
        queue = rng.choice([q for q in queues if q])
        store.writes.ingest([queue.pop(0).raw])
        delivered += 1
    twin = Feed(feeds[1].keypair)  # same key, another last message: a fork there
    twin.messages = feeds[1].messages[:-1]
    store.writes.ingest([twin.append("the other branch").raw])
    return store, feeds


def write_messages(folder, rows: list[dict], schema=MESSAGE_SCHEMA):
    """`folder` as an archive of `rows` alone (no timelines): one Parquet file of messages."""
    (folder / "messages").mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=schema)
    pq.write_table(table, folder / "messages" / "part-00000.parquet")
    return folder


# Format 1, before message format 2: timeframe entries of feed and seq, no tag, no metadata.
FORMAT_1_SCHEMA = MESSAGE_SCHEMA.set(
    MESSAGE_SCHEMA.get_field_index("timeframe"),
    pa.field("timeframe", pa.list_(pa.struct([("feed", pa.binary(32)), ("seq", pa.int64())]))),
).remove_metadata()


def format_1_rows(rows: list[dict]) -> list[dict]:
    """Rows as a format-1 archive held them: the same, but timeframe entries without tags."""
    return [
        {**row, "timeframe": [{"feed": e["feed"], "seq": e["seq"]} for e in row["timeframe"]]}
        for row in rows
    ]


# Format 2, before message format 3: the signed bytes (the content signed with them) in one
# `raw` column, the content beside it as msgpack; its files name format 2 in their metadata.
FORMAT_2_SCHEMA = pa.schema(
    [
        *(f for f in MESSAGE_SCHEMA if f.name not in {"content_hash", "content_size", "header"}),
        pa.field("raw", pa.binary()),
    ],
    metadata={FORMAT_KEY: b"2"},
)


def format_2_rows(rows: list[dict]) -> list[dict]:
    """Rows in a format-2 archive's columns: `raw` instead of the header (the bytes are
    format 3's, but a format-2 archive is refused by its columns before any is read)."""
    return [{**row, "raw": row["header"]} for row in rows]


def graph_rows(
    rng: random.Random,
    count: int,
    feeds: int,
    *,
    clock_disorder: float = 0.0,
    forks: int = 0,
    dropped: float = 0.0,
    tangles: int = 2,
) -> list[dict]:
    """Unsigned archive rows of `count` messages (the columns linearize reads, the rest filler).

    Each message extends one branch of its feed and names, in its timeframe, the tip of a
    few other feeds; now and then its own feed's earlier message, a seq not yet written
    or a tag no message has (links that stay pending). `forks` times a feed forks: both
    branches are accepted and grow, or the second is fork evidence. A share
    `clock_disorder` of the timestamps is random rather than increasing; a share `dropped`
    of the rows is left out, so links name messages the archive lacks. Messages join
    tangles (several roots per name), naming one or two earlier members.
    """
    authors = [rng.randbytes(32) for _ in range(feeds)]
    tips: dict[bytes, list[tuple[int, bytes]]] = {}  # author -> its branches' (seq, id)
    members: dict[tuple[str, bytes], list[bytes]] = {}  # (name, root) -> ids
    fork_at = set(rng.sample(range(count), forks))
    rows = []
    for n in range(count):
        author = rng.choice(authors)
        branches = tips.setdefault(author, [(0, None)])
        branch = rng.randrange(len(branches))
        seq, prev = branches[branch]
        timeframe = []
        for other in rng.sample(authors, min(3, feeds)):
            if other not in tips or tips[other] == [(0, None)]:
                continue
            named_seq, named = rng.choice(tips[other])
            tag = named[:TAG_BYTES]
            roll = rng.random()
            if roll < 0.05:
                tag = rng.randbytes(TAG_BYTES)  # a tag no message has: a suspected fork
            elif roll < 0.08:
                named_seq += 5  # a seq not written yet
            timeframe.append({"feed": other, "seq": named_seq, "tag": tag})
        tangle_links = []
        if rng.random() < 0.6:
            name = f"t{rng.randrange(tangles)}"
            roots = [key for key in members if key[0] == name]
            message_id = rng.randbytes(32)
            if not roots or rng.random() < 0.02:
                members[(name, message_id)] = [message_id]
                tangle_links.append({"name": name, "root": None, "previous": None})
            else:
                key = rng.choice(roots)
                previous = rng.sample(members[key], min(len(members[key]), rng.choice((1, 2))))
                members[key].append(message_id)
                tangle_links.append({"name": name, "root": key[1], "previous": previous})
        else:
            message_id = rng.randbytes(32)
        timestamp = n if rng.random() >= clock_disorder else rng.randrange(count)
        row = {
            "id": message_id,
            "author": author,
            "seq": seq + 1,
            "prev": prev,
            "timestamp": 1_700_000_000_000 + timestamp,
            "timeframe": timeframe,
            "tangles": tangle_links,
            "content_hash": bytes(32),
            "content_size": 0,
            "signature": bytes(64),
            "header": b"",
            "content": None,
            "evidence": False,
        }
        rows.append(row)
        branches[branch] = (seq + 1, message_id)
        if n in fork_at:  # a second message at the same seq, after the same prev
            twin = dict(row, id=rng.randbytes(32), tangles=[], timeframe=[])
            twin["evidence"] = rng.random() < 0.5
            rows.append(twin)
            if not twin["evidence"]:
                branches.append((seq + 1, twin["id"]))
    return [row for row in rows if rng.random() >= dropped]
