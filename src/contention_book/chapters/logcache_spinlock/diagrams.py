"""The chapter's mechanism diagram: one cache line moving between cores, by distance.

Not a data figure: it draws where a hot spinlock's line travels on a two-socket machine with two core complexes
(CCX) per socket, and writes in the one-way latency of each step.  Where the reader's recording measured a step,
its number is written in beside a published one; the others say which published machine they come from.
"""
from __future__ import annotations

import math

import pandas as pd

# The steps a line can take, nearest first, and the relation names that measure them.
STEPS = (("SMT sibling", "two hyperthreads of one core", ("SMT sibling",)),
         ("same CCX", "two cores sharing an L3 (one CCX)", ("same CCX", "same socket", "same L3 (socket or CCX)")),
         ("cross CCX", "two CCXs of one socket", ("cross CCX", "other L3, same socket")),
         ("cross socket", "two sockets", ("cross socket",)))
PUBLISHED_MACHINE = "EPYC 7R13"  # the published matrix with all four steps


def step_latencies(published: pd.DataFrame | None, measured: pd.DataFrame | None) -> pd.DataFrame:
    """One row per step: the published machine's median one-way ns and this recording's (NaN where absent).

    ``published``: machine, relation, median_one_way_ns; ``measured``: relation, median_one_way_ns
    (tables.c2c_by_relation)."""
    rows = []
    for step, words, names in STEPS:
        pub = math.nan
        if published is not None and len(published):
            p = published[(published["machine"] == PUBLISHED_MACHINE) & (published["relation"].isin(names))]
            pub = float(p["median_one_way_ns"].iloc[0]) if len(p) else math.nan
        mine = math.nan
        if measured is not None and len(measured):
            m = measured[measured["relation"].isin(names)]
            mine = float(m["median_one_way_ns"].median()) if len(m) else math.nan
        rows.append({"step": step, "words": words, "published_ns": pub, "measured_ns": mine})
    return pd.DataFrame(rows)


def cache_line_journeys(steps: pd.DataFrame, cpu: str = "this machine"):
    """Two sockets of two CCXs, each CCX two cores of two hyperthreads; arrows for the four steps."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig, ax = plt.subplots(figsize=(7.6, 4.2))
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 66)
    ax.axis("off")
    cores = {}
    for s, x0 in enumerate((2, 52)):
        ax.add_patch(FancyBboxPatch((x0, 14), 46, 44, boxstyle="round,pad=0.4", fc="#f4f6f7", ec="#7f8c8d"))
        ax.text(x0 + 23, 55.5, f"socket {s}", ha="center", fontsize=8, color="#566573")
        for c, cx in enumerate((x0 + 2, x0 + 25)):
            ax.add_patch(FancyBboxPatch((cx, 17), 19, 34, boxstyle="round,pad=0.3", fc="#eaf2f8", ec="#5d6d7e"))
            ax.text(cx + 9.5, 47.5, f"CCX {2 * s + c} (shared L3)", ha="center", fontsize=6.5, color="#34495e")
            for k, kx in enumerate((cx + 1, cx + 10)):
                ax.add_patch(FancyBboxPatch((kx, 20), 8, 22, boxstyle="round,pad=0.2", fc="white", ec="#85929e"))
                ax.text(kx + 4, 38.5, "core", ha="center", fontsize=6)
                for h, hy in enumerate((23, 30)):
                    ax.add_patch(FancyBboxPatch((kx + 1, hy), 6, 5, boxstyle="round,pad=0.1", fc="#d6eaf8",
                                                ec="#5d6d7e", lw=0.6))
                    cores[(s, c, k, h)] = (kx + 4, hy + 2.5)
    src = cores[(0, 0, 0, 0)]
    ax.plot(*src, marker="s", color="#c0392b", ms=6)
    ax.annotate("the lock's cache line, last written here", src, (14, 62.5), fontsize=7, color="#c0392b",
                arrowprops=dict(arrowstyle="->", color="#c0392b", lw=0.6))
    targets = [cores[(0, 0, 0, 1)], cores[(0, 0, 1, 0)], cores[(0, 1, 0, 0)], cores[(1, 0, 0, 0)]]
    colours = ["#27ae60", "#2e86c1", "#e67e22", "#8e44ad"]
    for i, (row, dst, colour) in enumerate(zip(steps.itertuples(index=False), targets, colours)):
        rad = 0.0 if i == 0 else -0.35 - 0.05 * i
        ax.add_patch(FancyArrowPatch(src, dst, connectionstyle=f"arc3,rad={rad}", arrowstyle="-|>",
                                     mutation_scale=9, color=colour, lw=1.2))
        text = f"{row.step}: "
        parts = []
        if row.measured_ns == row.measured_ns:
            parts.append(f"{row.measured_ns:.3g} ns here")
        if row.published_ns == row.published_ns:
            parts.append(f"{row.published_ns:.3g} ns on an {PUBLISHED_MACHINE}")
        text += "; ".join(parts) if parts else "not measured"
        ax.text(2 + 49 * (i % 2), 11 - 4 * (i // 2), "● " + text, fontsize=7, color=colour, va="center")
    return fig


def _measured(steps: pd.DataFrame) -> list[str]:
    """The steps this recording measured (the diagram marks their numbers "here")."""
    if steps is None or not len(steps):
        return []
    return [str(r.step) for r in steps.itertuples(index=False) if r.measured_ns == r.measured_ns]


def alt(steps: pd.DataFrame) -> str:
    """The diagram's text alternative, saying which labels hold this recording's numbers."""
    mine = _measured(steps)
    where = (f"measured on this machine for {', '.join(mine)} (marked 'here') and published for an AMD "
             f"{PUBLISHED_MACHINE}" if mine else f"all published for an AMD {PUBLISHED_MACHINE}")
    return ("A two-socket machine drawn as boxes: each socket holds two core complexes (CCX) with a shared L3, each "
            "CCX two cores, each core two hyperthreads. Arrows from one hyperthread show the lock's cache line moving "
            "to its sibling hyperthread, to another core of the same CCX, to another CCX of the same socket, and to "
            f"the other socket, each labelled with its one-way latency: {where}.")


def caption(steps: pd.DataFrame) -> str:
    """The caption, aligned with what the diagram shows: a 'here' number only where the recording placed a pair
    on one of the drawn steps (on virtual CPUs nobody can say which step a pair was, so none is marked)."""
    mine = _measured(steps)
    head = ("Where a hot lock's cache line travels, and what each step costs one way: the farther the next holder, "
            "the dearer every hand-off. ")
    if mine:
        return head + ("Numbers marked 'here' come from this page's recording; the others from published "
                       "core-to-core matrices.")
    return head + (f"Every number is from a published core-to-core matrix ({PUBLISHED_MACHINE}): this page's "
                   "recording could not place its CPU pairs on any of these steps (its CPUs are virtual), so its "
                   "transfer cost is given in the text instead.")


ALT = alt(pd.DataFrame())          # without a recording: every label published
CAPTION = caption(pd.DataFrame())
