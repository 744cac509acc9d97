"""The commented `tangled.toml` that `tangled init` writes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from tanglenode.config.peers import peer_table
from tanglenode.config.settings import DEFAULT_NETWORK_KEY, Settings

TEMPLATE = """\
# tangled.toml - configuration of one tanglenode.
# Every key may be overridden by an environment variable: TANGLED_ + the key in
# capitals, nested keys joined by "__" (TANGLED_LIMITS__MAX_MESSAGE_BYTES=8192).

# Where the store (LMDB), the secret key and the IPC socket live.
data_dir = "{data_dir}"

# TCP address the node accepts peers on.
listen = {listen}

# Unix socket for local programs (default: <data_dir>/tangled.sock).
# ipc_socket = "/run/tangled/tangled.sock"

# Secret key file (default: <data_dir>/secret, mode 0600).
# secret_file = "/var/lib/tangled/secret"

# Peers must share this 32-byte key (base64) to connect at all.
network_key = "{network_key}"

# "auto" is human-readable on a terminal and JSON otherwise.
log_format = "auto"
log_level = "info"

# Peers to dial, each as a table (`tangled connect HOST:PORT @FEED --save` adds one
# at the end of this file):
# [[peers]]
# address = "127.0.0.1:8009"
# key = "@...feed id of that node..."

[limits]
max_message_bytes = {limits.max_message_bytes}
max_tangles = {limits.max_tangles}
max_previous = {limits.max_previous}
max_timeframe_entries = {limits.max_timeframe_entries}
max_content_depth = {limits.max_content_depth}

[storage]
# LMDB map size in bytes: the most the store may grow to (disk is used as needed).
map_size = {storage.map_size}

[views]
# Optional derived views, each a second copy of members the rank orders hold; off, their
# reads answer `view-off`. A view turned on later is built by `tangled reindex VIEW` with
# the node stopped (unless the store holds nothing yet); one turned off is dropped when
# the store next opens. `tangled reindex --list` shows what each costs.
# The causal-time order (`--order causal-time`: causality, then claimed time):
causal_time = {causal_time}
# Each tangle's joined members as a timeline of their own (`--view joined`; built by
# `tangled reindex joined`). Member states and counts are kept either way.
joined_order = {joined_order}

[timelines]
# How many of its most recent commands each timeline's log keeps (0: every one). A
# subscriber (`tangled watch`, the web view, IPC `subscribe`) that comes back from an
# older version starts again from a snapshot instead of replaying what it missed.
keep_commands = {timelines.keep_commands}

[gossip]
# A peer whose vector clock names more feeds than this is dropped (memory stays bounded).
max_peer_feeds = {gossip.max_peer_feeds}
# Check received messages' signatures in a worker process, on a second core (false: a thread).
verify_in_process = {verify_in_process}
# Peers connected to us (handshaking included) at once, and of those from one address;
# unset, they are derived from the open-files limit (half of it, less the node's own).
# max_inbound = 496
# max_inbound_per_address = 31

[replication]
# The feeds the node carries (docs/PEERS.md, "Scope"): its own, those it follows within
# `hops` follows (1: the feeds it follows; 2: and those they follow), its groups'
# members; "all" carries every feed but the blocked. A connected peer's other feeds are
# not replicated: `tangled follow @FEED` carries one, and `tangled status` lists them.
hops = {hops}
# A community peer (pub): follow whoever redeems our invites.
# follow_invited = false

[subscribers]
# Bytes queued to subscribers that read slower than the node writes (IPC streams, the web
# view's live pages): all together, and one alone. One past its share gets `lagged`.
queue_bytes = {subscribers.queue_bytes}
stream_bytes = {subscribers.stream_bytes}

[web]
# The web view (/) and Prometheus metrics (/metrics), off unless set (`tangled run --web`).
# Keep it on 127.0.0.1: every request needs the token in <data_dir>/web-token, which
# `tangled status` prints as part of the URL, but the traffic itself is plain HTTP.
# listen = "127.0.0.1:8080"
# It answers only requests whose Host names that address (127.0.0.1, localhost or [::1]
# with its port, for a loopback one); other names it is reached by, e.g. a TLS proxy's:
# hosts = ["tanglenode.example"]
{peers}"""


def render_config(
    data_dir: Path,
    network_key: str = DEFAULT_NETWORK_KEY,
    *,
    listen: str | None = None,
    peers: Sequence[tuple[str, str]] = (),
) -> str:
    """The commented config; `listen` (default the settings') and `peers`, (address, feed
    id) each, to dial. The caller validates what it wrote (`load_settings`)."""
    defaults = Settings(data_dir=data_dir)
    return TEMPLATE.format(
        data_dir=str(data_dir).replace("\\", "\\\\").replace('"', '\\"'),
        listen=json.dumps(listen or defaults.listen),
        network_key=network_key,
        limits=defaults.limits,
        storage=defaults.storage,
        timelines=defaults.timelines,
        gossip=defaults.gossip,
        subscribers=defaults.subscribers,
        hops=json.dumps(defaults.replication.hops),
        verify_in_process=str(defaults.gossip.verify_in_process).lower(),
        causal_time=str(defaults.views.causal_time).lower(),
        joined_order=str(defaults.views.joined_order).lower(),
        peers="".join("\n" + peer_table(address, key) for address, key in peers),
    )
