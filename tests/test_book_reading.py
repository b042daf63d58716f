"""Issue 31: a chapter a DBA finishes.  No code on any built page, each chapter's main page read in at most 15
minutes (prose at 230 words a minute, harness.reading) with a details page linked both ways, and the book's
repeated preambles said once.

The split itself (harness.book.split_page) is checked on small notebooks; the rest on the built book
(``make book``), so a page that regressed fails here whatever notebook made it.
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from contention_book.harness import book, reading
from contention_book.harness.book_pages import DETAILS_OUTPUT

ROOT = Path(os.environ.get("CONTENTION_BOOK_ROOT") or Path(__file__).resolve().parents[1]).resolve()
HTML = ROOT / "book" / "_build" / "html"


# -- the split, on small notebooks --------------------------------------------------------------------------------

def _glue_output(name: str, text: str):
    return nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": repr(text)},
                                  metadata={"scrapbook": {"name": name, "data": True, "display": False}})


def _executed(tmp_path) -> Path:
    nb = nbformat.v4.new_notebook()
    setup = nbformat.v4.new_code_cell("glue('a', 1); glue('b', 2)")
    setup.outputs = [_glue_output("a", "1"), _glue_output("b", "2")]
    shown = nbformat.v4.new_code_cell("show_table(x)", metadata={"tags": ["hide-input"]})
    shown.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<table><caption>Table 2. main table</caption></table>"})]
    per_point = nbformat.v4.new_code_cell("show_table(y)", metadata={"tags": ["remove-input", "details"]})
    per_point.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<table><caption>Table 1. per point</caption></table>"})]
    verdicts = nbformat.v4.new_code_cell("show_verdicts(chapter, shown)")
    verdicts.outputs = [nbformat.v4.new_output("display_data", data={"text/html": "<p>claims table</p>"}),
                        nbformat.v4.new_output("display_data", data={"text/html": "<p>the rules</p>"},
                                               metadata=DETAILS_OUTPUT)]
    nb.cells = [nbformat.v4.new_markdown_cell("# A chapter\n\nsource line"),
                nbformat.v4.new_markdown_cell("```{admonition} In short\n{glue:text}`a`\n```"),
                setup,
                nbformat.v4.new_markdown_cell("## Evidence\n\nwords {glue:text}`a`"),
                shown,
                per_point,
                nbformat.v4.new_markdown_cell("more about {glue:text}`b`", metadata={"tags": ["details"]}),
                verdicts,
                nbformat.v4.new_markdown_cell("## On your own server\n\ndo this")]
    page = tmp_path / "07-a-chapter.ipynb"
    nbformat.write(nb, page)
    return page


def test_every_code_cell_of_a_built_page_hides_its_input(tmp_path):
    page = _executed(tmp_path)
    book.split_page(page)
    for path in (page, book.details_path(page)):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                tags = cell.metadata.get("tags", [])
                assert {"remove-input", "remove-cell"} & set(tags) and "hide-input" not in tags, (path.name, tags)


def test_details_cells_move_to_a_second_page_linked_both_ways_with_their_glue(tmp_path):
    page = _executed(tmp_path)
    there = book.split_page(page)
    assert there.name == "07-a-chapter-details.ipynb"
    main, details = (nbformat.read(p, as_version=4) for p in (page, there))
    main_text = json.dumps([c.source for c in main.cells] + [c.get("outputs", []) for c in main.cells])
    details_text = json.dumps([c.source for c in details.cells] + [c.get("outputs", []) for c in details.cells])
    assert "per point" not in main_text and "more about" not in main_text and "main table" in main_text
    assert "per point" in details_text and "more about" in details_text and "main table" not in details_text
    assert "{doc}`this chapter's details page <07-a-chapter-details>`" in main_text  # the link there ...
    assert "<07-a-chapter>`" in details.cells[0].source and details.cells[0].source.startswith("# A chapter: details")
    assert details_text.count("## Evidence") == 1  # ... and details cells keep their section's heading, once
    assert "claims table" in main_text and "the rules" not in main_text and "the rules" in details_text
    # numbered as the figures are: by chapter, on from the main page through the details page
    assert "Table 7.1. main table" in main_text and "Table 7.2. per point" in details_text
    glued = {o["metadata"]["scrapbook"]["name"] for c in details.cells if c.cell_type == "code"
             for o in c.outputs if "scrapbook" in o.get("metadata", {})}
    assert glued == {"a", "b"}  # every glued value is there for the prose that quotes it
    link_at = next(i for i, c in enumerate(main.cells) if "details page" in c.source)
    assert "In short" in main.cells[link_at - 1].source  # the link right under the finding


# -- the built book -----------------------------------------------------------------------------------------------

def _built() -> dict[str, Path]:
    pages = reading.chapter_pages(HTML)
    if not pages:
        pytest.skip("the book is not built (make book)")
    return pages


def _article(path: Path):
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    return soup.select_one("article.bd-article") or soup


def test_no_built_page_shows_code_input():
    """Issue 31 item 14: results on the page, never the Python that made them (no cell input, no ipython3
    highlighting)."""
    _built()
    bad = []
    for path in sorted(HTML.rglob("*.html")):
        if {"_static", "_sources", "_images"} & set(path.relative_to(HTML).parts):
            continue
        article = _article(path)
        for el in article.select("div.cell_input, div.highlight-ipython3, div.highlight-python3"):
            bad.append(f"{path.relative_to(HTML)}: {el.get_text(' ', strip=True)[:80]!r}")
    assert not bad, "\n".join(bad[:20])


def test_every_figure_is_a_picture_not_the_text_of_its_object():
    """A figure whose picture failed shows matplotlib's "<Figure size 760x400 with 2 Axes>" and its caption
    over nothing; every glued figure must be an image, and no page may carry that text."""
    _built()
    bad = []
    for path in sorted(HTML.rglob("*.html")):
        if {"_static", "_sources", "_images"} & set(path.relative_to(HTML).parts):
            continue
        text = _article(path).get_text(" ", strip=True)
        bad += [f"{path.relative_to(HTML)}: {m}" for m in re.findall(r"<(?:Figure|matplotlib)[^>]{0,60}>", text)]
    assert not bad, "\n".join(bad[:20])


def test_every_chapter_main_page_reads_in_fifteen_minutes_and_links_its_details_page():
    pages = _built()
    assert len(pages) == len(book.notebooks())
    bad = []
    for name, page in pages.items():
        minutes = reading.reading_minutes(page)
        if minutes > reading.MAIN_PAGE_MINUTES:
            bad.append(f"{name}: {minutes:.1f} min ({reading.prose_words(page.read_text(encoding='utf-8')):,} "
                       f"words at {reading.WORDS_PER_MINUTE}/min)")
        details = page.with_name(f"{name}-details.html")
        if not details.exists():
            bad.append(f"{name}: no details page")
            continue
        links = lambda p: {a.get("href", "").split("#")[0] for a in _article(p).select("a[href]")}  # noqa: E731
        if details.name not in links(page):
            bad.append(f"{name}: the main page does not link {details.name}")
        if page.name not in links(details):
            bad.append(f"{details.name}: does not link back to {page.name}")
    assert not bad, "\n".join(bad)


def test_the_prose_count_leaves_out_code_and_bare_numbers():
    html = ('<article class="bd-article"><h2>Waits<a class="headerlink">#</a></h2><p>Two words 1.5× 12</p>'
            '<div class="cell_input"><pre>import x</pre></div><pre>SELECT 1</pre><table><caption>A table</caption>'
            "<tr><td>fair 3</td></tr></table></article>")
    assert reading.prose_words(html) == 6  # Waits, Two, words, A, table, fair


REPEATED = {"(95% interval": 0, "median of 5)": 0, "Turned on its side": 0,
            "Intervals are 95%, propagated from the inputs": 0, "Gunther's law": 0}


def test_the_books_conventions_are_said_once_on_findings_not_on_every_page():
    """The interval convention and the capacity and USL preambles are on the Findings page; no chapter page
    repeats them, and no table is split into a "part 2 of 2" of one column."""
    pages = _built()
    findings = (HTML / "findings.html").read_text(encoding="utf-8")
    assert "95% bootstrap interval" in findings and "how-to-read-intervals" in findings
    assert "Universal Scalability Law" in findings and "how-the-models-predict" in findings
    bad = []
    for name, page in pages.items():
        for path in (page, page.with_name(f"{name}-details.html")):
            if not path.exists():
                continue
            text = _article(path).get_text(" ")
            for phrase, allowed in REPEATED.items():
                if text.count(phrase) > allowed:
                    bad.append(f"{path.name}: {phrase!r} {text.count(phrase)} times")
    assert not bad, "\n".join(bad)


def test_the_interval_convention_states_the_numbers_the_code_uses():
    from contention_book.chapters.shared import spread
    from contention_book.harness.book_pages import INTERVALS

    assert f"{spread.CONFIDENCE:.0%} bootstrap" in INTERVALS and f"{spread.RESAMPLES:,} resamples" in INTERVALS
    assert f"fewer than {spread.BOOTSTRAP_FROM} repetitions" in INTERVALS
    s = spread.spread([1.0, 1.1, 1.2, 1.3, 1.4])
    assert re.fullmatch(r"1\.20× \(\d\.\d\d–\d\.\d\d\)", s.text(".2f", "×")), s.text(".2f", "×")


def test_a_heading_with_nothing_under_it_is_found():
    """A heading followed directly by a subsection's heading, by an empty cell (a recording that left a table out)
    or by nothing is empty; a paragraph, a table or a figure under it is content."""
    page = ('<article class="bd-article">'
            '<section><h2>Parent<a class="headerlink">#</a></h2><section><h3>Child</h3><p>words</p></section></section>'
            '<section><h2>Cell only</h2><div class="cell docutils container">\n</div></section>'
            '<section><h2>Last</h2></section>'
            '<section><h2>Table</h2><div><table><tr><td></td></tr></table></div></section>'
            '<section><h2>Figure</h2><figure><img src="x.png"/></figure></section>'
            '<section><h2>Prose</h2><p>a sentence</p></section></article>')
    assert reading.empty_sections(page) == ["Parent", "Cell only", "Last"]


def test_no_built_page_has_a_section_heading_with_no_content():
    """Every section heading of every built page has something under it before the next heading: a section whose
    only content a recording can leave out (SQL Server tables on a page of native recordings) has no heading of its
    own."""
    _built()
    bad = []
    for path in sorted(HTML.rglob("*.html")):
        if {"_static", "_sources", "_images"} & set(path.relative_to(HTML).parts):
            continue
        bad += [f"{path.relative_to(HTML)}: {h!r}" for h in reading.empty_sections(path.read_text(encoding="utf-8"))]
    assert not bad, "\n".join(bad)


def test_the_latch_chapters_main_page_weighs_the_99th_percentile_and_leaves_the_longest_wait_to_details():
    """Chapter 1's main page tests the tail at the 99th percentile, each number with its interval over the
    repetitions; the longest single wait (on a 2-CPU machine, preemption) is on the details page only."""
    pages = _built()
    page = pages.get("01-latch-fairness")
    if page is None:
        pytest.skip("chapter 1 is not built")
    main = _article(page).get_text(" ", strip=True)
    details = _article(page.with_name("01-latch-fairness-details.html")).get_text(" ", strip=True)
    interval = r"[\d.,]+ ?(?:×|ns|µs|ms)? \((?:range )?[\d.,]+–[\d.,]+"
    assert re.search(r"The unfair latch.s wait tail is shorter", main)
    assert re.search(r"longer than the fair lock.s in \d+ of \d+ paired repetitions", main)
    assert re.search(rf"99th-percentile wait {interval}", main), "no 99th percentile with its interval on the page"
    assert re.search(rf"against {interval}", main)
    assert "longest wait" not in main.split("The article’s claims, checked")[-1].split("What the article concluded")[0]
    assert "The longest single wait (worst repetition)" in details


def test_the_log_cache_pages_say_the_reviewed_facts_computed_not_typed():
    """Chapter 2 review (r1): the log writer's version boundary with its source, the pair count and the writer's
    wait as computed words, no claim that the toy's rates pass the hand-off limit, the per-repetition flush count,
    and a diagram caption that marks 'here' only when the diagram does."""
    from contention_book.chapters import logcache_spinlock as ch

    pages = _built()
    page = pages.get("02-logcache-spinlock")
    if page is None:
        pytest.skip("chapter 2 is not built")
    main = re.sub(r"\s+", " ", _article(page).get_text(" ", strip=True))
    details = re.sub(r"\s+", " ", _article(page.with_name("02-logcache-spinlock-details.html")).get_text(" ", strip=True))
    sh = ch.load_shown("")
    n = ch.key_numbers(sh)
    assert "hidden schedulers" in main and "HIDDEN ONLINE" in main and "Kandoth and Verma, 2016" in main
    assert "Trace flag 8904" in main and "Dorr, 2022" in main and "one spinlock per database" not in main
    assert "three of the counters" in main and "running or waiting for a CPU" in main
    assert f"the {n['nat_c2c_pairs_text']} gave" in main and "measured pair gave" not in main
    assert "can exceed the hand-off limit" not in main
    assert f"{n['nat_a_writer_wait_text']} in A and {n['nat_b_writer_wait_text']} in B" in details
    assert "100% of the log" not in main
    nat = sh.measured["native"]
    steps = ch.diagrams.step_latencies(sh.pub_c2c.table("published_c2c"), ch.tables.c2c_by_relation(nat))
    assert re.sub(r"\s+", " ", ch.diagrams.caption(steps)) in main.replace("’", "'")
    assert "does not remove it" in details and "most of the pressure off" not in details
    # review round 4: the switch's upper bound said on the page, the WAL queries' case, the placement query's page
    assert "upper bound" in main and "ILIKE 'wal%'" in main and "WalWrite" in main
    assert "the third says where the log writer runs" not in main and "placement query on the details page" in main
    assert "only then do waiters spin and back off" not in main and "spin long enough to back off" in main
