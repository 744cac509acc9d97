"""`make demo`: one node in a temporary directory, driven through the real `tangled` CLI.

It initializes a node, starts a tangle, replies into it, prints the feed's
log and the store check. Each command is echoed before it runs, so the demo
doubles as a tour of the CLI.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

TANGLED = [sys.executable, "-m", "node.cli"]


def run(data_dir: Path, *args: str) -> str:
    shown = " ".join(shlex.quote(a) for a in ("tangled", "--data-dir", str(data_dir), *args))
    print(f"$ {shown}", flush=True)
    done = subprocess.run(
        [*TANGLED, "--data-dir", str(data_dir), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "TANGLED_LOG_LEVEL": "warning"},
    )
    print(done.stdout, end="", flush=True)
    return done.stdout.strip()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tangled-demo-") as tmp:
        node = Path(tmp) / "alice"
        run(node, "init")
        root = run(
            node,
            "publish",
            "--offline",
            '{"type": "post", "text": "Shall we meet on Friday?"}',
            "--tangle",
            "thread",
        )
        run(
            node,
            "publish",
            "--offline",
            '{"type": "post", "text": "Friday works, 6pm."}',
            "--tangle",
            f"thread={root}",
        )
        run(
            node,
            "publish",
            "--offline",
            '{"type": "post", "text": "See you there."}',
            "--tangle",
            f"thread={root}",
        )
        run(node, "log")
        run(node, "timeline", f"thread/{root}")
        run(node, "timeline", f"thread/{root}", "--since", "0")
        run(node, "feeds")
        run(node, "check")


if __name__ == "__main__":
    main()
