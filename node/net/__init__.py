"""The connection layer, below gossip and invites: SHS and box-stream over TCP
(`transport`), what the node knows of each peer (`peers`), and the file
descriptors shared out among inbound peers, IPC clients and the store
(`descriptors`). It imports nothing else of node/."""
