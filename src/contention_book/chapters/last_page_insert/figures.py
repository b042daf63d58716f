"""The chapter's figures (seaborn / matplotlib); each takes frames from :mod:`.analysis`."""
from __future__ import annotations

import pandas as pd

from . import tables as an
from ..shared.style import TEXT_WIDTH_IN, legend_below, legend_under_figure
from .spec import SHORT


def _empty(ax, text: str) -> None:
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)


def plot_throughput(published: list, measured) -> "object":
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(2, 1, figsize=(7.6, 8.4))
    pts = an.published_points(published)
    if len(pts):
        pts = pts.assign(what=pts["source"].str.replace(" (published)", "", regex=False) + ": " + pts["case"])
        sns.barplot(data=pts, y="what", x="relative", hue="setting", ax=axes[0], orient="h")
        axes[0].axvline(1, color="grey", lw=0.8)
        axes[0].set_xlabel("throughput, × the source's own 'before'")
        axes[0].set_ylabel("")
        axes[0].set_title("Published (other systems: 32-128 cores)")
        legend_below(axes[0])
    else:
        _empty(axes[0], "no published points")
    t = an.throughput_table(measured)
    if len(t):
        colours = dict(zip(t["setting"].drop_duplicates(), sns.color_palette()))
        sns.lineplot(data=t, x="sessions", y="throughput", hue="setting", marker="o", ax=axes[1], palette=colours)
        for setting, part in t.groupby("setting", sort=False):  # the spread over repetitions
            axes[1].fill_between(part["sessions"], part["throughput_low"], part["throughput_high"],
                                 color=colours[setting], alpha=0.15, lw=0)
        axes[1].set_xscale("log", base=2)
        axes[1].set_xticks(sorted(t["sessions"].unique()))
        axes[1].set_xticklabels([str(s) for s in sorted(t["sessions"].unique())])
        axes[1].set_ylim(bottom=0)
        axes[1].set_ylabel("rows inserted per second")
        axes[1].set_xlabel("inserting sessions")
        axes[1].set_title(f"Measured: {measured.label}, {measured.cpus or '?'} logical CPUs")
        legend_below(axes[1])
    else:
        _empty(axes[1], "no measured runs")
    return fig


def plot_waits(measured) -> "object":
    import matplotlib.pyplot as plt

    w = an.wait_shares(measured)
    if w.empty:
        fig, ax = plt.subplots(figsize=(8, 1.5))
        _empty(ax, "this recording has no wait samples")
        return fig
    w = w.assign(row=w["setting"] + ", " + w["sessions"].astype(int).astype(str) + " s.")
    wide = w.pivot_table(index="row", columns="wait", values="share", aggfunc="sum", sort=False).fillna(0)
    order = [c for c in ("LWLock:BufferContent", "PAGELATCH_EX", "PAGELATCH_SH", "PAGELATCH_UP", "CPU", an.IDLE)
             if c in wide.columns]
    wide = wide[order + [c for c in wide.columns if c not in order]]
    fig, ax = plt.subplots(figsize=(11, 0.35 * len(wide) + 1.6))
    wide.iloc[::-1].plot.barh(stacked=True, ax=ax, width=0.8, colormap="tab10")
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of samples of the inserting sessions (s. = sessions)")
    ax.set_ylabel("")
    ax.set_title(f"Where the inserting sessions were, sampled at ~{measured.runs.get('wait_sampler_hz', pd.Series([20])).median():.0f} Hz")
    ax.legend(fontsize=8, bbox_to_anchor=(1.01, 1), loc="upper left", title=None)
    return fig


def plot_hot_pages(measured, top: int = 8) -> "object":
    import matplotlib.pyplot as plt
    import seaborn as sns

    h = an.hot_page_table(measured, top=top)
    if h.empty:
        fig, ax = plt.subplots(figsize=(8, 1.5))
        _empty(ax, "this recording has no page-level samples")
        return fig
    h = h.assign(setting=h["variant"].map(lambda v: an.SHORT.get(v, v)),
                 where=h["is_last_page"].map({1: "last page (rightmost leaf)", 0: "other page",
                                              1.0: "last page (rightmost leaf)", 0.0: "other page"})
                 .fillna("unknown"))
    variants = list(dict.fromkeys(h["setting"]))
    fig, axes = plt.subplots(1, len(variants), figsize=(4.2 * len(variants), 0.32 * top + 1.8), squeeze=False)
    for ax, v in zip(axes[0], variants):
        part = h[h["setting"] == v]
        sns.barplot(data=part, y="page", x="share", hue="where", ax=ax, orient="h", dodge=False,
                    palette={"last page (rightmost leaf)": "tab:red", "other page": "tab:blue", "unknown": "tab:grey"})
        ax.set_title(v, fontsize=10)
        ax.set_xlabel("share of samples")
        ax.set_ylabel("")
        ax.tick_params(axis="y", labelsize=7)
        legend_below(ax)
    return fig


def plot_read_cost(measured) -> "object":
    import matplotlib.pyplot as plt
    import seaborn as sns

    r = an.read_cost_table(measured)
    if r.empty:
        fig, ax = plt.subplots(figsize=(8, 1.5))
        _empty(ax, "this recording has no read-cost measurements")
        return fig
    fig, axes = plt.subplots(2, 1, figsize=(7.6, 2 * (0.3 * len(r) + 1.4) + 0.6), sharey=True)
    for ax, col, title in ((axes[0], "logical_reads", "pages read (buffers / logical reads)"),
                           (axes[1], "partitions_touched", "partitions touched")):
        sns.barplot(data=r, y="query", x=col, hue="setting", ax=ax, orient="h")
        ax.set_xlabel(title)
        ax.set_ylabel("")
    legend_under_figure(fig, axes[0])
    return fig


def plot_density(measured) -> "object":
    import matplotlib.pyplot as plt
    import seaborn as sns

    d = an.density_table(measured)
    if d.empty:
        fig, ax = plt.subplots(figsize=(8, 1.5))
        _empty(ax, "this recording has no index statistics")
        return fig
    fig, axes = plt.subplots(3, 1, figsize=(7.6, 3 * (0.3 * d["setting"].nunique() + 1.0)), sharey=True)
    for ax, col, title in ((axes[0], "avg_leaf_density", "average leaf density (%)"),
                           (axes[1], "rows_per_leaf", "rows per leaf page"),
                           (axes[2], "leaf_fragmentation", "leaf fragmentation (%)")):
        sns.barplot(data=d, y="setting", x=col, ax=ax, orient="h", hue="setting", legend=False)
        ax.set_xlabel(title)
        ax.set_ylabel("")
    return fig


NO_INTERVALS = ("this recording has no interval rows: it was made before the driver kept one row per second; "
                "a fresh live run (python -m contention_book.run last-page-insert --engine postgres) writes them")


def plot_throughput_over_time(measured) -> "object":
    """Rows inserted per second, second by second, at the largest session count: a convoy shows as it forms."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    iv = measured.by_repetition("intervals") if measured is not None else None
    if iv is None or iv.empty:
        fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 1.4), layout="constrained")
        _empty(ax, NO_INTERVALS)
        return fig
    n = int(iv["sessions"].max())
    part = iv[iv["sessions"] == n].copy()
    runs = measured.runs
    per_call = (runs.groupby("variant")["rows_per_call"].median() if runs is not None and "rows_per_call" in runs
                else pd.Series(dtype=float))
    part["rows_per_s"] = part["throughput"] * part["variant"].map(per_call).fillna(1)
    part["setting"] = part["variant"].map(lambda v: SHORT.get(v, v))
    part["t_s"] = part["second"] + part["interval_s"] / 2
    if "repetition" not in part:
        part["repetition"] = 0
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 3.6), layout="constrained")
    sns.lineplot(data=part, x="t_s", y="rows_per_s", hue="setting", units="repetition", estimator=None,
                 marker="o", lw=1, alpha=0.8, ax=ax)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("seconds into the measured window")
    ax.set_ylabel("rows inserted per second")
    ax.set_title(f"Throughput second by second at {n} sessions (one line per repetition)")
    legend_below(ax)
    return fig
