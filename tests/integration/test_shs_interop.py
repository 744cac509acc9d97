"""SHS + box-stream against the JavaScript reference peer, both ways, over real TCP.

Runs where node and npm are present: the peer (tests/data/shs-js-peer) is copied to
.cache/ and its pinned dependencies installed there once. Without node or npm, or when
`npm ci` fails (no network, say), every test here is skipped and says why.
"""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import trio

from tanglenode.node.net.transport import HandshakeFailed, client_handshake, server_handshake
from tanglenode.protocol.identity import Keypair

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "tests" / "data" / "shs-js-peer"
PEER = REPO / ".cache" / "shs-js-peer"
NETWORK = bytes.fromhex("d4a1cb88a66f02f8db635ce26441cc5dac1b08420ceaac230839b755845a9ffb")
OTHER_NETWORK = bytes(range(32))
WAIT = 60  # seconds any one step against the JS peer may take


@pytest.fixture(scope="module")
def js_peer() -> Path:
    """The peer's copy in .cache/, its pinned packages installed (again when the lock changes)."""
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.skip(
            f"no {' and no '.join(missing)} on PATH: the interop tests run the JavaScript "
            "reference peer (Debian: apt-get install nodejs npm)"
        )
    shutil.copytree(SOURCE, PEER, dirs_exist_ok=True, ignore=shutil.ignore_patterns("node_modules"))
    lock = (SOURCE / "package-lock.json").read_bytes()
    installed = PEER / "node_modules" / ".installed-from-lock"  # written after a good `npm ci`
    if not (installed.exists() and installed.read_bytes() == lock):
        try:
            done = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund"],
                cwd=PEER,
                capture_output=True,
                text=True,
                timeout=240,
            )
        except subprocess.TimeoutExpired:
            pytest.skip("npm ci ran over 240 s (no network?): the peer's packages are missing")
        if done.returncode != 0:
            pytest.skip(f"npm ci failed, so the peer's packages are missing: {done.stderr[-500:]}")
        installed.write_bytes(lock)
    return PEER


async def start_js_server(js_peer, network, seed, nursery):
    process = await nursery.start(
        lambda task_status: trio.run_process(
            [
                "node",
                "server.js",
                "--port",
                "0",
                "--network-key",
                network.hex(),
                "--server-seed",
                seed.hex(),
                "--once",
            ],
            cwd=js_peer,
            stdout=subprocess.PIPE,
            check=False,
            task_status=task_status,
        )
    )
    lines = JsonLines(process.stdout)
    first = await lines.next()
    return process, lines, first


class JsonLines:
    """JSON lines from a Trio receive stream (the JS server's stdout)."""

    def __init__(self, stream):
        self.stream, self.buffer = stream, b""

    async def next(self):
        with trio.fail_after(WAIT):
            while b"\n" not in self.buffer:
                data = await self.stream.receive_some()
                if not data:
                    return None
                self.buffer += data
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    async def events_until(self, wanted):
        seen = []
        while (line := await self.next()) is not None:
            seen.append(line["event"])
            if line["event"] == wanted:
                break
        return seen


async def test_python_client_to_js_server(js_peer):
    seed = bytes([7]) * 32
    payload = bytes(range(256)) * 40  # 10 KiB: three frames each way
    async with trio.open_nursery() as nursery:
        _process, lines, hello = await start_js_server(js_peer, NETWORK, seed, nursery)
        assert hello["server_pk_hex"] == Keypair(seed).public.hex()
        with trio.fail_after(WAIT):
            stream = await trio.open_tcp_stream("127.0.0.1", hello["port"])
            secure = await client_handshake(
                stream, NETWORK, Keypair.generate(), Keypair(seed).public
            )
            await secure.send_all(b"hello")
            await secure.send_all(payload)
            echoed = b""
            while len(echoed) < 5 + len(payload):
                echoed += await secure.receive_some()
            assert echoed == b"hello" + payload
            await secure.send_goodbye()
            assert await secure.receive_some() == b""  # the server's goodbye: a clean end
            await secure.aclose()
        events = await lines.events_until("stream_end")
        assert events[-2:] == ["handshake_ok", "stream_end"]


async def test_wrong_network_key_fails_against_js_server(js_peer):
    seed = bytes([8]) * 32
    async with trio.open_nursery() as nursery:
        process, lines, hello = await start_js_server(js_peer, NETWORK, seed, nursery)
        with trio.fail_after(WAIT):
            stream = await trio.open_tcp_stream("127.0.0.1", hello["port"])
        with pytest.raises(HandshakeFailed):
            await client_handshake(stream, OTHER_NETWORK, Keypair.generate(), Keypair(seed).public)
        await stream.aclose()
        assert "handshake_failed" in await lines.events_until("handshake_failed")
        process.terminate()


async def echo_until_goodbye(stream, keypair, network, outcomes, finished: trio.Event):
    try:
        secure = await server_handshake(stream, network, keypair, seconds=5)
    except HandshakeFailed as failure:
        outcomes.append(failure)
        await stream.aclose()
        finished.set()
        return
    while data := await secure.receive_some():
        await secure.send_all(data)
    outcomes.append(secure.peer)
    await secure.aclose()
    finished.set()


async def js_client_against_python(js_peer, keypair, expected_server_pk: bytes, *client_args):
    """Serve one connection with an echo; run the JS client; (its result, our outcome)."""
    outcomes: list = []
    finished = trio.Event()
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            trio.serve_tcp,
            lambda stream: echo_until_goodbye(stream, keypair, NETWORK, outcomes, finished),
            0,
        )
        port = listeners[0].socket.getsockname()[1]
        with trio.fail_after(WAIT):
            done = await trio.run_process(
                [
                    "node",
                    "client.js",
                    "--port",
                    str(port),
                    "--network-key",
                    NETWORK.hex(),
                    "--server-pk",
                    expected_server_pk.hex(),
                    *client_args,
                ],
                cwd=js_peer,
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
            await finished.wait()
        nursery.cancel_scope.cancel()
    return done, outcomes


@pytest.mark.parametrize("client_args", [["--msg", "hello,world"], ["--bytes", "100000"]])
async def test_js_client_to_python_server(js_peer, client_args):
    keypair = Keypair.generate()
    done, outcomes = await js_client_against_python(js_peer, keypair, keypair.public, *client_args)
    assert done.returncode == 0, done.stderr.decode()[-800:]
    assert len(outcomes) == 1 and isinstance(outcomes[0], bytes)


async def test_js_client_with_wrong_server_key_is_refused(js_peer):
    keypair = Keypair.generate()
    wrong = Keypair.generate().public
    done, outcomes = await js_client_against_python(js_peer, keypair, wrong, "--msg", "x")
    assert done.returncode != 0
    assert isinstance(outcomes[0], HandshakeFailed)
