"""The one table helper and the one figure style: what a reader sees, checked on small frames and figures."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from contention_book.chapters.shared import display, style  # noqa: E402


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
    fig, ax = plt.subplots(figsize=(6, 3))
    _lines(ax)
    style.legend_below(ax)
    assert style.overlaps(fig) == []
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
