"""The quick settings path: what it accepts, pydantic accepts with the same result.

config/quick.py validates without pydantic only values it can vouch for and
leaves the rest to config/schema.py; so on any layers, either it declines
(None) or its settings equal the full validation's.
"""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tanglenode.config.quick import quick_settings
from tanglenode.config.schema import validate
from tanglenode.config.settings import DEFAULT_NETWORK_KEY, Settings, load_settings
from tanglenode.config.template import render_config
from tanglenode.protocol.identity import Keypair

FEED = Keypair.generate().feed_id

# Values near each rule's edges, of the right type and of others a TOML file or an
# environment variable can carry.
numbers = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([15, 16, 255, 256, 1023, 1024, 4096, 1 << 20, (1 << 20) + 1, 2**20, 2**40]),
    st.booleans(),
    st.floats(allow_nan=True),
    st.sampled_from(["16", "lots", "", "2048", " 16"]),
    st.none(),
)
texts = st.one_of(
    st.sampled_from(
        ["127.0.0.1:8008", "h:1", "h:0", ":1", "nowhere", "[::1]:9", "", "x:70000", FEED, "@nope"]
    ),
    st.sampled_from([DEFAULT_NETWORK_KEY, "c2hvcnQ=", "not base64!", "auto", "json", "xml"]),
    st.sampled_from(["debug", "info", "warning", "error", "console", "/tmp/x", "rel/dir"]),
    st.text(max_size=8),
    st.integers(),
    st.none(),
)
values = st.one_of(numbers, texts, st.booleans())


def either(*good: object) -> st.SearchStrategy:
    """A value the key takes, or (one time in four) anything."""
    return st.integers(0, 3).flatmap(lambda n: values if n == 0 else st.sampled_from(good))


def section(keys: dict[str, st.SearchStrategy]) -> st.SearchStrategy:
    tables = st.fixed_dictionaries({}, optional=keys)
    odd = st.fixed_dictionaries({}, optional={**keys, "surprise": values}) | values
    return st.integers(0, 3).flatmap(lambda n: odd if n == 0 else tables)


some_peer = st.fixed_dictionaries(
    {}, optional={"address": either("h:1", "[::1]:9"), "key": either(FEED), "extra": values}
)
whole_peer = st.fixed_dictionaries({"address": st.just("h:1"), "key": st.just(FEED)})
peer = st.integers(0, 1).flatmap(lambda n: some_peer if n else whole_peer)

known_keys = st.fixed_dictionaries(
    {},
    optional={
        "data_dir": either("/tmp/x", "rel/dir", Path("/p")),
        "listen": either("127.0.0.1:8008", "h:0", "[::1]:9"),
        "ipc_socket": either(None, "/tmp/s.sock", Path("s")),
        "secret_file": either(None, "/tmp/secret"),
        "network_key": either(DEFAULT_NETWORK_KEY),
        "log_format": either("auto", "console", "json"),
        "log_level": either("debug", "info", "warning", "error"),
        "peers": st.one_of(st.lists(peer, max_size=3), values),
        "limits": section(
            {
                "max_message_bytes": either(1024, 16384, 1 << 20),
                "max_tangles": either(1, 16, 255),
                "max_previous": either(1, 255),
                "max_timeframe_entries": either(0, 4096, 1 << 20),
                "max_content_depth": either(1, 32),
            }
        ),
        "storage": section({"map_size": either(2**20, 2**40)}),
        "web": section(
            {
                # not `values`: pydantic alone refuses an explicit nil listen (its check sees it)
                "listen": st.sampled_from(["127.0.0.1:0", "[::1]:9", "8080", ""]),
                "hosts": st.one_of(
                    st.lists(either("node.example", "h:1", "[::1]:9", "a b", "h:0"), max_size=3),
                    values,
                ),
            }
        ),
        "gossip": section(
            {"max_peer_feeds": either(16, 1 << 22), "verify_in_process": either(True, False)}
        ),
    },
)
odd_keys = st.builds(
    lambda layer, key, value: {**layer, key: value}, known_keys, st.text(max_size=4), values
)
layers = st.integers(0, 3).flatmap(lambda n: known_keys if n else odd_keys)


@settings(max_examples=400, deadline=None)
@given(layers)
def test_what_the_quick_path_accepts_the_full_validation_accepts_alike(values):
    quick = quick_settings(Settings, values)
    full, problems = validate(Settings, values)
    if quick is not None:
        assert problems == [] and quick == full


def test_the_quick_path_takes_the_usual_configs(tmp_path):
    """Defaults, the config `tangled init` writes, peers and environment numbers as JSON."""
    assert quick_settings(Settings, {}) == Settings()
    path = tmp_path / "tangled.toml"
    path.write_text(render_config(tmp_path / "data"))
    import tomllib

    written = tomllib.loads(path.read_text())
    written["peers"] = [{"address": "h:1", "key": FEED}]
    quick = quick_settings(Settings, written)
    assert quick is not None and quick == validate(Settings, written)[0]
    assert quick.data_dir == Path(written["data_dir"]) and quick.peers[0].key == FEED
    assert load_settings(path, environ={}) == validate(Settings, tomllib.loads(path.read_text()))[0]


def test_a_lists_check_sees_the_whole_list():
    """`web.hosts` is checked as a list (each entry a host, at most 64): the quick path
    declines what the check refuses, and takes what it passes as pydantic does."""
    for hosts in (["a b"], ["node.example", "h:0"], [f"h{n}" for n in range(65)]):
        assert quick_settings(Settings, {"web": {"hosts": hosts}}) is None, hosts
        assert validate(Settings, {"web": {"hosts": hosts}})[1] != []
    values = {"web": {"listen": "127.0.0.1:0", "hosts": ["node.example", "[::1]:9"]}}
    quick = quick_settings(Settings, values)
    assert quick is not None and quick == validate(Settings, values)[0]
