"""`evaluate`'s report: the sweep's result rows as the paper's table and its Figure 9.

`summary` groups the runs by (generator, delivery, height, width): for our
engine and for the reference, the mean commands per event over the seeds
and the 10th, 50th and 90th percentiles (linear interpolation between the
runs, numpy's default; with three seeds p10 and p90 lie a fifth of the way
in from the lowest and highest run), the number of reference runs that
finished, the paper's number where the paper has one (random-feed
delivery, the paper's generator, its heights and widths), and the ratios
ours/paper, reference/paper and ours/reference (the last over the seeds
where the reference finished). `markdown` lays that out as the paper does,
heights down and widths across, one line per source; `plot` draws it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tanglenode.pipeline.evaluate import PAPER, TODO_GENERATOR

KEYS = ["generator", "delivery", "height", "width"]
PERCENTILES = (10, 50, 90)
NOT_RUN = "—"


def _percentiles(values: pd.Series, prefix: str) -> dict:
    values = values.dropna()
    if values.empty:
        return {f"{prefix}_mean": np.nan} | {f"{prefix}_p{p}": np.nan for p in PERCENTILES}
    cells = {f"{prefix}_mean": float(values.mean())}
    for p in PERCENTILES:
        cells[f"{prefix}_p{p}"] = float(np.percentile(values, p))
    return cells


def paper_value(generator: str, delivery: str, height: int, width: int) -> float:
    if generator == TODO_GENERATOR or delivery != "random-feed":
        return np.nan
    return PAPER.get(height, {}).get(width, np.nan)


def summary(results: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: ours, reference and paper side by side (module docstring)."""
    rows = []
    for key, group in results.groupby(KEYS, sort=True):
        finished = group[group["reference_status"] == "finished"]
        row = dict(zip(KEYS, key, strict=True))
        row["runs"] = len(group)
        row |= _percentiles(group["commands_per_event"], "ours")
        row["reference_runs"] = len(finished)
        row |= _percentiles(finished["reference_per_event"].astype(float), "reference")
        row["paper"] = paper_value(*key)
        row["ours_over_paper"] = row["ours_mean"] / row["paper"]
        row["reference_over_paper"] = row["reference_mean"] / row["paper"]
        paired = finished["reference_commands"].astype(float).sum()
        row["ours_over_reference"] = (
            finished["commands"].sum() / paired if len(finished) and paired else np.nan
        )
        row["ours_seconds"] = float(group["seconds"].mean())
        row["reference_seconds"] = float(group["reference_seconds"].mean())
        rows.append(row)
    return pd.DataFrame(rows)


def _height(height: int) -> str:
    return f"{height // 1000}K" if height % 1000 == 0 else str(height)


def _cell(value: float, digits: int = 2) -> str:
    return NOT_RUN if pd.isna(value) else f"{value:.{digits}f}"


def _lines(block: pd.DataFrame, widths: list[int], seeds: int) -> list[list[str]]:
    cells = {
        w: block[block["width"] == w].iloc[0] if (block["width"] == w).any() else None
        for w in widths
    }

    def line(label: str, render) -> list[str]:
        return [label] + [NOT_RUN if cells[w] is None else render(cells[w]) for w in widths]

    lines = [
        line("ours (mean)", lambda c: _cell(c["ours_mean"])),
        line("ours p10-p90", lambda c: f"{_cell(c['ours_p10'])}..{_cell(c['ours_p90'])}"),
        line(
            "reference (mean)",
            lambda c: (
                _cell(c["reference_mean"])
                + ("" if c["reference_runs"] in (0, seeds) else f" ({c['reference_runs']}/{seeds})")
            ),
        ),
        line("ours / reference", lambda c: _cell(c["ours_over_reference"], 3)),
    ]
    if block["paper"].notna().any():
        lines += [
            line("paper", lambda c: _cell(c["paper"], 1)),
            line("ours / paper", lambda c: _cell(c["ours_over_paper"])),
            line("reference / paper", lambda c: _cell(c["reference_over_paper"])),
        ]
    return lines


def markdown(table: pd.DataFrame, reference_seconds: float) -> str:
    """The summary as Markdown: a table per (generator, delivery), the to-do scenario last."""
    seeds = int(table["runs"].max()) if len(table) else 0
    out = [
        "# Commands per event: ours, the reference ScuttleSort, the paper",
        "",
        f"Means over {seeds} seed(s); p10-p90 are percentiles over the seeds (linear "
        f"interpolation). Reference: `scuttlesort` 0.0.9, limited to {reference_seconds:g} s a "
        f"run; {NOT_RUN} where it did not run or finish, (k/n) where k of n runs finished.",
    ]
    order = table.assign(
        _todo=table["generator"] == TODO_GENERATOR, _shuffled=table["delivery"] != "random-feed"
    ).sort_values(["_todo", "_shuffled", "generator", "delivery", "height", "width"])
    for (generator, delivery), block in order.groupby(["generator", "delivery"], sort=False):
        title = (
            "the to-do scenario: 32 active feeds, 512 lurkers"
            if generator == TODO_GENERATOR
            else generator
        )
        widths = sorted(block["width"].unique())
        out += ["", f"## {title}, {delivery} delivery", ""]
        out.append("| height | source | " + " | ".join(str(w) for w in widths) + " |")
        out.append("|---|---|" + "---|" * len(widths))
        for height, rows in block.groupby("height"):
            for cells in _lines(rows, widths, seeds):
                out.append(f"| {_height(height)} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def plot(table: pd.DataFrame, path: Path) -> Path:
    """Figure 9's view: commands per event against width, a colour per height.

    Ours solid with p10-p90 bars, the reference dotted, the paper dashed; the
    to-do scenario a star at its width. Only random-feed delivery (in order
    every event is one command).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = table[table["delivery"] == "random-feed"]
    figure, axes = plt.subplots(figsize=(9, 5.5), dpi=120)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    main = shown[shown["generator"] != TODO_GENERATOR]
    for index, ((generator, height), rows) in enumerate(main.groupby(["generator", "height"])):
        colour = colours[index % len(colours)]
        rows = rows.sort_values("width")
        label = _height(height)
        mean = rows["ours_mean"].to_numpy()
        errors = np.vstack([mean - rows["ours_p10"].to_numpy(), rows["ours_p90"].to_numpy() - mean])
        axes.errorbar(
            rows["width"].to_numpy(),
            mean,
            yerr=errors,
            color=colour,
            marker="o",
            capsize=3,
            label=f"{label} ours ({generator})",
        )
        ran = rows[rows["reference_runs"] > 0]
        if len(ran):
            axes.plot(
                ran["width"].to_numpy(),
                ran["reference_mean"].to_numpy(),
                color=colour,
                linestyle=":",
                marker="x",
                label=f"{label} reference",
            )
        if height in PAPER:
            widths = sorted(PAPER[height])
            axes.plot(
                widths,
                [PAPER[height][w] for w in widths],
                color=colour,
                linestyle="--",
                alpha=0.6,
                label=f"{label} paper",
            )
    for _, row in shown[shown["generator"] == TODO_GENERATOR].iterrows():
        axes.plot(
            [row["width"]],
            [row["ours_mean"]],
            marker="*",
            markersize=14,
            color="black",
            linestyle="none",
            label=f"to-do scenario {_height(row['height'])} ours",
        )
        if row["reference_runs"] > 0:
            axes.plot(
                [row["width"]],
                [row["reference_mean"]],
                marker="x",
                markersize=10,
                color="black",
                linestyle="none",
                label="to-do scenario reference",
            )
    axes.set_xscale("log", base=2)
    axes.set_xlabel("tangle width (feeds)")
    axes.set_ylabel("edit commands per ingested event")
    axes.set_title(
        "Incremental linearization cost, random-feed delivery (cf. ScuttleSort, Figure 9)"
    )
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
