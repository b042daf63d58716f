"""The chapter's mechanism diagram: a fair hand-off against a barging one, on a timeline.

Not a data figure: it draws the mechanism once.  Where a native recording measured them, the lone thread's time
per record and the fair hand-off's cost are written in, so the picture carries this machine's scale.
"""
from __future__ import annotations

import math


HOLD, WAKE = 1.0, 2.2  # drawing units: one hold of the latch, one wake-up and context switch


def _lane(ax, y, spans, label):
    """One thread's lane: ``spans`` of (start, length, kind) where kind is hold, idle, sleep, spin or run."""
    styles = {"hold": dict(color="#c0392b"), "idle": dict(facecolor="#f5b7b1", hatch="///", edgecolor="#922b21"),
              "sleep": dict(color="#d5d8dc"), "spin": dict(color="#f7dc6f"), "run": dict(color="#aed6f1")}
    for start, length, kind in spans:
        ax.broken_barh([(start, length)], (y - 0.3, 0.6), **styles[kind], lw=0.6)
    ax.text(-0.15, y, label, ha="right", va="center", fontsize=8)


def handoff_timeline(record_ns: float = math.nan, handoff_ns: float = math.nan):
    """Two timelines, fair above and barging below: holder, a sleeping waiter, and a running newcomer."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(2, 1, figsize=(7.6, 4.4), sharex=True)
    fair, barge = axes
    # Fair: A releases at 1 and hands ownership to the sleeping B; the latch is owned but idle while B wakes.
    _lane(fair, 3, [(0, HOLD, "hold"), (HOLD, 3.6, "run")], "thread A (holder)")
    _lane(fair, 2, [(0, HOLD, "sleep"), (HOLD, WAKE, "idle"), (HOLD + WAKE, HOLD, "hold"),
                    (2 * HOLD + WAKE, 0.6, "run")], "thread B (queued)")
    _lane(fair, 1, [(0, 1.4, "run"), (1.4, HOLD + WAKE - 0.4, "sleep"), (2 * HOLD + WAKE, 1.0, "idle")],
          "thread C (arrives)")
    fair.annotate("hand-off: B owns the latch\nbut is asleep (latch idle)", (HOLD + 1.0, 2.3), (5.5, 2.9),
                  fontsize=7, va="center", arrowprops=dict(arrowstyle="->", lw=0.6))
    fair.annotate("C must queue behind B,\nthen wait for its own wake-up", (4.0, 1.0), (5.5, 1.3), fontsize=7,
                  va="center", arrowprops=dict(arrowstyle="->", lw=0.6))
    fair.set_title("Fair (the nesting-transaction latches' default): each contended acquisition waits for a wake-up",
                   fontsize=9, loc="left")
    # Barging: A releases at 1; running C takes the latch at once; B, woken, finds it held and spins briefly.
    _lane(barge, 3, [(0, HOLD, "hold"), (HOLD, 3.6, "run")], "thread A (holder)")
    _lane(barge, 2, [(0, HOLD, "sleep"), (HOLD, WAKE, "sleep"), (HOLD + WAKE, 0.3, "spin"),
                     (HOLD + WAKE + 0.3, HOLD, "hold")], "thread B (woken)")
    _lane(barge, 1, [(0, HOLD + 0.05, "run"), (HOLD + 0.05, HOLD, "hold"), (2 * HOLD + 0.05, 2.5, "run")],
          "thread C (running)")
    barge.annotate("C barges in at once:\nno idle gap", (HOLD + 0.5, 1.0), (5.5, 1.3), fontsize=7, va="center",
                   arrowprops=dict(arrowstyle="->", lw=0.6))
    barge.annotate("B, woken, finds it held:\nspins, then takes it", (HOLD + WAKE + 0.15, 2.0), (5.5, 2.9),
                   fontsize=7, va="center", arrowprops=dict(arrowstyle="->", lw=0.6))
    barge.set_title("Unfair (trace flag 3933): the latch is freed; whoever runs takes it, waiters spin first",
                    fontsize=9, loc="left")
    for ax in axes:
        ax.set_ylim(0.4, 4.1)
        ax.set_yticks([])
        ax.set_xlim(-0.05, 7.4)
        for side in ("top", "right", "left"):
            ax.spines[side].set_visible(False)
    scale = []
    if record_ns == record_ns:
        scale.append(f"one record alone ≈ {record_ns:,.0f} ns")
    if handoff_ns == handoff_ns:
        scale.append(f"one fair hand-off ≈ {handoff_ns / 1e3:,.1f} µs")
    barge.set_xlabel("time (not to scale" + ("; measured here: " + ", ".join(scale) if scale else "") + ")",
                     fontsize=8)
    barge.set_xticks([])
    handles = [Patch(color="#c0392b", label="holds the latch"),
               Patch(facecolor="#f5b7b1", hatch="///", edgecolor="#c0392b", label="wake-up and context switch"),
               Patch(color="#d5d8dc", label="asleep in the queue"), Patch(color="#f7dc6f", label="spins"),
               Patch(color="#aed6f1", label="runs other work")]
    fig.legend(handles=handles, loc="outside lower center", ncol=5, frameon=False, fontsize=7)
    return fig


ALT = ("Two timelines of three threads sharing one latch. Fair: thread A releases the latch and hands it to the "
       "sleeping thread B, so the latch stays owned but idle while B is woken and switched in, and thread C, "
       "arriving meanwhile, must queue. Unfair: A frees the latch, running thread C takes it at once, and B, woken, "
       "spins briefly before taking it after C.")
CAPTION = ("A fair hand-off against a barging one. With the fair latch, ownership passes to a sleeping waiter, so "
           "the latch sits idle through every wake-up and context switch; with the unfair latch a running thread "
           "takes it at once.")


def caption(record_ns: float = math.nan, handoff_ns: float = math.nan) -> str:
    """:data:`CAPTION` and what the time axis note gives, saying only what the diagram shows (a cost the recording
    could not price is said to be missing, not promised)."""
    shown = [w for v, w in ((record_ns, "one record alone"), (handoff_ns, "one fair hand-off")) if v == v]
    if not shown:
        return CAPTION
    text = CAPTION + f" The time axis note gives this machine's cost of {' and of '.join(shown)}"
    if handoff_ns != handoff_ns:
        text += ("; the recording could not price a fair hand-off (too few acquisitions queued at the deciding "
                 "thread count)")
    return text + "."
