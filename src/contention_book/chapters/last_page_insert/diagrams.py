"""The chapter's mechanism drawn once: every insert queues at one rightmost leaf, or spreads over P of them.

A diagram, not data: the boxes are a B-tree's pages and the arrows inserting sessions.  The notebook shows it
with :func:`shared.notebook.show_diagram`.
"""
from __future__ import annotations

ALT = ("Two B-trees side by side. Left: with an ever-increasing key, every inserting session's arrow ends at the "
       "same rightmost leaf page; one session holds its exclusive latch (PAGELATCH_EX on SQL Server, the buffer "
       "content lock on PostgreSQL) and the others queue behind it. Right: the same table hash-partitioned into "
       "four partitions, each a small B-tree with its own rightmost leaf, so consecutive keys and the sessions' "
       "inserts spread over four latches.")
CAPTION = ("The hot spot and the hash-partitioning fix. Left: an ever-increasing key sends every insert to the "
           "rightmost leaf, so the sessions take that page's exclusive latch one at a time. Right: hash "
           "partitioning gives each partition its own B-tree and its own last page (SQL Server: a persisted "
           "HashID = ID % 4 column and a partition scheme; PostgreSQL: PARTITION BY HASH (id)).")

HOT, COOL, LEAF, INNER, INK = "#d62728", "#1f77b4", "#f2f2f2", "#d9d9d9", "#333333"


def _page(ax, x, y, w, h, colour, text="", size=7):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.01,rounding_size=0.02",
                                fc=colour, ec=INK, lw=0.8))
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=size, color=INK)


def _line(ax, a, b, **kw):
    ax.plot([a[0], b[0]], [a[1], b[1]], color=kw.pop("color", INK), lw=kw.pop("lw", 0.7), **kw)


def _arrow(ax, start, end, colour):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.0,
                                                          shrinkA=0, shrinkB=2))


def _tree(ax, cx, top, width, leaves, hot_colour, label_root=True):
    """A small B-tree: root, one row of leaves; the rightmost leaf in ``hot_colour``.  Returns the leaves' centres."""
    _page(ax, cx, top, 0.16 * width, 0.07, INNER, "root" if label_root else "", 6)
    leaf_w = width / (leaves + 0.6)
    xs = [cx - width / 2 + leaf_w * (i + 0.8) for i in range(leaves)]
    for i, x in enumerate(xs):
        _line(ax, (cx, top - 0.035), (x, top - 0.2 + 0.035))
        _page(ax, x, top - 0.2, leaf_w * 0.8, 0.07, hot_colour if i == leaves - 1 else LEAF)
    return xs, top - 0.2


def mechanism(partitions: int = 4):
    """The two panels: the sequential key's one hot leaf, and ``partitions`` hash partitions."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9.0, 3.9), layout="constrained")
    for ax in axes:
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")

    ax = axes[0]
    ax.set_title("Ever-increasing key: one last page", fontsize=9)
    xs, y = _tree(ax, 0.5, 0.86, 0.9, 5, HOT)
    hot = (xs[-1], y)
    ax.text(hot[0], y + 0.05, "rightmost leaf", ha="center", va="bottom", fontsize=6.5, color=HOT)
    sessions = [(0.12 + 0.19 * i, 0.2) for i in range(5)]
    for i, s in enumerate(sessions):
        _page(ax, s[0], s[1], 0.14, 0.09, "white", f"session {i + 1}\n" + ("holds" if i == 0 else "waits"), 6)
        _arrow(ax, (s[0], s[1] + 0.045), (hot[0] - 0.02 + 0.01 * i, hot[1] - 0.04), HOT if i == 0 else "#e8a0a0")
    ax.text(0.5, 0.015, "one session holds the exclusive latch, the rest queue: PAGELATCH_EX (SQL Server),\n"
                        "LWLock:BufferContent (PostgreSQL)", ha="center", va="bottom", fontsize=6.5, color=INK)

    ax = axes[1]
    ax.set_title(f"Hash-partitioned: {partitions} last pages", fontsize=9)
    width = 0.9 / partitions
    ends = []
    for p in range(partitions):
        cx = 0.05 + width * (p + 0.5)
        xs, y = _tree(ax, cx, 0.86, width * 0.95, 2, COOL, label_root=False)
        ends.append((xs[-1], y))
        ax.text(cx, 0.93, f"ID % {partitions} = {p}", ha="center", va="bottom", fontsize=6)
    sessions = [(0.12 + 0.19 * i, 0.2) for i in range(5)]
    for i, s in enumerate(sessions):
        _page(ax, s[0], s[1], 0.14, 0.09, "white", f"session {i + 1}\nID {i + 1}", 6)
        _arrow(ax, (s[0], s[1] + 0.045), (ends[(i + 1) % partitions][0], ends[(i + 1) % partitions][1] - 0.04), COOL)
    ax.text(0.5, 0.015, "consecutive keys go to different partitions, each with its own latch;\n"
                        "a lookup by ID alone must now search every partition (SQL Server)", ha="center",
            va="bottom", fontsize=6.5, color=INK)
    return fig
