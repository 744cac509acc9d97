"""Whatever a command prints, it accepts back (node/cli/lookup.py): feeds by petname, `~name`
or an id cut short, messages by an id cut short, documents by title; real stores, real
`tangled` processes, the node stopped and running."""

import json
import os
import random

import pytest
import trio

from tanglenode.node.cli.backend import call_store
from tanglenode.node.cli.names import short_feed
from tanglenode.node.ipc.oneshot import NodeError
from tanglenode.node.localnet import TANGLED
from tanglenode.node.localnet import Node as LiveNode
from tanglenode.node.service.store_service import StoreService
from tanglenode.protocol.errors import BadIdentifier
from tanglenode.protocol.identity import feed_text, message_text, prefix_range
from tanglenode.protocol.ipc_resolve import MAX_CANDIDATES
from tanglenode.storage.store import FeedStore
from tests.factories import Feed, keypair
from tests.node.test_cli import Node

# Searched for once: the first messages of these feeds have ids that both start %wbps,
# and these feeds' ids both start @xRME (asserted where used).
TWINS = ("twin-2002", "twin-3625")
SAME_START = ("fp-4428", "fp-8342")
TWIN_POST = {"type": "post", "text": "twin"}


@pytest.fixture
def ready(tmp_path):
    node = Node(tmp_path)
    node.feed_id = node.ok("init").strip()
    return node


def about(feed: Feed, name: str) -> dict:
    return {"type": "about", "about": feed_text(feed.public), "name": name}


def ingest(data_dir, *messages) -> None:
    with FeedStore(data_dir / "store") as store:
        results = store.writes.ingest([m.raw for m in messages])
    assert all(result.stored for result in results)


def refused(node: Node, *args: str, code: int) -> str:
    """`tangled ARGS`'s one line on stderr, after it exits `code`."""
    done = node.run(*args)
    assert done.returncode == code, (args, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
    return done.stderr


def twins() -> tuple[Feed, Feed]:
    first, second = Feed(TWINS[0]), Feed(TWINS[1])
    a, b = first.append(TWIN_POST), second.append(TWIN_POST)
    assert message_text(a.id)[:5] == message_text(b.id)[:5] == "%wbps" and a.id != b.id
    return first, second


# -- the prefix as a range of ids, and the store's scan --------------------------------------


def test_a_prefix_is_exactly_the_range_of_ids_written_so():
    rng = random.Random(42)
    for _ in range(200):
        msg = rng.randbytes(32)
        text = message_text(msg)[1:]
        length = rng.randint(1, 42)
        low, high = prefix_range(text[:length])
        assert low <= msg <= high
        assert message_text(low)[1:].startswith(text[:length])
        assert message_text(high)[1:].startswith(text[:length])
        below = int.from_bytes(low, "big") - 1
        above = int.from_bytes(high, "big") + 1
        if below >= 0:
            assert not message_text(below.to_bytes(32, "big"))[1:].startswith(text[:length])
        if above < 1 << 256:
            assert not message_text(above.to_bytes(32, "big"))[1:].startswith(text[:length])
    for bad in ("", "Ab+d", "Ab/d", "A" * 43, "Ab=", "Abé"):
        with pytest.raises(BadIdentifier):
            prefix_range(bad)


def test_the_store_finds_held_ids_by_their_start_fork_evidence_too(tmp_path):
    feeds = [Feed(f"prefix-{index}") for index in range(3)]
    messages = [feed.append({"n": n}) for n in range(80) for feed in feeds]
    forked = Feed("prefix-forked")
    first = forked.append({"n": 0})
    kept = forked.append({"n": 1})
    forked.messages.pop()
    other = forked.append({"n": "the other"})  # the same seq: a fork, kept as evidence
    with FeedStore(tmp_path / "store", map_size=2**26) as store:
        store.writes.ingest([m.raw for m in [*messages, first, kept]])
        store.writes.ingest([other.raw])
        assert store.feeds.get(other.id) is not None and store.feeds.invalid_feeds()
        held = sorted(m.id for m in [*messages, first, kept, other])
        for message in [*messages[:20], kept, other]:
            for length in (1, 2, 3, 4):
                start = message_text(message.id)[1 : 1 + length]
                starting = [i for i in held if message_text(i)[1:].startswith(start)]
                assert store.feeds.ids_between(*prefix_range(start), 1000) == starting
                assert store.feeds.ids_between(*prefix_range(start), 2) == starting[:2]
        authors = sorted([*(feed.public for feed in feeds), forked.public])
        for author in authors:
            start = feed_text(author)[1:3]
            starting = [a for a in authors if feed_text(a)[1:].startswith(start)]
            assert store.feeds.feeds_between(*prefix_range(start), 1000) == starting


def test_the_resolve_op_lists_a_bounded_few_and_says_there_are_more(tmp_path):
    me = keypair("resolve-me")
    crowd = [Feed(f"crowd-{index}") for index in range(MAX_CANDIDATES + 2)]
    shy, loud = Feed("resolve-shy"), Feed("resolve-loud")
    with FeedStore(tmp_path / "store", keypair=me, map_size=2**26) as store:
        store.writes.ingest([feed.append(about(feed, "crowd")).raw for feed in crowd])
        store.writes.ingest([shy.append(about(shy, "Echo")).raw])
        store.writes.ingest([loud.append(about(loud, "ECHO")).raw])
        service = StoreService(store)

        def resolve(kind, text):
            return call_store(service, me, "resolve", kind=kind, text=text)

        many = resolve("name", "crowd")
        assert many["more"] is True and len(many["found"]) == MAX_CANDIDATES
        ids = [entry["id"] for entry in many["found"]]
        assert ids == sorted(feed.public for feed in crowd)[:MAX_CANDIDATES]
        assert resolve("name", "Echo") == {"found": [{"id": shy.public}], "more": False}
        folded = resolve("name", "echo")["found"]  # no exact one: those so but for case
        assert sorted(entry["id"] for entry in folded) == sorted([shy.public, loud.public])
        assert resolve("name", "nobody") == {"found": [], "more": False}

        notes = call_store(service, me, "doc-create", title="Notes")["doc"]
        lower = call_store(service, me, "doc-create", title="notes")["doc"]
        assert resolve("title", "Notes")["found"] == [{"id": notes, "title": "Notes"}]
        both = resolve("title", "NOTES")["found"]
        assert both == [{"id": notes, "title": "Notes"}, {"id": lower, "title": "notes"}]
        whole = message_text(notes)[1:]
        assert resolve("message", whole)["found"] == [{"id": notes}]
        nothing = message_text(bytes(32))[1:]  # a whole id, not held
        assert resolve("message", nothing) == {"found": [], "more": False}
        with pytest.raises(NodeError) as error:
            resolve("message", "AbC")
        assert error.value.kind == "bad-request"


# -- the command line, the node stopped ------------------------------------------------------


def test_feeds_by_self_chosen_name_petname_and_id_cut_short(ready):
    bob, carol = Feed("typed-bob"), Feed("typed-carol")
    first, second = twins()
    near, far = Feed(SAME_START[0]), Feed(SAME_START[1])
    assert feed_text(near.public)[:5] == feed_text(far.public)[:5] == "@xRME"
    ingest(
        ready.data_dir,
        bob.append(about(bob, "bobby")),
        carol.append({"type": "post", "text": "carol"}),
        *first.messages,
        first.append(about(first, "twin")),
        *second.messages,
        second.append(about(second, "twin")),
        near.append({"type": "post"}),
        far.append({"type": "post"}),
    )
    crowd = [Feed(f"typed-crowd-{index}") for index in range(MAX_CANDIDATES + 1)]
    ingest(ready.data_dir, *(feed.append(about(feed, "crowd")) for feed in crowd))
    bob_id, carol_id = feed_text(bob.public), feed_text(carol.public)

    def author(*args):
        return {json.loads(line)["author"] for line in ready.ok(*args, "--json").splitlines()}

    assert author("log", "~bobby") == {bob_id}
    assert author("log", "~BOBBY") == {bob_id}  # none named so exactly: so but for case
    assert author("log", "bobby") == {bob_id}  # no petname bobby: the name bob chose
    ready.ok("name", carol_id, "bobby")
    assert author("log", "bobby") == {carol_id}  # a petname wins over a name a feed chose
    assert author("log", "~bobby") == {bob_id}
    assert author("log", short_feed(bob.public)) == {bob_id}  # as `feeds` prints it

    assert json.loads(ready.ok("follow", "~bobby", "--json"))["feed"] == bob_id
    assert json.loads(ready.ok("block", short_feed(carol.public), "--json"))["feed"] == carol_id
    ready.ok("name", "~bobby", "Bob")  # a petname given through the name bob chose
    assert json.loads(ready.ok("name", "Bob", "--json"))["petname"] == "Bob"
    assert json.loads(ready.ok("unfollow", "Bob", "--json"))["feed"] == bob_id

    said = refused(ready, "follow", "~twin", code=3)
    assert feed_text(first.public) in said and feed_text(second.public) in said
    said = refused(ready, "follow", "~crowd", code=3)  # ten of them listed, then "and more"
    assert said.count("@") == MAX_CANDIDATES and said.rstrip().endswith("the one meant by its id")
    assert "and more" in said
    said = refused(ready, "follow", "@xRME", code=3)
    assert feed_text(near.public) in said and feed_text(far.public) in said
    assert "~nobody" in refused(ready, "follow", "~nobody", code=4)
    assert "no petname" in refused(ready, "unblock", "nobody", code=4)
    assert "@AAAAAAAA" in refused(ready, "block", "@AAAAAAAA…", code=4)
    assert "at least 4" in refused(ready, "follow", "@xRM", code=3)
    assert "message id" in refused(ready, "follow", "%wbps", code=3)
    assert "base64url" in refused(ready, "follow", "@xR M", code=3)
    assert "over 400 characters" in refused(ready, "follow", "~" + "x" * 500, code=3)


def test_messages_by_an_id_cut_short_in_show_publish_timeline_and_groups(ready):
    first, second = twins()
    bob = Feed("typed-members")
    ingest(ready.data_dir, first.messages[0], second.messages[0], bob.append(about(bob, "mem")))
    root = ready.ok("publish", '{"text": "root"}', "--tangle", "chat").strip()
    short = root[:9]
    reply = ready.ok("publish", '{"text": "reply"}', "--tangle", f"chat={short}").strip()
    shown = ready.ok("timeline", f"chat/{short}", "--json")
    rows = [json.loads(line) for line in shown.splitlines()]
    assert [row["id"] for row in rows] == [root, reply]
    placed = json.loads(ready.ok("timeline", f"chat/{short}", "--at", reply[:8] + "…", "--json"))
    assert placed["position"] == 1
    assert json.loads(ready.ok("show", short, "--json"))["id"] == root
    twin = message_text(first.messages[0].id)
    assert json.loads(ready.ok("show", twin[:7], "--json"))["id"] == twin  # unique by then

    said = refused(ready, "show", "%wbps", code=3)
    assert all(message_text(t.messages[0].id) in said for t in (first, second))
    assert "several messages" in said
    absent = "%AAAAAA"
    assert not any(i.startswith(absent) for i in (root, reply, twin))
    assert absent in refused(ready, "show", absent, code=4)
    assert "at least 4" in refused(ready, "show", "%AbC", code=3)
    assert "must start with '%'" in refused(ready, "show", "AbCdEf", code=3)

    group = ready.ok("group", "create", "g").strip()
    ready.ok("group", "add", group[:8], "~mem")
    members = json.loads(ready.ok("group", "members", group[:8] + "…", "--json"))
    assert feed_text(bob.public) in members
    assert "no message held" in refused(ready, "group", "members", absent, code=4)


def test_documents_by_title_or_id_cut_short_and_refusals_name_them_by_id(ready):
    doc = ready.ok("doc", "create", "Meeting notes").strip()
    ready.ok("doc", "insert", "meeting notes", "0", "hello")  # so but for case
    assert ready.ok("doc", "show", "Meeting notes") == "hello"
    assert ready.ok("doc", "show", doc[:8]) == "hello"
    shown = json.loads(ready.ok("doc", "show", "Meeting notes", "--json"))
    assert shown["doc"] == doc and shown["text"] == "hello"
    logged = json.loads(ready.ok("doc", "log", "Meeting notes", "--json"))
    assert logged["doc"] == doc and len(logged["versions"]) == 2

    dups = [ready.ok("doc", "create", "Dup").strip() for _ in range(2)]
    said = refused(ready, "doc", "show", "Dup", code=3)
    assert all(dup in said for dup in dups) and "'Dup'" in said and "several documents" in said
    assert "no document titled" in refused(ready, "doc", "show", "no such notes", code=4)
    assert "no document titled" in refused(ready, "doc", "log", "%ab", code=4)  # a title, then

    said = refused(ready, "doc", "comment", "--reply", doc, "the init is no comment", code=4)
    assert f"no comment {doc}" in said  # the document's %id, never an internal hex


# -- the command line, through the running node ----------------------------------------------


async def tangled(node: LiveNode, *args: str):
    with trio.fail_after(60):
        return await trio.run_process(
            [str(TANGLED), "--data-dir", str(node.data_dir), *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env={k: v for k, v in os.environ.items() if not k.startswith("TANGLED_")},
        )


async def test_the_running_node_answers_what_is_typed_back(tmp_path):
    node = LiveNode(tmp_path, "typed")
    bob = Feed("typed-live-bob")
    first, second = twins()
    ingest(node.data_dir, bob.append(about(bob, "bobby")), *first.messages, *second.messages)
    await node.start()
    try:

        async def ok(*args: str) -> str:
            done = await tangled(node, *args)
            assert done.returncode == 0, (args, done.stderr)
            return done.stdout.decode()

        bob_id = feed_text(bob.public)
        root = (await ok("publish", '{"text": "root"}', "--tangle", "chat")).strip()
        assert json.loads(await ok("show", root[:8], "--json"))["id"] == root
        watched = await ok("watch", f"chat/{root[:8]}", "--since", "0", "--count", "1", "--json")
        assert root in watched
        assert json.loads(await ok("follow", "~bobby", "--json"))["feed"] == bob_id
        dialed = json.loads(await ok("connect", "127.0.0.1:9", "~bobby", "--json"))
        assert dialed["key"] == bob_id and dialed["dialing"] is True
        assert json.loads(await ok("disconnect", "~BOBBY", "--json"))["key"] == bob_id
        await ok("doc", "create", "Live notes")
        await ok("doc", "insert", "live notes", "0", "hi")
        assert await ok("doc", "show", "Live notes") == "hi"

        twice = await tangled(node, "show", "%wbps")
        assert twice.returncode == 3 and b"several messages" in twice.stderr
        assert (await tangled(node, "follow", "~nobody")).returncode == 4
    finally:
        assert await node.stop() == 0
