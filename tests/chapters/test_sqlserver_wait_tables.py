"""Every chapter page whose SQL Server recordings carry the DBA wait tables shows them, as sp_BlitzFirst names them.

Each chapter's SQL Server path runs once against the simulator (small sizes, about a second each); the page's
tables are then rendered through the book's table helper, as the notebook cell renders them.
"""
import pandas as pd
import pytest

from contention_book.chapters.shared import sqlserver_waits as W
from contention_book.harness.display import human, table_html
from contention_book.harness.sqlserver_waits import classify
from sqlserver_sim import run as R
from sqlserver_sim import server as S

CHAPTERS = ["latch-fairness", "logcache-spinlock", "last-page-insert", "lmax-queue"]
# Each chapter's raw sys.dm_os_wait_stats delta, benign waits included.
RAW_WAITS = {"latch-fairness": "dmv/wait.csv", "logcache-spinlock": "dmv/waits.csv",
             "last-page-insert": "dmv/wait_deltas.csv", "lmax-queue": "dmv/wait_deltas.csv"}
# Column names and units a DBA knows from sp_BlitzFirst (and from the DMVs' own columns for the session table).
EXPECTED = {
    "dba": ["wait_type", "wait_category", "Wait Time (Seconds)", "Per Core Per Second", "Signal Wait Time (Seconds)",
            "Resource Wait Time (Seconds)", "Percent Signal Waits", "Number of Waits", "Avg ms Per Wait"],
    "in_flight": ["wait_type", "wait_category", "Samples", "Share of samples", "Avg Wait So Far (ms)",
                  "Max Wait So Far (ms)"],
    "session": ["wait_type", "wait_category", "Sessions", "Number of Waits", "Wait Time (ms)",
                "Signal Wait Time (ms)", "Resource Wait Time (ms)", "Max Wait (ms)"],
}


@pytest.fixture(scope="module", params=CHAPTERS)
def sqlserver_page(request, tmp_path_factory):
    """(chapter, recording, what the chapter shows) for a complete simulator recording of the chapter."""
    tmp = tmp_path_factory.mktemp(request.param)
    state = S.create(tmp / "state.json", version="2022")
    rc, out, _ = R.run_in_process(request.param, state, tmp / "rec")
    assert rc == 0, out
    return request.param, tmp / "rec", R.render(request.param, tmp / "rec")["shown"]


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_the_page_shows_each_wait_table_with_dba_names(sqlserver_page, kind):
    chapter, recording, shown = sqlserver_page
    tables = W.wait_tables(shown, kind)
    assert len(tables) == 1, f"{chapter}: expected the one SQL Server recording, got {[c for c, _ in tables]}"
    caption, table = tables[0]
    assert table is not None, f"{chapter}: {caption}"
    html = table_html(table)
    for name in EXPECTED[kind]:  # the book writes code names in words ("wait type"); DBA titles pass unchanged
        assert f">{human(name)}<" in html, f"{chapter} {kind}: column {name!r} missing from the page's table"
    assert "variant" in table.index.names, f"{chapter} {kind}: rows not tagged by point"


def test_benign_waits_recorded_by_the_server_are_not_on_the_page(sqlserver_page):
    chapter, recording, shown = sqlserver_page
    raw = pd.read_csv(recording / RAW_WAITS[chapter])
    names = raw["name"] if "name" in raw.columns else raw["wait_type"]
    benign = {w for w in names if classify(w)[1]}
    assert benign, f"{chapter}: the simulator's wait delta has no benign wait, so this test could not fail"
    (_, table), = W.wait_tables(shown, "dba")
    assert len(table), f"{chapter}: no waits left on the page"
    html = table_html(table)
    assert not [w for w in benign if f">{w}<" in html], f"{chapter}: benign waits on the page"
    assert not set(table["wait_type"]) & benign


@pytest.mark.parametrize("chapter", CHAPTERS + ["ghost-cleanup"])
def test_pages_showing_the_books_own_recordings_print_nothing(chapter, capsys):
    from contention_book.chapters import package

    shown = package(chapter, "recordings").load_shown("")
    assert W.sqlserver_recordings(shown) == []
    W.show_dba_waits(shown)
    W.show_in_flight_waits(shown)
    W.show_session_waits(shown)
    assert capsys.readouterr().out == ""


def test_an_unknown_table_kind_is_named():
    with pytest.raises(ValueError, match="kind='waits'"):
        W.wait_tables(None, "waits")


def test_the_lead_and_tables_show_on_a_sqlserver_page_and_nothing_else_does(sqlserver_page, monkeypatch):
    """A page with a SQL Server recording says what its wait tables are, once, above them; a page of native or
    PostgreSQL recordings shows nothing at all (no heading or lead over tables it cannot have)."""
    import IPython.display

    from contention_book.chapters import package

    shown_objects = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **_: shown_objects.extend(objs))
    chapter, _, shown = sqlserver_page
    assert W.show_sqlserver_waits(shown, "the run's own sessions", "the chapter's wait")
    texts = [getattr(o, "data", "") for o in shown_objects if isinstance(o, IPython.display.Markdown)]
    assert texts[0].startswith("**Your SQL Server's waits, as a DBA reads them.**"), texts
    assert "(the chapter's wait)" in texts[0] and "sp_BlitzFirst" in texts[0]
    assert sum("as a DBA reads them" in t for t in texts) == 1
    assert sum(isinstance(o, pd.DataFrame) for o in shown_objects) == 3, chapter  # the three tables follow
    shown_objects.clear()
    assert not W.show_sqlserver_waits(package(chapter, "recordings").load_shown(""))
    assert shown_objects == []


@pytest.mark.parametrize("notebook", ["01-latch-fairness", "04-last-page-insert", "05-lmax-queue"])
def test_no_notebook_heads_a_section_with_the_wait_tables_alone(notebook):
    """The wait tables come with their own lead (show_sqlserver_waits), inside a section that has other content: a
    heading of their own would stand empty over every page of the book's own (native, PostgreSQL) recordings."""
    import nbformat

    from contention_book.harness.recording import repo_root

    nb = nbformat.read(repo_root() / "notebooks" / f"{notebook}.ipynb", as_version=4)
    headings = [c.source for c in nb.cells if c.cell_type == "markdown" and "as a DBA reads them" in c.source
                and any(line.startswith("#") and "DBA reads" in line for line in c.source.splitlines())]
    assert not headings, headings
    calls = [c.source for c in nb.cells if c.cell_type == "code" and "sqlserver_waits" in c.source]
    assert calls and all("show_sqlserver_waits(shown" in c for c in calls), calls
