"""Status, peers and digests through the real CLI against real nodes: convergence confirmed
in one line, peers shown as an operator needs them, connect --save, disconnect, init."""

import json

import trio

from tanglenode.config.settings import load_settings
from tanglenode.node.localnet import TANGLED, Node
from tanglenode.protocol.identity import message_text
from tests.integration.test_cli_live import cli
from tests.terminal import run_on_terminal


async def ok(node: Node, *args: str) -> str:
    done = await cli(node, *args)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


async def test_two_nodes_agree_in_one_line_and_status_shows_peers_as_they_are(tmp_path):
    here, there = Node(tmp_path, "here"), Node(tmp_path, "there")
    await there.start()
    await here.start(peers=[there])
    root = await here.publish("root", {"chat": None})
    await there.publish("hello")
    await here.publish("reply", {"chat": root["id"]})
    chat = f"chat/{message_text(root['id'])}"
    for node in (here, there):
        await node.wait_for_size(3, spacetime=True)
        await node.wait_for_size(2, tangle="chat", root=root["id"])

    lines = {}
    for node in (here, there):
        spacetime = await ok(node, "timeline", "--spacetime", "--digest")
        tangle = await ok(node, "timeline", chat, "--digest")
        lines[node.name] = (spacetime, tangle)
        assert spacetime.startswith("spacetime  3 entries  digest ")
        assert tangle.startswith(f"{chat}  2 entries  digest ")
    assert lines["here"] == lines["there"]  # the same order on both: the same line
    assert lines["here"][0] != lines["here"][1]
    here_json = json.loads(await ok(here, "timeline", chat, "--digest", "--json"))
    assert here_json["count"] == 2 and len(here_json["digest"]) == 64
    assert here_json["root"] == message_text(root["id"]) and here_json["tangle"] == "chat"
    assert lines["here"][1].split()[-1] == here_json["digest"][:16]
    clash = await cli(here, "timeline", chat, "--digest", "--limit", "1")
    assert clash.returncode == 2 and b"drop --limit" in clash.stderr  # not silently ignored

    status = {n.name: json.loads(await ok(n, "status", "--json")) for n in (here, there)}
    for report in status.values():
        digests = [(d.get("tangle"), d["count"], d["digest"]) for d in report["digests"]]
        assert digests[0] == (None, 3, digests[0][2]) and report["digests"][0]["spacetime"]
        assert digests[1][:2] == ("chat", 2) and report["digests"][1]["root"].startswith("%")
    assert status["here"]["digests"] == [
        {**d, "version": status["here"]["digests"][n]["version"]}
        for n, d in enumerate(status["there"]["digests"])
    ]
    inbound = status["there"]["peers"][0]
    assert inbound["key"] == here.feed_id and inbound["direction"] == "in"
    assert inbound["address"] is None  # not its temporary source port

    shown = run_on_terminal(["status"], data_dir=here.data_dir)
    assert shown.returncode == 0, shown.output
    assert "final: the first" in shown.output and "of 3 spacetime positions" in shown.output
    assert f"{there.feed_id}  {there.listen}  connected" in shown.output
    assert lines["here"][1].split()[-1] in shown.output  # the tangle's digest
    shown = run_on_terminal(["status"], data_dir=there.data_dir)
    peer_line = next(line for line in shown.output.splitlines() if here.feed_id in line)
    assert "inbound" in peer_line and "127.0.0.1" not in peer_line
    listed = await ok(there, "peers")
    assert listed.startswith(f"{here.feed_id}  inbound  connected")
    connected = [e for e in here.log_lines() if e.get("event") == "peer connected"]
    assert connected and connected[0]["peer"] == there.feed_id  # logs name peers as the CLI

    gone = json.loads(await ok(here, "disconnect", there.feed_id, "--json"))
    assert gone == {"key": there.feed_id, "dialed": True, "connections": 1}
    after = json.loads(await ok(here, "status", "--json"))["peers"][0]
    assert not after["connected"] and not after["dialed"]
    shown = run_on_terminal(["status"], data_dir=here.data_dir)
    peer_line = next(line for line in shown.output.splitlines() if there.feed_id in line)
    assert "disconnected, not dialing" in peer_line and "behind" not in peer_line
    assert "s ago: closed here (tangled disconnect))" in peer_line
    unknown = await cli(here, "disconnect", there.feed_id)
    assert unknown.returncode == 4
    assert unknown.stderr.startswith(b"tangled: not dialing or connected")  # no wire kind
    for bad, code in (("@no", 3), ("10.0.0.1:1", 4), ("@nope", 4)):  # cut short, or a name
        refused = await cli(here, "disconnect", bad)
        assert refused.returncode == code and len(refused.stderr.splitlines()) == 1

    assert await here.stop() == 0 and await there.stop() == 0
    stopped = await ok(here, "timeline", chat, "--digest")  # the store, read directly
    assert stopped == lines["here"][1]
    missing = await cli(here, "timeline", f"chat/{message_text(bytes(32))}", "--digest")
    assert missing.returncode == 4


async def test_connect_save_survives_a_restart_and_init_takes_listen_and_peers(tmp_path):
    there, here = Node(tmp_path, "there"), Node(tmp_path, "here")
    await there.start()
    saved = await ok(here, "connect", there.listen, there.feed_id, "--save")  # here is stopped
    assert "the node is not running" in saved
    config = load_settings(here.data_dir / "tangled.toml", environ={})
    assert [(p.address, p.key) for p in config.peers] == [(there.listen, there.feed_id)]
    repeated = await ok(here, "connect", there.listen, there.feed_id, "--save")
    assert repeated.startswith("already saved in ")  # not "saved" a second time
    again = json.loads(await ok(here, "connect", there.listen, there.feed_id, "--save", "--json"))
    assert again["dialing"] is False and again["saved"]  # saved once only
    assert (here.data_dir / "tangled.toml").read_text().count("\n[[peers]]") == 1

    await here.start(peers=None)  # the config's peers: `there` is dialed from the file
    await there.publish("from there")
    await here.wait_for_size(1, spacetime=True)
    with trio.fail_after(30):
        async with await here.client() as client:
            peer = (await client.status())["peers"][0]
    assert peer["key"] == there.key and peer["address"] == there.listen and peer["dialed"]
    assert await here.stop() == 0 and await there.stop() == 0

    fresh = tmp_path / "fresh"
    peer_spec = f"{there.listen}@{there.feed_id[1:]}"
    pasted = f"{there.listen}@{there.feed_id}"  # the id pasted with its own @: HOST:PORT@@FEED
    arguments = ["--json", "--listen", "127.0.0.1:0", "--peer", peer_spec, "--peer", pasted]
    made = await trio.run_process(
        [str(TANGLED), "--data-dir", str(fresh), "init", *arguments],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    reply = json.loads(made.stdout)
    assert reply["listen"] == "127.0.0.1:0"
    assert reply["peers"] == [{"address": there.listen, "key": there.feed_id}]
    settings = load_settings(fresh / "tangled.toml", environ={})
    assert settings.listen == "127.0.0.1:0" and settings.peers[0].key == there.feed_id
    for bad in (there.feed_id, f"{there.listen}@nonsense", "nohost@" + there.feed_id[1:]):
        refused = await trio.run_process(
            [str(TANGLED), "--data-dir", str(tmp_path / "bad"), "init", "--peer", bad],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert refused.returncode == 3 and b"HOST:PORT@FEED" in refused.stderr
        assert not (tmp_path / "bad" / "tangled.toml").exists()
        assert not (tmp_path / "bad" / "secret").exists()
    twice = ["--peer", peer_spec, "--peer", f"127.0.0.1:1@{there.feed_id[1:]}"]
    refused = await trio.run_process(
        [str(TANGLED), "--data-dir", str(tmp_path / "bad"), "init", *twice],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert refused.returncode == 3 and b"pick one" in refused.stderr
