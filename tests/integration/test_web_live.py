"""The web view of a real node (`tangled run` with `web.listen`): the token is required,
`/metrics` parses and agrees with `status`, `/` shows the feed and escapes others' text."""

import contextlib
import json
import os
import stat
import urllib.error
import urllib.request
from email.message import Message

import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from tanglenode.node.localnet import REQUEST_SECONDS, RUNNING, TANGLED, Node
from tanglenode.protocol.identity import message_text
from tests.integration.test_cli_live import cli

HOSTILE = "<script>alert(1)</script>"


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Message, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_SECONDS) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read().decode()


async def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Message, str]:
    with trio.fail_after(REQUEST_SECONDS):
        return await trio.to_thread.run_sync(_get, url, headers)


async def web_node(tmp_path) -> tuple[Node, str, str]:
    """A running node with the view on a free port: (node, base URL, token)."""
    node = Node(tmp_path, "web")
    await node.start(extra_env={"TANGLED_WEB__LISTEN": "127.0.0.1:0"})
    async with await node.client() as client:
        base = (await client.status())["web"]
    token_path = node.data_dir / "web-token"
    assert stat.S_IMODE(os.stat(token_path).st_mode) == 0o600
    return node, base, token_path.read_text().strip()


def gauges(text: str) -> dict[str, float]:
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_every_request_needs_the_token(tmp_path):
    node, base, token = await web_node(tmp_path)
    assert base.startswith("http://127.0.0.1:") and base.endswith("/")
    assert not base.endswith(":0/")  # the port it bound, not the one asked for
    for path in ("", "metrics", "nowhere"):
        code, headers, body = await get(base + path)
        assert code == 401 and headers["WWW-Authenticate"] == "Bearer"
        assert node.feed_id not in body and "tanglenode_" not in body
        assert (await get(f"{base}{path}?token={token[:-1]}"))[0] == 401
        assert (await get(base + path, {"Authorization": f"Bearer {token}x"}))[0] == 401
    assert (await get(f"{base}?token={token}"))[0] == 200
    assert (await get(base, {"Authorization": f"Bearer {token}"}))[0] == 200
    assert (await get(f"{base}nowhere?token={token}"))[0] == 404
    assert await node.stop() == 0
    host, port = base.removeprefix("http://").rstrip("/").rsplit(":", 1)
    with pytest.raises(OSError):  # the view stopped with the node
        await trio.open_tcp_stream(host, int(port))


async def test_metrics_parse_and_agree_with_status(tmp_path):
    node, base, token = await web_node(tmp_path)
    root = await node.publish("root", {"chat": None})
    await node.publish("reply", {"chat": root["id"]})
    await node.publish("aside")
    code, headers, text = await get(f"{base}metrics?token={token}")
    assert code == 200 and headers["Content-Type"].startswith("text/plain; version=")
    values = gauges(text)
    status = json.loads((await cli(node, "status", "--json")).stdout)
    assert values["tanglenode_messages"] == status["messages"] == 3
    assert values["tanglenode_feeds"] == status["feeds"] == 1
    assert values["tanglenode_peers"] == status["peers_total"] == 0
    assert values["tanglenode_peers_connected"] == 0
    assert values["tanglenode_forks"] == values["tanglenode_stalls"] == 0
    assert values["tanglenode_final_positions"] == status["final"]
    assert not any(name.startswith(("process_", "python_")) for name in values)  # our registry
    assert values["tanglenode_ipc_subscribers"] == 0
    await node.publish("one more")
    async with await node.client() as client:
        events = client.subscribe(spacetime=True)
        await events.__anext__()  # the subscription is open
        values = gauges((await get(f"{base}metrics?token={token}"))[2])
        assert values["tanglenode_messages"] == 4 and values["tanglenode_ipc_subscribers"] == 1
        await events.aclose()
    assert await node.stop() == 0


async def test_the_page_shows_the_node_and_escapes_what_others_wrote(tmp_path):
    node, base, token = await web_node(tmp_path)
    root = await node.publish("root", {HOSTILE: None})
    await node.publish("reply", {HOSTILE: root["id"]})
    code, headers, page = await get(f"{base}status?token={token}")
    assert code == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert node.feed_id in page
    assert "<script" not in page
    assert f"&lt;script&gt;alert(1)&lt;/script&gt;/{message_text(root['id'])}" in page
    assert "1 feeds, 2 messages, 0 forks, 0 stalled" in page
    assert await node.stop() == 0


async def test_status_prints_the_url_with_the_token_and_the_flag_turns_it_on(tmp_path):
    node = Node(tmp_path, "flag")
    with trio.socket.socket() as probe:  # a free port, for the flag
        await probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with node.log_path.open("ab") as log:
        node.process = await trio.lowlevel.open_process(
            [str(TANGLED), "--data-dir", str(node.data_dir), "run", "--web", f"127.0.0.1:{port}"],
            env={**os.environ, "TANGLED_LISTEN": "127.0.0.1:0", "TANGLED_PEERS": "[]"},
            stdout=log,
            stderr=log,
        )
    RUNNING.add(node)  # killed by the suite's clean-up if the test fails before stop()
    with trio.fail_after(REQUEST_SECONDS * 3):
        while not node.socket_path.is_socket():
            await trio.sleep(0.05)
    token = (node.data_dir / "web-token").read_text().strip()
    done = await cli(node, "status")
    assert done.returncode == 0, done.stderr.decode()
    url = f"http://127.0.0.1:{port}/?token={token}"
    assert f"web: {url}" in done.stdout.decode().splitlines()
    assert (await get(url))[0] == 200
    assert await node.stop() == 0
    await node.start()  # without the view: no web line, the same token kept for next time
    assert "web:" not in (await cli(node, "status")).stdout.decode()
    assert (node.data_dir / "web-token").read_text().strip() == token
    assert await node.stop() == 0


async def test_a_web_address_in_use_stops_the_start_in_one_line(tmp_path):
    node = Node(tmp_path, "busy")
    with trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        with trio.fail_after(REQUEST_SECONDS):
            done = await trio.run_process(
                [str(TANGLED), "--data-dir", str(node.data_dir), "run", "--web", address],
                env={**os.environ, "TANGLED_LISTEN": "127.0.0.1:0", "TANGLED_PEERS": "[]"},
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert done.returncode == 1
    error = [line for line in done.stderr.decode().splitlines() if line.startswith("tangled:")]
    assert error == [f"tangled: cannot serve the web view on {address}: Address already in use"]


async def _http2_get(url: str, path: bytes) -> None:
    """One HTTP/2 request (prior knowledge, no token) for the raw `path`, read to its end."""
    import h2.config
    import h2.connection

    host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
    config = h2.config.H2Configuration(
        client_side=True, header_encoding=None, validate_outbound_headers=False
    )
    connection = h2.connection.H2Connection(config)
    connection.initiate_connection()
    headers = [(b":method", b"GET"), (b":path", path), (b":scheme", b"http"), (b":authority", b"x")]
    connection.send_headers(1, headers, end_stream=True)
    with trio.fail_after(REQUEST_SECONDS):
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(connection.data_to_send())
            with contextlib.suppress(trio.BrokenResourceError):
                while await stream.receive_some(65536):
                    pass


async def test_a_request_that_breaks_the_http_server_leaves_the_node_running(tmp_path):
    node, base, token = await web_node(tmp_path)
    await _http2_get(base, "/café".encode())  # raised inside the server, before our app
    async with await node.client() as client:
        assert (await client.status())["web"] == base  # peers and IPC never noticed
    with trio.fail_after(REQUEST_SECONDS):
        while True:  # the view serves again on the same address
            with contextlib.suppress(OSError):
                if (await get(f"{base}?token={token}"))[0] == 200:
                    break
            await trio.sleep(0.05)
    assert any(
        line.get("event") == "web view failed; serving it again" for line in node.log_lines()
    )
    assert await node.stop() == 0
