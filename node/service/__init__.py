"""The store as a Trio service and what serves its writes: `store_service` (blocking
LMDB calls in worker threads, change signals, the clock), `group_commit` (concurrent
publishes in one durable transaction), `verifier` and `verify_worker` (signature
checks of large batches on a second core), `offload` (where blocking calls run),
`head_changes` (which heads moved, for CLOCK notes), `counters` (what /metrics
reads). Below gossip, invites and IPC; above node/net only."""
