"""The `tangled` console script, run as a real process against real data directories."""

import base64
import json
import os
import socket
import stat
import subprocess
import sys
from functools import reduce
from pathlib import Path

import pytest

from tanglenode.protocol.identity import feed_text, message_text
from tanglenode.protocol.limits import Limits
from tanglenode.protocol.message import TangleLink
from tanglenode.storage.store import FeedStore
from tests.factories import ALL_VIEWS, Feed, keypair, sign_raw, unsigned_fields
from tests.tamper import tamper

TANGLED = Path(sys.executable).with_name("tangled")


class Node:
    """A data directory and a way to run `tangled --data-dir DIR ...` on it."""

    def __init__(self, root: Path) -> None:
        self.data_dir = root / "node"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("TANGLED_")}
        self.env |= {"HOME": str(root / "home"), "XDG_DATA_HOME": str(root / "xdg")}

    def run(self, *args: str, stdin: str | None = None, env: dict | None = None):
        return subprocess.run(
            [str(TANGLED), "--data-dir", str(self.data_dir), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env | (env or {}),
            timeout=60,
        )

    def ok(self, *args: str, **kwargs) -> str:
        done = self.run(*args, **kwargs)
        assert done.returncode == 0, done.stderr
        return done.stdout


def keep_optional_views(node: Node) -> None:
    """Every later command of `node` keeps every optional view (its store must be empty until
    then: an empty store builds what is wanted)."""
    node.env |= {"TANGLED_VIEWS__CAUSAL_TIME": "true", "TANGLED_VIEWS__JOINED_ORDER": "true"}


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


@pytest.fixture
def ready(node):
    node.feed_id = node.ok("init").strip()
    return node


def test_init_writes_config_and_private_key_and_prints_the_feed(node):
    feed = node.ok("init").strip()
    assert feed.startswith("@") and len(feed) == 44
    secret = node.data_dir / "secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert json.loads(secret.read_text())["public"] == feed
    assert (node.data_dir / "tangled.toml").is_file()
    assert (node.data_dir / "store" / "data.mdb").is_file()


def test_init_refuses_to_overwrite(ready):
    config_before = (ready.data_dir / "tangled.toml").read_text()
    secret_before = (ready.data_dir / "secret").read_text()
    done = ready.run("init")
    assert done.returncode == 3
    assert "refusing to overwrite" in done.stderr
    assert (ready.data_dir / "tangled.toml").read_text() == config_before
    assert (ready.data_dir / "secret").read_text() == secret_before


def test_publish_into_a_tangle_then_log_show_and_feeds(ready):
    root = ready.ok("publish", '{"type": "post", "text": "first"}', "--tangle", "chat").strip()
    reply = json.loads(
        ready.ok(
            "publish",
            "-",
            "--tangle",
            f"chat={root}",
            "--json",
            stdin='{"text": "second"}',
        )
    )
    assert reply["seq"] == 2
    assert reply["tangles"] == {"chat": {"root": root, "previous": [root]}}
    assert reply["author"] == ready.feed_id

    lines = [json.loads(line) for line in ready.ok("log", "--json").splitlines()]
    assert [m["content"] for m in lines] == [{"type": "post", "text": "first"}, {"text": "second"}]
    assert ready.ok("log", ready.feed_id, "--from", "2", "--json").count("\n") == 1
    assert "first" in ready.ok("log")

    shown = json.loads(ready.ok("show", root, "--json"))
    assert shown["id"] == root and shown["tangles"]["chat"]["root"] is None
    shown = json.loads(ready.ok("show", reply["id"], "--json"))
    assert shown.pop("signature") and shown == reply  # publish prints the node's reply
    shown_text = ready.ok("show", reply["id"])
    assert f"author   {ready.feed_id}  (our feed)" in shown_text and "says     second" in shown_text

    (feed,) = [json.loads(line) for line in ready.ok("feeds", "--json").splitlines()]
    assert feed == {
        "feed": ready.feed_id,
        "seq": 2,
        "head": reply["id"],
        "invalid_from": None,
        "ours": True,
    }
    assert "2 messages in 1 feeds" in ready.ok("check")


@pytest.mark.parametrize(
    "args, code, says",
    [
        (("publish",), 2, "Missing argument"),
        (("frobnicate",), 2, "No such command"),
        (("log", "--limit", "0"), 2, "--limit"),
        (("publish", "{not json"), 3, "not JSON"),
        (("publish", "{}", "--tangle", "chat=%zzz"), 3, "message id"),
        (("publish", "{}", "--tangle", "chat=%" + "A" * 43), 3, "no tangle 'chat'"),
        (("show", "nope"), 3, "must start with '%'"),
        (("log", "@sho"), 3, "feed id"),  # @short is a feed id cut short
        (("show", "%" + "A" * 43), 4, "no message"),
        (("log", "@" + "A" * 43), 4, "no feed"),
    ],
)
def test_exit_codes_tell_usage_input_and_not_found_apart(ready, args, code, says):
    done = ready.run(*args)
    assert done.returncode == code, done.stderr
    assert says in done.stderr


def test_commands_before_init_say_so(node):
    done = node.run("feeds")
    assert done.returncode == 4
    assert "tangled init" in done.stderr


def test_a_bad_config_names_the_key(ready):
    config = ready.data_dir / "tangled.toml"
    config.write_text(config.read_text().replace("max_tangles = 16", "max_tangles = -1"))
    done = ready.run("feeds")
    assert done.returncode == 3
    assert "limits.max_tangles" in done.stderr


def test_environment_overrides_reach_the_store(ready):
    big = json.dumps({"text": "x" * 2000})
    done = ready.run("publish", big, env={"TANGLED_LIMITS__MAX_MESSAGE_BYTES": "1024"})
    assert done.returncode == 3
    assert "too-large" in done.stderr
    ready.ok("publish", big)


def test_without_a_running_node_publish_writes_the_store_and_status_says_it_is_not_running(ready):
    published = ready.ok("publish", '"hi"').strip()  # no --offline: the store, under its lock
    assert json.loads(ready.ok("show", published, "--json"))["content"] == "hi"
    for command in ("status", "peers"):
        done = ready.run(command)
        assert done.returncode == 1 and "the node is not running" in done.stderr


def test_logs_are_json_lines_on_stderr_when_not_a_terminal(ready):
    done = ready.run("publish", '"hi"')
    events = [json.loads(line) for line in done.stderr.splitlines()]
    assert [e["event"] for e in events] == ["published"]
    assert events[0]["id"] == done.stdout.strip()


def test_an_archive_names_the_nodes_feed(ready):
    ready.ok("publish", '"hi"')
    archive, keyless = ready.data_dir.parent / "archive", ready.data_dir.parent / "keyless"
    counts = json.loads(ready.ok("export", "--out", str(archive)))
    about = json.loads((archive / "archive.json").read_text())
    assert about["feed"] == ready.feed_id and about["messages"] == counts["messages"] == 1
    (ready.data_dir / "secret").unlink()  # a store kept without its key still exports
    ready.ok("export", "--out", str(keyless))
    assert "feed" not in json.loads((keyless / "archive.json").read_text())


def tag_shown(msg_id: bytes) -> str:
    """A tag as the CLI shows it: its 16 bytes in unpadded URL-safe base64."""
    return base64.urlsafe_b64encode(msg_id[:16]).rstrip(b"=").decode()


def test_suspected_forks_are_listed_after_the_proven_ones(ready):
    forker, other_branch, honest = Feed("forker"), Feed("forker"), Feed("honest")
    held, other = forker.append("one"), other_branch.append("other")
    naming = honest.append("saw the other", timeframe={forker.public: other})
    twin, twin_other = Feed("twin"), Feed("twin")
    with FeedStore(ready.data_dir / "store") as store:
        store.writes.ingest(
            [held.raw, naming.raw, twin.append("a").raw, twin_other.append("b").raw]
        )
    proven, suspected = [json.loads(line) for line in ready.ok("forks", "--json").splitlines()]
    assert proven["kind"] == "fork" and proven["invalid"] == {twin.keypair.feed_id: 1}
    assert suspected == {
        "kind": "suspected",
        "feed": forker.keypair.feed_id,
        "seq": 1,
        "named_tag": tag_shown(other.id),
        "held_tag": tag_shown(held.id),
        "named_by": honest.keypair.feed_id,
    }
    assert suspected["named_tag"] == message_text(other.id)[1:22] + suspected["named_tag"][21]
    fork_line, suspect_line = ready.ok("forks").splitlines()
    assert fork_line.startswith("fork: ")
    assert suspect_line == (
        f"suspected: {forker.keypair.feed_id} seq 1: {honest.keypair.feed_id} names "
        f"{suspected['named_tag']}, held {suspected['held_tag']}"
    )
    with FeedStore(ready.data_dir / "store") as store:
        store.writes.ingest([other.raw])  # the other branch: a proof, and nothing suspected
    kinds = [json.loads(line)["kind"] for line in ready.ok("forks", "--json").splitlines()]
    assert kinds == ["fork", "fork"]


def test_status_shows_a_suspected_fork_in_one_line():
    from tanglenode.node.cli.daemon import _suspect_json, _suspect_line

    entry = {
        "feed": b"\x01" * 32,
        "seq": 4,
        "named_tag": b"\xff" * 16,
        "held_tag": b"",  # the held message gone meanwhile
        "named_by": b"\x02" * 32,
    }
    assert _suspect_json(entry) == {
        "feed": feed_text(b"\x01" * 32),
        "seq": 4,
        "named_tag": "_" * 21 + "w",
        "held_tag": "",
        "named_by": feed_text(b"\x02" * 32),
    }
    names = {b"\x01" * 32: "forker", b"\x02" * 32: "~\x1b[31mhonest"}
    line = _suspect_line(entry, lambda feed: names[feed])
    assert line == f"forker seq 4: ~?[31mhonest names {'_' * 21}w, held nothing"


def test_forks_are_listed_and_check_flags_damage(ready):
    assert ready.ok("forks") == "no forks and no suspected forks\n"  # said, not left blank
    assert ready.ok("forks", "--json") == ""  # JSON lines: no evidence, no line
    honest, twin = Feed("alice"), Feed("alice")
    with FeedStore(ready.data_dir / "store") as store:
        store.writes.ingest([honest.append("one").raw, twin.append("other").raw])
    (fork,) = [json.loads(line) for line in ready.ok("forks", "--json").splitlines()]
    assert fork["kind"] == "fork" and fork["invalid"] == {honest.keypair.feed_id: 1}
    # the proof is the two branches' headers (evidence keeps no content)
    branches = {message_text(honest.messages[0].id), message_text(twin.messages[0].id)}
    assert {message["id"] for message in fork["messages"]} == branches
    assert [(m["content"], m["has_content"]) for m in fork["messages"]] == [(None, False)] * 2
    assert json.loads(ready.ok("feeds", "--json"))["invalid_from"] == 1
    assert "fork: " in ready.ok("forks") and "INVALID from 1" in ready.ok("feeds")
    assert json.loads(ready.ok("check", "--json"))["ok"] is True

    with tamper(ready.data_dir / "store") as (txn, tables):
        txn.delete(honest.public, db=tables.invalid)
    done = ready.run("check", "--json")
    assert done.returncode == 5
    report = json.loads(done.stdout)
    assert report["ok"] is False and report["problems"]


def test_timeline_order_position_and_commands(ready):
    root = ready.ok("publish", '"root"', "--tangle", "chat/room").strip()
    second = ready.ok("publish", '"two"', "--tangle", f"chat/room={root}").strip()
    third = ready.ok("publish", '"three"', "--tangle", f"chat/room={root}").strip()
    spec = f"chat/room/{root}"  # the name may hold "/", the root never does
    lines = ready.ok("timeline", spec).splitlines()
    assert lines[0].split()[:4] == ["POS", "RANK", "ID", "STATE"]
    assert [line.split()[:4] for line in lines[1:]] == [
        ["0", "0", root, "joined"],
        ["1", "1", second, "joined"],
        ["2", "2", third, "joined"],
    ]
    assert [line.split()[-1] for line in lines[1:]] == ["root", "two", "three"]
    page = [
        json.loads(line)
        for line in ready.ok(
            "timeline", spec, "--start", "1", "--limit", "1", "--json"
        ).splitlines()
    ]
    assert page == [
        {
            "position": 1,
            "rank": 1,
            "id": second,
            "state": "joined",
            "author": ready.feed_id,
            "timestamp": page[0]["timestamp"],
            "summary": "two",
        }
    ]
    assert json.loads(ready.ok("timeline", spec, "--at", third, "--json")) == {
        "id": third,
        "position": 2,
        "rank": 2,
        "state": "joined",
    }
    commands = [
        json.loads(line)
        for line in ready.ok("timeline", spec, "--since", "1", "--json").splitlines()
    ]
    assert [{k: c[k] for k in ("version", "op", "pos", "id")} for c in commands] == [
        {"version": 2, "op": "ins", "pos": 1, "id": second},
        {"version": 3, "op": "ins", "pos": 2, "id": third},
    ]
    spacetime = ready.ok("timeline", "--spacetime").splitlines()[1:]
    assert [line.split()[2] for line in spacetime] == [root, second, third]


def test_timeline_states_and_the_joined_view(ready):
    alice, bob = Feed("cli-alice"), Feed("cli-bob")
    root = alice.root("chat")
    a = bob.append(tangles={"chat": TangleLink(root.id, (root.id,))})
    b = bob.append(tangles={"chat": TangleLink(root.id, (a.id,))})
    waiting = alice.append(tangles={"chat": TangleLink(root.id, (bytes(32),))})
    keep_optional_views(ready)
    with FeedStore(ready.data_dir / "store", views=ALL_VIEWS) as store:  # the node is stopped
        store.writes.ingest([root.raw, a.raw, b.raw, waiting.raw])
    spec = f"chat/{message_text(root.id)}"
    listed = ready.ok("timeline", spec).splitlines()[1:]
    rows = {line.split()[2]: line.split()[3] for line in listed}
    assert rows == {
        message_text(m.id): state
        for m, state in ((root, "joined"), (a, "joined"), (b, "joined"), (waiting, "pending"))
    }
    joined = [line.split()[2] for line in ready.ok("timeline", spec, "--joined").splitlines()[1:]]
    assert joined == [message_text(m.id) for m in (root, a, b)]
    at = ready.ok("timeline", spec, "--at", message_text(waiting.id)).strip()
    # ranked 0 in the full timeline (its link is missing), maybe before the root
    assert at.endswith(f"  rank 0  pending  waiting on {message_text(bytes(32))}")
    found = json.loads(ready.ok("timeline", spec, "--at", message_text(waiting.id), "--json"))
    assert found["state"] == "pending" and found["waiting"] == [message_text(bytes(32))]


def test_timeline_errors(ready):
    root = ready.ok("publish", '"root"', "--tangle", "chat").strip()
    assert ready.run("timeline").returncode == 2
    assert ready.run("timeline", f"chat/{root}", "--spacetime").returncode == 2
    assert ready.run("timeline", "no-slash").returncode == 3
    assert ready.run("timeline", f"other/{root}").returncode == 4
    assert ready.run("timeline", f"chat/{root}", "--at", "%" + "A" * 43).returncode == 4


def one_line_error(done) -> str:
    """The stderr lines that are not log records: exactly one, never a traceback."""
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("{")]
    assert len(lines) == 1, done.stderr
    return lines[0]


DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "args, stdin, code, says",
    [
        (("publish", str(2**70)), None, 3, "int64/uint64"),
        (("publish", "NaN"), None, 3, "non-finite-float"),
        (("publish", '{"x": -Infinity}'), None, 3, "non-finite-float"),
        (("publish", "1" * 5000), None, 3, "content"),
        (("publish", "-"), DEEP_JSON, 3, "content"),
        (
            ("publish", json.dumps(reduce(lambda v, _: [v], range(33), 0))),
            None,
            3,
            "too-deep",
        ),
        (("publish", "{}", "--tangle", "n" * 65), None, 3, "tangle name"),
        (("log", "--from", str(10**30)), None, 2, "--from"),
        (("log", "--limit", str(2**63)), None, 2, "--limit"),
        (("timeline", "--spacetime", "--start", str(10**30)), None, 2, "--start"),
        (("watch", "--spacetime", "--since", "-1"), None, 2, "--since"),
        (("timeline", "n" * 100 + "/%" + "A" * 43), None, 3, "tangle name"),
        (("connect", "127.0.0.1:1e3", "@" + "A" * 43), None, 3, "HOST:PORT"),
        (("connect", "nonsense:abc", "@" + "A" * 43), None, 3, "HOST:PORT"),
        (("connect", ":8008", "@" + "A" * 43), None, 3, "HOST:PORT"),
        (("show", "%" + "A" * 100_000), None, 3, "message id"),
    ],
)
def test_bad_input_is_one_line_and_a_typed_exit(ready, args, stdin, code, says):
    done = ready.run(*args, stdin=stdin)
    assert done.returncode == code, done.stderr
    line = one_line_error(done)
    assert says in line and len(line) < 500


@pytest.mark.parametrize(
    "config, says",
    [(b"\xff\xfe\x00binary", "not UTF-8"), (b"a = [" * 5000, "TOML"), (b"x" * (2 << 20), "larger")],
    ids=["binary", "deep", "huge"],
)
def test_a_config_that_is_not_toml_text_is_bad_input(ready, config, says):
    (ready.data_dir / "tangled.toml").write_bytes(config)
    done = ready.run("feeds")
    assert done.returncode == 3, done.stderr
    # Config errors list each problem on its own line (README); here there is one.
    assert "Traceback" not in done.stderr and "invalid configuration" in done.stderr
    assert says in done.stderr


def test_run_on_a_port_in_use_is_one_line(ready):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = ready.run("run", "--listen", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert "Address already in use" in one_line_error(done)


def test_messages_stored_before_the_content_rules_render(ready):
    deep = reduce(lambda v, _: [v], range(500), 0)
    author = keypair("legacy")
    raw = sign_raw(author, unsigned_fields(author, content=deep), canonical=False)
    with FeedStore(ready.data_dir / "store", limits=Limits(max_content_depth=600)) as store:
        (result,) = store.writes.ingest([raw])
        assert result.stored
    shown = ready.ok("show", message_text(result.message.id), "--json")
    assert "$too-deep" in json.loads(shown)["content"].__repr__()
    assert ready.ok("show", message_text(result.message.id))
    for line in ready.ok("log", feed_text(author.public), "--json").splitlines():
        json.loads(line)
    assert ready.ok("log", feed_text(author.public))


def test_timeline_causal_time_order_and_its_time_window(ready):
    alice = Feed("alice")
    a1 = alice.append(timestamp=100)
    a2 = alice.append(timestamp=5000)
    a3 = alice.append(timestamp=200)  # a clock that went back: still after a2
    keep_optional_views(ready)
    with FeedStore(ready.data_dir / "store", views=ALL_VIEWS) as store:
        store.writes.ingest([a3.raw, a2.raw, a1.raw])
        store.writes.ingest([a2.raw, a3.raw])
    ids = [message_text(m.id) for m in (a1, a2, a3)]
    lines = ready.ok("timeline", "--spacetime", "--order", "causal-time").splitlines()[1:]
    epoch, five_s = "1970-01-01 00:00:00Z", "1970-01-01 00:00:05Z"  # as every time is shown
    assert [line.split()[:4] for line in lines] == [
        ["0", *epoch.split(), ids[0]],
        ["1", *five_s.split(), ids[1]],
        ["2", *epoch.split(), ids[2]],
    ]
    window = ("--spacetime", "--order", "causal-time", "--from-time", "0")
    implied = ready.ok("timeline", *window, "--to-time", "1970-01-01T00:00:00.300Z", "--json")
    keys = ("position", "time", "id")
    assert [{k: json.loads(line)[k] for k in keys} for line in implied.splitlines()] == [
        {"position": 0, "time": 100, "id": ids[0]},
        {"position": 1, "time": 5000, "id": ids[1]},  # implied between the two inside
        {"position": 2, "time": 200, "id": ids[2]},
    ]
    strict = ready.ok("timeline", *window, "--to-time", "300", "--window", "strict", "--json")
    assert [json.loads(line)["id"] for line in strict.splitlines()] == [ids[0], ids[2]]
    for bad in ("yesterday", "-5", "1970-13-01"):
        done = ready.run("timeline", *window, "--to-time", bad)
        assert done.returncode == 2 and "Traceback" not in done.stderr
    assert ready.run("timeline", "--spacetime", "--from-time", "5").returncode == 3


def test_every_command_shows_a_time_the_same_way(ready):
    """One rendering (render.format_timestamp) in `log`, `show`, `timeline` in both orders,
    `tangles`, `group list`, `doc list` and `doc log`; `--json` keeps the milliseconds."""
    from tanglenode.config.secret import read_secret
    from tanglenode.node.present.render import format_timestamp
    from tanglenode.protocol.document import TANGLE, init_content
    from tanglenode.storage.groups import state as groups

    at = 1_795_000_123_456
    shown = "2026-11-18 11:08:43Z"
    me = read_secret(ready.data_dir / "secret")
    keep_optional_views(ready)
    with FeedStore(ready.data_dir / "store", keypair=me, views=ALL_VIEWS) as store:
        root = store.writes.publish("a thread", {"chat": None}, timestamp=at)
        store.writes.publish(*groups.create(me, "club"), timestamp=at)
        doc = store.writes.publish(init_content("notes"), {TANGLE: None}, timestamp=at)
    chat, doc_id = f"chat/{message_text(root.id)}", message_text(doc.id)
    ready.ok("doc", "insert", doc_id, "0", "hi")  # signed now: its time is read back below
    edited = json.loads(ready.ok("doc", "log", doc_id, "--json"))["versions"][-1]["timestamp"]
    outputs = {
        "log": ready.ok("log"),
        "show": ready.ok("show", message_text(root.id)),
        "timeline": ready.ok("timeline", chat),
        "timeline causal-time": ready.ok("timeline", chat, "--order", "causal-time"),
        "tangles": ready.ok("tangles", "--name", "chat"),
        "group list": ready.ok("group", "list"),
        "doc list": ready.ok("doc", "list"),
    }
    for command, output in outputs.items():
        assert shown in output, (command, output)
        assert "11:08:43." not in output and "18T11" not in output
        if command != "show":  # which prints the message's fields as JSON after its lines
            assert str(at) not in output
    assert f"time     {shown}\n" in outputs["show"]
    assert format_timestamp(edited) in ready.ok("doc", "log", doc_id)
    timeline = [json.loads(line) for line in ready.ok("timeline", chat, "--json").splitlines()]
    assert timeline[0]["timestamp"] == at  # JSON: milliseconds, as before


@pytest.mark.parametrize(
    "args",
    [
        ("status",),
        ("publish", '"hi"'),
        ("log",),
        ("show", "%" + "A" * 43),
        ("feeds",),
        ("timeline", "--spacetime"),
        ("tangles",),
        ("whoami",),
        ("group", "list"),
        ("doc", "list"),
        ("peers",),
        ("name",),
        ("about", "me"),
        ("watch", "--spacetime"),
        ("run",),
    ],
)
def test_a_mistyped_data_dir_says_there_is_none_whatever_the_command(node, args):
    done = node.run(*args)  # `node` was never initialised: no data directory at all
    assert done.returncode == 4, done.stderr
    assert done.stderr == (
        f"tangled: {node.data_dir}: no data directory here; `tangled init` makes one\n"
    )


def test_an_error_of_several_lines_keeps_them_each_made_safe(ready):
    env = {"TANGLED_LIMITS__MAX_TANGLES": "0"}
    done = ready.run("log", env=env)
    assert done.returncode == 3
    assert done.stderr.splitlines() == [
        "tangled: invalid configuration:",
        "  limits.max_tangles (from TANGLED_LIMITS__MAX_TANGLES): "
        "Input should be greater than or equal to 1 (got '0')",
    ]
    config = ready.data_dir / "tangled.toml"
    config.write_text('"evil\\u001b[2J" = 1\nlistn = "x"\n' + config.read_text())
    lines = ready.run("log").stderr.splitlines()
    assert lines == [
        "tangled: invalid configuration:",
        f"  evil?[2J (from {config}): unknown setting",  # the key's ESC made safe
        f"  listn (from {config}): unknown setting",
    ]


WAYS_OUT = {
    # schemas 11 and 12 hold format-2 messages, whose signatures cover their content
    b"12": "tangled: store schema 12 holds messages of format 2 (signatures over the content, "
    "which cannot be erased), which this build refuses: start a new data directory "
    "(`tangled init`) and let peers of this version replicate to it\n",
    # a schema of messages this build reads moves by bundle
    b"16": "tangled: store schema 16, this build reads 15: with the build that wrote it, "
    "`tangled export --bundle FILE`, then `tangled import FILE` into a new data directory "
    "with this one\n",
}


@pytest.mark.parametrize("schema", WAYS_OUT)
@pytest.mark.parametrize("command", [("log",), ("check",), ("export", "--bundle", "-")])
def test_a_store_of_another_schema_is_refused_with_the_way_out_in_one_line(ready, command, schema):
    with tamper(ready.data_dir / "store") as (txn, tables):
        txn.put(b"schema", schema, db=tables.meta)
    done = ready.run(*command)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == WAYS_OUT[schema]


def test_an_invite_id_that_begins_with_a_dash_is_an_id_not_an_option(ready):
    """Invite IDs are base64url: one may begin with "-" (`tangled invite list` shows it so)."""
    done = ready.run("invite", "revoke", "-2abc")
    assert done.returncode == 4  # looked up as an ID (click said "No such option '-2'": 2)
    assert done.stderr == "tangled: no invite with an id starting '-2abc'\n"
