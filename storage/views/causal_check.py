"""`tangled check`'s causal-time part: every causal-time timeline rebuilt from the messages.

For the spacetime and each tangle, the members' keys are recomputed from
scratch (storage.engine.causal_key, in a topological order given by the one-shot
function) and the stored order, and each member's stored row, must equal
what they give. In memory, proportional to the store: an offline check.
"""

from __future__ import annotations

from tanglenode.protocol.message import Message
from tanglenode.storage.engine.causal_key import (
    element,
    encode_row,
    extend,
    root_chain,
    tree_key,
)
from tanglenode.storage.engine.causal_time import causal_time_order
from tanglenode.storage.engine.timeline import TimelineTables
from tanglenode.storage.engine.timeline_reader import TimelineReader
from tanglenode.storage.views.timelines import (
    SPACETIME,
    spacetime_links,
    spacetime_ref,
    tangle_timeline,
    view_timeline,
)


def check_causal(txn, tables: TimelineTables, by_position: dict) -> list[str]:
    """Problems found in the causal-time timelines (an empty list when they are right)."""
    spacetime = []
    tangles: dict[bytes, list] = {}
    for (author, seq), message in by_position.items():
        ref = spacetime_ref(author, seq, message.id)
        spacetime.append((ref, spacetime_links(message), message))
        for name, link in message.tangles.items():
            base = tangle_timeline(message.tangle_root(name), name)
            tangles.setdefault(base, []).append((message.id, link.previous or (), message))
    problems = []
    for base, members in [(SPACETIME, spacetime), *tangles.items()]:
        if members:
            problems.extend(_check_one(txn, tables, base, members))
    return problems


def _check_one(txn, tables: TimelineTables, base: bytes, members: list) -> list[str]:
    name = view_timeline(base, "all", "causal-time")
    label = "the spacetime" if base == SPACETIME else f"tangle timeline {base[1:].hex()[:16]}"
    reader = TimelineReader(txn, tables)
    if not reader.exists(name):
        return [f"the causal-time timeline of {label} is missing"]
    message_of: dict[bytes, Message] = {ref: message for ref, _links, message in members}
    events = [(ref, links, message_of[ref].timestamp) for ref, links, _m in members]
    chains: dict[bytes, bytes] = {}
    heights: dict[bytes, int] = {}
    keys: dict[bytes, bytes] = {}
    links_of = {ref: links for ref, links, _m in members}
    problems = []
    number = txn.get(name, db=tables.names)
    find = tables.ref_numbers(txn).find
    for ref in causal_time_order(events):  # a topological order
        message = message_of[ref]
        elem = element(message.timestamp, message.id)
        present = [link for link in dict.fromkeys(links_of[ref]) if link in chains]
        offered = [extend(chains[link], elem) for link in present]
        chains[ref] = max(offered) if offered else root_chain(elem)
        heights[ref] = 1 + max((heights[link] for link in present), default=-1)
        keys[ref] = tree_key(chains[ref], heights[ref], elem)
        ref_number = find(ref)
        row = (
            None
            if ref_number is None
            else txn.get(bytes(number) + ref_number, db=tables.causal_nodes)
        )
        if row is None or bytes(row) != encode_row(heights[ref], elem, chains[ref], ref):
            problems.append(f"the causal-time row of a member of {label} is wrong")
            break
    expected = [message_of[ref].id for ref in sorted(keys, key=keys.__getitem__)]
    if reader.order(name) != expected:
        problems.append(f"the causal-time order of {label} differs from its recomputation")
    return problems
