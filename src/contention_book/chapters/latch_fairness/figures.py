"""The chapter's figures (seaborn / matplotlib); each function returns a Figure."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .spec import KIND_LABELS, KINDS, VARIANT_LABELS
from ..shared.style import legend_below, legend_under_figure
from ..shared.offcpu import ChapterOffCpu

PALETTE = {"fair": "#c0392b", "unfair": "#2e86c1", "spin_then_park": "#27ae60", "eventual": "#8e44ad"}


def _empty(ax, text):
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center")


def plot_published(metrics: pd.DataFrame):
    """Paired bars, fair vs unfair, one panel per counter; log scales where the values span decades."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    names = list(dict.fromkeys(metrics["metric"]))
    cols = 2
    rows = int(np.ceil(len(names) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(7.6, 2.6 * rows + 0.4), squeeze=False)
    palette = {VARIANT_LABELS["fair"]: PALETTE["fair"], VARIANT_LABELS["unfair"]: PALETTE["unfair"]}
    for ax, name in zip(axes.flat, names):
        part = metrics[metrics["metric"] == name].dropna(subset=["value"])
        if part.empty:
            _empty(ax, f"{name}\nnot in this recording")
            continue
        shown = part.assign(shown=part["value"].clip(lower=0.5))
        positive = part["value"][part["value"] > 0]
        log = bool(len(positive) and positive.max() / max(positive.min(), 0.5) > 100)
        if log:  # a bar's length means nothing on a log axis: dots instead
            sns.stripplot(data=shown, x="recording", y="shown", hue="setting", palette=palette, ax=ax, size=8,
                          dodge=True, jitter=False, legend=ax is axes.flat[0])
            ax.set_yscale("log")
            ax.set_ylabel("log scale (a zero at 0.5)")
        else:
            sns.barplot(data=shown, x="recording", y="shown", hue="setting", palette=palette, ax=ax,
                        legend=ax is axes.flat[0])
            ax.set_ylabel("")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("")
        ax.tick_params(axis="x", labelsize=7)
        if log:
            for coll, val in zip([c for c in ax.collections if len(c.get_offsets())], shown["value"]):
                x, y = coll.get_offsets()[0]
                ax.annotate(f"{val:,.0f}" if val >= 10 else f"{val:g}", (x, y), ha="left", va="center", fontsize=7,
                            xytext=(6, 0), textcoords="offset points")
        else:
            for bar, val in zip(ax.patches, shown["value"]):
                ax.annotate(f"{val:,.0f}" if val >= 10 else f"{val:g}", (bar.get_x() + bar.get_width() / 2,
                            bar.get_height()), ha="center", va="bottom", fontsize=7)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    if axes.flat[0].get_legend():
        handles, labels = axes.flat[0].get_legend_handles_labels()
        axes.flat[0].get_legend().remove()
        fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), frameon=False, fontsize="small")
    return fig


def _kind_lines(ax, summary, y, cpus, ylabel, log=True, band=None):
    """One line per lock kind (medians); ``band`` = (low, high) columns draws each kind's interval around it."""
    import seaborn as sns

    data = summary.assign(setting=summary["kind"].map(lambda k: KIND_LABELS.get(k, k)))
    palette = {KIND_LABELS[k]: PALETTE[k] for k in KINDS}
    order = [KIND_LABELS[k] for k in KINDS if k in set(summary["kind"])]
    sns.lineplot(data=data, x="threads", y=y, hue="setting", hue_order=order, palette=palette, marker="o", ax=ax)
    if band:
        for kind, part in summary.groupby("kind"):
            ax.fill_between(part["threads"], part[band[0]], part[band[1]], color=PALETTE[kind], alpha=0.2, lw=0)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(summary["threads"].unique()))
    ax.get_xaxis().set_major_formatter(__import__("matplotlib").ticker.ScalarFormatter())
    ax.get_xaxis().set_minor_formatter(__import__("matplotlib").ticker.NullFormatter())
    if log:
        ax.set_yscale("log")
    if cpus:
        ax.axvline(cpus, color="grey", ls="--", lw=0.8)
        threads = sorted(summary["threads"].unique())
        if threads and threads[-1] > cpus:  # the oversubscribed points: shown, labelled, never judged
            ax.axvspan(cpus, threads[-1] * 1.2, color="grey", alpha=0.12, lw=0)
            middle = (cpus * threads[-1]) ** 0.5  # the shaded span's middle on the log axis
            ax.annotate("oversubscribed:\nshown, not judged", (middle, 0.5), xycoords=("data", "axes fraction"),
                        ha="center", va="center", fontsize=7, color="dimgrey")
        ax.annotate(f"{cpus} logical CPUs", (cpus, 1), xycoords=("data", "axes fraction"), ha="left", va="top",
                    fontsize=7, color="grey", xytext=(3, -3), textcoords="offset points")
    ax.set_xlabel("threads")
    ax.set_ylabel(ylabel)


def plot_throughput(summary: pd.DataFrame | None, cpus: int | None):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    if summary is None or summary.empty:
        _empty(ax, "this recording holds no native sweep")
        return fig
    s = summary.assign(mrps=summary["records_per_s"] / 1e6, mrps_low=summary["records_per_s_low"] / 1e6,
                       mrps_high=summary["records_per_s_high"] / 1e6)
    _kind_lines(ax, s, "mrps", cpus, "million records / s (log scale)", band=("mrps_low", "mrps_high"))
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_title("Throughput of one hot lock, by hand-off policy (median; band: spread of repetitions)")
    legend_below(ax)
    return fig


def plot_latency(summary: pd.DataFrame | None, cpus: int | None):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7.6, 3.8), sharey=False)
    if summary is None or summary.empty:
        for ax in axes:
            _empty(ax, "this recording holds no native sweep")
        return fig
    s = summary.assign(p99_us=summary["wait_p99_ns"].clip(lower=1) / 1e3,
                       p99_us_low=summary["wait_p99_ns_low"].clip(lower=1) / 1e3,
                       p99_us_high=summary["wait_p99_ns_high"].clip(lower=1) / 1e3,
                       max_ms=summary["wait_max_ns"].clip(lower=1) / 1e6)
    _kind_lines(axes[0], s, "p99_us", cpus, "µs (log scale)", band=("p99_us_low", "p99_us_high"))
    _kind_lines(axes[1], s, "max_ms", cpus, "ms (log scale)")
    axes[1].set_title("Longest single wait\n(worst repetition)", fontsize="medium")
    axes[0].set_title("99th percentile wait\n(median; band: repetitions)", fontsize="medium")
    legend_under_figure(fig, axes[0])
    return fig


def plot_per_record(summary: pd.DataFrame | None, cpus: int | None):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(7.6, 3.6))
    if summary is None or summary.empty:
        for ax in axes:
            _empty(ax, "this recording holds no native sweep")
        return fig
    floor = 1e-5
    s = summary.copy()
    for short, col in (("w", "waits_per_record"), ("sp", "spins_per_record"), ("cs", "cs_per_record")):
        for suffix in ("", "_low", "_high"):
            s[short + suffix] = summary[col + suffix].clip(lower=floor)
    for ax, col, title in ((axes[0], "w", "Waits\n(joined the queue)"),
                           (axes[1], "sp", "Spins\n(PAUSE)"),
                           (axes[2], "cs", "Context\nswitches")):
        _kind_lines(ax, s, col, cpus, f"per record (log; {floor:g} = none)" if ax is axes[0] else "",
                    band=(col + "_low", col + "_high"))
        ax.set_title(title, fontsize="medium")
    legend_under_figure(fig, axes[0])
    return fig


# the off-CPU figure and table (chapters.shared.offcpu): this chapter's title and what its waits look like
SITE_WORDS = {  # the benchmark's functions as a reader says them; the flame graph's boxes keep the names
    "qlock_acquire": "taking the lock", "try_barge": "trying to barge in", "run_worker": "the worker's loop",
    "qlock_release": "releasing the lock", "syscall": "a system call (futex or yield)",
    "futex_wait": "asleep in the futex", "clock_gettime": "reading the clock", "memmove": "copying the record",
    "memcpy": "copying the record", "nanosleep": "sleeping", "sched_yield": "yielding the CPU (a back-off)",
}


SITE_PLACES = {"latch_convoy": "the benchmark", "libc.so.6": "the C library", "[vdso]": "the kernel's vDSO"}


def site_words(site: str, html: bool = False) -> str:
    """'latch_convoy!qlock_acquire.constprop.0' -> 'taking the lock (qlock_acquire, in the benchmark)': what the
    frame does in plain words first, then the function's own name, which the flame graph's boxes show.  ``html``:
    the name as code (``<code>qlock_acquire</code>``), for a table column shown as HTML."""
    import html as _html
    import re

    module, _, func = str(site).rpartition("!")
    bare = re.sub(r"(\.(constprop|isra|part|cold)\.\d+)+$", "", func.split("@")[0]).strip("_")
    words = next((w for k, w in SITE_WORDS.items() if k in bare), "")
    where = SITE_PLACES.get(module, module or "the kernel")
    name = f"<code>{_html.escape(bare)}</code>" if html else bare
    where = _html.escape(where) if html else where
    return f"{_html.escape(words) if html else words} ({name}, in {where})" if words else f"{name} (in {where})"


class _OffCpu(ChapterOffCpu):
    WHERE = "where it waited"

    def sites(self, measured, variant: str, top: int = 8):
        """The table of where the threads waited, each site in plain words with its function's name as code
        (show it with ``raw=(offcpu.WHERE,)``: the column holds HTML)."""
        t = super().sites(measured, variant, top)
        if not t.empty and self.WHERE in t:
            t = t.assign(**{self.WHERE: t[self.WHERE].map(lambda s: site_words(s, html=True))})
        return t


offcpu = _OffCpu("{variant} lock at the deciding thread count: the benchmark's threads off the CPU",
                       "A fair lock's waiters sleep in futex_wait until the holder hands the lock over; the "
                       "unfair lock's waiters sleep less, because a running thread may take the lock back "
                       "first. The recording also keeps the wake-up stacks: who woke them.")
