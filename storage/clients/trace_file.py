"""Editing-trace files: reading one as hostile input, holding it compactly.

Theory of operation
-------------------
The format is josephg/editing-traces' (tests/data/README.md, "The editing traces"):

    {"startContent": str, "endContent": str,
     "txns": [{"time": ISO 8601, "patches": [[pos, delCount, insStr], ...]}, ...]}

with positions in code points, patches of one txn applied in order. A
concurrent trace adds "numAgents" and, per txn, "agent" and "parents" (the
indexes of the earlier txns it was typed against). Other keys are ignored.

A trace comes from outside, so reading it is bounded and strict: at most
`max_bytes` of JSON (after gunzip), every field of the expected type, every
number in range, agents below numAgents, parents earlier than their txn and
distinct, each patch of a sequential trace inside the text as it stands
(a concurrent trace's positions depend on the merge, so the replay checks
them). Any fault raises `BadTrace`, naming the txn; nesting the decoder
cannot follow, the line and column (protocol/json_depth.py). The whole file is
decoded lazily, one txn at a time, into arrays, so a 260,000-txn trace
never exists as 260,000 dicts.
"""

from __future__ import annotations

import gzip
import zlib
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import msgspec

from tanglenode.protocol.errors import TanglenodeError
from tanglenode.protocol.json_depth import place, too_deep_at

MAX_TRACE_BYTES = 512 * 2**20  # decompressed JSON
MAX_AGENTS = 256  # each a feed; a timeframe names at most 32 of them (TIMEFRAME_CAP)
MAX_PARENTS = 1024  # per txn
MAX_INDEX = 2**32 - 1  # a position or a count in a patch
MAX_TRACE_DEPTH = 8  # the format nests 5 deep (trace, txns, txn, patches, patch)


class BadTrace(TanglenodeError):
    """The trace file is not a valid editing trace; `txn` is the txn at fault, if one is."""

    def __init__(self, txn: int | None, reason: str) -> None:
        super().__init__(reason if txn is None else f"txn {txn}: {reason}")
        self.txn = txn
        self.reason = reason


_Index = Annotated[int, msgspec.Meta(ge=0, le=MAX_INDEX)]


class _TxnFile(msgspec.Struct):
    patches: list[tuple[_Index, _Index, str]]
    time: str | None = None
    agent: Annotated[int, msgspec.Meta(ge=0, lt=MAX_AGENTS)] | None = None
    parents: Annotated[list[_Index], msgspec.Meta(max_length=MAX_PARENTS)] | None = None


class _TraceFile(msgspec.Struct):
    txns: list[msgspec.Raw]  # each decoded on its own, so a big trace is never all objects
    startContent: str = ""  # the trace format's names
    endContent: str | None = None
    numAgents: Annotated[int, msgspec.Meta(ge=1, le=MAX_AGENTS)] | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Trace:
    """A validated trace, held compactly: arrays per txn and per patch."""

    start: str
    end: str | None  # endContent, when the trace gives it
    agents: int  # 1 for a sequential trace
    concurrent: bool
    txn_agent: array  # per txn (concurrent traces; empty for sequential ones)
    txn_time: array  # per txn: recorded time, ms since the epoch (0 when absent)
    patch_end: array  # txn i's patches are patch_end[i - 1] .. patch_end[i] - 1
    patch_pos: array
    patch_del: array
    patch_ins: list[str]
    parent_end: array  # concurrent traces: txn i's parents are parent_end[i - 1] .. - 1
    parent: array

    def __len__(self) -> int:
        return len(self.patch_end)

    @property
    def edits(self) -> int:
        return len(self.patch_pos)

    def agent_of(self, txn: int) -> int:
        return self.txn_agent[txn] if self.concurrent else 0

    def parents_of(self, txn: int) -> Sequence[int]:
        if not self.concurrent:
            return [txn - 1] if txn else []
        return self.parent[self.parent_end[txn - 1] if txn else 0 : self.parent_end[txn]]

    def patches_of(self, txn: int) -> Iterator[tuple[int, int, str]]:
        for k in range(self.patch_end[txn - 1] if txn else 0, self.patch_end[txn]):
            yield self.patch_pos[k], self.patch_del[k], self.patch_ins[k]


def load_trace(path: str | Path, *, max_bytes: int = MAX_TRACE_BYTES) -> Trace:
    """Read and validate a trace file (JSON, gzipped or not); raises `BadTrace`."""
    path = Path(path)
    try:
        with path.open("rb") as file:
            gzipped = file.read(2) == b"\x1f\x8b"
        with gzip.open(path) if gzipped else path.open("rb") as file:
            data = file.read(max_bytes + 1)
    except (OSError, EOFError, zlib.error) as error:
        raise BadTrace(None, f"cannot read {path}: {error}") from None
    if len(data) > max_bytes:
        raise BadTrace(None, f"{path} holds more than {max_bytes} bytes of JSON")
    return parse_trace(data)


def parse_trace(data: bytes) -> Trace:
    """Validate a trace's JSON text; raises `BadTrace`."""
    try:
        raw = msgspec.json.decode(data, type=_TraceFile)
    except msgspec.DecodeError as error:  # ValidationError included
        raise BadTrace(None, str(error)) from None
    except RecursionError:  # the decoder recurses: find the place without recursing
        raise BadTrace(None, _too_deep(data)) from None
    return _compact(raw)


def _too_deep(data: bytes) -> str:
    offset = too_deep_at(data, MAX_TRACE_DEPTH)
    if offset is None:  # the decoder's own limit is lower than ours: say so, without a place
        return "JSON nested too deeply"
    return f"JSON nested deeper than {MAX_TRACE_DEPTH} levels at {place(data, offset)}"


_TXN = msgspec.json.Decoder(_TxnFile)


def _compact(raw: _TraceFile) -> Trace:
    concurrent = raw.numAgents is not None
    agents = raw.numAgents or 1
    txn_agent, txn_time = array("L"), array("q")
    patch_end, patch_pos, patch_del, patch_ins = array("Q"), array("Q"), array("Q"), []
    parent_end, parent = array("Q"), array("Q")
    times: dict[str, int] = {}
    length = len(raw.startContent)  # a sequential trace's text length, to check positions
    for number, txn_json in enumerate(raw.txns):
        try:
            txn = _TXN.decode(txn_json)
        except msgspec.DecodeError as error:
            raise BadTrace(number, str(error)) from None
        except RecursionError:
            raise BadTrace(number, _too_deep(bytes(txn_json))) from None
        if concurrent:
            if txn.agent is None or txn.parents is None:
                raise BadTrace(number, "a concurrent trace's txns name their agent and parents")
            if txn.agent >= agents:
                raise BadTrace(number, f"agent {txn.agent}, but numAgents is {agents}")
            if any(p >= number for p in txn.parents):
                raise BadTrace(number, f"parents {txn.parents} name a txn that is not earlier")
            if len(set(txn.parents)) != len(txn.parents):
                raise BadTrace(number, f"parents {txn.parents} repeat a txn")
            txn_agent.append(txn.agent)
            parent.extend(txn.parents)
            parent_end.append(len(parent))
        elif txn.parents is not None or txn.agent:
            raise BadTrace(number, "agents and parents need numAgents (a concurrent trace)")
        txn_time.append(_time_of(number, txn.time, times))
        for pos, deleted, text in txn.patches:
            if not concurrent:  # a concurrent trace's positions are checked as it is replayed
                if pos + deleted > length:
                    raise BadTrace(number, f"patch at {pos} deleting {deleted}, text of {length}")
                length += len(text) - deleted
            patch_pos.append(pos)
            patch_del.append(deleted)
            patch_ins.append(text)
        patch_end.append(len(patch_pos))
    return Trace(
        start=raw.startContent,
        end=raw.endContent,
        agents=agents,
        concurrent=concurrent,
        txn_agent=txn_agent,
        txn_time=txn_time,
        patch_end=patch_end,
        patch_pos=patch_pos,
        patch_del=patch_del,
        patch_ins=patch_ins,
        parent_end=parent_end,
        parent=parent,
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def _time_of(number: int, text: str | None, seen: dict[str, int]) -> int:
    if text is None:
        return 0
    found = seen.get(text)
    if found is None:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise BadTrace(number, f"time {text[:40]!r} is not an ISO 8601 date") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        found = seen[text] = (moment - _EPOCH) // _MS
    return found
