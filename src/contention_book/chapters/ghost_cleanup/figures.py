"""The chapter's figures (seaborn) and its stack-sample section."""
from __future__ import annotations


import pandas as pd


from .spec import LABELS
from ..shared.style import legend_below


def _positions(rows: pd.DataFrame) -> tuple[list[float], list[tuple[float, str]]]:
    """Each row's place on the y axis, and a heading row (place, words) above each recording's settings, so the
    axis says which engine and version a setting ran on without the reader matching colours."""
    y, headings, at = [], [], 0.0
    for group in rows["group"].drop_duplicates():
        headings.append((at, group))
        at += 1
        for _ in range(int((rows["group"] == group).sum())):
            y.append(at)
            at += 1
        at += 0.4  # a little air between the groups
    return y, headings


def _dots(ax, rows: pd.DataFrame, value: str, low: str, high: str, label: bool) -> None:
    """One dot per row at its median, the interval over repetitions as a whisker; a published lower bound is a
    right-pointing triangle (the true value lies further right).  Dots, not bars: the axes are logarithmic.  Rows
    sit under a heading naming their engine and version (:func:`_positions`); ``label``: write the tick labels."""
    import matplotlib.pyplot as plt

    palette = dict(zip(rows["group"].drop_duplicates(), plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    y, headings = _positions(rows)
    for i, r in zip(y, rows.itertuples()):
        v = getattr(r, value)
        lo, hi = getattr(r, low), getattr(r, high)
        if r.n > 1 and lo == lo and hi == hi:
            ax.errorbar(v, i, xerr=[[v - lo], [hi - v]], color="black", capsize=3, lw=1)
        ax.plot([v], [i], marker=">" if r.lower_bound else "o", markersize=7, color=palette[r.group],
                linestyle="none")
        if r.lower_bound:
            ax.annotate("lower bound", (v, i), xytext=(8, 0), textcoords="offset points", va="center",
                        fontsize=7.5)
    ticks = sorted([*y, *(at for at, _ in headings)])
    words = {**{at: h for at, h in headings}, **dict(zip(y, rows["setting"]))}
    ax.set_yticks(ticks)
    ax.set_yticklabels([words[t] for t in ticks] if label else [])
    if label:
        for tick, t in zip(ax.get_yticklabels(), ticks):
            if t in dict(headings):
                tick.set_fontweight("bold")
    for at, _ in headings[1:]:
        ax.axhline(at - 0.7, color="#bbbbbb", lw=0.6)
    ax.set_ylim(max(ticks) + 0.5, -0.5)
    ax.grid(axis="y", visible=False)


def plot_elapsed(table: pd.DataFrame):
    """Seconds per setting, and the same normalised to the engine's own row versioning without an open
    transaction: medians, intervals over repetitions, published lower bounds marked.  Each recording's settings
    sit under a bold heading that names its engine and version."""
    import matplotlib.pyplot as plt

    rows = table.reset_index(drop=True)
    height = 0.42 * (len(rows) + rows["group"].nunique()) + 1.2
    fig, axes = plt.subplots(1, 2, figsize=(11, height), gridspec_kw={"width_ratios": [1.2, 1]})
    _dots(axes[0], rows, "elapsed_s", "low", "high", label=True)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("elapsed seconds (log scale)")
    axes[0].set_title("Time for the whole update loop")
    rows = rows.assign(vs_low=rows["vs_versioned_low"], vs_high=rows["vs_versioned_high"])
    _dots(axes[1], rows, "vs_versioned", "vs_low", "vs_high", label=False)
    axes[1].set_xscale("log")
    axes[1].axvline(1, color="grey", lw=0.8)
    axes[1].set_xlabel("÷ nothing held (log scale)")  # the caption says what "nothing held" is, per engine
    axes[1].set_title("Normalised like for like")
    return fig


def plot_storage(frames: pd.DataFrame):
    """Pages, and ghosts or dead versions not yet removed, per setting: right after the run and after cleanup.
    Dots on log axes (a zero is drawn at 0.5, the axis's floor, and labelled so)."""
    import matplotlib.pyplot as plt

    frames = frames.copy()
    frames["what"] = frames["recording"] + " · " + frames["setting"]
    order = list(frames["what"].drop_duplicates())
    phases = {"after_run": ("right after the run", "o", "#c0392b"), "after_cleanup": ("after cleanup", "s", "#2e86c1")}
    fig, axes = plt.subplots(2, 1, figsize=(7.6, 2 * (0.4 * len(order) + 1.4)), layout="constrained", sharey=True)
    for ax, col, title in ((axes[0], "pages", "Pages"),
                           (axes[1], "not_removed", "Ghosts or dead tuples still stored")):
        for phase, (label, marker, colour) in phases.items():
            part = frames[(frames["phase"] == phase)].dropna(subset=[col])
            y = [order.index(w) + (0.12 if phase == "after_cleanup" else -0.12) for w in part["what"]]
            ax.plot(part[col].clip(lower=0.5), y, marker=marker, linestyle="none", color=colour, label=label)
        ax.set_xscale("log")
        ax.set_xlim(left=0.4)
        ax.set_xlabel(f"{'pages' if col == 'pages' else 'ghosts or dead tuples'} (log; 0 drawn at 0.5)")
        ax.set_yticks(range(len(order)))
        ax.set_yticklabels(order)
        ax.set_ylim(len(order) - 0.5, -0.5)
        ax.set_title(title)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, frameon=False, fontsize="small")
    return fig


def plot_curve(curve: pd.DataFrame, title: str):
    import matplotlib.pyplot as plt
    import seaborn as sns

    data = curve.assign(setting=curve["variant"].map(lambda v: LABELS.get(v, v)))
    fig, ax = plt.subplots(figsize=(8, 3.8))
    # the median over repetitions, and the band from the lowest to the highest repetition
    sns.lineplot(data=data, x="updates_done", y="us_per_update", hue="setting", marker="o", markersize=3, ax=ax,
                 estimator="median", errorbar=("pi", 100))
    ax.set_xlabel("updates done")
    ax.set_ylabel("µs per update in the chunk")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    legend_below(ax)
    return fig
