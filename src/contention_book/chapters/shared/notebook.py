"""The setup cell every chapter notebook shares.

A notebook's first code cell after its parameters is::

    from contention_book.chapters.shared.notebook import *  # noqa: F403
    from contention_book.chapters import logcache_spinlock as chapter
    shown = start(chapter, globals())

:func:`start` checks ``source``, runs the chapter live when asked (as a
child process, see :mod:`contention_book.harness.launch`), loads what the
chapter shows, glues its key numbers and shows the note on its recordings.
"""
from __future__ import annotations

import itertools
import warnings
from typing import Any, Mapping

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from IPython.display import Markdown, display
from myst_nb import glue

from contention_book.harness import load_record
from contention_book.harness.params import is_empty

from . import display as book_display
from . import style
from .stacks import StackSection

__all__ = ["plt", "pd", "sns", "Markdown", "display", "glue", "start", "show_section", "show_figure", "show_verdicts",
           "load_summary", "show_diagram"]

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


def start(chapter, params: Mapping[str, Any]):
    """Everything before a chapter's prose: run live if asked, then load, glue and introduce."""
    sns.set_theme(style="whitegrid", context="notebook", font_scale=0.8)
    plt.rcParams["figure.dpi"] = 100
    plt.rcParams["figure.constrained_layout.use"] = True  # lays out titles, labels and outside legends together
    book_display.install()
    _page["chapter"] = chapter.SPEC.chapter
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
    if recording:
        summary = run_summary(chapter.SPEC.chapter, recording)
        if summary:
            display(Markdown(summary))
    for name, value in chapter.key_numbers(shown).items():
        glue(name, value, display=False)
    display(Markdown(chapter.header_note(shown)))
    return shown


def run_summary(chapter: str, recording: str) -> str:
    """The runner's own account of a live run (plan, guard actions, outcome), from the recording's run.log."""
    from contention_book.harness.recording import open_chapter

    r = open_chapter(chapter, recording)
    if not r.has("run.log"):
        return ""
    lines = [line for line in r.read_bytes("run.log").decode("utf-8", "replace").splitlines()
             if line.startswith(SUMMARY_PREFIXES)]
    return "**The live run, as its runner reported it.**\n\n```text\n" + "\n".join(lines) + "\n```"


def show_figure(name: str, fig) -> None:
    """Glue a figure, sized for the text column, for a ``{glue:figure}`` block and free it."""
    glue(name, style.fit_width(fig), display=False)
    style.record_check(_page["chapter"], name, fig)
    plt.close(fig)


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
        fig.savefig(buf, format="svg", bbox_inches="tight")
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
_page = {"chapter": "chapter"}  # figure labels must be unique in the whole book: they carry the chapter's name


def show_section(part: StackSection) -> None:
    """A stacks section: its text, then its figures (numbered, captioned) and tables."""
    display(Markdown(part.text))
    for fig in part.figures:
        key = f"fig_flame_{next(_flames)}"
        title = fig.axes[0].get_title(loc="left") if fig.axes else ""
        glue(key, style.fit_width(fig), display=False)
        style.record_check(_page["chapter"], key, fig)
        plt.close(fig)
        display(Markdown(f"```{{glue:figure}} {key}\n:name: fig-{_page['chapter']}-{key.replace('_', '-')}\n\n"
                         f"{FLAME_CAPTION.format(title=title)}\n```"))
    for table in part.tables:
        display(table)


def show_verdicts(chapter, shown) -> None:
    """The chapter's verdict table, and the same rows saved for the book's Findings page (never typed twice)."""
    from IPython.display import HTML

    from contention_book.harness.book_pages import claims_anchor, save_verdicts

    rows = chapter.verdicts(shown)
    save_verdicts(chapter.SPEC.chapter, rows)
    display(HTML(f'<span id="{claims_anchor(chapter.SPEC.chapter)}"></span>'))  # the Findings page links here
    display(rows.set_index("claim"))


def load_summary(view):
    """The load check of a recording (harness.load_record.load_summary): a table, or a note where it has none."""
    out = load_record.load_summary(view)
    return Markdown(f"*{out}*") if isinstance(out, str) else out
