"""The public client API: `tanglenode.client`, a Trio client for a running node's IPC socket.

    import trio
    from tanglenode.client import connect

    async def main():
        async with await connect("/home/me/tn/tangled.sock") as node:
            print((await node.status())["feed"])

    trio.run(main)

Ids come and go as 32 bytes; `message_text(id)` writes one as `%…` (a feed:
`feed_text`, `@…`), as the CLI shows them, and `parse_message_id("%…")` (a
feed: `parse_feed`) reads one back, raising `BadIdentifier` if it is no id.

The definitions live in `tanglenode.node.ipc.client` (the id helpers in
`tanglenode.protocol.identity`); this module is the stable name to import
them by (docs/IPC.md). Installed as `tanglenode/client.py`
(see pyproject.toml).
"""

from tanglenode.node.ipc.client import (
    BadIdentifier,
    NodeClient,
    NodeError,
    NodeNotRunning,
    connect,
    feed_text,
    message_text,
    parse_feed,
    parse_message_id,
)
from tanglenode.protocol.ipc import ErrorKind

__all__ = [
    "BadIdentifier",
    "ErrorKind",
    "NodeClient",
    "NodeError",
    "NodeNotRunning",
    "connect",
    "feed_text",
    "message_text",
    "parse_feed",
    "parse_message_id",
]
