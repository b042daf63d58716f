"""The chapter's figures (seaborn) and its stack-sample section."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


from .analysis import HELD, UNHELD
from .common import LABELS
from .data import GhostRecording


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


def unresolved_share(profile) -> float:
    """Share of sampled frames perf could not name (``[unknown]``), weighted by samples."""
    unknown = np.array(["[unknown]" in str(n) for n in profile.frame_names()], dtype=float)
    per_stack = np.bincount(profile.entry_stack(), weights=unknown[profile.stack_frames],
                            minlength=profile.n_stacks)
    weights = profile.stack_weights()
    total = float(np.sum(profile.stack_lengths() * weights))
    return float(np.sum(per_stack * weights) / total) if total else float("nan")


def stacks_section(g: GhostRecording, top: int = 12) -> dict[str, Any]:
    """Text, figures and tables for the CPU-stacks section, or why there are none."""
    out: dict[str, Any] = {"text": "", "figures": [], "tables": []}
    if not g.stacks:
        why = [n for n in g.recording.manifest.get("notes", []) if n.startswith("stacks")]
        out["text"] = ("*This recording holds no CPU stacks*"
                       + (f": {'; '.join(why)}." if why else " (it was not made with perf sampling)."))
        return out
    from contention_book import perftools

    profiles = {variant: perftools.load(path) for variant, path in sorted(g.stacks.items())}
    for variant, prof in profiles.items():
        setting = LABELS.get(variant, variant)
        table = perftools.top_functions(prof, n=top)
        out["tables"].append(pd.DataFrame({
            "setting": setting, "function": table["function"],
            "exclusive %": table["exclusive_pct"].round(1), "inclusive %": table["inclusive_pct"].round(1),
        }).set_index(["setting", "function"]))
        out["figures"].append(perftools.flame_figure(prof, title=f"{g.label}: {setting}"))
    base, held = UNHELD[g.engine], HELD[g.engine]
    if base in profiles and held in profiles:
        diff = perftools.diff(profiles[base], profiles[held], by="function").head(top)
        out["tables"].append(pd.DataFrame({
            "function": diff["name"], f"% {LABELS[base]}": diff["pct_a"].round(1),
            f"% {LABELS[held]}": diff["pct_b"].round(1), "change (points)": diff["change_pp"].round(1),
        }).set_index("function"))
    unknown = unresolved_share(next(iter(profiles.values())))
    hottest = []
    for variant, prof in profiles.items():
        top1 = perftools.top_functions(prof, n=1).iloc[0]
        hottest.append(f"*{LABELS.get(variant, variant)}*: `{top1['function']}` "
                       f"({top1['exclusive_pct']:.0f}% of samples exclusive)")
    out["text"] = (
        "The hottest function per setting: " + "; ".join(hottest) + ". " +
        f"Stacks were sampled with `perf` at the measured window of each setting. Debian's postgres binary is "
        f"stripped, so static functions show as `[unknown]` ({unknown:.0%} of sampled frames in the first "
        "capture). The call chains are complete, and exported functions resolve by name. The tables give the "
        "functions with the largest exclusive share. The last table gives the change in share between the two "
        "settings."
    )
    return out
