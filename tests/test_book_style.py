"""The one table helper and the one figure style: what a reader sees, checked on small frames and figures."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from contention_book.chapters.shared import style  # noqa: E402
from contention_book.harness import display  # noqa: E402


@pytest.mark.parametrize("value, text", [
    (271609.0, "271,609"), (22642.0, "22,642"), (76076006.1, "76,076,006"), (16.911018, "16.9"), (3.3, "3.3"),
    (0.0123, "0.0123"), (float("nan"), "—"), (None, "—"), (5, "5"), (0.0, "0"), (True, "yes"), ("text", "text"),
    (1e-4, "0.0001"), (0.000123456, "0.000123"), (-3e-4, "-0.0003"), (4.5e-5, "0.000045"), (2e-8, "2.00e-08"),
])
def test_numbers_read_as_a_person_writes_them(value, text):
    assert display.number_text(value) == text


@pytest.mark.parametrize("code, human", [
    ("waits_per_record", "waits / record"), ("jain_index", "Jain fairness index"),
    ("rcsi_open_txn/after_run", "RCSI, open transaction, after the run"),
    ("legacy_bottleneck/cannot_retry", "legacy bottleneck, cannot retry"), ("writer_wait_p99_ns", "writer wait, p99 (ns)"),
    ("flush_time_ms", "flush time (ms)"), ("NESTING_TRANSACTION_FULL", "NESTING_TRANSACTION_FULL"),
    ("µs/update, first 10%", "µs/update, first 10%"),
])
def test_code_names_become_human_names(code, human):
    assert display.human(code) == human


def test_a_table_scrolls_in_the_column_footnotes_missing_values_and_links_coined_measures():
    frame = pd.DataFrame({"jain_index": [0.99, None], "waits": [271609.0, 57.0]}, index=pd.Index(["fair", "unfair"]))
    html = display.table_html(frame)
    assert html.startswith('<div class="table-wrap">')
    assert "271,609" in html and "271609.0" not in html
    assert "—" in html and display.MISSING_NOTE in html
    assert 'href="../glossary.html#term-Jain-fairness-index"' in html
    assert "jain_index" not in html


def test_no_footnote_when_nothing_is_missing():
    assert display.MISSING_NOTE not in display.table_html(pd.DataFrame({"a": [1, 2]}))


def test_cell_text_is_escaped_unless_declared_html():
    frame = pd.DataFrame({"a": ["<b>x</b>"], "link": ['<a href="x.zip">zip</a>']})
    html = display.table_html(frame, raw=("link",))
    assert "&lt;b&gt;" in html and '<a href="x.zip">zip</a>' in html


def _lines(ax):
    for i in range(3):
        ax.plot(range(10), [i * x for x in range(10)], label=f"series {i}")


def test_a_legend_over_the_data_is_found():
    fig, ax = plt.subplots(figsize=(6, 3))
    _lines(ax)
    ax.legend(loc="center")
    assert style.overlaps(fig)
    plt.close(fig)


def test_a_legend_below_the_axes_overlaps_nothing():
    fig, ax = plt.subplots(figsize=(6, 3), layout="constrained")  # the book's figures are laid out so
    _lines(ax)
    style.legend_below(ax)
    assert style.overlaps(fig) == []
    plt.close(fig)


def test_a_legend_or_label_past_the_canvas_is_found():
    """Without a layout that makes room, the legend below the axes hangs off the canvas: the check says so (the
    page would show it shrunk, and its PNG would have to be drawn twice)."""
    fig, ax = plt.subplots(figsize=(6, 3))
    _lines(ax)
    style.legend_below(ax)
    found = style.overlaps(fig)
    assert any("a legend runs past the canvas (bottom by" in f for f in found), found
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(3, 2), layout="constrained")
    ax.set_yscale("log")
    ax.plot([1, 2, 3], [100, 200, 300])
    assert style.overlaps(fig) == []  # tick labels kept for ticks beyond the view limits are never drawn
    ax.set_xlabel("an axis label far too long for a canvas three inches wide, which no layout can fit")
    assert any("runs past the canvas (left by" in f for f in style.overlaps(fig))
    plt.close(fig)


def test_titles_that_overprint_are_found():
    fig, axes = plt.subplots(1, 2, figsize=(4, 3))
    for ax in axes:
        ax.set_title("a rather long panel title that needs more room than a half")
    assert any("titles" in p for p in style.overlaps(fig))
    plt.close(fig)


def test_figures_are_fitted_to_the_text_column():
    fig = plt.figure(figsize=(16.6, 4))
    style.fit_width(fig)
    assert fig.get_size_inches()[0] == pytest.approx(style.TEXT_WIDTH_IN)
    plt.close(fig)


def _png(fig) -> bytes:
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()


@pytest.mark.parametrize("case", ["many decades", "under a decade", "minor grid", "minor marks"])
def test_minor_ticks_that_draw_nothing_are_dropped_and_the_picture_is_unchanged(case):
    """A log axis over six decades labels no minor tick and, in the book's style, marks none: they go, and the
    PNG is byte for byte the same.  Under a decade the minor ticks are labelled; with a minor grid or tick marks
    they draw lines: they stay."""
    from matplotlib.ticker import NullLocator

    import seaborn as sns

    with plt.rc_context():
        sns.set_theme(style="whitegrid", context="notebook", font_scale=0.8)
        pictures, kept = [], []
        for drop in (False, True):
            fig, ax = plt.subplots(figsize=(4, 3))
            top = 3 if case == "under a decade" else 1e6
            ax.plot([1, top], [2, 5])
            ax.set_xscale("log")
            if case == "minor grid":
                ax.grid(True, which="minor", axis="x")
            if case == "minor marks":
                ax.tick_params(axis="x", which="minor", bottom=True)
            if drop:
                style.drop_silent_minor_ticks(fig)
            kept.append(not isinstance(ax.xaxis.get_minor_locator(), NullLocator))
            pictures.append(_png(fig))
            plt.close(fig)
    assert pictures[0] == pictures[1], "dropping silent minor ticks changed the picture"
    assert kept[1] == (case != "many decades")


def test_a_module_has_one_colour_everywhere():
    assert style.module_colour("postgres") == style.module_colour("postgres")
    assert style.module_colour("some.dll") == style.module_colour("some.dll")
    assert style.module_colour("postgres") != style.module_colour("[kernel.kallsyms]")


def test_a_layout_that_collapses_is_found():
    fig, axes = plt.subplots(1, 6, figsize=(2, 1), layout="constrained")
    for ax in axes:
        ax.set_ylabel("a long label\nover lines\nand lines")
        ax.set_title("title")
    assert any("layout" in p for p in style.overlaps(fig))
    plt.close(fig)


def test_index_labels_read_like_cells():
    frame = pd.DataFrame({"threads": [2, 10000], "oversubscribed": [False, True], "x": [1.5, 2.0]})
    html = display.table_html(frame.set_index(["threads", "oversubscribed"]))
    assert "False" not in html and "True" not in html and ">no<" in html and ">yes<" in html
    assert "10,000" in html


# -- issue 23: captions, empty columns, wide tables, counts on axes, alt text -------------------------------------

def test_a_table_has_its_caption_and_leaves_out_a_column_empty_throughout():
    frame = pd.DataFrame({"variant": ["fair", "unfair"], "waits": [3.0, 1.0], "spins": [None, None]})
    html = display.table_html(frame, caption="Table 1. Waits per lock")
    assert "<caption>Table 1. Waits per lock</caption>" in html
    assert "<th>spins</th>" not in html and "spins" not in html
    frame.attrs["caption"] = "from attrs"
    assert "<caption>from attrs</caption>" in display.table_html(frame)


def test_a_wide_table_with_few_rows_is_turned_on_its_side():
    frame = pd.DataFrame({"variant": ["a", "b"], **{f"col_{i}": [i, i + 1] for i in range(20)}})
    html = display.table_html(frame, caption="wide")
    assert html.count("<table") == 1 and 'data-transposed="1"' in html
    assert "Turned on its side" not in html  # said by the table's shape, not by a note under each one
    assert html.count("<tr") == 21  # a header row and one row per former column


def test_a_wide_table_with_many_rows_is_split_into_parts_that_each_fit():
    import re

    frame = pd.DataFrame({"variant": [f"v{i}" for i in range(30)], **{f"col_{i}": range(30) for i in range(20)}})
    html = display.table_html(frame, caption="wide")
    assert html.count("<table") == 3 and "wide (part 3 of 3)" in html
    for table in re.findall(r"<table.*?</table>", html, re.S):
        header = re.search(r"<thead>.*?</thead>", table, re.S).group(0)
        first_row = re.search(r"<tr.*?</tr>", header, re.S).group(0)
        assert first_row.count("<th") <= display.MAX_COLUMNS and "variant" in header  # every part names its rows


def test_a_split_never_leaves_a_part_of_one_column():
    import re

    for width in range(9, 40):
        frame = pd.DataFrame({"variant": [f"v{i}" for i in range(30)], **{f"col_{i}": range(30) for i in range(width)}})
        for table in re.findall(r"<table.*?</table>", display.table_html(frame, caption="wide"), re.S):
            header = re.search(r"<thead>.*?</thead>", table, re.S).group(0)
            assert header.count("<th") - 1 >= 2, (width, header)  # the row labels and at least two data columns


def test_count_axes_get_whole_number_ticks_and_fractional_ones_are_flagged():
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [1.0, 2.0, 1.5])
    ax.set_xlabel("producers")
    fig.canvas.draw()
    assert any("counts things" in p and "1.5" in p for p in style.count_problems(fig))
    style.count_axis(ax, "x")
    fig.canvas.draw()
    assert style.count_problems(fig) == []
    ax.set_xscale("log", base=2)
    style.count_axis(ax, "x", values=[1, 2, 4, 8, 16, 32])
    fig.canvas.draw()
    assert list(ax.get_xticks()) == [1, 2, 4, 8, 16, 32] and style.count_problems(fig) == []
    plt.close(fig)


def test_bars_on_a_log_axis_are_flagged():
    fig, ax = plt.subplots()
    ax.bar(["a", "b"], [10, 1000])
    ax.set_yscale("log")
    fig.canvas.draw()
    assert any("bars drawn on a log y axis" in p for p in style.count_problems(fig))
    fig2, ax2 = plt.subplots()
    ax2.barh(["a", "b"], [10, 1000])
    ax2.set_xscale("log")
    fig2.canvas.draw()
    assert any("log x axis" in p for p in style.count_problems(fig2))
    plt.close(fig)
    plt.close(fig2)


def test_alt_text_comes_from_a_registered_text_or_the_caption_never_a_file_name(tmp_path, monkeypatch):
    import json

    from docutils import nodes

    from contention_book.harness import sphinx_alt

    monkeypatch.setenv("CONTENTION_BOOK_ROOT", str(tmp_path))
    (tmp_path / sphinx_alt.ALT_DIR).mkdir(parents=True)
    (tmp_path / sphinx_alt.ALT_DIR / "demo.json").write_text(json.dumps({"abc": "Throughput against sessions."}))
    doc = nodes.document(None, None)
    registered = nodes.image(uri="../_images/abc.png", alt="../_images/abc.png")
    captioned = nodes.image(uri="../_images/def.png")
    figure = nodes.figure("", captioned, nodes.caption("", "Fig. 3 The ring's throughput. Bars are medians."))
    kept = nodes.image(uri="x.png", alt="A diagram of the ring's cursors.")
    bare = nodes.image(uri="y.png")
    doc += [registered, figure, kept, bare]
    sphinx_alt._fill(None, doc)
    assert registered["alt"] == "Throughput against sessions."
    assert captioned["alt"] == "The ring's throughput."
    assert kept["alt"] == "A diagram of the ring's cursors."
    assert "alt" not in bare.attributes or not bare["alt"]  # nothing to say it from: the browser test catches it
    assert sphinx_alt.is_file_name("../_images/abc.png") and not sphinx_alt.is_file_name("The ring.")


def test_a_flame_graph_says_what_it_shows():
    from matplotlib.patches import Rectangle

    from contention_book.chapters.shared.notebook import flame_alt

    fig, ax = plt.subplots()
    for x, y, w, name in ((0, 0, 100, "all"), (0, 1, 80, "ExecInsert"), (0, 2, 60, "XLogInsert"),
                          (80, 1, 20, "LWLockAcquire")):
        ax.add_patch(Rectangle((x, y), w, 1))
        ax.text(x + w / 2, y + 0.5, name)
    ax.set_xlim(0, 100)
    alt = flame_alt(fig, "sequential keys, 8 sessions")
    assert alt.startswith("Flame graph of the CPU samples, sequential keys, 8 sessions.")
    assert "XLogInsert, about 60% of the samples; ExecInsert, about 20%" in alt and "LWLockAcquire, about 20%" in alt
    assert "all," not in alt  # the root holds no samples itself
    plt.close(fig)


def test_a_flame_graph_alt_text_names_whole_functions_not_the_cut_labels():
    """Issue 31: a box too narrow for its name is labelled "Loc…" on the drawing; its alt text says the name."""
    from contention_book.chapters.shared.notebook import flame_alt
    from contention_book.perftools.flame import flame_figure
    from contention_book.perftools.builder import profile_from_records

    fig = flame_figure(profile_from_records([
        (["postgres!main", "postgres!ExecInsert", "postgres!XLogInsertRecord"], 30.0),
        (["postgres!main", "kernel!_raw_spin_unlock_irqrestore"], 6.0),  # a box about 8 characters wide
        (["postgres!main", "postgres!LWLockAcquire"], 64.0)]))
    drawn = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert any(d.endswith("…") for d in drawn), drawn  # the drawing does cut a label
    alt = flame_alt(fig, "a test")
    assert "…" not in alt and "_raw_spin_unlock_irqrestore, about 6% of the samples" in alt, alt


def test_a_flame_graph_alt_text_counts_own_samples_on_the_profile_not_on_the_drawing():
    """A reviewer found "_SPI_execute_plan, about 12%" in chapter 4's alt text where its profile gives it under 1%:
    its small callees were merged away or left unlabelled on the drawing, so its box's width less the labelled
    boxes above it overstated what it held itself."""
    from contention_book.chapters.shared.notebook import flame_alt
    from contention_book.harness.recording import data_root
    from contention_book.perftools import load
    from contention_book.perftools.flame import flame_figure

    fig = flame_figure(load(data_root() / "last-page-insert" / "measured-postgres-reference" / "stacks"
                            / "sequential.folded.gz"), process_root=True)
    alt = flame_alt(fig, "a test")
    assert "_raw_spin_unlock_irqrestore, about 8% of the samples" in alt, alt  # chapter 4's table of own samples
    assert "_SPI_execute_plan" not in alt, alt
    del fig.self_shares  # what the drawing alone says: tens of percent for it
    assert "_SPI_execute_plan, about" in flame_alt(fig, "a test")


def test_provenance_never_shows_a_machine_path():
    from contention_book.harness.provenance import has_machine_path, public_text

    cmd = "python -m contention_book.run ghost-cleanup --engine postgres --record-to /tmp/rec2/ghost-cleanup-postgres"
    out = public_text(cmd, "ghost-cleanup", "measured-postgres-reference")
    assert out.endswith("--record-to data/ghost-cleanup/measured-postgres-reference") and not has_machine_path(out)
    make = "make record CH=lmax-queue ENGINE=postgres RECORD_TO=/home/me/x RECORDING=/srv/rec/y PARAMS='sessions=1'"
    out = public_text(make, "lmax-queue", "r1")
    assert "RECORD_TO=data/lmax-queue/r1" in out and "RECORDING=r1" in out and not has_machine_path(out)
    kept = "calls/s at 1/22,000 of https://sql.kiwi/2022/08/x and C:\\Users\\me\\rec"
    assert public_text(kept) == "calls/s at 1/22,000 of https://sql.kiwi/2022/08/x and <a folder>"


def test_fit_width_gives_count_axes_whole_number_ticks():
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3], [10.0, 20.0, 15.0])
    ax.set_xlabel("sessions")
    style.fit_width(fig)
    fig.canvas.draw()
    assert all(float(t).is_integer() for t in ax.get_xticks()) and style.count_problems(fig) == []
    plt.close(fig)


def test_log_axes_are_labelled_without_math_text():
    """A log axis keeps matplotlib's choice of labelled ticks, written "10³" and "2×10²" in the text font."""
    assert style.power_text(r"$\mathdefault{10^{-2}}$") == "10⁻²"
    assert style.power_text(r"$\mathdefault{2\times10^{3}}$") == "2×10³"
    assert style.power_text("1,000") == "1,000"
    fig, (a, b) = plt.subplots(1, 2, figsize=(6, 2), layout="constrained")
    a.set_yscale("log")
    a.plot([1, 2, 3], [0.01, 10, 1e5])
    b.set_xscale("log")
    b.plot([200, 300, 500, 700], [1, 2, 3, 4])
    fig.canvas.draw()
    before = [[t.get_text() for t in ax.get_ticklabels(which="both") if t.get_text()]
              for ax in (a.yaxis, b.xaxis)]
    style.plain_powers(fig)
    fig.canvas.draw()
    after = [[t.get_text() for t in ax.get_ticklabels(which="both") if t.get_text()] for ax in (a.yaxis, b.xaxis)]
    assert [list(map(style.power_text, labels)) for labels in before] == after
    assert "10²" in after[0] and "3×10²" in after[1] and not any("$" in t for labels in after for t in labels)
    plt.close(fig)


def test_a_recording_outside_the_books_data_is_named_without_a_link_to_a_row_the_data_page_lacks():
    """The verdict table names each recording in words linked to its Data page row; a reader's own recording
    (make chapter ... RECORD_TO=elsewhere) has no row there, so its words stand alone (a link would be broken)."""
    from contention_book.harness.provenance import recording_link

    linked = recording_link("lmax-queue", "measured-postgres-reference")
    assert linked.startswith('<a href="../data.html#recording-lmax-queue-measured-postgres-reference">')
    assert "this book&#x27;s PostgreSQL reference run</a>" in linked
    alone = recording_link("lmax-queue", "my-run")  # no data/lmax-queue/my-run
    assert alone == "the recording my-run" and "<a" not in alone


def test_jittered_dots_land_in_the_same_place_in_every_build():
    """A strip plot's jitter is seeded under fixed_jitter (chapter 5's false-sharing figure), and the caller's
    random state is left as it was."""
    import numpy as np

    np.random.seed(7)
    expected_next = np.random.uniform(size=3)
    np.random.seed(7)
    with style.fixed_jitter():
        first = np.random.uniform(size=5)
    with style.fixed_jitter():
        second = np.random.uniform(size=5)
    assert (first == second).all()
    assert (np.random.uniform(size=3) == expected_next).all()


@pytest.mark.parametrize("where", ["bottom", "top"])
def test_titles_at_the_top_of_their_axes_draw_the_same_picture_or_are_caught(where):
    """The book's style puts a title at the top of its axes (axes.titley = 1) instead of finding, on every drawing,
    whether tick labels sit above the axes.  With the tick labels below, as in every figure of the book, the PNG
    is byte for byte the one matplotlib's own placement draws; a figure with tick labels on top would have its
    title overprint them, and the figure check says so."""
    from contention_book.chapters.shared import notebook

    pictures, problems = [], []
    for book in (False, True):
        with plt.rc_context():
            notebook.book_style()
            if not book:
                plt.rcParams["axes.titley"] = None  # matplotlib's default: placed on every drawing
            fig, ax = plt.subplots(figsize=(4, 3))
            ax.plot([1, 2, 3], [2e6, 3e6, 5e6])
            ax.set_title("throughput by threads")
            if where == "top":
                ax.xaxis.tick_top()
            pictures.append(_png(fig))
            problems.append(style.overlaps(fig))
            plt.close(fig)
    if where == "bottom":
        assert pictures[0] == pictures[1] and problems == [[], []], problems
    else:
        assert problems[0] == [] and any("title" in p for p in problems[1]), problems


def test_a_diagram_is_the_same_bytes_in_every_build(monkeypatch):
    """No date and no random ids in a diagram's SVG: a rebuilt page is byte for byte the page before."""
    import time

    from contention_book.chapters.shared import notebook

    shown = []
    monkeypatch.setattr(notebook, "display", lambda obj: shown.append(obj.data))
    with plt.rc_context():
        notebook.book_style()
        for _ in range(2):
            fig, ax = plt.subplots(figsize=(3, 2))
            ax.bar(["a", "b"], [1, 2], hatch="//")
            ax.set_title("a diagram")
            notebook.show_diagram("same", fig, "two bars, the second twice the first", "Two bars.")
            time.sleep(1.1)  # a date in the SVG would differ by now
    first, second = (s.split("<figcaption>")[0] for s in shown)
    assert first == second
