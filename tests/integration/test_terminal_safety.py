"""Text others chose reaches a terminal only through `terminal.safe`: under a real
pseudo-terminal (where click strips nothing), no escape, OSC or bidi control gets out."""

import json
from functools import partial

import trio

from tanglenode.node.localnet import Node
from tanglenode.protocol.identity import message_text
from tests.integration.test_cli_live import cli
from tests.terminal import run_on_terminal

HOSTILE = {  # a tangle name others chose -> how a terminal must show it
    "chat\x1b[31m": "chat?[31m",
    "osc\x1b]52;c;AAAA\x07": "osc?]52;c;AAAA?",
    "bidi\u202eevil": "bidi?evil",
}
UNSAFE = ("\x1b", "\x07", "\u202e", "\x9b")


async def on_terminal(node: Node, *args: str, columns: int = 200) -> str:
    shown = await trio.to_thread.run_sync(
        partial(run_on_terminal, list(args), data_dir=node.data_dir, columns=columns)
    )
    assert shown.returncode == 0, shown.output
    assert not any(char in shown.output for char in UNSAFE), repr(shown.output)
    return shown.output


async def test_hostile_tangle_names_show_as_question_marks_on_a_terminal(tmp_path):
    node = Node(tmp_path, "target")
    await node.start()
    roots = {name: message_text((await node.publish("hi", {name: None}))["id"]) for name in HOSTILE}

    status = await on_terminal(node, "status")
    for name, shown in HOSTILE.items():
        assert f"  {shown}/{roots[name]}  " in status

    log = await on_terminal(node, "log")
    assert "[chat?[31m*]" in log and "[bidi?evil*]" in log and "[osc?]52;c;…" in log

    tangles = await on_terminal(node, "tangles")
    for name, shown in HOSTILE.items():
        assert f"{shown}/{roots[name]}" in tangles

    for name, shown in HOSTILE.items():
        timeline = await on_terminal(node, "timeline", f"{name}/{roots[name]}", "--digest")
        assert timeline.startswith(f"{shown}/{roots[name]}  1 entries  digest ")

    # --json keeps the names exact
    listed = await cli(node, "tangles", "--json")
    found = {json.loads(line)["tangle"] for line in listed.stdout.decode().splitlines()}
    assert found == set(HOSTILE)
    assert await node.stop() == 0


async def test_show_escapes_bidi_and_c1_controls_in_content_on_a_terminal(tmp_path):
    node = Node(tmp_path, "shown")
    await node.start()
    text = "left\u202eright\x9b31mred"
    msg_id = message_text((await node.publish(text, {}))["id"])
    assert await node.stop() == 0

    shown = await on_terminal(node, "show", msg_id)
    assert '"content": "left\\u202eright\\u009b31mred"' in shown

    exact = await cli(node, "show", msg_id, "--json")  # --json: standard JSON, the raw text
    assert json.loads(exact.stdout)["content"] == text
    assert "\u202e".encode() in exact.stdout and "\x9b".encode() in exact.stdout


async def test_a_documents_text_shows_its_lines_but_no_escapes_on_a_terminal(tmp_path):
    node = Node(tmp_path, "doc")
    await node.start()
    text = "line one \x1b[2J\nbidi\u202eevil\tend\n"
    doc = json.loads((await cli(node, "doc", "create", "notes", "--json")).stdout)["doc"]
    assert (await cli(node, "doc", "insert", doc, "0", text)).returncode == 0

    shown = await on_terminal(node, "doc", "show", doc)
    assert shown.replace("\r\n", "\n") == "line one ?[2J\nbidi?evil\tend\n"  # one for one
    blame = await on_terminal(node, "doc", "blame", doc)
    assert "line one ?[2J" in blame and "bidi?evil" in blame
    diff = await trio.to_thread.run_sync(  # coloured by us: our own escapes, not theirs
        partial(run_on_terminal, ["doc", "diff", doc, "v0", "v1"], data_dir=node.data_dir)
    )
    assert "?[2J" in diff.output and "\x1b[2J" not in diff.output and "\u202e" not in diff.output
    piped = await cli(node, "doc", "show", doc)
    assert piped.stdout.decode() == text  # into a file or a pipe: the exact text
    assert await node.stop() == 0
