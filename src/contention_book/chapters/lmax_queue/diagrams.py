"""The chapter's mechanism, drawn once: a ring of fixed slots with its two cursors, beside a queue table.

A diagram, not a data figure: it shows how the designs work, so a reader
can tell which structure every session writes.  Drawn with matplotlib and
shown as SVG by ``shared.notebook.show_diagram``.
"""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
from matplotlib.patches import FancyArrowPatch, Rectangle, Wedge

SLOTS = 16
CONSUMER, PRODUCER = 3, 11  # cursors: the next sequence to take, the next to write (mod SLOTS)
WAITING, FREE, DEAD, LIVE = "#4c72b0", "#e8e8e8", "#c44e52", "#55a868"

ALT = ("Left: a ring of 16 fixed slots drawn as a circle. Slots between the consumers' cursor and the producers' "
       "cursor hold messages waiting to be taken; the rest are free to overwrite. Producers advance their cursor "
       "and rewrite a free slot in place; they stop when the next slot still holds an unread message. Consumers "
       "advance their own cursor. Right: a queue table drawn as index pages in key order. Producers insert new "
       "rows on the rightmost page; consumers delete the oldest rows on the leftmost page, which leaves dead rows "
       "(ghost records on SQL Server, dead tuples on PostgreSQL) that the next consumer must step over.")
CAPTION = ("The two shapes of a queue in a database. A ring of pre-created slots, each rewritten in place, with "
           "the producers' and the consumers' cursors (left), and a table that grows at one end and is deleted "
           "from at the other (right).")


def _ring(ax) -> None:
    ax.set_aspect("equal")
    ax.axis("off")
    r_out, r_in = 1.0, 0.62
    for i in range(SLOTS):
        waiting = (i - CONSUMER) % SLOTS < (PRODUCER - CONSUMER) % SLOTS
        start = 90 - (i + 1) * 360 / SLOTS
        ax.add_patch(Wedge((0, 0), r_out, start, start + 360 / SLOTS, width=r_out - r_in,
                           facecolor=WAITING if waiting else FREE, edgecolor="white", linewidth=2))
        mid = math.radians(start + 180 / SLOTS)
        ax.text(0.81 * math.cos(mid), 0.81 * math.sin(mid), str(i), ha="center", va="center", fontsize=7,
                color="white" if waiting else "#555555")
    for slot, text, colour, side in ((CONSUMER, "consumers' cursor\n(next to take;\none row, locked to advance)",
                                      "#333333", 1),
                                     (PRODUCER, "producers' cursor\n(next to write; stops one lap\nahead of the "
                                      "consumers)", "#333333", -1)):
        ang = math.radians(90 - (slot + 0.5) * 360 / SLOTS)
        tip = (1.03 * math.cos(ang), 1.03 * math.sin(ang))
        tail = (1.55 * math.cos(ang), 1.55 * math.sin(ang))
        ax.add_patch(FancyArrowPatch(tail, tip, arrowstyle="-|>", mutation_scale=12, color=colour, linewidth=1.4))
        ax.text(tail[0] + 0.05 * side, tail[1] + (0.12 if tail[1] > 0 else -0.12), text, ha="center",
                va="bottom" if tail[1] > 0 else "top", fontsize=7.5)
    ax.text(0, 0.08, "ring of\nfixed slots", ha="center", va="center", fontsize=9, weight="bold")
    ax.text(0, -0.22, "slot = sequence\nmod size", ha="center", va="center", fontsize=7.5, color="#555555")
    ax.set_xlim(-2.0, 2.0)
    ax.set_ylim(-2.0, 2.0)
    ax.legend(handles=[Rectangle((0, 0), 1, 1, color=WAITING), Rectangle((0, 0), 1, 1, color=FREE)],
              labels=["message waiting", "free slot (already taken)"], loc="lower center", fontsize=7.5,
              frameon=False, ncol=2, bbox_to_anchor=(0.5, -0.08))


def _table(ax) -> None:
    ax.axis("off")
    ax.set_xlim(0, 10)
    ax.set_ylim(-1.6, 4.3)
    pages = [["dead"] * 4, ["dead", "dead", "live", "live"], ["live"] * 4, ["live", "live", "live", "new"]]
    for p, rows in enumerate(pages):
        x = 0.3 + p * 2.4
        ax.add_patch(Rectangle((x, 0.0), 2.1, 2.6, facecolor="white", edgecolor="#333333"))
        ax.text(x + 1.05, 2.75, ["oldest page", "", "", "rightmost page"][p], ha="center", fontsize=7.5)
        for k, state in enumerate(rows):
            colour = {"dead": DEAD, "live": LIVE, "new": "#8172b2"}[state]
            ax.add_patch(Rectangle((x + 0.15, 2.1 - k * 0.6), 1.8, 0.45, facecolor=colour, alpha=0.85,
                                   edgecolor="white"))
            ax.text(x + 1.05, 2.32 - k * 0.6, {"dead": "deleted", "live": "message", "new": "insert"}[state],
                    ha="center", va="center", fontsize=6.5, color="white")
    ax.annotate("consumers: DELETE the oldest row\n(and step over the rows already deleted)", xy=(1.35, -0.05),
                xytext=(1.35, -1.0), ha="center", fontsize=7.5, arrowprops={"arrowstyle": "-|>", "color": "#333333"})
    ax.annotate("producers: INSERT on the\nlast page (one hot page)", xy=(8.55, -0.05), xytext=(8.0, -1.0),
                ha="center", fontsize=7.5, arrowprops={"arrowstyle": "-|>", "color": "#333333"})
    ax.text(5.0, 3.55, "queue table (an index in key order)", ha="center", fontsize=9, weight="bold")
    ax.text(5.0, 3.15, "deleted rows: ghost records (SQL Server), dead tuples and index entries (PostgreSQL)",
            ha="center", fontsize=7, color=DEAD)


def ring_and_table():
    """The ring with both cursors (left) and a queue table's pages (right), as one matplotlib figure."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10.5, 4.6), gridspec_kw={"width_ratios": [1, 1.25]},
                                      layout="constrained")
    _ring(left)
    _table(right)
    return fig
