"""Invites over the wire: the inviter's side (`door`: a connection's first frame told
from gossip, redemptions answered and rate-limited) and the redeemer's (`use`: dial,
handshake, prove the secret, read the answer). The codes and their checks are
protocol/invite.py; what the node keeps of them, storage/invites.py."""
