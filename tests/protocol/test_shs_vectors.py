"""The secret handshake and box-stream against every vector in tests/data/shs (its README)."""

import json
from pathlib import Path

import pytest

from tanglenode.protocol.boxstream import BoxStreamError, BoxStreamReader, BoxStreamWriter
from tanglenode.protocol.errors import LocalProtocolError
from tanglenode.protocol.identity import Keypair
from tanglenode.protocol.shs import (
    MAX_LEFTOVER_BYTES,
    ClientHandshake,
    HandshakeFailed,
    ServerHandshake,
    State,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "shs"

h = bytes.fromhex


def load(name):
    return json.loads((DATA / name).read_text())


def client_for(state):
    local = state["local"]
    return ClientHandshake(
        h(state["app_key"]),
        Keypair(h(local["secretKey"])[:32]),
        h(state["remote"]["publicKey"]),
        ephemeral=(h(local["kx_pk"]), h(local["kx_sk"])),
    )


def server_for(state):
    local = state["local"]
    return ServerHandshake(
        h(state["app_key"]),
        Keypair(h(local["secretKey"])[:32]),
        ephemeral=(h(local["kx_pk"]), h(local["kx_sk"])),
    )


def remote_challenge(state):
    return h(state["remote"]["app_mac"]) + h(state["remote"]["kx_pk"])


def outcome(side, message):
    """True if `side` accepts `message`, False if it raises HandshakeFailed."""
    try:
        side.receive_data(message)
    except HandshakeFailed:
        return False
    return True


# -- shs1-c: one complete handshake with fixed keys ------------------------------------


def test_shs1_c_vector_both_sides():
    vector = load("shs1_handshake_vector.json")
    given, expected = vector["input"], {k: h(v) for k, v in vector["output"].items()}
    network = h(given["network_identifier"])
    client = ClientHandshake(
        network,
        Keypair(h(given["client_sec"])[:32]),
        h(given["server_pub"]),
        ephemeral=(h(given["client_eph_pub"]), h(given["client_eph_sec"])),
    )
    server = ServerHandshake(
        network,
        Keypair(h(given["server_sec"])[:32]),
        ephemeral=(h(given["server_eph_pub"]), h(given["server_eph_sec"])),
    )
    msg1 = client.data_to_send()
    assert msg1 == expected["expected_client_challenge"]
    server.receive_data(msg1)
    msg2 = server.data_to_send()
    assert msg2 == expected["expected_server_challenge"]
    client.receive_data(msg2)
    msg3 = client.data_to_send()
    assert msg3 == expected["expected_client_auth"]
    server.receive_data(msg3)
    msg4 = server.data_to_send()
    assert msg4 == expected["expected_server_ack"]
    client.receive_data(msg4)
    for side, session in (("client", client.session), ("server", server.session)):
        assert session.encrypt_key == expected[f"expected_{side}_encryption_key"]
        assert session.encrypt_nonce == expected[f"expected_{side}_encryption_nonce"]
        assert session.decrypt_key == expected[f"expected_{side}_decryption_key"]
        assert session.decrypt_nonce == expected[f"expected_{side}_decryption_nonce"]
    assert client.session.peer == h(given["server_pub"])
    assert server.session.peer == h(given["client_pub"])


# -- the JavaScript reference: two handshakes, six streams, twelve negatives -------------


def js_handshakes():
    return {vector["name"]: vector for vector in load("js_reference_vectors.json")["handshakes"]}


def sides(vector):
    given = {k: h(v) for k, v in vector["input"].items()}
    network = given["network_key"]
    client = ClientHandshake(
        network,
        Keypair(given["client_longterm_seed"]),
        given["server_longterm_pk"],
        ephemeral=(given["client_ephemeral_pk"], given["client_ephemeral_sk"]),
    )
    server = ServerHandshake(
        network,
        Keypair(given["server_longterm_seed"]),
        ephemeral=(given["server_ephemeral_pk"], given["server_ephemeral_sk"]),
    )
    return client, server


@pytest.mark.parametrize("name", ["main-net", "custom-net"])
def test_js_handshakes_byte_for_byte(name):
    vector = js_handshakes()[name]
    messages = {k: h(v) for k, v in vector["messages"].items()}
    client, server = sides(vector)
    assert client.data_to_send() == messages["msg1"]
    server.receive_data(messages["msg1"])
    assert server.data_to_send() == messages["msg2"]
    client.receive_data(messages["msg2"])
    assert client.data_to_send() == messages["msg3"]
    server.receive_data(messages["msg3"])
    assert server.data_to_send() == messages["msg4"]
    client.receive_data(messages["msg4"])
    for side, session in (("client", client.session), ("server", server.session)):
        keys = {k: h(v) for k, v in vector["output"][side].items()}
        assert session.encrypt_key == keys["encrypt_key"]
        assert session.encrypt_nonce == keys["encrypt_nonce"]
        assert session.decrypt_key == keys["decrypt_key"]
        assert session.decrypt_nonce == keys["decrypt_nonce"]


def test_handshake_accepts_any_chunking_and_keeps_what_follows():
    vector = js_handshakes()["main-net"]
    messages = {k: h(v) for k, v in vector["messages"].items()}
    _client, server = sides(vector)
    for byte in messages["msg1"]:
        server.receive_data(bytes([byte]))
    assert server.data_to_send() == messages["msg2"]
    assert server.bytes_wanted == 112
    server.receive_data(messages["msg3"] + b"early box-stream bytes")
    assert server.session is not None and server.leftover == b"early box-stream bytes"
    assert server.bytes_wanted == 0


def test_states_follow_the_messages():
    vector = js_handshakes()["main-net"]
    messages = {k: h(v) for k, v in vector["messages"].items()}
    client, server = sides(vector)
    assert (client.state, server.state) == (State.AWAIT_CHALLENGE, State.AWAIT_HELLO)
    server.receive_data(client.data_to_send())
    client.receive_data(server.data_to_send())
    assert (client.state, server.state) == (State.AWAIT_ACCEPT, State.AWAIT_AUTH)
    server.receive_data(client.data_to_send())
    assert server.state is State.DONE and server.data_to_send() == messages["msg4"]


def test_a_failed_handshake_refuses_further_input():
    vector = js_handshakes()["main-net"]
    _client, server = sides(vector)
    with pytest.raises(HandshakeFailed, match="message 1"):
        server.receive_data(bytes(64))
    assert server.state is State.FAILED and server.bytes_wanted == 0
    assert server.data_to_send() == b""
    with pytest.raises(LocalProtocolError, match="failed"):
        server.receive_data(h(vector["messages"]["msg1"]))


def test_bytes_after_the_handshake_are_capped():
    vector = js_handshakes()["main-net"]
    messages = {k: h(v) for k, v in vector["messages"].items()}
    _client, server = sides(vector)
    server.receive_data(messages["msg1"])
    server.receive_data(messages["msg3"] + bytes(MAX_LEFTOVER_BYTES))
    assert len(server.leftover) == MAX_LEFTOVER_BYTES
    with pytest.raises(HandshakeFailed, match="after the handshake"):
        server.receive_data(b"x")
    assert server.state is State.FAILED


def test_a_network_key_of_the_wrong_size_is_our_own_mistake():
    with pytest.raises(LocalProtocolError, match="network key"):
        ServerHandshake(bytes(31), Keypair(bytes(32)))


@pytest.mark.parametrize(
    "negative",
    [n for n in load("js_reference_vectors.json")["negatives"] if n["kind"] == "handshake"],
    ids=lambda n: f"{n['handshake']}-{n['message']}-byte{n['flip_byte_index']}",
)
def test_js_tampered_handshake_messages_are_refused(negative):
    vector = js_handshakes()[negative["handshake"]]
    messages = {k: h(v) for k, v in vector["messages"].items()}
    messages[negative["message"]] = h(negative["tampered"])
    client, server = sides(vector)
    client.data_to_send()
    with pytest.raises(HandshakeFailed):
        if negative["message"] == "msg1":
            server.receive_data(messages["msg1"])
        elif negative["message"] == "msg2":
            client.receive_data(messages["msg2"])
        elif negative["message"] == "msg3":
            server.receive_data(messages["msg1"])
            server.receive_data(messages["msg3"])
        else:
            client.receive_data(messages["msg2"])
            client.receive_data(messages["msg4"])
    assert client.session is None and server.session is None


def js_streams():
    return {stream["name"]: stream for stream in load("js_reference_vectors.json")["boxstreams"]}


@pytest.mark.parametrize("name", sorted(js_streams()))
def test_js_box_streams_byte_for_byte(name):
    stream = js_streams()[name]
    writer = BoxStreamWriter(h(stream["key"]), h(stream["nonce"]))
    wire = b"".join(writer.seal(h(write)) for write in stream["writes"]) + writer.goodbye()
    assert wire == h(stream["wire"])
    reader = BoxStreamReader(h(stream["key"]), h(stream["nonce"]))
    chunks = []
    for start in range(0, len(wire), 1000):  # arbitrary chunking of the input
        reader.receive_data(wire[start : start + 1000])
        while (chunk := reader.next_chunk()) is not None:
            chunks.append(chunk)
    assert chunks == [h(chunk) for chunk in stream["decoded_chunks"]]
    reader.end_of_input()  # said goodbye: a clean end


@pytest.mark.parametrize(
    "negative",
    [n for n in load("js_reference_vectors.json")["negatives"] if n["kind"] == "boxstream"],
    ids=lambda n: n["what"].split()[0] + str(n.get("flip_byte_index", "")),
)
def test_js_tampered_box_streams_fail_at_the_tampered_frame(negative):
    stream = js_streams()[negative["stream"]]
    reader = BoxStreamReader(h(stream["key"]), h(stream["nonce"]))
    reader.receive_data(h(negative["tampered_wire"]))
    chunks = []
    with pytest.raises(BoxStreamError):
        while (chunk := reader.next_chunk()) is not None:
            chunks.append(chunk)
        reader.end_of_input()
    delivered = negative["js_result"]
    expected_chunks = delivered["chunks"] if isinstance(delivered, dict) else None
    if expected_chunks is not None:
        assert chunks == [h(chunk) for chunk in expected_chunks]
    else:  # missing goodbye: every chunk arrives, then the hangup is an error
        assert chunks == [h(chunk) for chunk in stream["decoded_chunks"]]


# -- box-stream-c: two frames and the goodbye -------------------------------------------


def test_box_stream_c_frames_and_goodbye():
    vector = load("box_stream_vector.json")
    writer = BoxStreamWriter(h(vector["key"]), h(vector["nonce"]))
    reader = BoxStreamReader(h(vector["key"]), h(vector["nonce"]))
    for frame in vector["frames"]:
        wire = writer.seal(h(frame["plaintext"]))
        assert wire == h(frame["header"]) + h(frame["body"])
        reader.receive_data(wire)
        assert reader.next_chunk() == h(frame["plaintext"])
    goodbye = writer.goodbye()
    assert goodbye == h(vector["goodbye_header"])
    reader.receive_data(goodbye)
    assert reader.next_chunk() is None and reader.said_goodbye


# -- secret-handshake's recorded crypto.js calls -----------------------------------------


def recorded_calls():
    return load("test-secret-handshake_data.json")


def test_every_recorded_crypto_call_is_reproduced():
    calls = recorded_calls()
    client_auth = {}  # client ephemeral public -> message 3
    server_accept = {}  # server ephemeral public -> message 4
    for call in calls:
        if call["name"] == "clientCreateAuth":
            client_auth[call["args"][0]["local"]["kx_pk"]] = h(call["result"])
        if call["name"] == "serverCreateAccept":
            server_accept[call["args"][0]["local"]["kx_pk"]] = h(call["result"])
    checked = 0
    for call in calls:
        name, args, result = call["name"], call["args"], call["result"]
        state = args[0]
        if name == "toKeys":
            seed = h(args[0]) if isinstance(args[0], str) else h(args[0]["secretKey"])[:32]
            keypair = Keypair(seed)
            assert keypair.public == h(result["publicKey"])
            assert keypair.seed + keypair.public == h(result["secretKey"])
        elif name in ("initialize", "createChallenge"):
            local = state["local"]
            challenge = h(local["app_mac"]) + h(local["kx_pk"])
            probe = ClientHandshake(
                h(state["app_key"]),
                Keypair.generate(),
                bytes(32),
                ephemeral=(h(local["kx_pk"]), h(local["kx_sk"])),
            )
            assert probe.data_to_send() == challenge
            if name == "createChallenge":
                assert h(result) == challenge
        elif name == "verifyChallenge":
            assert outcome(server_for(state), h(args[1])) == bool(result)
        elif name == "clientVerifyChallenge":
            client = client_for(state)
            assert outcome(client, h(args[1])) == bool(result)
        elif name == "clientCreateAuth":
            client = client_for(state)
            client.data_to_send()
            client.receive_data(remote_challenge(state))
            assert client.data_to_send() == h(result)
        elif name == "serverVerifyAuth":
            server = server_for(state)
            server.receive_data(remote_challenge(state))
            assert outcome(server, h(args[1])) == bool(result)
        elif name == "serverCreateAccept":
            server = server_for(state)
            server.receive_data(remote_challenge(state))
            server.data_to_send()
            server.receive_data(client_auth[state["remote"]["kx_pk"]])
            assert server.data_to_send() == h(result)
        elif name == "clientVerifyAccept":
            client = client_for(state)
            client.receive_data(remote_challenge(state))
            assert outcome(client, h(args[1])) == bool(result)
        elif name == "clean":
            continue  # checked below, where the whole session can be rerun
        else:
            raise AssertionError(f"unknown recorded call {name}")
        checked += 1
    assert checked == len(calls) - sum(call["name"] == "clean" for call in calls)


def test_recorded_session_keys_are_reproduced():
    calls = recorded_calls()
    ephemeral = {}
    for call in calls:
        if call["name"] == "initialize":
            local = call["args"][0]["local"]
            ephemeral[local["kx_pk"]] = local["kx_sk"]
    client_auth, server_accept = {}, {}
    for call in calls:
        if call["name"] == "clientCreateAuth":
            client_auth[call["args"][0]["local"]["kx_pk"]] = h(call["result"])
        if call["name"] == "serverCreateAccept":
            server_accept[call["args"][0]["local"]["kx_pk"]] = h(call["result"])
    cleaned = [call for call in calls if call["name"] == "clean"]
    assert cleaned
    for call in cleaned:
        state = call["args"][0]
        local, remote = state["local"], state["remote"]
        keys = (h(local["kx_pk"]), h(ephemeral[local["kx_pk"]]))
        keypair = Keypair(h(local["secretKey"])[:32])
        if remote["kx_pk"] in client_auth:  # we were the server
            side = ServerHandshake(h(state["app_key"]), keypair, ephemeral=keys)
            side.receive_data(remote_challenge(state))
            side.receive_data(client_auth[remote["kx_pk"]])
        else:
            side = ClientHandshake(
                h(state["app_key"]), keypair, h(remote["publicKey"]), ephemeral=keys
            )
            side.receive_data(remote_challenge(state))
            side.receive_data(server_accept[remote["kx_pk"]])
        assert side.session.encrypt_key == h(call["result"]["encryptKey"])
        assert side.session.decrypt_key == h(call["result"]["decryptKey"])
