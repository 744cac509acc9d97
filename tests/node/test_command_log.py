"""The CLI's own log lines (node/cli/logs.py `CommandLog`): structlog's shapes, without it."""

import json

from tanglenode.node.cli.logs import CommandLog


def test_json_lines_carry_the_fields_event_level_and_time(capsys):
    log = CommandLog()
    log.configure("json", "info")
    log.info("published", seq=3, id="%abc")
    log.debug("hidden")
    (line,) = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert {k: record[k] for k in ("seq", "id", "event", "level")} == {
        "seq": 3,
        "id": "%abc",
        "event": "published",
        "level": "info",
    }
    assert record["timestamp"].endswith("Z")


def test_an_exception_is_logged_with_its_traceback(capsys):
    log = CommandLog()
    log.configure("json", "warning")
    log.info("below the level")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("internal error")
    (line,) = capsys.readouterr().err.splitlines()
    record = json.loads(line)
    assert record["level"] == "error" and "ValueError: boom" in record["exception"]


def test_console_lines_are_for_people(capsys):
    log = CommandLog()
    log.configure("console", "debug")
    log.warning("initialized", feed="@xyz", config="/tmp/t.toml")
    line = capsys.readouterr().err
    assert "[warning  ] initialized" in line and "config=/tmp/t.toml feed=@xyz" in line
    assert not line.lstrip().startswith("{")
