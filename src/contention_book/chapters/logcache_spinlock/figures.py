"""The chapter's figures (seaborn / matplotlib)."""
from __future__ import annotations

import pandas as pd

from .spec import LABELS
from ..shared.style import legend_below, legend_under_figure


def _empty(text: str):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 1.4))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center")
    return fig


def heatmap(matrix: pd.DataFrame, title: str):
    import matplotlib.pyplot as plt
    import seaborn as sns

    if matrix.empty:
        return _empty("no core-to-core measurement in this recording")
    pairs = matrix.stack().dropna()
    if len(pairs) <= 2:  # a two-CPU machine: one or two numbers, not a map
        fig, ax = plt.subplots(figsize=(7.6, 0.5 * len(pairs) + 1.4))
        labels = [f"CPU {a} → CPU {b}" for a, b in pairs.index]
        ax.barh(labels, pairs.to_numpy(), color="#4c72b0")
        for y, v in enumerate(pairs.to_numpy()):
            ax.text(v, y, f" {v:,.0f} ns", va="center")
        ax.set_xlabel("one-way latency, median (ns)")
        ax.set_xlim(0, pairs.max() * 1.3)
        ax.set_title(title)
        return fig
    n = len(matrix)
    fig, ax = plt.subplots(figsize=(min(11, 2.5 + 0.35 * n), min(9, 2 + 0.3 * n)))
    sns.heatmap(matrix, annot=n <= 16, fmt=".0f", cmap="viridis", ax=ax, cbar_kws={"label": "one-way ns (median)"},
                mask=matrix.isna())
    ax.set_title(title)
    return fig


def c2c_compare(table: pd.DataFrame):
    import matplotlib.pyplot as plt
    import seaborn as sns

    if table.empty:
        return _empty("no core-to-core figures")
    fig, ax = plt.subplots(figsize=(10, 0.32 * len(table) + 1.2))
    data = table.assign(what=table["machine"] + " · " + table["relation"])
    sns.barplot(data=data, y="what", x="median_one_way_ns", hue="source", dodge=False, ax=ax, orient="h")
    ax.set_xlabel("median one-way latency, ns")
    ax.set_ylabel("")
    ax.set_title("Cache-line transfer by distance: published machines and this one")
    legend_under_figure(fig, ax)  # centred under the figure: under the axes alone it ran past the canvas
    return fig


def ladder(table: pd.DataFrame, title: str):
    import matplotlib.pyplot as plt
    import seaborn as sns

    if table.empty:
        return _empty("no native measurements")
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(table) + 1.2))
    # a bar's length means nothing on a log axis: one dot per operation, on a guide line
    sns.stripplot(data=table, y="operation", x="ns", hue="kind", ax=ax, orient="h", size=8, jitter=False)
    for i in range(len(table)):
        ax.axhline(i, color="0.9", lw=0.8, zorder=0)
    ax.set_xscale("log")
    ax.set_xlabel("ns per operation (log scale)")
    ax.set_ylabel("")
    for i, v in enumerate(table["ns"]):
        ax.text(v * 1.08, i, f"{v:,.1f}" if v < 100 else f"{v:,.0f}", va="center", fontsize=8)
    ax.set_title(title)
    legend_below(ax)
    return fig


def throughput(curve: pd.DataFrame):
    """Two panels: the article's published points, and each measured database curve."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    if curve.empty:
        return _empty("no insert-rate data")
    pub, meas = curve[curve["kind"] == "published"], curve[curve["kind"] == "measured"]
    panels = [(p, measured) for p, measured in ((pub, False), (meas, True)) if len(p)]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.6, 3.6 * len(panels)), squeeze=False)
    for ax, (part, measured) in zip(axes[:, 0], panels):
        one_recording = part["recording"].nunique() == 1  # then the title names it and the legend the settings
        part = part.assign(what=part["setting"] if one_recording else part["recording"] + ": " + part["setting"])
        sns.lineplot(data=part, x="sessions", y="throughput", hue="what", marker="o", ax=ax)
        if measured and "low" in part:  # the interval over repetitions, as a band in the line's colour
            for line, (_, one) in zip(ax.get_lines(), part.groupby("what", sort=False)):
                one = one.sort_values("sessions")
                ax.fill_between(one["sessions"], one["low"], one["high"], color=line.get_color(), alpha=0.2, lw=0)
        ax.set_ylim(bottom=0)
        ax.set_xticks(sorted(part["sessions"].unique()))  # counts: whole numbers only
        ax.set_xlabel("sessions (threads)")
        ax.set_ylabel("inserts per second")
        title = "measured" if measured else "published (article)"
        ax.set_title(f"{title}: {part['recording'].iloc[0]}" if one_recording else title, wrap=True)
        legend_below(ax)
        if not measured:
            for r in part.itertuples(index=False):
                ax.annotate(f"{r.throughput:,.0f}", (r.sessions, r.throughput), textcoords="offset points",
                            xytext=(4, 6), fontsize=8)
    return fig


def spins(summary: pd.DataFrame, judged: bool = True):
    """The toy's measures (four, five with who flushed the log) by variant and worker count; ``judged=False`` says on the figure that variant B is
    shown, not judged (its workers share one CPU on this machine)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    if summary.empty:
        return _empty("no log-cache runs in this recording")
    data = summary.assign(workers=summary["workers"].map(lambda n: f"{n:g} worker" + ("" if n == 1 else "s")))
    panels = [("throughput", "records per second", False), ("spins_per_record", "spins per record", False),
              ("backoffs_per_million_records", "backoffs per million records", False),
              ("writer_flushes_per_s", "log writer flushes per second", True),
              ("writer_share_pct", "% of the log the writer flushed", False)]
    panels = [p for p in panels if p[0] in data]
    cols = 2 if len(panels) > 2 else len(panels)
    rows = -(-len(panels) // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(7.6, 2.9 * rows + 0.6), squeeze=False, layout="constrained")
    axes = list(grid.flat)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    groups = list(dict.fromkeys(data["workers"]))
    settings = list(dict.fromkeys(data["setting"]))
    width = 0.8 / len(settings)
    colours = sns.color_palette(n_colors=len(settings))
    for ax, (col, title, log) in zip(axes, panels):
        for i, (setting, colour) in enumerate(zip(settings, colours)):
            part = data[data["setting"] == setting]
            x = [groups.index(w) - 0.4 + width * (i + 0.5) for w in part["workers"]]
            whisker = None
            if f"{col}_low" in part:  # the interval over repetitions
                whisker = [(part[col] - part[f"{col}_low"]).clip(lower=0), (part[f"{col}_high"] - part[col]).clip(lower=0)]
            if log:  # no bars on a log axis: a dot with its whisker
                ax.errorbar(x, part[col], yerr=whisker, fmt="o", color=colour, label=setting, elinewidth=1,
                            capsize=2, ecolor="0.2", ms=6)
            else:
                ax.bar(x, part[col], width=width * 0.95, color=colour, label=setting, yerr=whisker,
                       error_kw={"elinewidth": 1, "capsize": 2, "ecolor": "0.2"})
        ax.set_xticks(range(len(groups)), groups)
        ax.set_title(title)
        if log:
            ax.set_yscale("log")
        if col == "writer_share_pct":  # a share: the whole scale, so 4% looks like 4%
            ax.set_ylim(0, 105)
        ax.set_xlim(-0.6, len(groups) - 0.4)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 3), frameon=False, fontsize="small")
    if not judged:
        fig.suptitle("Variant B shown, not judged: on this machine its workers share one CPU", fontsize="small")
    return fig


def waits(table: pd.DataFrame, title: str):
    import matplotlib.pyplot as plt

    if table.empty:
        return _empty("no wait samples")
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(table) + 1.5))
    t = table.copy()
    t.index = [f"{LABELS.get(v, v)}, at {s:g} session{'' if s == 1 else 's'}" for v, s in t.index]
    t.plot.barh(stacked=True, ax=ax, colormap="tab20")
    ax.invert_yaxis()
    ax.set_xlabel("% of samples of active client backends")
    ax.set_title(title)
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    return fig


def stack_shares(shares: pd.DataFrame, published: pd.DataFrame, labels: dict | None = None):
    """Spin-wait share of samples per capture, next to the article's BackOff shares."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from .spec import LABELS

    # said in words: the variant's name, and the recording as its engine and kind (``labels``: id -> label),
    # never a folder id
    labels = labels or {}
    rows = [{"what": f"article: {LABELS.get(r.variant, r.variant)}", "pct": float(r.pct), "source": "published"}
            for r in published.itertuples(index=False) if "BackOff" in r.function]
    rows += [{"what": f"{labels.get(r.recording, r.recording)}: {LABELS.get(r.variant, r.variant)}",
              "pct": float(r.pct), "source": "measured"}
             for r in shares.itertuples(index=False)]
    data = pd.DataFrame(rows)
    fig, ax = plt.subplots(figsize=(9, 0.4 * len(data) + 1.2))
    sns.barplot(data=data, y="what", x="pct", hue="source", dodge=False, ax=ax, orient="h")
    ax.set_xlabel("% of CPU samples in the spinlock's backoff")
    ax.set_ylabel("")
    for i, v in enumerate(data["pct"]):
        ax.text(v + 0.3, i, f"{v:.2f}%", va="center", fontsize=8)
    legend_under_figure(fig, ax)
    return fig


__all__ = ["heatmap", "c2c_compare", "ladder", "throughput", "spins", "waits", "stack_shares"]
