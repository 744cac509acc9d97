"""`tangled pipeline` as a tool: progress at once, archives checked before Spark, quiet JVM,
tables on a terminal, JSON otherwise, exit codes (docs/PIPELINE.md, "The command")."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import click
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tanglenode.node.localnet import TANGLED
from tanglenode.pipeline.cli import pipeline_command
from tanglenode.pipeline.report import human, summarize, table
from tanglenode.pipeline.schema import TIMELINE_SCHEMA
from tanglenode.protocol.identity import feed_text, message_text
from tests.pipeline.archives import (
    FORMAT_1_SCHEMA,
    FORMAT_2_SCHEMA,
    format_1_rows,
    format_2_rows,
    write_messages,
)

PROGRESS = re.compile(r"^\[ *\d+\.\d s\] (\w+): ")
JVM_CHATTER = ("WARN", "log4j", "incubator", "SparkContext", "Setting default log level")


def pipeline(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(TANGLED), "pipeline", *args], capture_output=True, text=True, timeout=timeout
    )


def on_terminal(args: list[str], timeout: float = 300) -> tuple[int, list[tuple[float, str]]]:
    """`tangled ARGS` on a pseudo-terminal: exit code, and each chunk read with its time."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    started = time.monotonic()
    process = subprocess.Popen(
        [str(TANGLED), *args], stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env
    )
    os.close(follower)
    chunks: list[tuple[float, str]] = []
    try:
        while time.monotonic() - started < timeout:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the process has closed the terminal
                break
            if not data:
                break
            chunks.append((time.monotonic() - started, data.decode("utf-8", "replace")))
        else:
            process.kill()
            raise TimeoutError(f"tangled {' '.join(args)} ran over {timeout} s")
        returncode = process.wait(timeout=30)
    finally:
        os.close(leader)
    return returncode, [(at, text.replace("\r\n", "\n")) for at, text in chunks]


def test_every_option_is_described_and_the_help_gives_the_exit_codes():
    for param in pipeline_command.params:
        if isinstance(param, click.Option):
            assert param.help and "__main__" not in param.help, param.name
    done = subprocess.run(
        [str(TANGLED), "pipeline", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "--out" in text and "Folder for the results" in text
    assert "5 verify found problems or audit found differences" in text
    assert "Java" in text


@pytest.mark.parametrize(
    ("case", "code", "says"),
    [
        ("missing", 4, "no such archive"),
        ("a file", 3, "not an archive"),
        ("no messages folder", 3, "no messages/ folder"),
        ("no parts", 3, "holds no messages"),
        ("not Parquet", 3, "not a Parquet file"),
        ("other columns", 3, "no id, author"),
        ("format 1", 3, "an archive of format 1 (timeframe entries without tags"),
        ("format 2", 3, "an archive of format 2 (a `raw` column of messages of version 2"),
        ("audit without timelines", 3, "no timelines/ folder"),
    ],
)
def test_an_in_that_is_not_an_archive_fails_in_one_line_before_spark(
    archive, tmp_path, case, code, says
):
    out, _feeds = archive
    given = tmp_path / "given"
    job = "audit" if case == "audit without timelines" else "stats"
    if case == "a file":
        given.write_text("hello")
    elif case != "missing":
        (given / "messages").mkdir(parents=True)
        if case == "no messages folder":
            (given / "messages").rmdir()
        elif case == "not Parquet":
            (given / "messages" / "part-0.parquet").write_bytes(b"PAR1 not really PAR1")
        elif case == "other columns":
            pq.write_table(pa.table({"x": [1]}), given / "messages" / "part-0.parquet")
        elif case == "format 1":
            rows = format_1_rows(pq.read_table(out / "messages").to_pylist())
            write_messages(given, rows, schema=FORMAT_1_SCHEMA)
        elif case == "format 2":
            rows = format_2_rows(pq.read_table(out / "messages").to_pylist())
            write_messages(given, rows, schema=FORMAT_2_SCHEMA)
        elif case == "audit without timelines":
            shutil.copytree(out / "messages", given / "messages", dirs_exist_ok=True)
    started = time.monotonic()
    done = pipeline(job, "--in", str(given), "--out", str(tmp_path / "out"), timeout=60)
    assert time.monotonic() - started < 5  # Spark alone takes longer to start
    assert done.returncode == code, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("tangled: ") and says in last
    assert "Traceback" not in done.stderr and "starting Spark" not in done.stderr
    assert done.stdout == ""


def test_spark_submits_entry_point_returns_the_commands_exit_code(tmp_path):
    argv = [sys.executable, "-m", "tanglenode.pipeline", "verify", "--in", str(tmp_path / "nope")]
    done = subprocess.run(
        [*argv, "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 4 and "no such archive" in done.stderr


@pytest.mark.slow  # 20 s of Spark; tests/pipeline/test_jobs.py runs the CLI in `make test`
@pytest.mark.usefixtures("java")  # a `tangled pipeline` child starts Spark
def test_on_a_terminal_progress_comes_at_once_the_jvm_is_quiet_and_stats_is_a_table(
    archive, tmp_path
):
    out, _feeds = archive
    returncode, chunks = on_terminal(
        ["pipeline", "stats", "--in", str(out), "--out", str(tmp_path), "--master", "local[1]"]
    )
    text = "".join(chunk for _at, chunk in chunks)
    assert returncode == 0, text
    first_at, first = chunks[0]
    assert first_at < 1.0, f"the first line came after {first_at:.2f} s"
    assert PROGRESS.match(first) and "checking 1 archive" in first
    lines = text.splitlines()
    stages = [line for line in lines if PROGRESS.match(line)]
    assert [s.split(": ", 1)[1].split(";")[0].split(" ")[0] for s in stages] == [
        "checking",
        "42",
        "Spark",
        "written",
    ]
    assert not [line for line in lines if any(word in line for word in JVM_CHATTER)]
    assert "stats of 1 archive: 3 feeds, 40 messages, 2 fork evidence, 1 tangle" in lines
    header = next(line for line in lines if line.startswith("timeline "))
    assert header.split() == ["timeline", "root", "messages", "width", "height", "widest", "rank"]
    chat = next(line for line in lines if line.startswith("tangle:chat "))
    root = pq.read_table(out / "timelines").to_pylist()
    root = next(r["root"] for r in root if r["timeline"] == "tangle:chat")
    assert chat.split()[1] == message_text(root) and chat.split()[2] == "40"


@pytest.mark.slow  # 20 s of Spark: the job CLI and the jobs themselves run in `make test`
@pytest.mark.usefixtures("java")  # a `tangled pipeline` child starts Spark
def test_verify_prints_json_off_a_terminal_names_the_forks_feed_and_exits_5(archive, tmp_path):
    out, feeds = archive
    done = pipeline("verify", "--in", str(out), "--out", str(tmp_path), "--master", "local[1]")
    assert done.returncode == 5, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["problems"] == report["rows"] == 2 and report["reasons"] == {"fork": 2}
    assert {row["author"] for row in report["shown"]} == {feed_text(feeds[1].public)}
    assert all(row["id"].startswith("%") for row in report["shown"])
    assert not any(word in done.stderr for word in JVM_CHATTER)


@pytest.mark.slow  # 18 s of Spark; verify's exit 5 runs in `make test`
@pytest.mark.usefixtures("java")  # a `tangled pipeline` child starts Spark
def test_audit_exits_5_and_names_each_difference(archive, tmp_path):
    out, _feeds = archive
    node = tmp_path / "node"
    shutil.copytree(out, node)
    rows = pq.read_table(node / "timelines").to_pylist()
    first, second = sorted(
        (r for r in rows if r["timeline"] == "spacetime"), key=lambda r: r["position"]
    )[:2]
    first["id"], second["id"] = second["id"], first["id"]  # the node's order, two swapped
    for part in (node / "timelines").iterdir():
        part.unlink()
    edited = pa.Table.from_pylist(rows, schema=TIMELINE_SCHEMA)
    pq.write_table(edited, node / "timelines" / "part-00000.parquet")
    done = pipeline(
        "audit", "--in", str(node), "--out", str(tmp_path / "r"), "--master", "local[1]", "--json"
    )
    assert done.returncode == 5, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["differences"] == 2 and report["kinds"] == {"different-message": 2}
    assert [(r["position"], r["node_id"], r["batch_id"]) for r in report["shown"]] == [
        (first["position"], message_text(first["id"]), message_text(second["id"])),
        (second["position"], message_text(second["id"]), message_text(first["id"])),
    ]


@pytest.mark.usefixtures("java")  # a `tangled pipeline` child starts Spark
def test_when_spark_fails_the_jvm_log_is_shown_then_one_line(archive, tmp_path):
    out, _feeds = archive
    done = pipeline("stats", "--in", str(out), "--out", str(tmp_path), "--master", "nowhere")
    assert done.returncode == 1
    assert "the last lines of the JVM's log" in done.stderr
    assert "Master must either be yarn or start with spark" in done.stderr  # the JVM's words
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("tangled: pipeline stats failed: ") and "Traceback" not in done.stderr
    log = re.search(r"the whole log: (\S+)\)$", last)
    assert log
    written = Path(log.group(1))
    assert "Traceback" in written.read_text()  # the whole story stays in the log
    written.unlink()


@pytest.mark.slow  # 17 s with its Spark session
def test_the_summary_is_bounded_and_says_how_many_more(spark, archive, tmp_path):
    from tanglenode.pipeline.archive import read_messages, write
    from tanglenode.pipeline.linearize import linearize

    out, _feeds = archive
    target = write(linearize(read_messages(spark, [out])), tmp_path, "linearize")
    summary = summarize("linearize", spark, target, show=1)
    assert summary["timelines"] == 2 and summary["rows"] == 80 and len(summary["shown"]) == 1
    assert summary["shown"][0]["positions"] == 40
    text = human("linearize", {"job": "linearize", "out": str(target), **summary}, archives=1)
    assert text.splitlines()[0] == "linearize of 1 archive: 2 timelines, 80 positions"
    assert text.splitlines()[-1].startswith("… and 1 more")


def test_a_table_cuts_its_ids_only_when_it_would_not_fit():
    feed, message = feed_text(bytes(32)), message_text(bytes(range(32)))
    columns = [("author", "author"), ("seq", "seq"), ("id", "message")]
    rows = [{"author": feed, "seq": 7, "id": message}, {"author": feed, "seq": 12, "id": None}]
    wide = table(columns, rows, width=200)
    assert wide[1].split() == [feed, "7", message] and wide[2].split() == [feed, "12", "-"]
    assert wide[1].index("7") == wide[2].index("12") + 1  # numbers to the right
    narrow = table(columns, rows, width=60)
    assert narrow[1].split() == [feed[:9] + "…", "7", message[:9] + "…"]
    assert max(len(line) for line in narrow) <= 60


def test_a_table_shows_the_archives_text_on_one_line_without_control_characters():
    name = "tangle:\x1b[2Jchat\nroom\x07" + "x" * 300  # a tangle's name is its author's text
    lines = table([("timeline", "timeline"), ("messages", "messages")], [{"timeline": name}], 200)
    cell = lines[1].rsplit(" ", 1)[0].strip()
    assert cell.startswith("tangle:[2Jchat room") and cell.endswith("…") and len(cell) == 120
    assert not any(ord(c) < 32 for line in lines for c in line)


@pytest.mark.parametrize("given", ["lots", "0g", "511m", "1025g", "4 g", "-2g", "9" * 60 + "g"])
def test_a_memory_that_is_not_a_size_in_range_is_a_usage_error_before_spark(tmp_path, given):
    started = time.monotonic()
    done = pipeline("stats", "--in", str(tmp_path), "--out", str(tmp_path / "o"), "--memory", given)
    assert time.monotonic() - started < 5 and done.returncode == 2, done.stderr
    assert "expected a size from 512m to 1024g" in done.stderr
    assert "Traceback" not in done.stderr and "starting Spark" not in done.stderr
    assert len(done.stderr) < 1000  # the value is quoted cut, never echoed whole


@pytest.mark.parametrize(("given", "kept"), [("512m", "512m"), (" 4G ", "4g"), ("1024g", "1024g")])
def test_a_memory_in_range_is_passed_on_as_the_jvm_reads_it(given, kept):
    from tanglenode.pipeline.cli import _memory

    assert _memory(given) == kept
