"""Flame graphs and icicles: static SVG for the book's pages, matplotlib for a PNG, and SVG for browsing.

A flame graph merges stacks into a tree: each frame is a box whose width
is its inclusive share of the samples, its callees stacked on it.  The
book's figures must stay readable at page width, so boxes under
``min_fraction`` of the total are merged into one grey "other" box per
parent (or dropped when even that is too small), labels are drawn only
where they fit, and boxes are coloured by module with a legend (the
"sqllang.dll vs the engine" question is a question about colour).
``icicle=True`` hangs the tree from the top, as WPA draws it.

:func:`flame_svg` draws the same boxes, labels and legend as static SVG (the book's pages show these).
:func:`write_svg` writes a standalone SVG in the style of flamegraph.pl:
a ``<title>`` per box (hover shows name, weight, percent) and a few lines
of script for click-to-zoom.
"""

from __future__ import annotations

import html

import numpy as np

from .model import Profile

__all__ = ["FlameNode", "FlameSvg", "build_tree", "flame_figure", "flame_svg", "write_svg", "module_colors", "self_shares"]

OTHER_COLOR = "#d0d0d0"
_PALETTE = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
    "#ff9da7", "#9c755f", "#86bcb6", "#8cd17d", "#b6992d", "#499894", "#d37295",
    "#a0cbe8", "#ffbe7d",
]


class FlameNode:
    """A merged frame: ``name``, ``module``, ``weight`` (inclusive), children."""

    __slots__ = ("name", "module", "function", "weight", "children", "merged")

    def __init__(self, name: str, module: str, function: str, weight: float = 0.0, merged: int = 0):
        self.name, self.module, self.function = name, module, function
        self.weight = weight
        self.children: dict = {}
        self.merged = merged  # >0: an "other" box standing for that many frames

    def sorted_children(self) -> list["FlameNode"]:
        return sorted(self.children.values(), key=lambda c: (c.merged > 0, -c.weight, c.name))


def build_tree(p: Profile, *, process_root: bool = False) -> FlameNode:
    """Merge the profile's stacks into a tree rooted at ``all``."""
    names = p.frame_names()
    mods = p.frames["module"].tolist()
    funcs = p.frames["function"].tolist()
    root = FlameNode("all", "", "all")
    s = p.samples
    if process_root:
        g = s.groupby(["process", "stack_id"], observed=True, sort=False)["weight"].sum()
        items = [((str(k[0]),), int(k[1]), w) for k, w in g.items()]
    else:
        sw = p.stack_weights()
        items = [((), int(i), sw[i]) for i in np.flatnonzero(sw)]
    off, vals = p.stack_offsets, p.stack_frames
    for prefix, sid, w in items:
        node = root
        node.weight += w
        for proc in prefix:
            child = node.children.get(("p", proc))
            if child is None:
                child = node.children[("p", proc)] = FlameNode(proc or "(no process)", "(process)", proc)
            child.weight += w
            node = child
        for f in vals[off[sid] : off[sid + 1]].tolist():
            child = node.children.get(f)
            if child is None:
                child = node.children[f] = FlameNode(names[f], mods[f], funcs[f])
            child.weight += w
            node = child
    return root


def _layout(root: FlameNode, min_weight: float, max_depth: int | None):
    """Boxes ``(x, depth, width, node)`` with small siblings merged."""
    boxes = []

    def walk(node: FlameNode, x: float, depth: int):
        boxes.append((x, depth, node.weight, node))
        if max_depth is not None and depth >= max_depth:
            return
        small, n_small = 0.0, 0
        cx = x
        for c in node.sorted_children():
            if c.weight >= min_weight:
                walk(c, cx, depth + 1)
                cx += c.weight
            else:
                small += c.weight
                n_small += 1
        if n_small and small >= min_weight:
            other = FlameNode(f"{n_small} smaller frames", "", "", small, merged=n_small)
            boxes.append((cx, depth + 1, small, other))

    walk(root, 0.0, 0)
    return boxes


def module_colors(boxes, max_modules: int = 12, colour_of=None) -> dict[str, str]:
    """Colour per module, the widest modules first; the rest share grey.

    ``colour_of(module)`` fixes each module's colour (a book keeps one per module on every page);
    without it the palette is dealt out by width."""
    width: dict[str, float] = {}
    for _, depth, w, node in boxes:
        if depth and not node.merged and node.module != "(process)":
            width[node.module] = width.get(node.module, 0.0) + w
    ranked = sorted(width, key=lambda m: (-width[m], m))
    if colour_of is not None:
        return {m: colour_of(m) for m in ranked[:max_modules]}
    return {m: _PALETTE[i % len(_PALETTE)] for i, m in enumerate(ranked[:max_modules])}


def _color(node: FlameNode, colors: dict) -> str:
    if node.merged:
        return OTHER_COLOR
    if node.module == "(process)" or node.name == "all":
        return "#bbbbbb"
    return colors.get(node.module, "#999999")


def legend_keys(colors: dict, boxes) -> list[tuple[str, str]]:
    """(label, colour) for a flame graph's module legend: the named modules, then one grey "other modules" when a
    drawn box's module has no colour of its own (both the figure and the SVG show the same legend)."""
    keys = [(m or "(no module)", c) for m, c in colors.items()]
    if keys and any(n.module not in colors for _, d, _, n in boxes if d and not n.merged and n.module != "(process)"):
        keys.append(("other modules", "#999999"))
    return keys


def flame_figure(
    p: Profile,
    *,
    title: str | None = None,
    min_fraction: float = 0.005,
    icicle: bool = False,
    max_depth: int | None = None,
    process_root: bool = False,
    max_modules: int = 12,
    width: float = 12.0,
    row_height: float = 0.24,
    fontsize: float = 7.5,
    colour_of=None,
):
    """Draw a flame graph (or icicle) and return the matplotlib Figure."""
    # A bare Figure (no pyplot): no GUI backend, nothing global to clean up.
    from matplotlib.figure import Figure
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Patch

    root = build_tree(p, process_root=process_root)
    total = root.weight or 1.0
    boxes = _layout(root, min_fraction * total, max_depth)
    colors = module_colors(boxes, max_modules, colour_of)
    depth = max(d for _, d, _, _ in boxes) + 1
    fig_h = min(2.0 + row_height * depth, 40.0)
    fig = Figure(figsize=(width, fig_h), layout="constrained")
    ax = fig.subplots()
    xs = np.array([b[0] / total for b in boxes])
    ws = np.array([b[2] / total for b in boxes])
    ds = np.array([b[1] for b in boxes], dtype=float)
    ys = -ds - 1 if icicle else ds
    # one collection of rectangles, not a bar (an artist) per box: a thousand boxes cost seconds of layout
    corners = np.stack([np.stack([xs, ys], 1), np.stack([xs + ws, ys], 1),
                        np.stack([xs + ws, ys + 0.92], 1), np.stack([xs, ys + 0.92], 1)], 1)
    ax.add_collection(PolyCollection(corners, facecolors=[_color(b[3], colors) for b in boxes],
                                     edgecolors="white", linewidths=0.3))
    # label where the text fits: ~0.6 em per character at this font size
    axis_px = width * 72.0 * 0.95
    char_w = fontsize * 0.6
    for (x, d, w, node), y in zip(boxes, ys):
        room = int(w / total * axis_px / char_w) - 1
        if room < 4:
            continue
        text = node.function if node.name != "all" else f"all ({_fmt(total)})"
        if node.merged:
            text = node.name
        full = text
        if len(text) > room:
            text = text[: room - 1] + "\u2026"
        label = ax.text(x / total + 0.002, y + 0.46, text, va="center", ha="left", fontsize=fontsize, clip_on=True)
        label.set_in_layout(False)  # clipped to its box inside the axes: nothing for the layout to make room for
        label.full_label = full  # the whole name, for words said about the figure (its alt text)
    ax.set_xlim(0, 1)
    ax.set_ylim((-depth - 0.1, 0.1) if icicle else (-0.1, depth + 0.1))
    ax.set_yticks([])
    ax.set_xticks(np.linspace(0, 1, 6))
    ax.set_xticklabels([f"{int(t * 100)}%" for t in np.linspace(0, 1, 6)])
    ax.set_xlabel(f"share of samples (boxes under {min_fraction:.1%} merged)")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    handles = [Patch(color=c, label=m) for m, c in legend_keys(colors, boxes)]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 6), fontsize=fontsize, frameon=False)
    ax.set_title(title or ("CPU samples: " + str(p.meta.get("source", ""))), fontsize=fontsize + 2, loc="left")
    fig.self_shares = self_shares(root)  # for words about the figure: the drawing merges small boxes away
    return fig


def self_shares(root: FlameNode) -> dict[str, float]:
    """Each function's share of the samples it holds itself (its boxes' weight less their children's), from the
    whole tree: what the drawn boxes cannot give, since boxes under the size limit are merged or left out."""
    total = root.weight or 1.0
    out: dict[str, float] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        kids = list(node.children.values())
        if node.name != "all" and node.module != "(process)":
            own = node.weight - sum(k.weight for k in kids)
            if own > 0:
                out[node.function] = out.get(node.function, 0.0) + own / total
        stack.extend(kids)
    return out


def _fmt(w: float) -> str:
    return f"{w:,.0f}" if float(w).is_integer() else f"{w:,.2f}"


_SVG_SCRIPT = """
function z(g){var W=%(w)d,x0=+g.getAttribute('data-x'),w0=+g.getAttribute('data-w'),d0=+g.getAttribute('data-d');
var gs=document.querySelectorAll('g.f');for(var i=0;i<gs.length;i++){var e=gs[i],x=+e.getAttribute('data-x'),w=+e.getAttribute('data-w'),d=+e.getAttribute('data-d');
var inside=(x>=x0-1e-9&&x+w<=x0+w0+1e-9&&d>=d0)||(d<d0&&x<=x0+1e-9&&x+w>=x0+w0-1e-9);
e.style.display=inside?'':'none';if(!inside)continue;var nx=Math.max(0,(x-x0)/w0)*W,nw=Math.min(1,w/w0)*W;
var r=e.querySelector('rect'),t=e.querySelector('text');r.setAttribute('x',nx);r.setAttribute('width',Math.max(nw-0.5,0.1));
t.setAttribute('x',nx+3);var full=t.getAttribute('data-label'),n=Math.floor((nw-6)/7);t.textContent=n<3?'':(full.length>n?full.slice(0,n-1)+'\\u2026':full);}}
function reset(){z(document.querySelector('g.f'));}
"""


def write_svg(
    p: Profile,
    path,
    *,
    title: str | None = None,
    min_fraction: float = 0.001,
    icicle: bool = False,
    process_root: bool = False,
    width: int = 1200,
    row: int = 17,
) -> None:
    """Write a standalone flame-graph SVG: hover titles, click to zoom."""
    root = build_tree(p, process_root=process_root)
    total = root.weight or 1.0
    boxes = _layout(root, min_fraction * total, None)
    colors = module_colors(boxes, 16)
    depth = max(d for _, d, _, _ in boxes) + 1
    top = 36
    legend_rows = (len(colors) + 5) // 6
    height = top + depth * row + 20 + legend_rows * 16
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="Verdana,sans-serif" font-size="11">',
        f"<script><![CDATA[{_SVG_SCRIPT % {'w': width}}]]></script>",
        '<rect width="100%" height="100%" fill="#fdfdfd"/>',
        f'<text x="4" y="18" font-size="14">{html.escape(title or "CPU samples: " + str(p.meta.get("source", "")))}</text>',
        f'<text x="{width - 4}" y="18" text-anchor="end" style="cursor:pointer" onclick="reset()">reset zoom</text>',
    ]
    for x, d, w, node in boxes:
        y = top + (d if icicle else depth - 1 - d) * row
        px, pw = x / total * width, w / total * width
        label = node.name if node.merged or node.name == "all" else node.function
        n = int((pw - 6) / 7)
        shown = "" if n < 3 else (label if len(label) <= n else label[: n - 1] + "\u2026")
        tip = f"{node.name} ({_fmt(w)}, {w / total:.2%})"
        out.append(
            f'<g class="f" data-x="{x / total:.9f}" data-w="{w / total:.9f}" data-d="{d}" onclick="z(this)" style="cursor:pointer">'
            f"<title>{html.escape(tip)}</title>"
            f'<rect x="{px:.2f}" y="{y}" width="{max(pw - 0.5, 0.1):.2f}" height="{row - 1}" fill="{_color(node, colors)}" rx="2"/>'
            f'<text x="{px + 3:.2f}" y="{y + row - 5}" data-label="{html.escape(label)}">{html.escape(shown)}</text></g>'
        )
    ly = top + depth * row + 16
    for i, (m, c) in enumerate(colors.items()):
        lx, lyy = 4 + (i % 6) * (width // 6), ly + (i // 6) * 16
        out.append(f'<rect x="{lx}" y="{lyy - 10}" width="10" height="10" fill="{c}"/>'
                   f'<text x="{lx + 14}" y="{lyy}">{html.escape(m or "(no module)")}</text>')
    out.append("</svg>\n")
    if hasattr(path, "write"):  # a text stream, e.g. stdout
        path.write("\n".join(out))
        return
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(out))


class FlameSvg:
    """A flame graph drawn as static SVG for a page: the text of the picture, its size in pixels, its title, and
    each function's own share of the whole profile (:func:`self_shares`, for words said about the picture).

    Why not matplotlib: a flame graph is boxes and short labels, which SVG says directly; matplotlib spent about a
    second laying out and rasterising each of the book's (a hundred and more labels apiece)."""

    __slots__ = ("svg", "width", "height", "title", "self_shares")

    def __init__(self, svg: str, width: int, height: int, title: str, shares: dict[str, float]):
        self.svg, self.width, self.height, self.title, self.self_shares = svg, width, height, title, shares

    def _repr_svg_(self) -> str:  # shown as itself in a notebook
        return self.svg


def _wrap(text: str, width_px: float, font_px: float) -> list[str]:
    import textwrap

    return textwrap.wrap(text, max(20, int(width_px / (font_px * 0.55)))) if text else []


def flame_svg(
    p: Profile | None,
    *,
    title: str,
    note: str = "",
    x_label: str | None = None,
    min_fraction: float = 0.005,
    process_root: bool = False,
    max_modules: int = 12,
    width: int = 760,
    row: int = 18,
    font_px: float = 11.0,
    colour_of=None,
) -> FlameSvg:
    """A static flame graph (root at the bottom) as :class:`FlameSvg`: ``title`` and ``note`` (wrapped) above it,
    an x axis of shares below it, then the module legend.  Boxes under ``min_fraction`` of the total are merged
    (:func:`_layout`); a label is cut to what fits its box, and each box carries its full name and weight as a
    ``<title>``.  With ``p`` None (or no weight) the picture is the title and note alone: a figure that says why
    there is no graph."""
    esc = html.escape
    lines = [(t, font_px * 1.25) for t in _wrap(title, width - 8, font_px * 1.25)]
    lines += [(t, font_px) for t in _wrap(note, width - 8, font_px)]
    y = 4.0
    head = []
    for text, size in lines:
        y += size * 1.3
        head.append(f'<text x="4" y="{y:.1f}" font-size="{size:.1f}">{esc(text)}</text>')
    root = build_tree(p, process_root=process_root) if p is not None and len(p.samples) else None
    if root is None or root.weight <= 0:
        height = int(y + 10)
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} '
               f'{height}" font-family="DejaVu Sans,Verdana,sans-serif"><rect width="100%" height="100%" '
               f'fill="#ffffff"/>{"".join(head)}</svg>')
        return FlameSvg(svg, width, height, title, {})
    total = root.weight
    boxes = _layout(root, min_fraction * total, None)
    colors = module_colors(boxes, max_modules, colour_of)
    depth = max(d for _, d, _, _ in boxes) + 1
    left, plot_w = 4.0, width - 8.0
    top = y + 8
    body = []
    char_px = font_px * 0.6
    for x, d, w, node in boxes:
        by = top + (depth - 1 - d) * row
        px, pw = left + x / total * plot_w, w / total * plot_w
        label = node.name if node.merged else (f"all ({_fmt(total)})" if node.name == "all" else node.function)
        room = int((pw - 4) / char_px)
        shown = "" if room < 4 else (label if len(label) <= room else label[: room - 1] + "\u2026")
        tip = f"{node.name} ({_fmt(w)}, {w / total:.2%})"
        text = (f'<text x="{px + 2:.1f}" y="{by + row * 0.72:.1f}">{esc(shown)}</text>' if shown else "")
        body.append(f'<g><title>{esc(tip)}</title><rect x="{px:.2f}" y="{by:.1f}" width="{max(pw - 0.4, 0.2):.2f}" '
                    f'height="{row - 1}" fill="{_color(node, colors)}"/>{text}</g>')
    axis_y = top + depth * row + 2
    axis = [f'<line x1="{left}" y1="{axis_y:.1f}" x2="{left + plot_w}" y2="{axis_y:.1f}" stroke="#444" '
            f'stroke-width="0.8"/>']
    for i in range(6):
        tx = left + plot_w * i / 5
        anchor = "start" if i == 0 else "end" if i == 5 else "middle"
        axis.append(f'<line x1="{tx:.1f}" y1="{axis_y:.1f}" x2="{tx:.1f}" y2="{axis_y + 4:.1f}" stroke="#444" '
                    f'stroke-width="0.8"/><text x="{tx:.1f}" y="{axis_y + 4 + font_px:.1f}" text-anchor="{anchor}">'
                    f'{i * 20}%</text>')
    label_y = axis_y + 4 + font_px * 2.4
    axis.append(f'<text x="{left + plot_w / 2:.1f}" y="{label_y:.1f}" text-anchor="middle">'
                f'{esc(x_label or f"share of samples (boxes under {min_fraction:.1%} merged)")}</text>')
    keys = legend_keys(colors, boxes)
    per_row = 4
    col_w = plot_w / per_row
    legend = []
    ly = label_y + font_px * 0.8
    for i, (name, colour) in enumerate(keys):
        lx, lyy = left + (i % per_row) * col_w, ly + (i // per_row) * font_px * 1.6
        room = int((col_w - 20) / (font_px * 0.55))
        name = name if len(name) <= room else name[: room - 1] + "\u2026"
        legend.append(f'<rect x="{lx:.1f}" y="{lyy:.1f}" width="{font_px:.0f}" height="{font_px:.0f}" '
                      f'fill="{colour}"/><text x="{lx + font_px + 4:.1f}" y="{lyy + font_px * 0.9:.1f}">'
                      f'{esc(name)}</text>')
    height = int(ly + ((len(keys) + per_row - 1) // per_row) * font_px * 1.6 + 6)
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}"'
           f' font-family="DejaVu Sans,Verdana,sans-serif" font-size="{font_px:.1f}">'
           f'<rect width="100%" height="100%" fill="#ffffff"/>{"".join(head)}'
           f'<style>.b rect{{stroke:#ffffff;stroke-width:0.5}}</style><g class="b">{"".join(body)}</g>'
           f'<g font-size="{font_px:.1f}">{"".join(axis)}{"".join(legend)}</g></svg>')
    return FlameSvg(svg, width, height, title, self_shares(root))
