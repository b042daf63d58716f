"""A chapter's off-CPU view: the flame graph of where its threads slept, and the table of where the time went.

Why one module: the three chapters that argue about sleeping threads (latch convoys, last-page waiters, queue
consumers) draw the same view from the same recording files; only the title and the words on what a wait
looks like differ, and those the chapter passes in.
"""
from __future__ import annotations

import pandas as pd

SITES_COLUMNS = ["where it waited", "state", "ms blocked", "share"]


def plot_offcpu(measured, variant: str, title: str, mechanism: str, caption: str = ""):
    """Off-CPU flame graph of ``variant`` from ``stacks/<variant>.offcpu-folded.gz`` and the capture's row in
    ``stacks/offcpu_captures.csv`` (harness.spec.OFFCPU_CAPTURES).  ``mechanism``: what a wait of this chapter
    looks like on the graph.  A recording without them (made before off-CPU capture, or where perf was not
    allowed) gets a figure that says so."""
    from contention_book.harness.recording import check_values
    from contention_book.harness.spec import OFFCPU_CAPTURES, OFFCPU_STACKS
    from contention_book.perftools import offcpu_view

    from .style import FLAME_WIDTH_PX, module_colour

    name = OFFCPU_STACKS.format(variant=variant)
    r = getattr(measured, "recording", None)
    if r is None or not r.has(name):
        why = "no recording" if r is None else f"recording {r.id} has no {name}"
        return offcpu_view.note_figure(f"{title}: {why}. Off-CPU stacks are captured by live runs on Linux "
                                       "where perf may trace the scheduler (root, or perf_event_paranoid <= -1); "
                                       "the recording's notes say why a run has none.", width=FLAME_WIDTH_PX)
    rows = None
    if r.has(OFFCPU_CAPTURES.path):
        rows = r.csv(OFFCPU_CAPTURES.path, OFFCPU_CAPTURES.columns)
        check_values(r, OFFCPU_CAPTURES.path, rows, OFFCPU_CAPTURES.numeric, OFFCPU_CAPTURES.text)
    words = " ".join(x for x in (offcpu_view.capture_words(rows, variant), mechanism, caption) if x)
    return offcpu_view.flame(r.path / name, title, caption=words, width=FLAME_WIDTH_PX, colour_of=module_colour)


def offcpu_sites(measured, variant: str, top: int = 8) -> pd.DataFrame:
    """Where the off-CPU time of ``variant`` went (site, state, ms, share), largest first; an empty table when
    the recording has no off-CPU stacks (:func:`plot_offcpu` then says so)."""
    from contention_book.harness.spec import OFFCPU_STACKS
    from contention_book.perftools import offcpu_view

    name = OFFCPU_STACKS.format(variant=variant)
    r = getattr(measured, "recording", None)
    if r is None or not r.has(name):
        return pd.DataFrame(columns=SITES_COLUMNS)
    t = offcpu_view.blocked_by(r.path / name, top=top)
    return pd.DataFrame({"where it waited": t["site"], "state": t["state"], "ms blocked": (t["us"] / 1000).round(1),
                         "share": (t["share"] * 100).round(1).astype(str) + "%"})


class ChapterOffCpu:
    """A chapter's off-CPU figure and table (``figures.offcpu``): the chapter gives its title (``{variant}`` is
    filled in) and what one of its waits looks like on the graph; the rest is written once, above."""

    def __init__(self, title: str, mechanism: str) -> None:
        self.title, self.mechanism = title, mechanism

    def plot(self, measured, variant: str, caption: str = ""):
        return plot_offcpu(measured, variant, self.title.format(variant=variant), self.mechanism, caption)

    def sites(self, measured, variant: str, top: int = 8) -> pd.DataFrame:
        return offcpu_sites(measured, variant, top)
