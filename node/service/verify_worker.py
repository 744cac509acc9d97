"""The verifying worker process: `python -m tanglenode.node.service.verify_worker`
(see node.service.verifier).

It reads requests on stdin and answers on stdout, each a 4-byte big-endian
length and a pickle: a request is `(raws, limits)`, an answer the
`PreparedBatch` of `prepare(raws, limits)`. Its first byte out says it is
ready. It exits when stdin ends, which is also what happens when the daemon
dies, however it dies. Both ends are the same node, so pickles are safe
here: a peer's bytes only ever travel inside them as byte strings.
"""

from __future__ import annotations

import pickle
import struct
import sys

from tanglenode.storage.feeds.ingest import prepare

LENGTH = struct.Struct(">I")
READY = b"R"


def serve(requests, answers) -> None:
    answers.write(READY)
    answers.flush()
    while True:
        head = requests.read(LENGTH.size)
        if len(head) < LENGTH.size:
            return  # the daemon closed the pipe, or is gone
        (length,) = LENGTH.unpack(head)
        raws, limits = pickle.loads(requests.read(length))
        answer = pickle.dumps(prepare(raws, limits), protocol=pickle.HIGHEST_PROTOCOL)
        answers.write(LENGTH.pack(len(answer)) + answer)
        answers.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
