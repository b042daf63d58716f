"""The setup cell every chapter notebook shares.

A notebook's first code cell after its parameters is::

    from contention_book.chapters.shared.notebook import *  # noqa: F403
    from contention_book.chapters import logcache_spinlock as chapter
    shown = start(chapter, globals())

:func:`start` checks ``source``, runs the chapter live when asked (as a
child process, see :mod:`contention_book.harness.launch`), loads what the
chapter shows and glues its key numbers; it shows nothing, so a chapter opens
with its finding.  :func:`show_recordings`, in the closing "Recordings"
section, lists the recordings and links the Data page's provenance.
"""
from __future__ import annotations

import itertools
import warnings
from typing import Any, Mapping

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from contention_book.harness import load_record
from contention_book.harness.params import is_empty
from contention_book.perftools.flame import FlameSvg

from contention_book.harness import display as book_display
from . import memo, style
from .quick_seaborn import import_seaborn
from .stacks import StackSection

sns = import_seaborn()  # seaborn without scipy's import time (the module says why)

__all__ = ["plt", "pd", "sns", "Markdown", "display", "glue", "start", "show_section", "show_figure", "show_verdicts",
           "load_summary", "show_diagram", "show_recordings", "show_table"]

# The runner's lines worth keeping on a page: its plan, the guard's actions and its outcome.
SUMMARY_PREFIXES = ("[run]", "[guard]", "[harness]")


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)


def live_params(chapter, params: Mapping[str, Any]) -> dict[str, str]:
    """The notebook's values for the chapter's live-run parameters that apply to its engine and are set."""
    engine = params.get("engine", "")
    return {p.name: _as_text(params[p.name]) for p in chapter.SPEC.params
            if p.name in params and p.applies_to(engine) and not is_empty(params[p.name])}


def book_style() -> None:
    """The figures' look, set for the session: seaborn's grid theme, 100 dpi, constrained layout."""
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.8)
    plt.rcParams["figure.dpi"] = 100
    plt.rcParams["figure.constrained_layout.use"] = True  # lays out titles, labels and outside legends together
    # Titles sit at the top of their axes instead of being placed, at every layout pass and drawing, above any x
    # tick labels there: no axes of the book has tick labels or an x label on top, and looking measured every
    # titled axes' y axis again (a fifth of the figures' drawing time in a profile of a full build).  The book's
    # pictures are byte for byte the same; style.overlaps catches a title that would overprint such text.
    plt.rcParams["axes.titley"] = 1.0
    plt.rcParams["svg.hashsalt"] = "contention-book"  # a diagram's SVG ids the same in every build


def warm_up() -> None:
    """Draw one small figure in the book's style and throw it away, so that a process forked after this (the
    book build's kernels, :mod:`contention_book.harness.kernel_fork`) starts with matplotlib's fonts, glyphs
    and math-text parser loaded: each chapter's first figure cost about a third of a second more without.
    A bare Figure on an Agg canvas, not pyplot: pyplot would choose its backend here, before the kernel's
    shell exists, and the kernel's figures would then have no PNG formatter."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with plt.rc_context():
        book_style()
        fig = Figure(figsize=(4, 2))
        FigureCanvasAgg(fig)
        a, b = fig.subplots(1, 2)
        a.set_yscale("log")
        a.plot([1, 2, 3], [1, 10, 100], label="µs ≥ ×")
        a.set_title("two\nlines", fontsize="medium")
        b.bar(["a", "b"], [1, 2])
        b.set_xlabel("threads")
        fig.legend(loc="outside lower center")
        fig.canvas.draw()
        _drawn_png(fig)


def start(chapter, params: Mapping[str, Any]):
    """Everything before a chapter's prose: run live if asked, then load, glue and introduce."""
    book_style()
    book_display.install()
    book_display.reset_numbers()
    memo.rendering()  # the page's views do not change while it renders: each result is computed once
    _page["chapter"] = chapter.SPEC.chapter
    _page["labels"] = dict(chapter.SPEC.labels)  # variant ids as a page names them (shared tables use them)
    style.reset_checks(chapter.SPEC.chapter)
    pd.set_option("display.max_colwidth", None)
    warnings.filterwarnings("ignore", category=UserWarning, module="seaborn")
    source = params.get("source", "recorded")
    if source not in ("recorded", "live"):
        raise ValueError(f"source={source!r}: expected 'recorded' or 'live'")
    recording = params.get("recording") or ""
    if source == "live":
        from contention_book.harness.launch import run_live

        recording = str(run_live(chapter.SPEC.chapter, params["engine"], target=params.get("target") or None,
                                 params=live_params(chapter, params), record_to=params.get("record_to") or None,
                                 allow_server_changes=bool(params.get("allow_server_changes")),
                                 relay=lambda line: print(line, flush=True)))
    shown = chapter.load_shown(recording, stacks=params.get("stacks") or "")
    _page["recording"] = recording
    for name, value in chapter.key_numbers(shown).items():
        glue(name, value, display=False)
    return shown  # nothing is shown here: a chapter opens with its finding ("In short"), not its provenance


def show_recordings(chapter, shown) -> None:
    """The closing "Recordings" section's body: the recordings the chapter rendered (ids, engines, machines,
    dates), each linked to the Data page row that says how it was made; for a live run, the runner's own
    account of it.  The notebook puts a ``## Recordings`` heading above the cell that calls this."""
    display(Markdown(chapter.header_note(shown)))
    recording = _page.get("recording") or ""
    if recording:
        summary = run_summary(chapter.SPEC.chapter, recording)
        if summary:
            display(Markdown(summary))


def run_summary(chapter: str, recording: str) -> str:
    """The runner's own account of a live run (plan, guard actions, outcome), from the recording's run.log."""
    from contention_book.harness.recording import open_chapter

    r = open_chapter(chapter, recording)
    if not r.has("run.log"):
        return ""
    lines = [line for line in r.read_bytes("run.log").decode("utf-8", "replace").splitlines()
             if line.startswith(SUMMARY_PREFIXES)]
    from contention_book.harness.provenance import public_text

    from contention_book.harness.recording import repo_root

    text = public_text("\n".join(lines).replace(str(repo_root()) + "/", ""), chapter, r.id)
    return "**The live run, as its runner reported it.**\n\n```text\n" + text + "\n```"


class _Rendered:
    """A figure already rendered to its display data, so the PNG glued is exactly the one whose hash is known."""

    def __init__(self, bundle: dict, metadata: dict):
        self.bundle, self.metadata = bundle, metadata

    def _repr_mimebundle_(self, include=None, exclude=None):  # noqa: ARG002 - IPython's signature
        return self.bundle, self.metadata


def _drawn_png(fig, pad_inches: float = 0.1) -> bytes | None:
    """The PNG ``savefig(bbox_inches="tight")`` makes, cut from the figure's last drawing on its Agg canvas
    instead of laying it out and drawing it twice more (two thirds of a chapter's figure time): the drawn pixels
    that differ from the figure's background, with ``pad_inches`` of background around them.  The box is found
    in the pixels, not by measuring every artist again (``get_tightbbox``, an eighth of a second a figure), so it
    hugs the ink where savefig's hugs the artists' boxes: a few pixels apart.  None when the figure was not
    drawn, or is drawn past its canvas (savefig then shows what this cannot): a figure whose ink reaches the
    canvas's edge has its artists measured to find out."""
    import io

    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgba
    from matplotlib.image import imsave

    canvas = fig.canvas
    if not isinstance(canvas, FigureCanvasAgg) or getattr(canvas, "renderer", None) is None:
        return None
    buf = np.asarray(canvas.buffer_rgba())
    dpi, height_px = fig.dpi, fig.bbox.height
    if abs(buf.shape[0] - height_px) >= 1 or abs(buf.shape[1] - fig.bbox.width) >= 1:
        return None  # resized since it was drawn (a size of 227.99999… px is drawn on 228 rows)
    background = np.round(np.asarray(to_rgba(fig.get_facecolor())) * 255).astype(np.uint8)
    ink = (buf != background).any(axis=2)
    rows, cols = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if not len(rows):
        return None
    edge = rows[0] == 0 or cols[0] == 0 or rows[-1] == buf.shape[0] - 1 or cols[-1] == buf.shape[1] - 1
    if edge and style.past_canvas(fig, canvas.get_renderer()):  # savefig would draw what lies outside the canvas
        return None
    pad = int(round(pad_inches * dpi))
    crop = buf[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    out = np.empty((crop.shape[0] + 2 * pad, crop.shape[1] + 2 * pad, 4), np.uint8)
    out[:] = background
    out[pad:pad + crop.shape[0], pad:pad + crop.shape[1]] = crop
    data = io.BytesIO()
    imsave(data, out, format="png", origin="upper", dpi=dpi)
    return data.getvalue()


def _glue_figure(name: str, fig, alt: str | None, drawn: bool = False) -> None:
    """Glue ``fig`` as PNG; with ``alt``, register the text for that PNG (sphinx_alt gives it to the image).
    ``drawn``: the figure was drawn just now, unchanged since (its PNG is cut from that drawing)."""
    import base64
    import hashlib

    from IPython.core.formatters import format_display_data

    png = _drawn_png(fig) if drawn else None
    if png is None and hasattr(fig, "savefig"):  # not drawn, or drawn past its canvas: savefig, as the page shows
        import io

        saved = io.BytesIO()
        fig.savefig(saved, format="png", bbox_inches="tight", facecolor=fig.get_facecolor(), dpi=fig.dpi)
        png = saved.getvalue()
    if png is not None:
        bundle, metadata = {"text/plain": repr(fig), "image/png": base64.b64encode(png).decode("ascii")}, {}
    else:
        bundle, metadata = format_display_data(fig)
    png = bundle.get("image/png")
    if alt and png is not None:
        data = png if isinstance(png, bytes) else base64.b64decode(png)
        style.record_alt(_page["chapter"], hashlib.sha256(data).hexdigest(), alt)
    glue(name, _Rendered(bundle, metadata), display=False)


def _glue_svg(name: str, picture: FlameSvg, alt: str) -> None:
    """Glue a picture already drawn as SVG (a flame graph) for a ``{glue:figure}`` block, its alt text registered
    under the hash myst-nb names its file by (the SVG's lines joined by newlines, as UTF-8), and its width
    checked against the text column."""
    import hashlib

    svg = "\n".join(picture.svg.splitlines())
    style.record_problems(_page["chapter"], name, style.svg_width_problems(picture.width))
    if alt:
        style.record_alt(_page["chapter"], hashlib.sha256(svg.encode("utf-8")).hexdigest(), alt)
    glue(name, _Rendered({"text/plain": f"<flame graph: {picture.title}>", "image/svg+xml": svg}, {}), display=False)


def show_figure(name: str, fig, alt: str | None = None) -> None:
    """Glue a figure, sized for the text column, for a ``{glue:figure}`` block and free it.

    ``alt`` says what the figure shows, for a reader who cannot see it (a sentence, not a file name); without
    it the image's alt text is its caption's first sentence (harness.sphinx_alt)."""
    if alt is not None and len(alt.split()) < 5:
        raise ValueError(f"figure {name}: alt text {alt!r} is too short; say what the figure shows")
    if isinstance(fig, FlameSvg):
        _glue_svg(name, fig, alt or flame_alt(fig, fig.title))
        return
    fig = style.fit_width(fig)
    style.record_check(_page["chapter"], name, fig)  # draws it: the PNG is cut from that drawing
    _glue_figure(name, fig, alt, drawn=True)
    plt.close(fig)


def show_table(frame, caption: str, **kwargs) -> None:
    """Show a table with a numbered caption (every table the book shows has one); see display.table_html for
    how empty columns, wide tables and missing values are handled."""
    from IPython.display import HTML

    display(HTML(book_display.table_html(frame, caption=book_display.numbered(caption), **kwargs)))


_diagrams = itertools.count(1)


def show_diagram(name: str, fig, alt: str, caption: str) -> None:
    """A mechanism diagram (not a data figure): drawn as SVG, shown with its alt text and a numbered caption.

    ``fig`` is a matplotlib figure or SVG text.  The SVG is embedded in the
    page, so a diagram drawn from the reader's own measured numbers rebuilds
    with them.  ``alt`` says what the picture shows for a reader who cannot
    see it; it must be a sentence, not a file name."""
    import base64
    import html
    import io

    from IPython.display import HTML

    if len(alt.split()) < 5:
        raise ValueError(f"diagram {name}: alt text {alt!r} is too short; say what the picture shows")
    if isinstance(fig, str):
        svg = fig
    else:
        buf = io.StringIO()
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})  # no date: same bytes each build
        plt.close(fig)
        svg = buf.getvalue()
    number = next(_diagrams)
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    anchor = f"diagram-{_page['chapter']}-{name}"
    display(HTML(f'<figure class="diagram" id="{anchor}"><img src="data:image/svg+xml;base64,{data}" '
                 f'alt="{html.escape(alt, quote=True)}" style="max-width:100%;height:auto"/>'
                 f'<figcaption>Diagram {number}. {html.escape(caption)}</figcaption></figure>'))


FLAME_CAPTION = ("Flame graph of the CPU samples, {title}. Each box is a function; its width is its share of the "
                 "samples, and the boxes above it are the functions it called. The colour is the code module, the same "
                 "colour for a module in every chapter; boxes under the size limit are merged.")
_flames = itertools.count(1)
_page = {"chapter": "chapter", "recording": ""}  # figure labels must be unique in the whole book: they carry the chapter's name


def show_section(part: StackSection) -> None:
    """A stacks section: its text, then its figures (numbered, captioned) and tables."""
    display(Markdown(part.text))
    for fig in part.figures:
        key = f"fig_flame_{next(_flames)}"
        if isinstance(fig, FlameSvg):
            title = fig.title
            _glue_svg(key, fig, flame_alt(fig, title))
        else:
            title = fig.axes[0].get_title(loc="left") if fig.axes else ""
            alt = flame_alt(fig, title)
            fig = style.fit_width(fig)
            style.record_check(_page["chapter"], key, fig)  # draws it: the PNG is cut from that drawing
            _glue_figure(key, fig, alt, drawn=True)
            plt.close(fig)
        display(Markdown(f"```{{glue:figure}} {key}\n:name: fig-{_page['chapter']}-{key.replace('_', '-')}\n\n"
                         f"{FLAME_CAPTION.format(title=title)}\n```"))
    for table in part.tables:
        show_table(table, stack_table_caption(table))


def stack_table_caption(table) -> str:
    """A stacks table's caption: its own (``attrs["caption"]``), else one said from what its columns hold."""
    if table.attrs.get("caption"):
        return str(table.attrs["caption"])
    cols = {str(book_display.human(c)) for c in table.columns}
    first = table.index.get_level_values(0).unique() if len(table) else []
    setting = f", {first[0]}" if len(first) == 1 and table.index.nlevels > 1 else ""
    if {"exclusive %", "inclusive %"} & cols:
        return (f"The functions with the most CPU samples{setting}: the share in the function itself (exclusive) "
                "and with everything it called (inclusive)")
    if "change (points)" in cols:
        return "How each function's share of the CPU samples changed between the two settings, in percentage points"
    return f"CPU samples by function{setting}"


def flame_alt(fig, title: str) -> str:
    """What a flame graph shows, in words: its subject and the functions that hold the most samples themselves.
    perftools' figures carry those shares, counted on the whole profile (``fig.self_shares``); for another figure
    they are read from the drawn boxes and labels (a box's width less the widths drawn on top of it), which
    overstates a function whose small callees were merged away."""
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Rectangle

    boxes = []
    for ax in getattr(fig, "axes", []):  # a FlameSvg has no axes: its self_shares say it all
        # the boxes: rectangles drawn one by one, or one collection of them (perftools' flame graphs)
        rects = [(p.get_x(), p.get_y(), p.get_width(), p.get_height()) for p in ax.patches
                 if isinstance(p, Rectangle) and p.get_width() > 0]
        for coll in ax.collections:
            if isinstance(coll, PolyCollection):
                for path in coll.get_paths():
                    (x0, y0), (x1, y1) = path.vertices.min(axis=0), path.vertices.max(axis=0)
                    if x1 > x0:
                        rects.append((float(x0), float(y0), float(x1 - x0), float(y1 - y0)))
        for t in ax.texts:
            name = str(getattr(t, "full_label", t.get_text())).strip()  # a box's label is cut to fit; not here
            if not name:
                continue
            x, y = t.get_position()
            for bx, by, bw, bh in rects:
                if bx <= x <= bx + bw and by <= y <= by + bh:
                    boxes.append((bx, by, bw, bh, name))
                    break
    total = max((ax.get_xlim()[1] - ax.get_xlim()[0] for ax in getattr(fig, "axes", [])), default=0) or 1
    own: dict[str, float] = {}
    for x, y, w, h, name in boxes:
        above = sum(w2 for x2, y2, w2, _, _ in boxes
                    if abs(y2 - (y + h)) < h * 0.5 and x - 1e-9 <= x2 and x2 + w2 <= x + w + 1e-9)
        own[name] = own.get(name, 0.0) + max(0.0, w - above)
    if isinstance(getattr(fig, "self_shares", None), dict):  # perftools counted them on the whole profile
        own, total = fig.self_shares, 1.0
    top = [(n, w) for n, w in sorted(own.items(), key=lambda kv: -kv[1]) if w / total >= 0.01][:3]
    said = "; ".join(f"{name}, about {w / total:.0%} of the samples" for name, w in top)
    return (f"Flame graph of the CPU samples, {title or 'as captured'}."
            + (f" The functions holding the most samples themselves: {said}." if said else ""))


def details_page(name: str) -> str:
    """The file name of a chapter's details page, beside its main page (``harness.book.split_page`` writes it)."""
    from contention_book.harness.recording import repo_root

    found = sorted((repo_root() / "notebooks").glob(f"[0-9][0-9]-{name}.ipynb"))
    return f"{found[0].stem}-details.html" if found else ""


def show_verdicts(chapter, shown) -> None:
    """The chapter's verdict table, and the same rows saved for the book's Findings page (never typed twice).
    The rules behind the verdicts go to the chapter's details page (an output marked for it, which the book's
    builder moves there); the table's rule marks link to them."""
    from IPython.display import HTML

    from contention_book.harness.book_pages import DETAILS_OUTPUT, claims_anchor, save_verdicts

    from contention_book.harness.provenance import recording_link
    from contention_book.harness.verdict_table import RULES_SPLIT, verdict_table_html

    rows = chapter.verdicts(shown)
    save_verdicts(chapter.SPEC.chapter, rows)
    name = chapter.SPEC.chapter
    page = details_page(name)
    if "recording" in rows.columns:  # words and a link to the Data page, not the recording's id
        rows = rows.assign(recording=rows["recording"].map(  # a row with no recording keeps its "—"
            lambda rid: rid if not isinstance(rid, str) or rid in ("", "—") else recording_link(name, rid)))
    out = verdict_table_html(rows, caption=book_display.numbered(
                                 "The article's claims, checked: the published number, the measured one, and the "
                                 "verdict (notes under the table say why, and whether the size was compared; the "
                                 "rule marks link to the rules on the details page)"),
                             prefix=f"verdicts-table-{name}",
                             columns=("claim", "published", "recording", "tested_on", "measured", "size", "verdict"),
                             # the page reads in one pass: a size note shared by rows is written once, and where
                             # every row ran on one recording it is said once
                             as_notes=("size",), shared=("recording", "tested_on"), rules_page=page,
                             raw=("recording",))
    table, _, rules = out.partition(RULES_SPLIT)
    display(HTML(f'<span id="{claims_anchor(name)}"></span>' + table))  # the Findings page links here
    if rules:
        display(HTML(f"<h3>The rules behind the verdicts</h3>{rules}"), metadata=DETAILS_OUTPUT)


def load_summary(view):
    """The load check of a recording (harness.load_record.load_summary): a table, or a note where it has none."""
    out = load_record.load_summary(view)
    if isinstance(out, str):
        return Markdown(f"*{out}*")
    out = out.rename(index=_page.get("labels", {}), level="variant") if "variant" in out.index.names else out
    out.attrs["caption"] = ("How the load was driven and watched, per variant and session count (medians over "
                            "repetitions): calls a second, latency, and where the backends' samples were")
    return out
