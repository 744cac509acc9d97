"""What message format 3 costs against format 2 (issue 43): ingest rate and bytes per message.

Format 3 signs a header that holds the content's hash and size and carries
the content beside it (`[header, content]`, docs/FORMAT.md); format 2 signed
the content itself. Both run bench/ingest.py's workload (N messages of F
feeds in T tangles, timeframes of at most 4 other feeds by default, or
`--heads`) through each tree's own bench/ingest.py (`build_messages`,
`time_decode`, `time_ingest`) and its own package: ours, and `--baseline`,
a checkout of format 2 (`git worktree add /tmp/f2 bd809d1`). Each run is a
child process whose PYTHONPATH is a package layout of that tree
(`tanglenode.<folder>` -> `<tree>/<folder>`, as pyproject.toml maps them);
a baseline without the compiled engine gets ours copied beside its
sources when they are the same (`storage/engine/native.py` checks the
stamp), and both run with `TANGLENODE_ENGINE=native`. Each round runs both
trees, which one first alternating by round. Per run:

  ingest     msgs/s of `store.writes.ingest`'s whole path, one core, batches of
             500, into a fresh store on disk (bench/ingest.py's `time_ingest`)
  decode     msgs/s of `decode_message` alone (signature included, no store)
  wire       mean bytes of a message as it travels (format 2: the signed bytes;
             format 3: `[header, content]`)
  stored     mean bytes of a message's stored value (`storage/feeds/stored_form.py`
             `encode`, the feeds numbered as a store numbers them)
  table      the compacted store's `messages` table (its pages) per message
  store      the compacted store (`tangled compact`) per message

Prints per round, then medians and ours / baseline (ratios: medians of the
per-round ratios).

    git worktree add /tmp/f2 bd809d1
    .venv/bin/python bench/format_cost.py --baseline /tmp/f2 --messages 50000 --rounds 3
    git worktree remove /tmp/f2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("node", "storage", "protocol", "config", "pipeline")  # pyproject's force-include
FIGURES = ("ingest", "decode", "wire", "stored", "table", "store")
BATCH = 500


def layout(tree: Path, where: Path) -> Path:
    """A folder holding `tanglenode/` made of `tree`'s folders (symlinks), for PYTHONPATH."""
    package = where / "tanglenode"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for folder in FOLDERS:
        (package / folder).symlink_to(tree / folder)
    (package / "client.py").symlink_to(tree / "tanglenode.client.py")
    return where


def lend_native_build(tree: Path) -> list[Path]:
    """Copy our compiled engine into `tree` where it has none and its sources are ours;
    the files copied (to remove afterwards)."""
    copied = []
    for built in sorted((ROOT / "storage" / "engine" / "__pycache__").glob("*_native*.so")):
        name = built.name.split("_native")[0]
        same = all(
            (tree / "storage" / "engine" / f"{name}{suffix}").read_bytes()
            == (ROOT / "storage" / "engine" / f"{name}{suffix}").read_bytes()
            for suffix in (".py", ".pxd")
        )
        target = tree / "storage" / "engine" / "__pycache__" / built.name
        if same and not target.exists():
            target.parent.mkdir(exist_ok=True)
            shutil.copy2(built, target)
            copied.append(target)
    return copied


def child(tree: Path, args: argparse.Namespace) -> dict:
    """One run of `tree`'s code (this process's PYTHONPATH is its layout)."""
    sys.path.insert(0, str(tree / "bench"))
    import ingest  # the tree's own bench/ingest.py

    from tanglenode.protocol import message as message_module
    from tanglenode.protocol.message import decode_message
    from tanglenode.storage.engine.command_log import DEFAULT_KEEP_COMMANDS, LogRetention
    from tanglenode.storage.engine.native import build_name
    from tanglenode.storage.feeds.ingest_pipeline import Worker
    from tanglenode.storage.feeds.stored_form import encode

    if not Path(message_module.__file__).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{message_module.__file__} is not of {tree}")
    raws = ingest.build_messages(
        args.messages, args.feeds, args.tangles, args.seed, args.timeframe_feeds, args.heads
    )
    decode_seconds = ingest.time_decode(raws)
    retention = LogRetention.keeping(DEFAULT_KEEP_COMMANDS)
    elapsed, _size, compacted, tables = ingest.time_ingest(
        raws, BATCH, Worker.INLINE, retention, []
    )
    numbers: dict[bytes, int] = {}
    stored = sum(
        len(encode(decode_message(raw), lambda feed: numbers.setdefault(feed, len(numbers))))
        for raw in raws
    )
    messages_table = next(t for t in tables if t.name == "messages")
    count = len(raws)
    return {
        "version": message_module.VERSION,
        "engine": build_name(),
        "ingest": count / elapsed,
        "decode": count / decode_seconds,
        "wire": sum(map(len, raws)) / count,
        "stored": stored / count,
        "table": (messages_table.pages + messages_table.overflow) * 4096 / count,
        "store": compacted / count,
    }


def run(tree: Path, package: Path, args: argparse.Namespace) -> dict:
    command = [sys.executable, __file__, "--child", str(tree)]
    command += ["--messages", str(args.messages), "--feeds", str(args.feeds)]
    command += ["--tangles", str(args.tangles), "--seed", str(args.seed)]
    if args.timeframe_feeds is not None:
        command += ["--timeframe-feeds", str(args.timeframe_feeds)]
    if args.heads:
        command.append("--heads")
    env = {**os.environ, "PYTHONPATH": str(package), "TANGLENODE_ENGINE": "native"}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of format 2 (bd809d1)")
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--feeds", type=int, default=64)
    parser.add_argument("--tangles", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeframe-feeds", type=int, default=4)
    parser.add_argument("--heads", action="store_true", help="timeframes of the heads instead")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args)))
        return
    if args.baseline is None:
        parser.error("--baseline CHECKOUT is needed: a tree of format 2 to compare with")
    trees = {"format 3": ROOT, "format 2": args.baseline.resolve()}
    workload = "heads" if args.heads else f"timeframes of at most {args.timeframe_feeds} feeds"
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {args.messages} messages of {args.feeds} feeds in "
        f"{args.tangles} tangles, {workload}; batches of {BATCH}; {args.rounds} rounds"
    )
    results: dict[str, list[dict]] = {name: [] for name in trees}
    copied = lend_native_build(args.baseline.resolve())
    try:
        with tempfile.TemporaryDirectory(prefix="bench-format-") as tmp:
            packages = {
                name: layout(tree, Path(tmp) / str(n))
                for n, (name, tree) in enumerate(trees.items())
            }
            for number in range(args.rounds):
                order = list(trees) if number % 2 == 0 else list(reversed(trees))
                for name in order:
                    result = run(trees[name], packages[name], args)
                    results[name].append(result)
                    print(
                        f"round {number + 1} {name} (version {result['version']}, "
                        f"{result['engine']} engine): "
                        f"ingest {result['ingest']:,.0f}/s, decode {result['decode']:,.0f}/s, "
                        f"wire {result['wire']:.1f} B, stored {result['stored']:.1f} B, "
                        f"table {result['table']:.1f} B, store {result['store']:.1f} B",
                        flush=True,
                    )
    finally:
        for path in copied:
            path.unlink()
    print(f"\nmedians of {args.rounds} rounds; format 3 / format 2: median of per-round ratios")
    print(f"  {'':<10}{'format 2':>12}{'format 3':>12}{'3 / 2':>9}{'3 - 2':>10}")
    for figure in FIGURES:
        old = statistics.median(r[figure] for r in results["format 2"])
        new = statistics.median(r[figure] for r in results["format 3"])
        ratio = statistics.median(
            n[figure] / o[figure]
            for n, o in zip(results["format 3"], results["format 2"], strict=True)
        )
        unit = "msgs/s" if figure in ("ingest", "decode") else "B/msg"
        print(f"  {figure:<10}{old:>12,.1f}{new:>12,.1f}{ratio:>9.3f}{new - old:>+10.1f}  {unit}")


if __name__ == "__main__":
    main()
