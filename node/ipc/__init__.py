"""The local IPC: one table of ops served over a Unix socket, and its clients.

`ops` holds `OPS` (op -> handler and where it can run), `run_op` and `answer`
(one path for every request, wherever served: the socket, the CLI on a stopped
node's store, the web view); `area` what a handler works on; `server` moves the
socket's frames; `streams` the ops whose events follow the reply. The handlers,
by area: `messages`, `groups`, `docs`, `discovery`, `resolve`, `scope`, `peers`,
`erase`, `invites`; beside them `once_replies`, `scope_notes`, `queue_budget`.
The clients: `client` (async, public as `tanglenode.client`) and `oneshot`
(one blocking request). The protocol half is protocol/ipc.py."""
