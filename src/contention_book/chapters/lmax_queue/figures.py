"""The chapter's figures (seaborn / matplotlib)."""
from __future__ import annotations

import pandas as pd

from . import tables as analysis
from .recordings import LmaxRecording
from ..shared.style import fixed_jitter, legend_below
from ..shared.offcpu import ChapterOffCpu


def plot_scaling(adkin: LmaxRecording, db: LmaxRecording):
    """Delivered rate against sessions per queue design (what the consumers took off; push rate for a design
    that ran without consumers), with the article's one printed rate, which is a push rate with no consumer."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    measured = analysis.scaling(db)
    popped = "dequeue_per_s" in measured and "consumers" in measured
    measured["delivered"] = measured["dequeue_per_s"].where(measured["consumers"] > 0, measured["throughput"]) \
        if popped else measured["throughput"]
    if popped:
        for side in ("low", "high"):
            measured[f"delivered_{side}"] = measured[f"dequeue_per_s_{side}"].where(
                measured["consumers"] > 0, measured[f"throughput_{side}"])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    sns.lineplot(data=measured, x="sessions", y="delivered", hue="design", style="design", markers=True,
                 dashes=False, ax=ax, palette=_palette(measured))
    _bands(ax, measured, "delivered" if popped else "throughput")
    pub = analysis.scaling(adkin)
    for row in pub.itertuples():
        ax.scatter([row.sessions], [row.throughput], marker="*", s=220, color="black", zorder=5)
        ax.annotate(f"published: {row.design}\n{row.throughput:,.0f} msgs/s pushed, no consumer, "
                    f"{row.sessions} thread", (row.sessions, row.throughput), textcoords="offset points",
                    xytext=(12, -22), fontsize=8)
    knee = analysis.finding(adkin, "scaling_knee", "imoltp_v1")
    if knee is not None:
        ax.axvline(float(knee["sessions"]), color="grey", ls="--", lw=1)
        ax.text(float(knee["sessions"]), 0.97, f"published: v1 leaves linear \nscaling at {int(knee['sessions'])} "
                "threads ", transform=ax.get_xaxis_transform(), fontsize=8, va="top", ha="right", color="dimgrey")
    ax.set_yscale("log")
    ax.set_xscale("log", base=2)
    _integer_ticks(ax, sorted(set(measured["sessions"]) | set(pub["sessions"])))
    _shade_oversubscribed(ax, db)
    ax.set_xlabel("producer sessions, each with a consumer (log scale)")
    ax.set_ylabel("messages delivered per second (log scale)")
    ax.set_title(f"Queue designs: {db.label} against the article's point")
    legend_below(ax)
    return fig


def _log_if_positive(ax, values) -> None:
    """A log axis where there is something positive to draw on it (a tiny run may have an empty backlog)."""
    if (pd.to_numeric(values, errors="coerce") > 0).any():
        ax.set_yscale("log")
    else:
        ax.set_ylabel(ax.get_ylabel().replace(" (log)", ""))


def _integer_ticks(ax, counts) -> None:
    """Ticks at the counts measured, written as whole numbers (1, 2, 4, 8; never 1.5 or 36.5)."""
    import matplotlib.ticker

    ax.set_xticks([int(c) for c in counts])
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _pos: f"{int(round(v))}"))
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())


def _shade_oversubscribed(ax, g: LmaxRecording) -> None:
    """Grey out the session counts whose threads outnumber the logical CPUs: shown, labelled, never deciding."""
    fit = analysis.regime_sessions(g)
    counts = sorted(int(n) for n in g.runs["sessions"].unique())
    over = [n for n in counts if analysis.oversubscribed(g, n)]
    if not over:
        return
    start = fit if fit is not None else counts[0] / 1.5
    ax.axvspan(start * 1.15 if fit is not None else start, ax.get_xlim()[1], color="grey", alpha=0.08, lw=0)
    ax.text(0.99, 0.03, f"shaded: threads outnumber the {analysis.logical_cpus(g)} logical CPUs (oversubscribed)",
            transform=ax.transAxes, ha="right", va="bottom", fontsize=7, color="dimgrey")


def _palette(table) -> dict:
    import seaborn as sns

    designs = list(dict.fromkeys(table["design"]))
    return dict(zip(designs, sns.color_palette(n_colors=len(designs))))


def _bands(ax, table, col: str) -> None:
    """The interval over repetitions of ``col`` as a band under each design's line, in its colour."""
    colours = _palette(table)
    for design, part in table.groupby("design", sort=False):
        if f"{col}_low" in part:
            ax.fill_between(part["sessions"], part[f"{col}_low"], part[f"{col}_high"], color=colours[design],
                            alpha=0.15, lw=0)


def plot_delivery(db: LmaxRecording):
    """With consumers running: pushed against popped per second, the age of a message when it was taken off
    (p99) and the backlog left at the end, per design and session count."""
    import matplotlib
    import matplotlib.pyplot as plt
    import seaborn as sns

    t = analysis.scaling(db)
    fig, axes = plt.subplots(3, 1, figsize=(7.6, 10))
    if "dequeue_per_s" not in t or not (t.get("consumers", 0) > 0).any():
        for ax in axes:
            ax.axis("off")
        axes[1].text(0.5, 0.5, f"{db.label}: no consumers ran, so nothing was delivered to measure",
                     ha="center")
        return fig
    long = pd.concat([t.assign(what="pushed", rate=t["throughput"]),
                      t.assign(what="popped", rate=t["dequeue_per_s"])], ignore_index=True)
    colours = _palette(t)
    sns.lineplot(data=long, x="sessions", y="rate", hue="design", style="what", markers=True, ax=axes[0],
                 palette=colours)
    axes[0].set_ylabel("messages per second (log)")
    axes[0].set_title("Pushed (solid) and popped (dashed)")
    sns.lineplot(data=t, x="sessions", y="age_p99_ms", hue="design", marker="o", ax=axes[1], legend=False,
                 palette=colours)
    _bands(axes[1], t, "age_p99_ms")
    axes[1].set_ylabel("p99 age when popped, ms (log)")
    axes[1].set_title("Enqueue to dequeue, 99th percentile")
    if "backlog" in t:
        sns.lineplot(data=t, x="sessions", y="backlog", hue="design", marker="o", ax=axes[2], legend=False,
                     palette=colours)
        # a backlog of zero is common (the consumers kept up): symlog, linear below 1, so zeros stay on the axis
        axes[2].set_yscale("symlog", linthresh=1)
        top = float(pd.to_numeric(t["backlog"], errors="coerce").max())
        axes[2].set_ylim(bottom=0, top=top * 3 if top > 0 else 10)  # headroom: the highest points stay inside
    else:  # recordings made before the backlog was counted
        axes[2].text(0.5, 0.5, "this recording did not count the backlog", ha="center", transform=axes[2].transAxes)
    axes[2].set_ylabel("messages left unread\n(log above 1, zero shown)")
    axes[2].set_title("Backlog at the end of a point")
    _log_if_positive(axes[0], long["rate"])
    _log_if_positive(axes[1], t["age_p99_ms"])
    for ax in axes:
        ax.set_xscale("log", base=2)
        _integer_ticks(ax, sorted(t["sessions"].unique()))
        _shade_oversubscribed(ax, db)
        ax.set_xlabel("producers (and as many consumers)")
    axes[0].get_legend().remove()
    handles, labels = axes[0].get_legend_handles_labels()
    # seaborn puts its column names ("design", "what") in as legend titles: the caption says what they are
    keep = [(h, lab) for h, lab in zip(handles, labels) if lab not in ("design", "what")]
    fig.legend(*zip(*keep), fontsize=7, loc="outside lower center", ncol=3, frameon=False)
    return fig


def plot_native(native: LmaxRecording, lmax: LmaxRecording):
    import matplotlib.pyplot as plt
    import seaborn as sns

    t = analysis.scaling(native)
    fig, axes = plt.subplots(3, 1, figsize=(7.6, 10))
    sns.lineplot(data=t, x="sessions", y="throughput", hue="design", style="design", markers=True, dashes=False,
                 ax=axes[0])
    _bands(axes[0], t, "throughput")
    axes[0].set_yscale("log")
    _integer_ticks(axes[0], sorted(t["sessions"].unique()))
    _shade_oversubscribed(axes[0], native)
    axes[0].set_xlabel("producers (one consumer)")
    axes[0].set_ylabel("messages per second (log)")
    axes[0].set_title(f"Measured: {native.label}")
    legend_below(axes[0])
    lat = t.melt(id_vars=["design", "sessions"], value_vars=["p50_us", "p99_us"], var_name="percentile",
                 value_name="us")
    lat["series"] = lat["design"].str.split(" ").str[0] + " " + lat["percentile"].str.replace("_us", "")
    sns.lineplot(data=lat, x="sessions", y="us", hue="series", marker="o", ax=axes[1])
    axes[1].set_yscale("log")
    _integer_ticks(axes[1], sorted(t["sessions"].unique()))
    _shade_oversubscribed(axes[1], native)
    axes[1].set_xlabel("producers (one consumer)")
    axes[1].set_ylabel("enqueue to dequeue, µs (log)")
    axes[1].set_title("Latency percentiles (measured)")
    legend_below(axes[1])
    pub = lmax.runs.assign(design=[analysis.label(v) for v in lmax.runs["variant"]])
    sns.pointplot(data=pub, x="topology", y="throughput", hue="design", ax=axes[2], linestyle="none",
                  markers="D", dodge=0.3)
    axes[2].set_yscale("log")
    axes[2].set_xlabel("")
    axes[2].set_ylabel("operations per second (log)")
    axes[2].set_title("Published: LMAX paper (Java)")
    axes[2].tick_params(axis="x", labelsize=8)
    legend_below(axes[2])
    return fig


def plot_false_sharing(native: LmaxRecording, lmax: LmaxRecording):
    import matplotlib.pyplot as plt
    import seaborn as sns

    names = {"single": "1 thread, plain add", "adjacent": "2 threads, one line", "padded": "2 threads, padded",
             "single_atomic": "1 thread, atomic add", "shared_atomic": "2 threads, one atomic"}
    order = [names[k] for k in ("single", "adjacent", "padded", "single_atomic", "shared_atomic")]
    fs = analysis.false_sharing(native)
    fs["layout"] = fs["layout"].map(lambda x: names.get(x, x))
    order = [o for o in order if o in set(fs["layout"])] + [x for x in fs["layout"] if x not in order]
    inc = analysis.paper_increments(lmax)
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    runs = analysis.counter_costs(native)
    with fixed_jitter():  # the same dots in every build
        sns.stripplot(data=runs.assign(layout=runs["layout"].map(lambda x: names.get(x, x))), order=order,
                      y="layout", x=analysis.PER_COUNTER, ax=axes[0], color="tab:blue", alpha=0.5, size=4)
    sns.scatterplot(data=fs, y="layout", x=analysis.PER_COUNTER, ax=axes[0], color="black", marker="|", s=300,
                    legend=False)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("ns per increment of one counter (log)")
    axes[0].set_ylabel("")
    axes[0].set_title(f"Measured: {native.label}")
    sns.scatterplot(data=inc, y="method", x="ns_per_increment", ax=axes[1], color="tab:grey", marker="D", s=60)
    axes[1].set_xscale("log")
    axes[1].set_xlabel("ns per increment (log)")
    axes[1].set_ylabel("")
    axes[1].set_title("Published: LMAX paper")
    return fig


def plot_pressure(db: LmaxRecording):
    """Wait-event shares (PostgreSQL) or spinlock shares (SQL Server) per design and session count: one small
    panel per design, its bars labelled by the session count alone, so the labels leave the bars the width."""
    import math

    import matplotlib.pyplot as plt
    import matplotlib.ticker

    p = analysis.db_pressure(db)
    if p.empty:
        fig, ax = plt.subplots(figsize=(7.6, 2))
        ax.axis("off")
        ax.text(0.5, 0.5, f"{db.label}: no wait or spinlock data recorded", ha="center")
        return fig
    top = p.groupby("what")["value"].sum().sort_values(ascending=False).head(7).index
    p = p.assign(what=p["what"].where(p["what"].isin(top), "other"))
    whats = list(top) + (["other"] if (p["what"] == "other").any() else [])
    colours = dict(zip(whats, plt.get_cmap("tab10").colors))
    consumers = (db.runs.groupby(["variant", "sessions"])["consumers"].max().to_dict()
                 if "consumers" in db.runs else {})
    designs = list(dict.fromkeys(p["variant"]))
    ncols = 2
    nrows = math.ceil((len(designs) + 1) / ncols)  # a spare cell holds the legend
    fig, axes = plt.subplots(nrows, ncols, figsize=(7.6, 1.0 + 1.25 * nrows))
    axes = list(axes.flat)
    over_any = False
    for ax, variant in zip(axes, designs):
        part = p[p["variant"] == variant]
        wide = part.pivot_table(index="sessions", columns="what", values="value", aggfunc="sum").fillna(0)
        wide = wide.reindex(columns=[w for w in whats if w in wide.columns])

        def name(n) -> str:
            c = consumers.get((variant, n))
            who = f"{int(n)} + {int(c)}" if c is not None and c == c and c > 0 else f"{int(n)}"
            return who + (" *" if analysis.oversubscribed(db, n) else "")

        over_any |= any(analysis.oversubscribed(db, n) for n in wide.index)
        wide.index = [name(n) for n in wide.index]
        wide.plot.barh(stacked=True, ax=ax, width=0.8, color=[colours[w] for w in wide.columns], legend=False)
        ax.invert_yaxis()
        ax.set_title(analysis.label(variant, db.engine), fontsize="small")
        ax.set_ylabel("")
        ax.set_xlim(0, 1)
        ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([0, 0.25, 0.5, 0.75, 1]))
        ax.xaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0, decimals=0))
        ax.tick_params(axis="y", labelsize=7)
    # not "sessions" in the label: the figure checks would read the axis as a count
    share = "share of the wait samples" if db.waits is not None else "share of spins"
    for col in range(ncols):  # the x label once, under the lowest panel of each column
        drawn = [ax for ax in axes[col:len(designs):ncols]]
        if drawn:
            drawn[-1].set_xlabel(share, fontsize="small")
    spare = axes[len(designs):]
    for ax in spare:
        ax.axis("off")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[w]) for w in whats]
    who = ("bars: producers + consumers" if consumers and any(c > 0 for c in consumers.values() if c == c)
           else "bars: sessions")
    note = who + ("; * more threads than logical CPUs" if over_any else "")
    if spare:
        spare[0].legend(handles, whats, loc="center", fontsize=7, frameon=False, title=note, title_fontsize=7)
    else:
        fig.legend(handles, whats, loc="outside lower center", ncol=3, fontsize=7, frameon=False, title=note,
                   title_fontsize=7)
    fig.suptitle(f"Where the sessions were: {db.label}", fontsize="medium")
    return fig


# the off-CPU figure and table (chapters.shared.offcpu): this chapter's title and what its waits look like
offcpu = ChapterOffCpu("{variant}: the consumers off the CPU",
                       "A consumer's pg_sleep back-off is a timed wait (WaitLatch, epoll_wait in state S); a"
                       " lock wait is a semaphore wait (futex_wait); a client read is a socket read "
                       "(epoll_wait under secure_read).")
