"""Where an invite says the node is reached (node/ipc/invites.py, `listen_addresses`)."""

from __future__ import annotations

from tanglenode.node.ipc.invites import listen_addresses
from tanglenode.protocol.address import parse_address
from tanglenode.protocol.invite import MAX_ADDRESSES


def test_a_node_listening_on_one_address_is_reached_there():
    assert listen_addresses("10.1.2.3:8008") == ["10.1.2.3:8008"]
    assert listen_addresses("[::1]:9") == ["[::1]:9"]


def test_a_node_listening_everywhere_names_this_machines_addresses_loopback_last():
    for listen in ("0.0.0.0:8008", "[::]:8008"):
        found = listen_addresses(listen)
        assert 1 <= len(found) <= MAX_ADDRESSES and found[-1] == "127.0.0.1:8008"
        for address in found:
            host, port = parse_address(address)
            assert port == 8008 and host not in ("0.0.0.0", "::")
