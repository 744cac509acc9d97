"""The causal-tree paper's size table on our editing traces (docs/BENCHMARKS.md,
"Weave sizes against the paper's table").

Each shipped trace is replayed into a fresh store; its document's history is
then measured in the paper's columns: every version's text one after another
(plain snapshots; a version is one edit message, what an editor flushed),
those snapshots through gzip (-6) and xz (-6, standing in for 7z: both are
LZMA), the weave5c, the light weave (only what the text shows, the paper's
prefiltered weave), the text1; and our store's bytes on disk. Code points
("c") and UTF-8 bytes ("b"). The paper's figure, weave and text size over
the history, is drawn (matplotlib) into docs/weave-sizes.png.

    .venv/bin/python bench/weave_sizes.py [--plot docs/weave-sizes.png] [TRACE ...]
"""

from __future__ import annotations

import argparse
import lzma
import sys
import tempfile
import zlib
from pathlib import Path

from tanglenode.protocol import weave_regex
from tanglenode.storage.clients.trace_replay import load_trace, replay
from tanglenode.storage.store import FeedStore

TRACES = Path(__file__).resolve().parents[1] / "tests" / "data" / "editing-traces"
NAMES = ("automerge-paper", "seph-blog1", "friendsforever_flat", "friendsforever_concurrent")
# The paper's table: snapshots, .gz, .7z (bytes); weave5c, text1 (code points).
PAPER = {
    "Coca-Cola": (253_760_722, 78_450_167, 481_952, 1_126_011, 52_477),
    "Joseph Stalin": (753_906_073, 281_409_652, 891_514, 1_379_858, 137_088),
}


def history(store: FeedStore, doc: bytes) -> list[str]:
    """Every version's text, from the doc/init's empty one, by the splice log."""
    chars: list[str] = []
    texts = [""]
    since = 0
    while True:
        _head, entries = store.documents.document_splices(doc, since)
        if not entries:
            return texts
        for entry in entries:
            if entry.splices is None:  # a reset: read the version whole
                chars = list(store.documents.document_revision(doc, entry.version))
            else:
                for kind, pos, what in entry.splices:
                    if kind == "ins":
                        chars[pos:pos] = what
                    else:
                        del chars[pos : pos + what]
            texts.append("".join(chars))
            since = entry.version


def measure(name: str) -> dict:
    with tempfile.TemporaryDirectory() as scratch, FeedStore(scratch, map_size=2**31) as store:
        report = replay(load_trace(TRACES / f"{name}.json.gz"), store, title=name)
        texts = history(store, report.doc)
        assert texts[-1] == report.text, "the splice log disagrees with the text"
        exported = store.documents.document_weave(report.doc)
        versions = store.documents.document_versions(report.doc, 0, len(texts) + 1)
        on_disk = store.feeds.statistics()["bytes_on_disk"]
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    xz = lzma.LZMACompressor(preset=6)
    plain = gz_bytes = xz_bytes = 0
    for text in texts:
        data = text.encode("utf-8")
        plain += len(data)
        gz_bytes += len(gz.compress(data))
        xz_bytes += len(xz.compress(data))
    gz_bytes += len(gz.flush())
    xz_bytes += len(xz.flush())
    weave, light = exported.weave, weave_regex.light(exported.weave)
    atoms, curve = 2, []  # the weave at each version holds the atoms of the versions up to it
    for version, text in zip(versions, texts, strict=True):
        atoms += version.inserted + version.deleted if version.number else 0
        curve.append((version.number, 5 * atoms, len(text)))
    assert curve[-1][1] == len(weave), "the weave's growth does not add up"
    return {
        "name": name,
        "versions": len(texts) - 1,
        "edits": report.edits,
        "snapshots": plain,
        "gz": gz_bytes,
        "xz": xz_bytes,
        "weave_c": len(weave),
        "weave_b": len(weave.encode("utf-8")),
        "light_c": len(light),
        "light_b": len(light.encode("utf-8")),
        "text_c": len(report.text),
        "text_b": len(report.text.encode("utf-8")),
        "store": on_disk,
        "curve": curve,
    }


def table(rows: list[dict]) -> str:
    lines = [
        "| document | versions | snapshots | .gz | .xz (.7z) | weave5c | light weave | text1 "
        "| store | weave/text | light/text |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, (snap, gz, sz, weave, text) in PAPER.items():
        lines.append(
            f"| {name} (paper) | | {snap:,}b | {gz:,}b | {sz:,}b | {weave:,}c | | {text:,}c | "
            f"| {weave / text:.0f}x | |"
        )
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['versions']:,} | {r['snapshots']:,}b | {r['gz']:,}b "
            f"| {r['xz']:,}b | {r['weave_c']:,}c {r['weave_b']:,}b "
            f"| {r['light_c']:,}c {r['light_b']:,}b | {r['text_c']:,}c {r['text_b']:,}b "
            f"| {r['store']:,}b | {r['weave_c'] / r['text_c']:.0f}x"
            f" ({r['weave_b'] / r['text_b']:.0f}x) | {r['light_c'] / r['text_c']:.1f}x"
            f" ({r['light_b'] / r['text_b']:.1f}x) |"
        )
    return "\n".join(lines)


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(1, len(rows), figsize=(4 * len(rows), 3.4), squeeze=False)
    for ax, r in zip(axes[0], rows, strict=True):
        numbers = [point[0] for point in r["curve"]]
        ax.plot(numbers, [point[1] for point in r["curve"]], label="weave5c")
        ax.plot(numbers, [point[2] for point in r["curve"]], label="text1")
        ax.set_title(r["name"], fontsize=9)
        ax.set_xlabel("version")
        ax.set_ylabel("code points")
        ax.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=90)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="*", default=list(NAMES))
    parser.add_argument("--plot", type=Path, help="Draw the weave and text sizes into PNG.")
    options = parser.parse_args()
    rows = []
    for name in options.traces:
        rows.append(measure(name))
        print(f"measured {name}", file=sys.stderr)
    print(table(rows))
    if options.plot:
        plot(rows, options.plot)


if __name__ == "__main__":
    main()
