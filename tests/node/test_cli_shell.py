"""The shell around the commands: help for everything, exit codes, version, man page, start-up.

The walk over the click tree is generic: a command added to `COMMANDS` is
checked like the others, with no change here.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import click
import pytest

from tanglenode.node.cli import COMMANDS, cli, load_command
from tanglenode.node.cli.exits import EXIT_CODES
from tanglenode.node.cli.manpage import render

ROOT = Path(__file__).resolve().parents[2]
TANGLED = Path(sys.executable).with_name("tangled")
# What a one-shot command must not load: the daemon's stack, the store, full config validation.
HEAVY = (
    "trio",
    "pydantic",
    "structlog",
    "lmdb",
    "tanglenode.storage.store",
    "hypercorn",  # the web view: loaded by `run` only (node/web/app.py)
    "prometheus_client",
)


def walk(command: click.Command, path: str = "tangled"):
    """(full name, command) for `command` and everything under it, each group's rows loaded."""
    yield path, command
    if isinstance(command, click.Group):
        for name in command.list_commands(click.Context(command)):
            yield from walk(command.get_command(click.Context(command), name), f"{path} {name}")


def test_every_command_option_and_argument_is_described():
    problems = []
    for path, command in walk(cli):
        if not (command.help or "").strip():
            problems.append(f"{path}: no help")
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not param.help:
                problems.append(f"{path} {param.opts[0]}: no help")
            if isinstance(param, click.Argument):
                # An argument has no help of its own: the command's help names it as usage does.
                shown = param.metavar or param.name.upper()
                word = re.findall(r"[A-Z][A-Z_/:]*", shown)[0]
                if word not in (command.help or ""):
                    problems.append(f"{path} {shown}: the help does not say what {word} is")
    assert problems == []


def test_the_table_lists_each_command_by_its_own_first_line():
    top = [path for path in COMMANDS if " " not in path]
    assert sorted(top) == cli.list_commands(click.Context(cli))
    for path, (_where, summary) in COMMANDS.items():
        command = load_command(path)
        parent, _sep, name = path.rpartition(" ")
        if parent:
            assert parent in COMMANDS and not summary, path
            assert load_command(parent).commands[name] is command
        else:
            assert summary == command.get_short_help_str(10_000), path


def test_help_texts_cite_only_documents_that_exist():
    cited = set()
    for _path, command in walk(cli):
        texts = [command.help or "", *(getattr(p, "help", "") or "" for p in command.params)]
        for text in texts:
            cited.update(re.findall(r"(?:docs/)?[A-Z][A-Z_]*\.md", text))
    assert cited, "the help is expected to point at the documents somewhere"
    missing = {name for name in cited if not (ROOT / name).exists()}
    assert missing == set()


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(TANGLED), *args], capture_output=True, text=True, timeout=60, env=env, check=False
    )


def test_help_lists_the_exit_codes_and_version_prints_the_version():
    shown = run("--help")
    assert shown.returncode == 0
    for code, meaning in EXIT_CODES.items():
        assert re.search(rf"^\s+{int(code)}\s+{re.escape(meaning[:30])}", shown.stdout, re.M)
    for name in (path for path in COMMANDS if " " not in path):
        assert re.search(rf"^\s+{name}\s", shown.stdout, re.M), name
    for flag in ("--version", "-V"):
        printed = run(flag)
        assert (printed.returncode, printed.stdout) == (0, f"tangled {version('tanglenode')}\n")


def modules_loaded(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    """Run `tangled ARGS` in a fresh interpreter; its exit code and every module it imported."""
    out = tmp_path / "modules.json"
    program = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: open({str(out)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
        "from tanglenode.node.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("TANGLED_")}
    done = subprocess.run(
        [sys.executable, "-c", program, *args], capture_output=True, timeout=60, env=env
    )
    return done.returncode, set(json.loads(out.read_text()))


def test_help_imports_no_command_and_one_shot_commands_stay_light(tmp_path):
    code, loaded = modules_loaded(tmp_path, "--help")
    assert code == 0
    assert not {name for name in loaded if name.startswith("tanglenode.node.cli.")} - {
        "tanglenode.node.cli.exits"
    }
    data = ["--data-dir", str(tmp_path / "none")]
    for args in (["status"], ["publish", '{"text": "hi"}'], ["group", "members", "%" + "A" * 43]):
        code, loaded = modules_loaded(tmp_path, *data, *args)
        assert code == 4  # no data directory here: said in one line, nothing else loaded
        assert [name for name in HEAVY if name in loaded] == [], args


def test_a_config_in_doubt_is_still_checked_and_named(tmp_path):
    config = tmp_path / "tangled.toml"
    config.write_text('[limits]\nmax_tangles = "many"\n')
    done = run("--config", str(config), "status")
    assert done.returncode == 3
    assert "limits.max_tangles" in done.stderr and str(config) in done.stderr


def test_the_man_page_is_fresh():
    committed = (ROOT / "docs" / "tangled.1").read_text()
    assert committed == render(), "run `make man` and commit docs/tangled.1"
    for path, _command in list(walk(cli))[1:]:
        assert f".SS {path.replace('-', chr(92) + '-')}\n" in committed, path
    for code in EXIT_CODES:
        assert f".B {int(code)}\n" in committed


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_the_man_page_is_valid_roff():
    checked = subprocess.run(
        ["groff", "-man", "-ww", "-z", str(ROOT / "docs" / "tangled.1")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (checked.returncode, checked.stderr) == (0, "")


def complete(words: str) -> list[str]:
    env = {
        **os.environ,
        "_TANGLED_COMPLETE": "bash_complete",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
    }
    done = run(env=env)
    assert done.returncode == 0, done.stderr
    return [line.split(",", 1)[1] for line in done.stdout.splitlines()]


def test_shell_completion_knows_every_command_and_option():
    assert complete("tangled ") == [path for path in sorted(COMMANDS) if " " not in path]
    group = load_command("group")
    assert complete("tangled group ") == sorted(group.commands)
    assert complete("tangled group timeline --ta") == ["--tangle"]
    assert complete("tangled group timeline --tangle ") == ["group", "members", "epoch"]


@pytest.mark.parametrize("args", [[], ["group"], ["doc"]])
def test_a_group_without_a_command_prints_its_help(args):
    shown = run(*args)
    assert shown.returncode == 2 and shown.stderr == ""
    assert shown.stdout.startswith("Usage: tangled") and "\nCommands:\n" in shown.stdout
