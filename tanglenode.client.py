"""The public client API: `tanglenode.client`, a Trio client for a running node's IPC socket.

    import trio
    from tanglenode.client import connect

    async def main():
        async with await connect("/home/me/tn/tangled.sock") as node:
            print((await node.status())["feed"])

    trio.run(main)

The definitions live in `tanglenode.node.client`; this module is the stable
name to import them by (docs/IPC.md). Installed as `tanglenode/client.py`
(see pyproject.toml).
"""

from tanglenode.node.client import NodeClient, NodeError, NodeNotRunning, connect
from tanglenode.protocol.ipc import ErrorKind

__all__ = ["ErrorKind", "NodeClient", "NodeError", "NodeNotRunning", "connect"]
