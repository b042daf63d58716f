"""The chapter's figures (seaborn) and its stack-sample section."""
from __future__ import annotations


import pandas as pd


from .spec import LABELS
from ..shared.style import legend_below


def _bars(ax, rows: pd.DataFrame, value: str, low: str, high: str) -> None:
    """Horizontal bars of the medians, the interval over repetitions as a whisker, lower bounds hatched."""
    import matplotlib.pyplot as plt

    palette = dict(zip(rows["recording"].drop_duplicates(), plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    y = range(len(rows))
    for i, r in zip(y, rows.itertuples()):
        v = getattr(r, value)
        lo, hi = getattr(r, low), getattr(r, high)
        ax.barh(i, v, color=palette[r.recording], hatch="//" if r.lower_bound else None,
                edgecolor="white" if not r.lower_bound else "black", label=r.recording)
        if r.n > 1 and lo == lo and hi == hi:
            ax.errorbar(v, i, xerr=[[v - lo], [hi - v]], color="black", capsize=3, lw=1)
        if r.lower_bound:
            ax.annotate("≥ lower bound", (v, i), xytext=(-4, 0), textcoords="offset points", va="center",
                        ha="right", fontsize=8, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.set_yticks(list(y))
    ax.invert_yaxis()


def plot_elapsed(table: pd.DataFrame):
    """Seconds per setting, and the same normalised to the engine's own row versioning without an open
    transaction: medians, intervals over repetitions, published lower bounds hatched."""
    import matplotlib.pyplot as plt

    rows = table.reset_index(drop=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.42 * len(rows) + 1.6), gridspec_kw={"width_ratios": [1.2, 1]})
    _bars(axes[0], rows, "elapsed_s", "low", "high")
    axes[0].set_yticklabels(rows["setting"])
    axes[0].set_xscale("log")
    axes[0].set_xlabel("elapsed seconds (log scale)")
    axes[0].set_title("Time for the whole update loop")
    rows = rows.assign(vs_low=rows["vs_versioned_low"], vs_high=rows["vs_versioned_high"])
    _bars(axes[1], rows, "vs_versioned", "vs_low", "vs_high")
    axes[1].set_yticklabels([])
    axes[1].set_xscale("log")
    axes[1].axvline(1, color="grey", lw=0.8)
    axes[1].set_xlabel("× row versioning with nothing held (log)")
    axes[1].set_title("Normalised like for like")
    from matplotlib.patches import Patch

    colours = dict(zip(rows["recording"].drop_duplicates(), plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    fig.legend([Patch(color=c) for c in colours.values()], list(colours), loc="upper center",
               bbox_to_anchor=(0.5, 0.0), ncol=min(len(colours), 3), frameon=False, fontsize="small")
    return fig


def plot_storage(frames: pd.DataFrame):
    import matplotlib.pyplot as plt
    import seaborn as sns

    frames = frames.copy()
    frames["phase"] = frames["phase"].map({"after_run": "right after the run", "after_cleanup": "after cleanup"})
    n = frames.assign(what=frames["recording"] + frames["setting"])["what"].nunique()
    fig, axes = plt.subplots(2, 1, figsize=(7.6, 2 * (0.45 * n + 1.6)), layout="constrained")
    for ax, col, title in ((axes[0], "pages", "Pages (all levels / heap + index)"),
                           (axes[1], "not_removed", "Ghosts / dead versions not yet removed")):
        data = frames.dropna(subset=[col])
        data = data.assign(what=data["recording"] + " · " + data["setting"], value=data[col].clip(lower=0.5))
        sns.barplot(data=data, y="what", x="value", hue="phase", ax=ax, orient="h")
        ax.set_xscale("log")
        ax.set_xlabel(f"{col.replace('_', ' ')} (log scale)")
        ax.set_ylabel("")
        ax.set_title(title)
        if ax.get_legend():
            ax.get_legend().remove()
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
