"""One task of `tangled pipeline generate`: a group's feeds signed for one round, as one file.

Theory of operation
-------------------
A task gets a `Unit` (pipeline/generate_plan.py): for each of its feeds,
where the chain stood (its head's seq and id) and the round's messages as
planned, every reference to another feed already an id or a tag. It derives
each feed's key from the seed, draws each message's words from a generator
seeded by (seed, feed, seq) alone, and signs the chain in order with the
node's own `sign_message` (which checks every rule a receiver applies); a
reference to its own feed's earlier message of this round (a reply's
`previous`, an edit's cited line) is a seq, resolved from what it just
signed. The rows (`pipeline.export.message_row`, the archive's columns)
go to `messages/part-RRRRR-GGGGG.parquet` under the archive, written to a
hidden name first and renamed, so a retried task replaces its file whole
with the same bytes. It returns to the driver only what later rounds name:
each feed's new head, and the ids of its thread and document messages.
"""

from __future__ import annotations

import functools
import os
import random
from pathlib import Path
from typing import Any

from tanglenode.pipeline.generate_plan import (
    ABOUT,
    BASE_MS,
    CONTACT,
    DOC_EDIT,
    DOC_INIT,
    POST,
    REPLY,
    STEP_MS,
    TANGLE_KINDS,
    Planned,
    Ref,
    Unit,
    feed_keypair,
)
from tanglenode.protocol.document import AtomRef, Insert, edit_content, init_content
from tanglenode.protocol.identity import Keypair, feed_text
from tanglenode.protocol.message import ROOT_LINK, Message, TangleLink, sign_message

_VOCABULARY = """
the a of and to in is it that on we this was for with you are at be have not but what all
were when there can an your which their said if do will each about how up out them then she
many some so these would other into has more her two like him see time could no make than
first been its who now people my made over did down only way find use may water long little
very after words called just where most know garden bread river light morning paper window
music friday village winter letter island
"""
WORDS = tuple(_VOCABULARY.split())
_NAMES = "ada bea cyd dov eli fay gus hal ida jon kai lev mia nia oto pia quy rex sol tam"
NAMES = tuple(_NAMES.split())
POST_WORDS = ((0.25, (3, 12)), (0.40, (12, 40)), (0.35, (40, 120)))  # short, medium, long


@functools.lru_cache(maxsize=4096)
def _keypair(seed: int, feed: int) -> Keypair:
    return feed_keypair(seed, feed)


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choices(WORDS, k=count))


def _post_text(rng: random.Random) -> str:
    shares = [share for share, _words in POST_WORDS]
    low, high = rng.choices([words for _share, words in POST_WORDS], shares)[0]
    return _words(rng, rng.randrange(low, high)).capitalize() + "."


def _line(rng: random.Random, length: int) -> str:
    """A line of exactly `length` characters, ending in a newline."""
    text = _words(rng, length // 3 + 1)
    return text[: length - 1].ljust(length - 1) + "\n"


def content_of(planned: Planned, key: Keypair, rng: random.Random, own: dict[int, bytes]):
    """The message's content: its words drawn by `rng`, its links from the plan."""
    if planned.kind == ABOUT:
        return {
            "about": feed_text(key.public),
            "name": f"{rng.choice(NAMES)}{planned.feed}",
            "type": "about",
        }
    if planned.kind == CONTACT:
        assert planned.contact is not None
        return {
            "contact": feed_text(planned.contact),
            "following": planned.following,
            "type": "contact",
        }
    if planned.kind in (POST, REPLY):
        return {"text": _post_text(rng), "type": "post"}
    if planned.kind == DOC_INIT:
        return init_content(f"{_words(rng, 3).capitalize()} ({planned.feed}-{planned.seq})")
    assert planned.kind == DOC_EDIT and planned.cause is not None
    cause = AtomRef(_resolve(planned.cause, own), planned.cause_index)
    return edit_content([Insert(cause, _line(rng, planned.length))])


def _resolve(ref: Ref, own: dict[int, bytes]) -> bytes:
    return own[ref] if isinstance(ref, int) else ref


def sign_feed(seed: int, feed: int, prev_seq: int, prev_id: bytes | None, plans: list[Planned]):
    """The feed's messages of the round, signed in order."""
    key = _keypair(seed, feed)
    own: dict[int, bytes] = {}
    prev = prev_id
    signed: list[Message] = []
    for planned in plans:
        assert planned.seq == prev_seq + len(signed) + 1
        rng = random.Random(f"content {seed} {feed} {planned.seq}")
        tangles = {}
        name = TANGLE_KINDS.get(planned.kind)
        if name is not None:
            if planned.root is None:
                tangles[name] = ROOT_LINK
            else:
                previous = tuple(sorted(_resolve(ref, own) for ref in planned.previous))
                tangles[name] = TangleLink(planned.root, previous)
        message = sign_message(
            key,
            seq=planned.seq,
            prev=prev,
            timestamp=BASE_MS + planned.step * STEP_MS,
            timeframe={feed_key: (seq, tag) for feed_key, seq, tag in planned.timeframe},
            tangles=tangles,
            content=content_of(planned, key, rng, own),
        )
        own[planned.seq] = message.id
        prev = message.id
        signed.append(message)
    return signed


def sign_unit(messages_dir: str, seed: int, unit: Unit) -> dict[str, Any]:
    """Sign and write one task's file; what the driver needs of it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tanglenode.pipeline.export import ROW_GROUP_BYTES, message_row
    from tanglenode.pipeline.schema import MESSAGE_SCHEMA

    rows = []
    heads: dict[int, tuple[int, bytes]] = {}
    ids: dict[tuple[int, int], bytes] = {}
    for work in unit.feeds:
        signed = sign_feed(seed, work.feed, work.prev_seq, work.prev_id, work.messages)
        for planned, message in zip(work.messages, signed, strict=True):
            rows.append(message_row(message))
            if planned.kind in TANGLE_KINDS:
                ids[(work.feed, message.seq)] = message.id
        heads[work.feed] = (signed[-1].seq, signed[-1].id)
    largest = max(len(row["header"]) + len(row["content"]) for row in rows)
    target = Path(messages_dir) / f"part-{unit.round:05d}-{unit.group:05d}.parquet"
    hidden = target.with_name(f".{target.name}.{os.getpid()}")
    table = pa.Table.from_pylist(rows, schema=MESSAGE_SCHEMA)
    pq.write_table(table, hidden, row_group_size=max(1, ROW_GROUP_BYTES // largest))
    os.replace(hidden, target)
    return {"heads": heads, "ids": ids, "rows": len(rows)}
