"""The generated pages and the incremental build, on a small checkout of our own (no notebook is executed)."""
from __future__ import annotations

import json
import zipfile

import nbformat
import pandas as pd
import pytest

from contention_book.harness import book, book_pages


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """notebooks/01-demo.ipynb, data/demo/measured-x/manifest.json, and the code trees a chapter depends on."""
    (tmp_path / "notebooks").mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A demo chapter"), nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, tmp_path / "notebooks" / "01-demo.ipynb")
    rec = tmp_path / "data" / "demo" / "measured-x"
    rec.mkdir(parents=True)
    (rec / "manifest.json").write_text(json.dumps({
        "kind": "measured", "engine": {"name": "native", "version": "cc 12"},
        "host": {"cpu_model": "Test CPU", "logical_cpus": 2},
        "started": "2026-11-21T10:00:00Z", "ended": "2026-11-21T10:01:30Z"}))
    (rec / "runs.csv").write_text("variant,elapsed_s\na,1.0\n")
    code = tmp_path / "src" / "contention_book" / "chapters" / "demo"
    code.mkdir(parents=True)
    (code / "tables.py").write_text("X = 1\n")
    (tmp_path / "book" / "chapters").mkdir(parents=True)
    monkeypatch.setenv("CONTENTION_BOOK_ROOT", str(tmp_path))
    return tmp_path


def test_verdicts_are_saved_only_for_the_books_own_copy(checkout, monkeypatch):
    rows = pd.DataFrame([{"claim": "c", "published": "p", "recording": "r", "measured": "m", "rule": "r",
                          "verdict": "agrees"}])
    monkeypatch.delenv(book_pages.PAGE_DATA_ENV, raising=False)
    assert book_pages.save_verdicts("demo", rows) is None
    monkeypatch.setenv(book_pages.PAGE_DATA_ENV, str(checkout / "book" / "chapters"))
    assert book_pages.save_verdicts("demo", rows).exists()


def test_findings_are_the_chapters_saved_verdict_rows(checkout, monkeypatch):
    monkeypatch.setenv(book_pages.PAGE_DATA_ENV, str(checkout / "book" / "chapters"))
    rule = ("the direction holds when the interval over repetitions of the ratio lies above 1; differs when it lies "
            "below; inconclusive when it straddles 1 or fewer than 3 repetitions ran; the size is compared within 2×")
    rows = pd.DataFrame([{"claim": "Fair hand-off is slower", "published": "4.5 s vs 5.5 s", "recording": "r",
                          "tested_on": "C model on 2 CPUs", "measured": "0.031× <b>",
                          "size": "not compared: a C model against SQL Server", "rule": rule,
                          "verdict": "direction reproduced"},
                         {"claim": "Spins rise", "published": "0 → 221,891,800", "recording": "r",
                          "tested_on": "PostgreSQL 15 analogue on 2 CPUs", "measured": "nothing", "size": "",
                          "rule": rule, "verdict": "inconclusive: 2 repetitions"}])
    book_pages.save_verdicts("demo", rows)
    page = book_pages.write_findings(book.notebooks()).read_text()
    assert "Fair hand-off is slower" in page and "Spins rise" in page
    assert 'href="chapters/01-demo.html#verdicts-demo"' in page
    assert "direction reproduced 1; inconclusive 1" in page
    assert ">tested on</th>" in page and ">size compared</th>" in page and "C model on 2 CPUs" in page
    assert "&lt;b&gt;" in page  # measured text is escaped, only the chapter link is HTML
    assert page.count(rule) == 1 and '[rule&nbsp;1]' in page  # one rule, one note, cited by both rows
    assert "<b>not testable with this recording</b></td><td>the recording shown lacks" in page  # the words explained
    assert "<b>direction reproduced</b></td><td>the direction holds, but" in page
    assert "</td><td>1</td></tr>" in page and "<b>reproduced</b></td><td>the direction holds and" in page


def test_findings_count_the_books_own_checks_apart(checkout, monkeypatch):
    """A row whose Published cell says the article has no such claim is the book's own check, and the page says
    how many rows are (review round 4: chapter 5's ring-growth row was counted as an article's claim)."""
    monkeypatch.setenv(book_pages.PAGE_DATA_ENV, str(checkout / "book" / "chapters"))
    row = {"claim": "c", "recording": "r", "measured": "m", "rule": "r", "verdict": "direction reproduced"}
    book_pages.save_verdicts("demo", pd.DataFrame([{**row, "published": "4.5 s"}]))
    assert "own check" not in book_pages.write_findings(book.notebooks()).read_text()
    book_pages.save_verdicts("demo", pd.DataFrame([{**row, "published": "4.5 s"},
                                                   {**row, "published": "not in the article: it built none"}]))
    page = book_pages.write_findings(book.notebooks()).read_text()
    assert "One of these rows is the book's own check, not an article's claim" in page


def test_findings_show_rows_saved_before_the_new_columns(checkout, monkeypatch):
    """An older chapter's rows (no tested_on, no size, the old word "agrees") still show, with a note."""
    monkeypatch.setenv(book_pages.PAGE_DATA_ENV, str(checkout / "book" / "chapters"))
    old = pd.DataFrame([{"claim": "c", "published": "p", "recording": "r", "measured": "m", "rule": "r",
                         "verdict": "agrees"}])
    book_pages.save_verdicts("demo", old)
    page = book_pages.write_findings(book.notebooks()).read_text()
    assert "— means the chapter gives no value for this claim." in page and "saved before" not in page
    assert "<td>—</td>" in page
    assert "agrees 1" in page


def test_no_findings_cell_runs_past_forty_words(checkout, monkeypatch):
    import re

    monkeypatch.setenv(book_pages.PAGE_DATA_ENV, str(checkout / "book" / "chapters"))
    long = " ".join(["word"] * 70)
    rows = pd.DataFrame([{"claim": long, "published": "p", "recording": "r", "tested_on": "C model on 2 CPUs",
                          "measured": "m: " + long, "size": "not compared: " + long, "rule": long,
                          "verdict": "direction reproduced"}])
    book_pages.save_verdicts("demo", rows)
    page = book_pages.write_findings(book.notebooks()).read_text()
    table = page[page.index('id="findings-table"'):]
    cells = re.findall(r"<td>(.*?)</td>", table[:table.index("</table>")])
    assert cells and max(len(re.sub(r"<[^>]+>", " ", c).split()) for c in cells) <= 40
    assert long in page[page.index("table-notes"):]  # the full texts are in the notes


def test_a_chapter_without_verdicts_is_said_to_have_failed(checkout):
    page = book_pages.write_findings(book.notebooks()).read_text()
    assert "did not build" in page and "#the-article" not in page


def test_the_data_page_lists_every_recording_with_a_zip(checkout):
    page = book_pages.write_data_page().read_text()
    assert "measured-x" in page and "Test CPU (2 logical CPUs)" in page and "2026-11-21" in page
    assert 'id="recording-demo-measured-x"' in page and 'id="provenance"' in page
    assert 'href="data/demo--measured-x.zip"' in page
    assert "90" in page  # run time in seconds, from started and ended
    html = checkout / "html"
    made = book_pages.write_zips(html)
    assert [p.name for p in made] == ["demo--measured-x.zip"]
    with zipfile.ZipFile(made[0]) as z:
        assert sorted(z.namelist()) == ["measured-x/manifest.json", "measured-x/runs.csv"]
    assert book_pages.write_zips(html) == []  # unchanged recordings are not zipped again


def test_a_chapter_is_up_to_date_until_its_notebook_data_or_code_changes(checkout):
    nb = book.notebooks()["demo"]
    stamp = book.content_stamp("demo", nb)
    book.executed_path(nb).write_text("{}")
    book.stamp_path(nb).parent.mkdir(parents=True)
    book.stamp_path(nb).write_text(stamp)
    assert book.up_to_date("demo", nb)
    for changed in (checkout / "data" / "demo" / "measured-x" / "runs.csv",
                    checkout / "src" / "contention_book" / "chapters" / "demo" / "tables.py", nb):
        before = changed.read_bytes()
        changed.write_bytes(before + b"\n")
        assert not book.up_to_date("demo", nb), changed
        changed.write_bytes(before)
        assert book.up_to_date("demo", nb)


def test_executing_the_books_copy_drops_its_stamp(checkout, monkeypatch):
    nb = book.notebooks()["demo"]
    book.stamp_path(nb).parent.mkdir(parents=True)
    book.stamp_path(nb).write_text("old")
    monkeypatch.setattr("papermill.execute_notebook", lambda *a, **k: None)
    book.execute("demo", {})
    assert not book.stamp_path(nb).exists()


def test_the_data_page_says_how_each_run_was_made_without_machine_paths(checkout):
    manifest = checkout / "data" / "demo" / "measured-x" / "manifest.json"
    m = json.loads(manifest.read_text())
    m["measured"] = {"tool": "t", "tool_version": "0", "command": "python -m contention_book.run demo --engine native "
                     "--record-to /tmp/rec2/demo-native --param sessions=1,2", "git_commit": "abc123"}
    m["load"] = {"before_1min": 0.4, "after_1min": 1.9, "logical_cpus": 2, "threshold_1min": 1.0, "waited_s": 30.0,
                 "wait_limit_s": 120.0, "quiet": True}
    m["engine"] = {"name": "postgres", "version": "15.18", "build": "PostgreSQL 15.18 on x86_64, compiled by gcc "
                   "(Debian 12.2.0-14) 12.2.0, 64-bit"}
    m["notes"] = ["kept in /home/someone/runs/x for a while"]
    manifest.write_text(json.dumps(m))
    page = book_pages.write_data_page().read_text()
    assert "/tmp/" not in page and "/home/" not in page
    assert "--record-to data/demo/measured-x" in page
    assert "0.40 → 1.90 (waited 30 s for a quieter machine)" in page
    assert "gcc (Debian 12.2.0-14) 12.2.0" in page and "PostgreSQL 15.18" in page


def test_run_times_come_from_the_manifests(checkout):
    text = book_pages.write_run_times().read_text()
    assert "| demo | C programs | measured-x | 90 | — | 2 |" in text and text.startswith("```{table}")


def test_a_chapters_recordings_note_links_the_data_page_and_shows_no_path(tmp_path):
    import shutil

    from contention_book.harness import recording as rec
    from contention_book.harness.provenance import anchor, has_machine_path

    ours = rec.open_chapter("latch-fairness", "measured-native-reference")
    published = rec.open_chapter("latch-fairness", "published-white-2022-sql2019")
    note = rec.shown_note([("Measured", ours)], [published])
    assert f'href="../data.html#{anchor("latch-fairness", ours.id)}-made"' in note
    assert "--record-to" not in note and not has_machine_path(note.replace("https://", ""))
    copy = tmp_path / "their-run"
    shutil.copytree(ours.path, copy)
    theirs = rec.open_chapter("latch-fairness", str(copy))
    note = rec.shown_note([("Measured", theirs)], [])
    assert "from outside this book's data" in note and str(tmp_path) not in note


def test_the_data_page_says_which_postgres_build_made_the_stacks():
    from contention_book.harness.book_pages import stacks_provenance

    pg = lambda version: {"kind": "measured", "engine": {"name": "postgres", "version": version}}  # noqa: E731
    assert stacks_provenance([{"kind": "published", "engine": {"name": "sqlserver"}}]) == ""
    own = stacks_provenance([pg("15.18")])
    assert "15.18 built from Debian's source package by `make pg-named`" in own and "Debian's own package" not in own
    both = stacks_provenance([pg("15.18"), pg("15.18 (Debian 15.18-0+deb12u1)")])
    assert "make pg-named" in both and "Debian's own package (15.18 (Debian 15.18-0+deb12u1))" in both


def test_findings_count_rows_that_predict_nothing_and_leave_them_out_of_the_table(checkout):
    """A workload bound or a model without an input predicts nothing: Findings counts it, its chapter lists it."""
    saved = checkout / book_pages.PREDICTIONS_DIR / "demo.json"
    saved.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"quantity": "the loop time", "equation": "T = n·t", "predicted": "10 s", "published": "9 s",
             "verdict": "predicted"},
            {"quantity": "the gain", "equation": "G ≤ P", "predicted": "≤ 4×", "published": "+15%",
             "verdict": "workload bound: it follows from the workload"},
            {"quantity": "the knee", "equation": "N = C", "predicted": "—", "published": "23",
             "verdict": "no model: an input is missing"}]
    saved.write_text(json.dumps(rows), encoding="utf-8")
    text = book_pages.predictions_section(book.notebooks())
    assert "predicted 1; workload bound 1; no model 1" in text
    table = text[text.index('id="predictions"'):]
    assert "the loop time" in table and "the gain" not in table and "the knee" not in table


def test_findings_prediction_tables_name_each_chapter_by_its_title_not_its_slug(checkout):
    """Review: the Findings prediction tables showed chapter slugs ("lmax-queue", "last-page-insert"), and a saved
    row's own "chapter" field overrode the title link.  Both tables now show the chapter's title, linked."""
    import re

    from contention_book.harness import book, machine_card

    notebooks = book.notebooks()
    slug, nb = next(iter(notebooks.items()))
    saved = checkout / book_pages.PREDICTIONS_DIR / f"{slug}.json"
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(json.dumps([{"chapter": slug, "quantity": "the loop time", "equation": "T = n·t",
                                  "predicted": "10 s", "published": "9 s", "verdict": "predicted"}]), encoding="utf-8")
    (checkout / book_pages.PREDICTIONS_DIR / f"{slug}-machine.json").write_text(json.dumps([{
        "quantity": "q", "equation": "X = 1", "inputs": "i", "predicted": "p", "published": "m",
        "verdict": "predicted"}]), encoding="utf-8")
    links = book_pages.chapter_links(notebooks)
    title = re.sub(r"<[^>]+>", "", links[slug])
    assert title and title != slug
    article = book_pages.predictions_section(notebooks)
    table = article[article.index('id="predictions"'):]
    assert f"<td>{links[slug]}</td>" in table and f"<td>{slug}</td>" not in table
    here = machine_card.machine_predictions_markdown(
        machine_card.saved_machine_rows(checkout / book_pages.PREDICTIONS_DIR), links)
    assert f"<td>{links[slug]}</td><td>q</td>" in here and f"<td>{slug}</td>" not in here


def test_what_was_run_live_says_in_plain_words_that_no_sql_server_ran():
    """Review: "its T-SQL parses, and its guard plans and restores, version gate and counter arithmetic have tests"
    is a build note.  Every chapter's details page says it plainly: no SQL Server here, whose the numbers are,
    and that the scripts were checked against a simulator, not run."""
    import re

    from contention_book.harness.recording import repo_root

    notebooks = sorted((repo_root() / "notebooks").glob("0*.ipynb"))
    assert notebooks
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        cells = [c for c in nb.cells if "*What was and was not run live" in c.source]
        assert len(cells) == 1, path.name
        text = " ".join(cells[0].source.split("*What was and was not run live", 1)[1].split("\n\n")[0].split())
        assert "details" in cells[0].metadata.get("tags", []), path.name
        assert re.search(r"No SQL Server was available here: the SQL Server numbers are the (article|sources)'s?, "
                         r"and the SQL Server scripts were checked against a simulator, not run\.", text), path.name
        for jargon in ("T-SQL parses", "guard", "version gate", "arithmetic", "have tests", "restore"):
            assert jargon not in text, (path.name, jargon)


def test_the_glossary_defines_the_prediction_words_and_agrees_with_the_findings_vocabulary():
    """Review: the glossary has a plain entry for every word the prediction verdicts and the machine cards use, and
    its 'not testable here' and the Findings page's say the same: a threshold may be met yet not applied."""
    import re

    from contention_book.chapters.shared.capacity import VERDICT_MEANING
    from contention_book.harness.recording import repo_root
    from contention_book.harness.verdict_table import VOCABULARY

    text = (repo_root() / "book" / "glossary.md").read_text()
    terms = set(re.findall(r"^([a-z][^\n]*)\n  \S", text, flags=re.M))
    for word in ("machine card", "the placement moved", "model failed here", "workload bound", "published only",
                 "model invalid"):
        assert word in terms, word
    assert "not scored" in VERDICT_MEANING["workload bound"] and "not scored" in text.split("workload bound\n")[1]
    assert "under 1%" in VERDICT_MEANING["published only"] and "under 1%" in text.split("published only\n")[1]
    findings = dict(VOCABULARY)["not testable here"]
    assert "threshold was met yet not applied" in findings and "nothing this book can run" not in findings
    assert "threshold may be met and still not applied" in " ".join(text.split())
