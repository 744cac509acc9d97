"""Gossip: the sessions with peers and the connections that carry them.

`policy` decides (a sans-IO state machine per session, with `stream_plan`,
`witness_fetch` and `proof_rate`, all on plain data and the time they are told);
`session` is the adapter that reads frames, asks the store and carries out what
the policy decides; `inbox` stores what a session received, in order, verified
beside the writer; `network` listens and dials, one session per connection
(invites told apart at the door). Above node/net, node/service and node/invites."""
