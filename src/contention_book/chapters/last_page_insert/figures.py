"""The chapter's figures (seaborn / matplotlib); each takes frames from :mod:`.analysis`."""
from __future__ import annotations

import pandas as pd

from . import tables as an
from ..shared.style import TEXT_WIDTH_IN, legend_below, legend_under_figure
from ..shared.offcpu import ChapterOffCpu
from .spec import SHORT


def _empty(ax, text: str) -> None:
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)


def _empty_figure(text: str, width: float = 8.0):
    """A one-line figure that says what the recording lacks, in place of a plot."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, 1.5))
    _empty(ax, text)
    return fig


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
        axes[0].set_title(f"Published (other systems: {an.cores_text(an.published_numbers(published))})")
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
        axes[1].minorticks_off()
        cpus = measured.cpus
        if cpus and t["sessions"].max() > cpus:  # more sessions than CPUs: shown, never deciding a verdict
            axes[1].axvspan(cpus * 1.25, t["sessions"].max() * 1.2, color="grey", alpha=0.12, lw=0)
            axes[1].text(t["sessions"].max() * 1.15, 0.02, f"oversubscribed (more than {cpus} CPUs)",
                         transform=axes[1].get_xaxis_transform(), ha="right", va="bottom", fontsize=7, color="0.3")
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
    from matplotlib.ticker import PercentFormatter

    w = an.wait_shares(measured)
    if w.empty:
        return _empty_figure("this recording has no wait samples")
    w = w.assign(row=w["setting"] + ", " + w["sessions"].map(lambda n: an.sessions_label(measured, n, short=True)))
    wide = w.pivot_table(index="row", columns="wait", values="share", aggfunc="sum", sort=False).fillna(0)
    order = [c for c in ("LWLock:BufferContent", "PAGELATCH_EX", "PAGELATCH_SH", "PAGELATCH_UP", "CPU", an.IDLE)
             if c in wide.columns]
    wide = wide[order + [c for c in wide.columns if c not in order]]
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 0.32 * len(wide) + 2.2), layout="constrained")
    wide.iloc[::-1].plot.barh(stacked=True, ax=ax, width=0.8, colormap="tab10")
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of samples of the inserting sessions")
    ax.set_ylabel("")
    hz = measured.runs.get("wait_sampler_hz", pd.Series([20])).median()
    ax.set_title(f"Wait samples of the inserting sessions (~{hz:.0f} a second)")
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    legend_below(ax)
    return fig


def plot_hot_pages(measured, top: int = 8) -> "object":
    """Share of page-level samples per page (SQL Server) or page role (PostgreSQL), one panel per design stacked
    on a shared axis, the last page in red; at the deciding session count."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    h = an.hot_page_table(measured, top=top)
    if h.empty:
        return _empty_figure("this recording has no page-level samples at the deciding session count", TEXT_WIDTH_IN)
    h = h.assign(setting=h["variant"].map(lambda v: an.SHORT.get(v, v)))
    if "share" not in h:
        h["share"] = h["pins"] / h.groupby("variant")["pins"].transform("sum")
    order = [an.SHORT[v] for v in ("sequential", "hash_partitioned", "random_key", "sequential_optimized")]
    variants = sorted(dict.fromkeys(h["setting"]), key=lambda v: order.index(v) if v in order else 99)
    sizes = [int((h["setting"] == v).sum()) for v in variants]
    fig, axes = plt.subplots(len(variants), 1, figsize=(TEXT_WIDTH_IN, 0.28 * sum(sizes) + 0.55 * len(variants) + 0.9),
                             sharex=True, squeeze=False, gridspec_kw={"height_ratios": sizes}, layout="constrained")
    colours = {1: "tab:red", 0: "tab:blue"}
    for ax, v in zip(axes[:, 0], variants):
        part = h[h["setting"] == v].iloc[::-1]
        known = part["is_last_page"].notna()
        ax.barh(part["page"].astype(str), part["share"],
                color=[colours.get(int(x), "tab:grey") if k else "tab:grey"
                       for x, k in zip(part["is_last_page"].fillna(0), known)])
        ax.set_title(v, fontsize=9, loc="left")
        ax.tick_params(axis="y", labelsize=7)
        ax.set_xlim(0, 1)
    axes[-1, 0].set_xlabel(f"share of page-level samples at {an.sessions_label(measured, an.deciding(measured))}")
    fig.legend(handles=[Patch(color="tab:red", label="last page (rightmost leaf)"),
                        Patch(color="tab:blue", label="other page")], loc="outside lower center", ncol=2,
               fontsize=8, frameon=False)
    return fig


def plot_read_cost(measured) -> "object":
    import matplotlib.pyplot as plt
    import seaborn as sns

    r = an.read_cost_table(measured)
    if r.empty:
        return _empty_figure("this recording has no read-cost measurements")
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
        return _empty_figure("this recording has no index statistics")
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
    n = an.deciding(measured)
    n = int(iv["sessions"].max()) if n is None or not (iv["sessions"] == n).any() else int(n)
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
    ax.set_title(f"Throughput second by second at {an.sessions_label(measured, n)} (one line per repetition)")
    legend_below(ax)
    return fig


# the off-CPU figure and table (chapters.shared.offcpu): this chapter's title and what its waits look like
offcpu = ChapterOffCpu("{variant}: the inserting backends off the CPU",
                       "An LWLock sleep on the buffer content lock is a semaphore wait (futex_wait under "
                       "PGSemaphoreLock and LWLockAcquire); the wait-event shares name it "
                       "LWLock:BufferContent. Where the two disagree, the off-CPU view also counts "
                       "preemption (state R) on a busy machine, which the wait events call CPU.")
