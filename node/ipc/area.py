"""What an op's handler works on (`Area`): the store, our keypair, the running node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tanglenode.node.ipc.once_replies import OnceReplies
    from tanglenode.node.ipc.peers import RunningNode
    from tanglenode.node.service.store_service import StoreService
    from tanglenode.protocol.identity import Keypair


@dataclass
class Area:
    """What an op's handler works on: the store through `service`, our `keypair`, and
    `node`, what only the running node has (its peers and network; None where the CLI
    opened the store itself). `node.ipc.ops.OPS` lists every op's handler."""

    service: StoreService
    keypair: Keypair | None
    node: RunningNode | None = None
    once: OnceReplies | None = None  # the running node's: writes sent again done once
