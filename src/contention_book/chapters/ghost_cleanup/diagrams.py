"""The chapter's mechanism diagram: where a replaced key's old version waits, in SQL Server and in PostgreSQL.

Left, SQL Server: the clustered index's leaf page holds the old key as a ghost record whose versioning tag
points into the version store; the live record sits after it, so a scan steps over the ghost first.  Right,
PostgreSQL: the heap page keeps a dead line pointer whose tuple pruning has freed, and the primary-key index
still holds an entry pointing at it; only VACUUM removes the entry and frees the pointer.  The numbers written
in come from the recording shown, where it has them.
"""
from __future__ import annotations

import math


def _box(ax, x, y, w, h, text, face="white", edge="black", size=8, style="-", weight="normal"):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.01,rounding_size=0.02", facecolor=face,
                                edgecolor=edge, linestyle=style, linewidth=1))
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight, wrap=True)


def _arrow(ax, start, end, colour="black", style="-|>", dashed=False):
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=10, color=colour, lw=1,
                                 linestyle="--" if dashed else "-", shrinkA=2, shrinkB=2))


def ghost_and_dead_line_pointer(lp_dead: float = math.nan, lp_max: float = math.nan, entries_dead: float = math.nan,
                                tag_bytes: float = math.nan):
    """The two forms side by side, as a matplotlib figure.

    ``lp_dead``, ``lp_max`` and ``entries_dead`` (dead line pointers at the end of the unheld run, the most on one
    heap page, index entries pointing at dead line pointers) are written into the PostgreSQL panel when known;
    ``tag_bytes`` (the versioning tag's size, from the article's record sizes) into the SQL Server panel."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8))
    ghost, dead, live, store = "#e8e8e8", "#f4d5d5", "#d7ecd9", "#dde6f5"
    for ax, title in ((left, "SQL Server: a version ghost in the clustered index"),
                      (right, "PostgreSQL: a dead line pointer and its index entry")):
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
        ax.set_title(title, fontsize=9.5, loc="left")

    # SQL Server: a leaf page of the clustered index, the scan's direction, the version store
    _box(left, 0.02, 0.50, 0.96, 0.36, "", face="white", edge="#555555")
    left.text(0.04, 0.82, "leaf page of the clustered primary key (key order)", fontsize=8, va="center")
    size = "" if math.isnan(tag_bytes) else f"\n({tag_bytes:.0f} bytes)"
    _box(left, 0.05, 0.56, 0.27, 0.2, f"key k−2: ghost\n+ version tag{size}", face=ghost, size=7.5)
    _box(left, 0.36, 0.56, 0.27, 0.2, f"key k−1: ghost\n+ version tag{size}", face=ghost, size=7.5)
    _box(left, 0.67, 0.56, 0.28, 0.2, "key k\nthe live row", face=live, size=7.5, weight="bold")
    _arrow(left, (0.06, 0.47), (0.94, 0.47))
    left.text(0.5, 0.42, "a scan requests a lock on each ghost, then skips it", ha="center", fontsize=7.5)
    _box(left, 0.05, 0.06, 0.58, 0.22, "version store\n(tempdb; with ADR, the user database):\n"
                                       "the versions the ghosts stand for", face=store, size=7.5)
    for x in (0.185, 0.495):
        _arrow(left, (x, 0.56), (x, 0.28), colour="#3a5da8")
    left.text(0.66, 0.17, "kept while a transaction\nthat may need them\nis open (2022: an idle\nRCSI one no longer\n"
                          "keeps the ghosts)", fontsize=7, va="center")

    # PostgreSQL: the primary-key index leaf above, the heap page below, entries pointing down
    _box(right, 0.02, 0.62, 0.96, 0.26, "", face="white", edge="#555555")
    right.text(0.04, 0.84, "primary-key index leaf (key order)", fontsize=8, va="center")
    _box(right, 0.05, 0.66, 0.27, 0.13, "k−2 → (0,1)", face=dead, size=7.5)
    _box(right, 0.36, 0.66, 0.27, 0.13, "k−1 → (0,2)", face=dead, size=7.5)
    _box(right, 0.67, 0.66, 0.28, 0.13, "k → (0,3)", face=live, size=7.5, weight="bold")
    _box(right, 0.02, 0.06, 0.96, 0.42, "", face="white", edge="#555555")
    right.text(0.04, 0.44, "heap page 0: line pointers, then tuples", fontsize=8, va="center")
    _box(right, 0.05, 0.27, 0.27, 0.12, "lp 1: DEAD\n(no storage)", face=dead, size=7.5)
    _box(right, 0.36, 0.27, 0.27, 0.12, "lp 2: DEAD\n(no storage)", face=dead, size=7.5)
    _box(right, 0.67, 0.27, 0.28, 0.12, "lp 3: NORMAL", face=live, size=7.5, weight="bold")
    _box(right, 0.67, 0.10, 0.28, 0.12, "tuple: key k", face=live, size=7.5)
    _arrow(right, (0.81, 0.27), (0.81, 0.22))
    for x in (0.185, 0.495, 0.81):
        _arrow(right, (x, 0.66), (x, 0.39), colour="#3a5da8")
    words = ["pruning freed the dead tuples,", "not their pointers: an index", "entry still points at each;"]
    if not math.isnan(lp_dead):
        words = [f"unheld run: {lp_dead:,.0f} dead line", f"pointers (up to {lp_max:,.0f} on a page),",
                 f"{entries_dead:,.0f} index entries to them;"]
    right.text(0.05, 0.165, "\n".join(words + ["only VACUUM removes both"]), fontsize=7, va="center")
    right.text(0.5, 0.55, "a key update is never HOT: each adds an index entry", ha="center", fontsize=7.5)
    return fig


ALT = ("Two panels. Left, SQL Server: a clustered index leaf page holds two ghost records for old keys, each with "
       "a version tag pointing into the version store, before the live row; a scan requests a lock on each "
       "ghost and skips it. Right, PostgreSQL: the primary-key index holds entries for the old keys that point at "
       "dead line pointers on the heap page, whose tuples pruning has already freed; only VACUUM removes the entries "
       "and frees the pointers.")
CAPTION = ("Where the old version of an updated key waits. SQL Server keeps it as a ghost record in the index, "
           "pointing into the version store, until no transaction that might read it is open; PostgreSQL keeps a "
           "dead line pointer in the heap and an index entry pointing at it until VACUUM, even with nothing open. "
           "An idle REPEATABLE READ transaction (or SQL Server's SNAPSHOT) also keeps the dead tuples themselves.")
