"""`tangled linearize` as a real process: outputs, and every kind of bad input."""

import json
import random
import subprocess
import sys
from pathlib import Path

import lmdb
import pytest

from tanglenode.storage.engine.timeline import Insert, Move, apply_commands
from tanglenode.storage.tools.simulate import paper_tangle, random_feed
from tests.timeline_oracle import rank_order

TANGLED = Path(sys.executable).with_name("tangled")

EXAMPLE = [  # docs/TIMELINES.md, "The causal-time order": a worked example
    {"id": "a1", "links": ["a0"], "time": "2023-02-22 12:15"},
    {"id": "b0", "links": ["a1"], "time": "2023-02-22 12:55"},
    {"id": "a2", "links": ["a1"], "time": "2023-02-22 13:10"},
    {"id": "a0", "links": [], "time": "2023-02-22 11:30"},
    {"id": "a3", "links": ["a2"], "time": "2023-02-22 13:00"},
    {"id": "c0", "links": ["a0", "a2"], "time": "2023-02-22 12:25"},
    {"id": "a4", "links": ["a3", "d2", "d3"], "time": "2023-02-22 14:10"},
    {"id": "b1", "links": ["a4", "c0"], "time": "2023-02-22 14:05"},
    {"id": "d1", "links": ["d0"], "time": "2023-02-22 13:37"},
    {"id": "d2", "links": ["d1"], "time": "2023-02-22 13:38"},
    {"id": "d3", "links": ["d0"], "time": "2023-02-22 13:39"},
]


def lines(events) -> str:
    return "".join(json.dumps(event) + "\n" for event in events)


def linearize(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(TANGLED), "linearize", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_worked_example_in_causal_time_order():
    done = linearize("--order", "causal-time", stdin=lines(EXAMPLE))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["a0", "a1", "b0", "a2", "c0", "a3", "d1", "d2", "d3", "a4", "b1"]


def test_the_worked_example_in_rank_order_from_a_file(tmp_path):
    source = tmp_path / "events.jsonl"
    source.write_text(lines(EXAMPLE))
    done = linearize(str(source))
    assert done.returncode == 0, done.stderr
    expected = rank_order((e["id"].encode(), [x.encode() for x in e["links"]]) for e in EXAMPLE)
    assert done.stdout.split() == [event_id.decode() for event_id in expected]


def parse_commands(text: str):
    """The --commands file as (event id, [commands]) pairs."""
    events = []
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "add":
            events.append((rest, []))
        elif kind == "ins":
            pos, _, event_id = rest.partition(" ")
            events[-1][1].append(Insert(int(pos), event_id))
        else:
            assert kind == "mov", line
            src, dst = rest.split()
            events[-1][1].append(Move(int(src), int(dst)))
    return events


def test_commands_file_rebuilds_the_order_and_stats_count_them(tmp_path):
    rng = random.Random(7)
    events = random_feed(paper_tangle(400, 6, rng), rng)
    stdin = lines({"id": e.name, "after": list(e.after)} for e in events)
    commands_file = tmp_path / "commands.txt"
    done = linearize("--commands", str(commands_file), "--stats", stdin=stdin)
    assert done.returncode == 0, done.stderr
    recorded = parse_commands(commands_file.read_text())
    assert [event_id for event_id, _ in recorded] == [e.name for e in events]
    array: list[str] = []
    for _event_id, commands in recorded:
        apply_commands(array, commands)
    assert array == done.stdout.split()
    stats = json.loads(done.stderr.strip().splitlines()[-1])
    assert stats["events"] == 400
    assert stats["commands"] == sum(len(commands) for _, commands in recorded)
    assert stats["commands_per_event"] == pytest.approx(stats["commands"] / 400, abs=1e-3)
    assert stats["seconds"] > 0


def test_db_keeps_the_timeline_between_runs(tmp_path):
    first = linearize("--db", str(tmp_path / "db"), stdin=lines(EXAMPLE[:5]))
    assert first.returncode == 0, first.stderr
    second = linearize("--db", str(tmp_path / "db"), stdin=lines(EXAMPLE[5:]))
    assert second.returncode == 0, second.stderr
    whole = linearize(stdin=lines(EXAMPLE))
    assert second.stdout == whole.stdout
    again = linearize("--db", str(tmp_path / "db"), stdin=lines(EXAMPLE[:1]))
    assert again.returncode == 3
    assert "line 1: duplicate id 'a1'" in again.stderr


@pytest.mark.parametrize(
    ("bad_line", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"after": []}', "id must be a non-empty string"),
        ('{"id": 7}', "id must be a non-empty string"),
        ('{"id": ""}', "id must be a non-empty string"),
        ('{"id": "x", "after": "a0"}', '"after" must be a list'),
        ('{"id": "x", "after": [3]}', "a link must be a non-empty string"),
        ('{"id": "x", "after": [], "links": []}', "not both"),
        ('{"id": "x", "time": 1200}', '"time" must be a string'),
        ('{"id": "a\\nb"}', "line break"),
        (json.dumps({"id": "x" * 300}), "longer than 256 bytes"),
        ('{"id": "a1"}', "duplicate id 'a1'"),
        ('{"id": "a0", "after": ["b0"]}', "cycle"),
        ('{"id": "z", "after": ["z"]}', "cycle"),
    ],
)
def test_bad_lines_are_named_and_fail(bad_line, message):
    stdin = lines(EXAMPLE[:3]) + "\n" + bad_line + "\n" + lines(EXAMPLE[3:])
    done = linearize(stdin=stdin)
    assert done.returncode == 3
    assert "line 5: " in done.stderr and message in done.stderr, done.stderr
    assert done.stdout == ""


def test_invalid_utf8_and_empty_input(tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_bytes(lines(EXAMPLE[:2]).encode() + b'{"id": "\xff"}\n')
    done = linearize(str(source))
    assert done.returncode == 3
    assert "not UTF-8" in done.stderr
    empty = linearize("--stats", stdin="\n\n")
    assert empty.returncode == 0 and empty.stdout == ""
    assert json.loads(empty.stderr)["events"] == 0


def test_usage_errors_exit_2():
    assert linearize("--order", "alphabetical").returncode == 2
    assert linearize("/no/such/file.jsonl").returncode == 2


def test_a_db_of_the_layout_before_ref_numbers_is_refused_in_one_line(tmp_path):
    env = lmdb.open(str(tmp_path / "db"), max_dbs=4)  # what an older engine left: no tl-refs
    with env.begin(write=True) as txn:
        txn.put(b"linearize", b"\x00\x00\x00\x01", db=env.open_db(b"tl-names", txn=txn))
    env.close()
    done = linearize("--db", str(tmp_path / "db"), stdin=lines(EXAMPLE[:1]))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"tangled: {tmp_path / 'db'} holds timelines of an older layout (refs not numbered), "
        "which this build does not read: use a new directory\n"
    )
