"""One look for every figure in the book: sized for the text column, legends outside the data, and one
colour per code module wherever a flame graph shows it.

The text column of the HTML book is about 780 px wide at 100 dpi; a figure drawn wider is shrunk by the
browser until its tick labels are unreadable, so :func:`fit_width` caps every figure at
:data:`TEXT_WIDTH_IN`.  A legend inside an axes covers data sooner or later, so :func:`legend_below` puts
it under the axes, and :func:`overlaps` (used by the tests) measures whether a drawn legend touches any
axes' data area.
"""
from __future__ import annotations

import re

import zlib
from contextlib import contextmanager
from typing import Iterable

TEXT_WIDTH_IN = 7.6  # the book's text column, in inches at the figure's own dpi of 100
FLAME_WIDTH_IN = TEXT_WIDTH_IN
FLAME_WIDTH_PX = int(FLAME_WIDTH_IN * 100)  # flame graphs are SVG, drawn at the column's width in pixels

# Modules that appear in the book's stacks, each with its own colour on every page.
MODULE_COLOURS = {
    "postgres": "#4c72b0",
    "[kernel.kallsyms]": "#dd8452",
    "libc.so.6": "#55a868",
    "plpgsql.so": "#c44e52",
    "[unknown]": "#8c8c8c",
    "[vdso]": "#937860",
    "ld-linux-x86-64.so.2": "#da8bc3",
    "libcrypto.so.3": "#ccb974",
    "libsasl2.so.2.0.25": "#64b5cd",
    "sqlmin.dll": "#4c72b0",
    "sqllang.dll": "#8172b3",
    "sqldk.dll": "#2ca02c",
    "sqltses.dll": "#17becf",
    "ntoskrnl.exe": "#dd8452",
    "latch_convoy": "#1f77b4",
    "logcache_toy": "#1f77b4",
}
_SPARE = ("#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f", "#aec7e8", "#ffbb78", "#98df8a",
          "#ff9896", "#c5b0d5", "#c49c94")


def module_colour(module: str) -> str:
    """The book-wide colour of a module: a fixed one for known modules, else one picked by the name's hash,
    so the same module is the same colour in every chapter."""
    if module in MODULE_COLOURS:
        return MODULE_COLOURS[module]
    return _SPARE[zlib.crc32(module.encode()) % len(_SPARE)]


def module_colours(modules: Iterable[str]) -> dict[str, str]:
    return {m: module_colour(m) for m in modules}


def fit_width(fig, width_in: float = TEXT_WIDTH_IN):
    """Scale a figure down (keeping its aspect) so that it is no wider than the text column; whole-number ticks
    on the linear axes that count things (:func:`whole_counts`); log axes' labels without math text
    (:func:`plain_powers`); no minor ticks that would show nothing (:func:`drop_silent_minor_ticks`)."""
    w, h = fig.get_size_inches()
    if w > width_in:
        fig.set_size_inches(width_in, h * width_in / w)
    return drop_silent_minor_ticks(plain_powers(thousands(whole_counts(fig))))


@contextmanager
def fixed_jitter(seed: int = 0):
    """Seaborn's strip plots jitter their dots with numpy's global random numbers: under this, the same data draw
    the same picture in every build (and the global state is put back after)."""
    import numpy as np

    saved = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(saved)


def drop_silent_minor_ticks(fig):
    """Leave out the minor ticks of an axis where they would draw nothing: no tick mark (the book's style has
    none), no grid line (major only) and no label (a log axis over several decades labels no minor tick).
    Matplotlib still places and lays out each one, eight a decade on a log axis, at every drawing (constrained
    layout draws twice): a fifth of a log-scale figure's drawing time, for pixels that do not change."""
    from matplotlib.ticker import NullLocator

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if isinstance(axis.get_minor_locator(), NullLocator):
                continue
            locs = axis.get_minorticklocs()
            if not len(locs):
                continue
            tick = axis.get_minor_ticks(1)[0]  # every minor tick is made with the same settings
            if tick.tick1line.get_visible() or tick.tick2line.get_visible() or tick.gridline.get_visible():
                continue
            labelled = tick.label1.get_visible() or tick.label2.get_visible()
            if labelled and any(axis.get_minor_formatter().format_ticks(locs)):
                continue
            axis.set_minor_locator(NullLocator())
    return fig


_SUPERSCRIPT = str.maketrans("0123456789-.", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻·")
_MATH_POWER = re.compile(r"^\$\\mathdefault\{(?:(?P<sign>-?)(?P<coeff>[\d.]+)\\times\s*)?(?P<minus>-?)(?P<base>\d+)"
                         r"\^\{(?P<exp>[-\d.]+)\}\}\$$")


def power_text(label: str) -> str:
    """A log axis's math-text label as plain text with superscripts: "$\\mathdefault{10^{-2}}$" -> "10⁻²",
    "$\\mathdefault{2\\times10^{3}}$" -> "2×10³"; any other label is returned as it is."""
    m = _MATH_POWER.match(label)
    if not m:
        return label
    coeff = f"{m['sign']}{m['coeff']}×" if m["coeff"] else ""
    return f"{coeff}{m['minus']}{m['base']}{m['exp'].translate(_SUPERSCRIPT)}"


def plain_powers(fig):
    """Log axes labelled "10³" in the text font instead of math text: the same labels (matplotlib's choice of
    which ticks to label is kept), without a math-text layout per tick label, which was a large share of a
    chapter's drawing time."""
    from matplotlib.ticker import LogFormatterSciNotation

    class PlainPowers(LogFormatterSciNotation):
        def __call__(self, x, pos=None):
            return power_text(super().__call__(x, pos))

    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for get, put in ((axis.get_major_formatter, axis.set_major_formatter),
                             (axis.get_minor_formatter, axis.set_minor_formatter)):
                old = get()
                if type(old) is LogFormatterSciNotation:
                    new = PlainPowers(base=old._base, labelOnlyBase=old.labelOnlyBase,
                                      minor_thresholds=old.minor_thresholds, linthresh=old._linthresh)
                    put(new)
    return fig


def whole_counts(fig):
    """Every linear axis whose label names a count (threads, sessions, producers) and whose ticks matplotlib
    places by itself gets whole-number ticks only."""
    from matplotlib.ticker import AutoLocator, MaxNLocator

    for ax in fig.axes:
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            label = axis.get_label_text().lower()
            if scale == "linear" and any(w in label for w in COUNT_WORDS) and \
                    type(axis.get_major_locator()) is AutoLocator:
                axis.set_major_locator(MaxNLocator(integer=True))
    return fig


def legend_below(ax, ncol: int | None = None, **kwargs):
    """A legend centred under ``ax``, outside its data area (after its x label)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    ncol = ncol or columns_for(labels)
    return ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=ncol,
                     frameon=False, fontsize="small", **kwargs)


def legend_under_figure(fig, ax):
    """One legend for the whole figure, taken from ``ax``, under every panel (needs constrained layout)."""
    handles, labels = ax.get_legend_handles_labels()
    for a in fig.axes:
        if a.get_legend():
            a.get_legend().remove()
    if not handles:
        return None
    return fig.legend(handles, labels, loc="outside lower center", ncol=columns_for(labels), frameon=False,
                      fontsize="small")


def columns_for(labels, room_chars: int = 90) -> int:
    """As many legend columns as fit across the text column, given the longest label."""
    longest = max((len(str(t)) for t in labels), default=1) + 4
    return max(1, min(len(labels), 4, room_chars // longest))


def thousands(fig):
    """Thousands separators on every linear axis that reaches 1,000, as the tables have them."""
    from matplotlib.ticker import FuncFormatter

    fmt = FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 1000 or float(v).is_integer() else f"{v:g}")
    for ax in fig.axes:
        for axis, scale, lim in ((ax.xaxis, ax.get_xscale(), ax.get_xlim()), (ax.yaxis, ax.get_yscale(), ax.get_ylim())):
            if scale == "linear" and max(abs(lim[0]), abs(lim[1])) >= 1000 and \
                    type(axis.get_major_formatter()).__name__ == "ScalarFormatter":
                axis.set_major_formatter(fmt)
    return fig


def legend_right(ax, **kwargs):
    """A legend to the right of ``ax``, outside its data area."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    return ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False,
                     fontsize="small", **kwargs)


def overlaps(fig) -> list[str]:
    """Every legend or title that overlaps a data area or another title, as drawn: the test of this module's
    promise.  Empty when nothing overlaps."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    import warnings

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        canvas.draw()
    renderer = canvas.get_renderer()
    found = [f"layout failed: {w.message}" for w in caught if "layout" in str(w.message)]
    axes = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    legends = [(f"legend of axes {i}", ax.get_legend()) for i, ax in enumerate(fig.axes) if ax.get_legend()]
    legends += [(f"figure legend {i}", lg) for i, lg in enumerate(fig.legends)]
    for name, legend in legends:
        box = legend.get_window_extent(renderer)
        for j, ax in enumerate(axes):
            if box.overlaps(ax.get_window_extent(renderer)):
                found.append(f"{name} overlaps the data area of axes {j}")
    titles = [(i, ax.title.get_window_extent(renderer)) for i, ax in enumerate(fig.axes) if ax.get_title()]
    for a in range(len(titles)):
        for b in range(a + 1, len(titles)):
            if titles[a][1].overlaps(titles[b][1]):
                found.append(f"titles of axes {titles[a][0]} and {titles[b][0]} overlap")
    for i, box in titles:
        found += [f"the title of axes {i} overprints {what}" for what, extent in _above(fig.axes[i], renderer)
                  if box.overlaps(extent)]
    return found + past_canvas(fig, renderer)


def _above(ax, renderer):
    """Text of an axes that may sit where its title does: x tick labels and an x label on top, the y axis's offset
    ("1e6").  The book's style puts titles at the top of the axes (axes.titley = 1, notebook.book_style) rather
    than above such text, so a figure that has any must not overprint it."""
    out = []
    if ax.xaxis.get_ticks_position() in ("top", "unknown"):
        out += [("its top tick labels", t.label2.get_window_extent(renderer)) for t in ax.xaxis.get_major_ticks()
                if t.label2.get_visible() and t.label2.get_text()]
    if ax.xaxis.get_label_position() == "top" and ax.xaxis.label.get_text():
        out.append(("its x label", ax.xaxis.label.get_window_extent(renderer)))
    if ax.yaxis.offsetText.get_visible() and ax.yaxis.offsetText.get_text():
        out.append(("its y axis's offset", ax.yaxis.offsetText.get_window_extent(renderer)))
    return out


def past_canvas(fig, renderer) -> list[str]:
    """Every text or legend that reaches past the canvas, as drawn (a long axis label does, even under constrained
    layout; the axes clip their data).  Such a figure is larger on the page than it was drawn, so it shrinks
    below the column's type size, and its PNG must be laid out and drawn again.  The extents come from the
    drawing's text-layout cache, where ``get_tightbbox`` would lay out every axis's ticks again."""
    from matplotlib.legend import Legend
    from matplotlib.text import Text

    width, height = fig.bbox.width, fig.bbox.height
    drawn_ticks, all_ticks = set(), set()  # an axis keeps tick objects past its view limits, and draws none of them
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in list(axis.majorTicks) + list(axis.minorTicks):
                all_ticks.update((tick.label1, tick.label2))
            if ax.get_visible() and axis.get_visible():
                for tick in axis._update_ticks():  # what its draw drew (private, stable since matplotlib 3.1)
                    drawn_ticks.update((tick.label1, tick.label2))
    found = []
    for artist in fig.findobj(lambda a: isinstance(a, (Text, Legend)) and a.get_visible()):
        if isinstance(artist, Text) and (not artist.get_text() or (artist.get_clip_on() and artist.get_clip_box())):
            continue  # empty, or clipped to its axes when drawn
        if artist in all_ticks and artist not in drawn_ticks:
            continue  # a tick label outside the view limits: never drawn
        box = artist.get_window_extent(renderer)
        over = {"left": -box.x0, "bottom": -box.y0, "right": box.x1 - width, "top": box.y1 - height}
        sides = [f"{side} by {px:.0f} px" for side, px in over.items() if px > 0.5]
        if sides:
            what = f"text {artist.get_text()[:40]!r}" if isinstance(artist, Text) else "a legend"
            found.append(f"{what} runs past the canvas ({', '.join(sides)})")
    return found


# -- the figures a chapter drew, checked as drawn ----------------------------------------------------------------

def checks_path(chapter: str):
    from contention_book.harness.recording import repo_root

    return repo_root() / "book" / "chapters" / "figure-checks" / f"{chapter}.json"


def _book_copy() -> bool:
    from contention_book.harness.book_pages import page_data_dir

    return page_data_dir() is not None


def reset_checks(chapter: str) -> None:
    if not _book_copy():
        return
    for path in (checks_path(chapter), alt_path(chapter)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}", encoding="utf-8")


# -- counts on axes --------------------------------------------------------------------------------------------

# An axis whose label names one of these counts things: its ticks must be whole numbers.
COUNT_WORDS = ("thread", "session", "producer", "consumer", "worker", "client", "connection")


def count_axis(ax, axis: str = "x", values=None):
    """Ticks at whole numbers only on an axis of counts (threads, sessions, producers): at ``values`` when
    given (the counts a run measured, on a linear or log axis), else wherever a linear axis has room for
    whole numbers.  No 36.5 threads, no 1.5 producers."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator

    target = ax.xaxis if axis == "x" else ax.yaxis
    if values is not None:
        ticks = sorted({int(v) for v in values if v == v and float(v).is_integer()})
        target.set_major_locator(FixedLocator(ticks))
        target.set_minor_locator(NullLocator())
    elif (ax.get_xscale() if axis == "x" else ax.get_yscale()) == "linear":
        target.set_major_locator(MaxNLocator(integer=True))
    else:
        lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
        ticks = [2 ** k for k in range(0, 31) if max(lo, 1) <= 2 ** k <= hi]
        target.set_major_locator(FixedLocator(ticks))
        target.set_minor_locator(NullLocator())
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    return ax


def count_problems(fig) -> list[str]:
    """Fractional ticks on an axis of counts, and bars drawn on a log axis (a bar's length on a log axis
    depends on where the axis starts, so it means nothing).  Call after the figure is drawn."""
    from matplotlib.container import BarContainer

    found = []
    for i, ax in enumerate(fig.axes):
        if not ax.get_visible() or not ax.axison:
            continue
        for name, target, lim in (("x", ax.xaxis, ax.get_xlim()), ("y", ax.yaxis, ax.get_ylim())):
            label = target.get_label_text().lower()
            if not any(w in label for w in COUNT_WORDS):
                continue
            lo, hi = min(lim), max(lim)
            odd = [t for t in target.get_majorticklocs() if lo - 1e-9 <= t <= hi + 1e-9 and abs(t - round(t)) > 1e-6]
            if odd:
                found.append(f"axes {i}: the {name} axis {label!r} counts things but has ticks at "
                             f"{', '.join(f'{t:g}' for t in odd[:4])}")
        for c in ax.containers:
            if not isinstance(c, BarContainer) or not len(c.patches):
                continue
            horizontal = getattr(c, "orientation", None) == "horizontal"
            scale = ax.get_xscale() if horizontal else ax.get_yscale()
            if scale != "linear":
                found.append(f"axes {i}: bars drawn on a {scale} {'x' if horizontal else 'y'} axis (a bar's length "
                             "on a log axis depends on where the axis starts)")
    return found


def record_check(chapter: str, name: str, fig) -> list[str]:
    """Measure one drawn figure (:func:`overlaps`, and its width) and add the result to the chapter's checks file,
    which the book's tests read."""
    problems = overlaps(fig)
    problems += count_problems(fig)
    width = float(fig.get_size_inches()[0])
    if width > TEXT_WIDTH_IN + 0.01:
        problems.append(f"{width:.1f} in wide, wider than the text column ({TEXT_WIDTH_IN} in)")
    return record_problems(chapter, name, problems)


def svg_width_problems(width_px: float) -> list[str]:
    """A picture drawn as SVG (nothing for matplotlib to measure): only its width can be wrong."""
    limit = TEXT_WIDTH_IN * 100
    return [f"{width_px:.0f} px wide, wider than the text column ({limit:.0f} px)"] if width_px > limit + 1 else []


def record_problems(chapter: str, name: str, problems: list[str]) -> list[str]:
    """Add one figure's problems to the chapter's checks file (when this is the book's own copy of the page)."""
    import json

    if not _book_copy():
        return problems
    path = checks_path(chapter)
    found = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    found[name] = problems
    path.write_text(json.dumps(found, indent=1), encoding="utf-8")
    return problems


def alt_path(chapter: str):
    from contention_book.harness.recording import repo_root
    from contention_book.harness.sphinx_alt import ALT_DIR

    return repo_root() / ALT_DIR / f"{chapter}.json"


def record_alt(chapter: str, png_sha256: str, alt: str) -> None:
    """Keep a figure's alt text for the book's build (harness.sphinx_alt), keyed by its PNG's SHA-256."""
    import json

    if not _book_copy():
        return
    path = alt_path(chapter)
    path.parent.mkdir(parents=True, exist_ok=True)
    found = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    found[png_sha256] = alt
    path.write_text(json.dumps(found, indent=1, ensure_ascii=False), encoding="utf-8")
