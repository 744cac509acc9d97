"""The causal-time order's keys (docs/TIMELINES.md) as bytes that sort in that order.

Theory of operation
-------------------
Let T(m) = (claimed time, sort id), compared as a pair. The causal-time order
(Kahn's algorithm, always placing the smallest ready T; `storage.engine.causal_time`)
is the order of a key that depends only on m's present ancestors:

    key(m) = [e for e in M if e > T(m)] + [T(m)],   M = max key(l) over m's present links l

(M = [] without present links), keys comparing as sequences, a proper
prefix first. Every key is strictly decreasing, so the comprehension keeps
M's leading elements while they exceed T(m). The greedy order places
messages in non-decreasing order of K1 = the largest T among ancestors-and-
self, and within one K1 it recurses on the descendants of the message that
holds K1: the order is a preorder of a forest (each message under the
"chain parent" whose key it extends), siblings in ascending T.

`extend(key(l), T(m))` is monotone in key(l), so key(m) is also the max over
the links of `extend(key(l), T(m))`: a link whose key rises can only raise
its successors' keys, and a message's new key is the max of its old one
and what the risen link gives, as the rank is (storage.engine.engine_core).

Honest clocks give keys of one element: T(m) exceeds everything before it.
A feed whose timestamps fall makes keys as long as the run of falling
times; the stored key keeps at most `MAX_CHAIN` elements. A key cut there
(its message's full key is longer) is followed by a marker and the
message's *height*, the longest path to it from a message without present
links (its rank), then T(m): messages that share the first `MAX_CHAIN`
elements sort by (height, T). That order is still deterministic (it depends
only on the present messages and links) and topological (an ancestor has
the lower height, and cutting a key keeps its place against any key that
differs within the first `MAX_CHAIN` elements); it equals the causal-time order
whenever no key is longer than `MAX_CHAIN`.

Bytes. An element is `01 + time (u64 BE) + escaped sort id`, the sort id
escaped so that the encoding is prefix-free and keeps the order (each 00
byte becomes 00 FF, and 00 00 ends it). A chain is its elements, then
`00` when complete (so a complete key sorts before its extensions) or `02`
when cut. The tree key is the chain when complete, else the chain +
height (u32 BE) + the message's own element.

A member's row (`ct-nodes`) is its height (u32), time (u64) and a flags
byte, then its sort id (u16 length first) only when it is not the member's
ref, and its chain only when it is not the root chain (own element + 00):
with honest clocks a tangle member's row is those 13 bytes alone.
"""

from __future__ import annotations

import struct

MAX_CHAIN = 16  # elements a stored key keeps (docs/TIMELINES.md, "The causal-time order")
MAX_TIME = (1 << 64) - 1

COMPLETE = 0x00
ELEMENT = 0x01
CUT = 0x02
_END = b"\x00\x00"
_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_ROW = struct.Struct(">IQB")  # height, time, flags
_OWN_ID, _CHAIN = 1, 2  # flags: the sort id is not the ref; the chain is not the root


def element(time: int, sort_id: bytes) -> bytes:
    """T = (time, sort id) as bytes that sort like the pair."""
    return b"\x01" + _U64.pack(time) + sort_id.replace(b"\x00", b"\x00\xff") + _END


def element_time(elem: bytes) -> int:
    time: int = _U64.unpack_from(elem, 1)[0]
    return time


def element_id(elem: bytes) -> bytes:
    return bytes(elem[9:-2]).replace(b"\x00\xff", b"\x00")


def root_chain(elem: bytes) -> bytes:
    """The key of a message without present links: its own element."""
    return elem + b"\x00"


def split_chain(chain: bytes, start: int = 0) -> tuple[list[bytes], int]:
    """The elements of the chain at `start` and the offset of its end marker."""
    elements = []
    at = start
    while at < len(chain) and chain[at] == ELEMENT:
        end = chain.find(_END, at + 9) + 2
        elements.append(chain[at:end])
        at = end
    return elements, at


def extend(link_chain: bytes, elem: bytes, limit: int = MAX_CHAIN) -> bytes:
    """What a message with element `elem` gets from a link whose chain is `link_chain`."""
    if link_chain < elem:  # the link's largest element is below elem: the honest case
        return elem + b"\x00"
    elements, end = split_chain(link_chain)
    kept = 0
    for each in elements:
        if each < elem:
            break
        kept += 1
    if kept < len(elements):
        return b"".join(elements[:kept]) + elem + b"\x00"
    if link_chain[end] == CUT:
        return link_chain
    if kept + 1 > limit:
        return link_chain[:end] + b"\x02"
    return link_chain[:end] + elem + b"\x00"


def is_cut(chain: bytes) -> bool:
    return chain[-1] == CUT


def tree_key(chain: bytes, height: int, elem: bytes) -> bytes:
    """The order-tree key: the chain, and when cut, the height and own element after it."""
    return chain if chain[-1] == COMPLETE else chain + _U32.pack(height) + elem


def decode_tree_key(key: bytes) -> tuple[int, bytes]:
    """(claimed time, sort id) of the message a tree key belongs to."""
    key = bytes(key)
    elements, end = split_chain(key)
    if key[end] == CUT:
        elements, _end = split_chain(key, end + 5)
    own = elements[-1]
    return element_time(own), element_id(own)


def encode_row(height: int, elem: bytes, chain: bytes, ref: bytes | None) -> bytes:
    """Member `ref`'s row: height (u32), time (u64), flags (u8), then the sort id (u16
    length first) if it is not `ref` (None: a ref known not to be it), then the chain if it
    is not the own element's."""
    sort_id = bytes(elem[9:-2]).replace(b"\x00\xff", b"\x00")
    flags = 0
    tail = b""
    if sort_id != ref:
        flags |= _OWN_ID
        tail = _U16.pack(len(sort_id)) + sort_id
    if chain != elem + b"\x00":
        flags |= _CHAIN
        tail += chain
    return _ROW.pack(height, element_time(elem), flags) + tail


def holds_sort_id(raw: bytes) -> bool:
    """Whether a member's row keeps its sort id (it is not the member's ref)."""
    return bool(raw[_ROW.size - 1] & _OWN_ID)


def decode_row(raw: bytes, ref: bytes | None) -> tuple[int, bytes, bytes]:
    """(height, element, chain) of member `ref`'s row (`ref` may be None when the row holds
    the sort id: `holds_sort_id`)."""
    height, time, flags = _ROW.unpack_from(raw)
    at = _ROW.size
    if flags & _OWN_ID:
        size = _U16.unpack_from(raw, at)[0]
        sort_id = bytes(raw[at + 2 : at + 2 + size])
        at += 2 + size
    else:
        assert ref is not None, "a row without its sort id is read with its ref"
        sort_id = ref
    elem = element(time, sort_id)
    return height, elem, bytes(raw[at:]) if flags & _CHAIN else elem + b"\x00"


def row_tree_key(raw: bytes, ref: bytes) -> bytes:
    height, elem, chain = decode_row(raw, ref)
    return tree_key(chain, height, elem)
