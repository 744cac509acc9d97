"""`tangled doc replay`: a real process replays editing traces to their exact final text."""

import gzip
import json
import subprocess
import sys
from pathlib import Path

from tanglenode.protocol.limits import TIMEFRAME_CAP
from tanglenode.storage.store import FeedStore
from tests.storage.test_trace_replay import TRACES, crowd  # TRACES: tests/data/editing-traces

TANGLED = Path(sys.executable).with_name("tangled")


def replay(tmp_path, trace: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(TANGLED), "doc", "replay", str(trace), "--out", str(tmp_path / "out.txt"), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_shipped_trace_replays_to_its_end_content_exactly(tmp_path):
    trace = TRACES / "friendsforever_flat.json.gz"  # the others: tests/storage/test_trace_replay.py
    done = replay(tmp_path, trace, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["edits"] == 26_078 and report["matches_end_content"] is True
    expected = json.loads(gzip.decompress(trace.read_bytes()))["endContent"]
    assert (tmp_path / "out.txt").read_bytes() == expected.encode()  # no newline added


def test_a_trace_the_node_has_never_seen_replays_and_keeps_its_store(tmp_path):
    trace = tmp_path / "new.json"
    trace.write_text(
        json.dumps(
            {
                "kind": "concurrent",
                "numAgents": 2,
                "startContent": "",
                "endContent": "ab XY",
                "txns": [
                    {
                        "parents": [],
                        "agent": 0,
                        "time": "2024-01-01T00:00:00Z",
                        "patches": [[0, 0, "ab "]],
                    },
                    {
                        "parents": [0],
                        "agent": 1,
                        "time": "2024-01-01T00:00:01Z",
                        "patches": [[3, 0, "X"]],
                    },
                    {
                        "parents": [0],
                        "agent": 0,
                        "time": "2024-01-01T00:00:01Z",
                        "patches": [[3, 0, "Y"]],
                    },
                ],
            }
        )
    )
    done = replay(tmp_path, trace, "--store", str(tmp_path / "kept"))
    text = (tmp_path / "out.txt").read_text(encoding="utf-8")
    # Two concurrent inserts at one place: the weft rule orders them, the same on every node.
    assert sorted(text[3:]) == ["X", "Y"] and text[:3] == "ab "
    assert done.returncode == (0 if text == "ab XY" else 5)
    assert (tmp_path / "kept" / "data.mdb").exists()


def test_a_trace_of_more_concurrent_authors_than_a_timeframe_names_replays_exactly(tmp_path):
    trace = tmp_path / "crowd.json"
    trace.write_text(json.dumps(crowd(70)))  # a merge of 70 heads, then one edit citing 70
    done = replay(tmp_path, trace, "--json", "--store", str(tmp_path / "kept"))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["agents"] == 70 and report["matches_end_content"] is True
    expected = json.loads(trace.read_text())["endContent"]
    assert (tmp_path / "out.txt").read_text(encoding="utf-8") == expected
    with FeedStore(tmp_path / "kept", map_size=2**26) as store:
        named = [
            len(m.timeframe) for f in store.feeds.held() for m in store.feeds.read_feed(f.author)
        ]
        assert len(named) == report["messages"] and max(named) == TIMEFRAME_CAP


def test_a_broken_trace_is_refused_with_a_reason_not_a_traceback(tmp_path):
    trace = tmp_path / "bad.json"
    trace.write_text(json.dumps({"startContent": "", "txns": [{"patches": [[5, 0, "x"]]}]}))
    done = replay(tmp_path, trace)
    assert done.returncode == 3
    assert "Traceback" not in done.stderr and "txn 0" in done.stderr
    assert not (tmp_path / "out.txt").exists()


DEEP = 100_000  # far past any recursion limit


def test_json_nested_beyond_reason_is_refused_naming_the_file_and_the_place(tmp_path):
    for name, text in {
        "outer.json": '{"txns": [],\n "x": ' + "[" * DEEP + "]" * DEEP + "}",
        "in-a-txn.json": '{"txns": [{"patches": [], "x": ' + "[" * DEEP + "]" * DEEP + "}]}",
    }.items():
        trace = tmp_path / name
        trace.write_text(text)
        done = replay(tmp_path, trace)
        assert done.returncode == 3, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
        assert str(trace) in done.stderr and "nested deeper than 8 levels" in done.stderr
    # {, [, { and five of the `[` after `"x": ` (31 characters): the ninth level
    assert done.stderr.endswith("JSON nested deeper than 8 levels at line 1, column 37\n")
    outer = replay(tmp_path, tmp_path / "outer.json")
    assert outer.stderr.endswith("at line 2, column 14\n")  # `{`, `[` at 7 and seven more


def test_a_concurrent_position_out_of_range_is_refused_naming_the_file(tmp_path):
    trace = tmp_path / "beyond.json"
    txns = [
        {"agent": 0, "parents": [], "patches": [[0, 0, "ab"]]},
        {"agent": 1, "parents": [0], "patches": [[99, 0, "x"]]},  # the text has 2
    ]
    trace.write_text(json.dumps({"numAgents": 2, "startContent": "", "txns": txns}))
    done = replay(tmp_path, trace)
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip() == f"tangled: {trace}: txn 1: patch at 99 deleting 0, text of 2"
    assert not (tmp_path / "out.txt").exists()
