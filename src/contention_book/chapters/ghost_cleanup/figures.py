"""The chapter's figures (seaborn) and its stack-sample section."""
from __future__ import annotations


import pandas as pd


from .spec import LABELS


def plot_elapsed(table: pd.DataFrame):
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.2, 1]})
    sns.barplot(data=table, y="setting", x="elapsed_s", hue="recording", ax=axes[0], orient="h")
    axes[0].set_xscale("log")
    axes[0].set_xlabel("elapsed seconds (log scale)")
    axes[0].set_ylabel("")
    axes[0].set_title("Time for the whole update loop")
    sns.barplot(data=table, y="setting", x="vs_baseline", hue="recording", ax=axes[1], orient="h", legend=False)
    axes[1].set_xscale("log")
    axes[1].axvline(1, color="grey", lw=0.8)
    axes[1].set_xlabel("× the recording's own baseline (log scale)")
    axes[1].set_ylabel("")
    axes[1].set_yticklabels([])
    axes[1].set_title("Normalised: comparable across engines")
    axes[0].legend(loc="lower right", fontsize=8, title=None)
    fig.tight_layout()
    return fig


def plot_storage(frames: pd.DataFrame):
    import matplotlib.pyplot as plt
    import seaborn as sns

    frames = frames.copy()
    frames["phase"] = frames["phase"].map({"after_run": "right after the run", "after_cleanup": "after cleanup"})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, col, title in ((axes[0], "pages", "Pages (all levels / heap + index)"),
                           (axes[1], "not_removed", "Ghosts / dead versions not yet removed")):
        data = frames.dropna(subset=[col])
        data = data.assign(what=data["recording"] + " · " + data["setting"], value=data[col].clip(lower=0.5))
        sns.barplot(data=data, y="what", x="value", hue="phase", ax=ax, orient="h")
        ax.set_xscale("log")
        ax.set_xlabel(f"{col.replace('_', ' ')} (log scale)")
        ax.set_ylabel("")
        ax.set_title(title)
        ax.legend(fontsize=8, title=None)
    axes[1].set_yticklabels([])
    fig.tight_layout()
    return fig


def plot_curve(curve: pd.DataFrame, title: str):
    import matplotlib.pyplot as plt
    import seaborn as sns

    data = curve.assign(setting=curve["variant"].map(lambda v: LABELS.get(v, v)))
    fig, ax = plt.subplots(figsize=(8, 3.8))
    sns.lineplot(data=data, x="updates_done", y="us_per_update", hue="setting", marker="o", markersize=3, ax=ax)
    ax.set_xlabel("updates done")
    ax.set_ylabel("µs per update in the chunk")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.legend(title=None, fontsize=8)
    fig.tight_layout()
    return fig
