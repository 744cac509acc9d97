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


def test_structlog_imported_late_is_configured_before_it_logs(tmp_path):
    """A command that imports structlog only when it runs still logs JSON on stderr."""
    import subprocess
    import sys

    program = (
        "import sys, click\n"
        "from tanglenode.node.cli import cli, main\n"
        "@cli.command('late')\n"
        "def late():\n"
        "    import structlog\n"
        "    structlog.get_logger('x').info('late-event', n=1)\n"
        "    click.echo('result')\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, "--data-dir", str(tmp_path), "late"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "result\n"), done.stderr
    record = json.loads(done.stderr)
    assert record["event"] == "late-event" and record["n"] == 1 and record["level"] == "info"
