"""Every "On your own server" query a chapter shows, checked as a reader would use it.

- ``workloads/*/diagnose/postgres/*.sql`` runs, whole, through ``psql -v ON_ERROR_STOP=1`` on the embedded
  cluster, in a plain user database of its own.  A file that says in its header comment that it "needs the
  X extension" gets ``CREATE EXTENSION X`` first (the reader's step); any other file runs without
  extensions, so a guarded use of pg_wait_sampling is tested on its guard.
- ``workloads/*/diagnose/sqlserver/*.sql`` parses with the T-SQL grammar the workload tests use
  (tests/tsql_parse.py), and every column it reads from a DMV must be one of the columns the simulator's
  catalogue documents for it (tests/sqlserver_sim/catalogue.json); tests/test_sqlserver_views.py runs each file.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
POSTGRES = sorted(ROOT.glob("workloads/*/diagnose/postgres/*.sql"))
SQLSERVER = sorted(ROOT.glob("workloads/*/diagnose/sqlserver/*.sql"))
NEEDS = re.compile(r"needs the ([a-z_][a-z0-9_]*) extension", re.IGNORECASE)
DMV = re.compile(r"\bsys\.(dm_[a-z0-9_]+)\b(?:\s*\([^()]*(?:\([^()]*\)[^()]*)*\))?(?:\s+(?:AS\s+)?([a-z][a-z0-9_]*))?",
                 re.IGNORECASE)
NOT_ALIASES = {"where", "join", "cross", "outer", "inner", "left", "right", "on", "order", "group", "with", "union",
               "option", "into", "select", "go"}


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_there_are_diagnose_queries():
    assert POSTGRES and SQLSERVER, "no workloads/*/diagnose/{postgres,sqlserver}/*.sql yet"


# -- PostgreSQL: run them ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def diagnose_db(pg):
    """A plain user database for the queries, and the psql command line that reaches it."""
    from contention_book.harness.embedded_pg import SUPERUSER

    env = {**os.environ, "PGPASSWORD": pg.password, "PGCONNECT_TIMEOUT": "10"}
    base = [str(pg.bindir / "psql"), "-X", "-q", "-h", "127.0.0.1", "-p", str(pg.port), "-U", SUPERUSER]
    subprocess.run([*base, "-d", "postgres", "-c", "DROP DATABASE IF EXISTS diagnose_queries"], env=env, check=True,
                   capture_output=True)
    subprocess.run([*base, "-d", "postgres", "-c", "CREATE DATABASE diagnose_queries"], env=env, check=True,
                   capture_output=True)
    # a little of what the queries look for: a table with an identity key, updated and deleted, and a reader
    setup = ("CREATE TABLE queue_demo (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v int); "
             "INSERT INTO queue_demo (v) SELECT g FROM generate_series(1, 1000) g; "
             "UPDATE queue_demo SET v = v + 1 WHERE id % 3 = 0; DELETE FROM queue_demo WHERE id % 5 = 0;")
    subprocess.run([*base, "-d", "diagnose_queries", "-v", "ON_ERROR_STOP=1", "-c", setup], env=env, check=True,
                   capture_output=True)
    return base + ["-d", "diagnose_queries"], env


@pytest.mark.parametrize("path", POSTGRES, ids=_rel)
def test_postgres_query_runs_on_the_embedded_cluster(path, diagnose_db):
    psql, env = diagnose_db
    header = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("--"))
    for ext in sorted(set(m.lower() for m in NEEDS.findall(header))):
        made = subprocess.run([*psql, "-v", "ON_ERROR_STOP=1", "-c", f"CREATE EXTENSION IF NOT EXISTS {ext}"],
                              env=env, capture_output=True, text=True)
        assert made.returncode == 0, f"{_rel(path)} needs the {ext} extension, which the test cluster cannot " \
                                     f"create: {made.stderr.strip()}"
    ran = subprocess.run([*psql, "-v", "ON_ERROR_STOP=1", "-f", str(path)], env=env, capture_output=True, text=True,
                         timeout=120)
    assert ran.returncode == 0, f"{_rel(path)} failed in psql:\n{ran.stderr.strip()}"


@pytest.mark.parametrize("path", POSTGRES, ids=_rel)
def test_a_wait_event_name_matched_by_pattern_ignores_case(path):
    """PostgreSQL 17 renamed the I/O wait events to camel case (WALWrite up to 16, WalWrite from 17), so a pattern
    over wait event names must ignore case (ILIKE) to find them on every version the pages name
    (tests/chapters/test_logcache_spinlock_diagnose.py runs chapter 2's on rows with both spellings)."""
    text = path.read_text(encoding="utf-8")
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    bad = re.findall(r"\b((?:wait_)?event)\s+(?:NOT\s+)?LIKE\b", code, re.IGNORECASE)
    assert not bad, f"{_rel(path)}: {bad} matched case-sensitively; use ILIKE"


# -- SQL Server: parse them, and check the DMV columns they read against the simulator ---------------------------

def simulator_columns() -> dict[str, set[str]]:
    """DMV -> its columns the simulator documents: the catalogue's (tests/sqlserver_sim/catalogue.json), which are
    the columns every row the simulator computes carries (server.documented_columns)."""
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    from sqlserver_sim import server

    return {name[len("sys."):]: set(cols) for name, cols in server.documented_columns().items()
            if name.startswith("sys.dm_")}


def _statements(sql: str) -> list[str]:
    body = re.sub(r"--[^\n]*", "", sql)
    return [s for s in re.split(r";\s*\n|\n\s*GO\s*\n", body) if s.strip()]


def dmv_columns(sql: str) -> list[tuple[str, str]]:
    """(dmv, column) pairs a query reads: alias.column for an aliased DMV, and the bare columns of a statement
    whose only source is one DMV."""
    found = []
    for stmt in _statements(sql):
        sources = [(m.group(1).lower(), (m.group(2) or "").lower()) for m in DMV.finditer(stmt)]
        sources = [(d, a if a not in NOT_ALIASES else "") for d, a in sources]
        for dmv, alias in sources:
            if alias:
                found += [(dmv, c.lower()) for c in re.findall(rf"\b{re.escape(alias)}\.\[?([A-Za-z_][A-Za-z0-9_]*)\]?",
                                                              stmt, re.IGNORECASE)]
        if len(sources) == 1 and not sources[0][1] and not re.search(r"\bJOIN\b|\bAPPLY\b", stmt, re.IGNORECASE):
            m = re.search(r"\bSELECT\s+(?:TOP\s*\(?\d+\)?\s+)?(.*?)\s+(?:INTO\s+\S+\s+)?FROM\b", stmt, re.I | re.S)
            where = re.search(r"\bWHERE\b(.*)$", stmt, re.I | re.S)
            names = []
            if m:
                for item in m.group(1).split(","):
                    item = item.strip()
                    bare = re.match(r"^(?:@\w+\s*=\s*)?\[?([A-Za-z_][A-Za-z0-9_]*)\]?(?:\s+(?:AS\s+)?\w+)?$", item, re.I)
                    if bare:
                        names.append(bare.group(1))
            if where:
                names += re.findall(r"\[?([A-Za-z_][A-Za-z0-9_]*)\]?\s*(?:=|<>|>|<|\bLIKE\b|\bIN\b)",
                                    where.group(1), re.IGNORECASE)
            found += [(sources[0][0], n.lower()) for n in names if not n.startswith("@")]
    return found


@pytest.mark.parametrize("path", SQLSERVER, ids=_rel)
def test_sqlserver_query_parses_with_the_tsql_grammar(path):
    from tsql_parse import problems

    found = problems(path.read_text(encoding="utf-8"))
    assert not found, f"{_rel(path)} does not parse: {found[:5]}"


@pytest.mark.parametrize("path", SQLSERVER, ids=_rel)
def test_sqlserver_query_reads_only_columns_the_simulator_documents(path):
    known = simulator_columns()
    sql = path.read_text(encoding="utf-8")
    unknown = sorted({f"sys.{dmv}.{col}" for dmv, col in dmv_columns(sql) if dmv in known and col not in known[dmv]})
    assert not unknown, (f"{_rel(path)} reads {', '.join(unknown)}, which the simulator's statements for that DMV do "
                         "not name: check the column on the DMV's Microsoft Learn page and teach the simulator")


def test_the_column_check_can_fail():
    """A misspelt column of a DMV the simulator answers is caught; a DMV it does not have is left alone."""
    known = simulator_columns()
    assert "dm_os_wait_stats" in known and "wait_time_ms" in known["dm_os_wait_stats"]
    bad = "SELECT w.wait_type, w.wait_tme_ms FROM sys.dm_os_wait_stats AS w;"
    assert ("dm_os_wait_stats", "wait_tme_ms") in dmv_columns(bad)
    assert "wait_tme_ms" not in known["dm_os_wait_stats"]
    bare = "SELECT name, colisions FROM sys.dm_os_spinlock_stats WHERE name = N'X';"
    assert ("dm_os_spinlock_stats", "colisions") in dmv_columns(bare)


def test_the_postgres_check_can_fail(diagnose_db, tmp_path):
    psql, env = diagnose_db
    bad = tmp_path / "bad.sql"
    bad.write_text("SELECT pid, no_such_column FROM pg_stat_activity;\n")
    ran = subprocess.run([*psql, "-v", "ON_ERROR_STOP=1", "-f", str(bad)], env=env, capture_output=True, text=True)
    assert ran.returncode != 0 and "no_such_column" in ran.stderr


def test_a_querys_source_block_is_shown_once_in_its_code_not_again_as_its_purpose():
    from contention_book.chapters.shared import diagnose

    text = ("-- Source (Microsoft Learn; the page each object's columns come from):\n"
            "--   sys.dm_os_wait_stats: https://learn.microsoft.com/x\n"
            "-- Waits over one minute.\n-- Needs VIEW SERVER STATE.\nSELECT 1;")
    assert diagnose._purpose(text) == "Waits over one minute. Needs VIEW SERVER STATE."
    assert diagnose._purpose("-- Source: sys.x (a)\n-- https://learn.microsoft.com/y\n-- What.\nSELECT 1;") == "What."


def test_every_querys_purpose_is_said_once_and_its_sources_stay_in_the_code():
    """The paragraph above a query is its leading comment without the sources; the code block keeps the sources
    and the query, not the paragraph a second time; no address or source line leaks into the paragraph."""
    from contention_book.chapters.shared import diagnose

    text = ("-- Waits over one minute.\n-- Sources:\n--   sys.dm_os_wait_stats: https://learn.microsoft.com/x\n"
            "SELECT 1; -- a comment in the query stays\n")
    assert diagnose._purpose(text) == "Waits over one minute."
    assert diagnose._code(text) == ("-- Sources:\n--   sys.dm_os_wait_stats: https://learn.microsoft.com/x\n"
                                    "SELECT 1; -- a comment in the query stays")
    for path in sorted(ROOT.glob("workloads/*/diagnose/*/*.sql")):
        said = diagnose._purpose(path.read_text(encoding="utf-8"))
        assert "http" not in said and "Source" not in said, f"{path}: a source line in the page's paragraph"
        text = path.read_text(encoding="utf-8")
        shown = diagnose._code(text).splitlines()
        said_lines = [line for line, source in diagnose._leading_comment(text) if not source]
        assert not set(said_lines) & set(shown), f"{path}: the paragraph is repeated in the code"
        assert text.strip().endswith(shown[-1]), f"{path}: the code block lost the query's end"


def test_a_main_page_shows_the_first_queries_and_its_details_page_the_rest():
    """Reading time: each chapter's main page keeps the queries to run first (the files are numbered in that
    order) and says how many more its details page holds; together the two parts show every query once."""
    from contention_book.chapters.shared import diagnose

    for chapter in ("last-page-insert", "latch-fairness"):
        for engine in ("sqlserver", "postgres"):
            found = diagnose.queries(chapter, engine)
            main, more = (diagnose.markdown(chapter, engine, part) for part in ("main", "more"))
            every = diagnose.markdown(chapter, engine)
            for i, q in enumerate(found):
                assert (q.shown in main) == (i < diagnose.MAIN_QUERIES) and (q.shown in more) == (i >= diagnose.MAIN_QUERIES)
                assert q.shown in every
            rest = len(found) - diagnose.MAIN_QUERIES
            assert (f"{rest} more" in main) == (rest > 0) and (more == "") == (rest <= 0)
    with pytest.raises(ValueError, match="part='some'"):
        diagnose.markdown("last-page-insert", "postgres", "some")


def test_every_main_page_says_its_sql_server_queries_were_not_run_on_a_sql_server():
    """Review: a main page's "confirm the page first" points at SQL Server queries that no SQL Server ran for this
    book; the SQL Server block on every main page says so in one line, and the PostgreSQL block does not."""
    from contention_book.chapters.shared import diagnose
    from contention_book.harness.recording import repo_root

    chapters = sorted(p.name for p in (repo_root() / "workloads").iterdir()
                      if (p / "diagnose" / "sqlserver").is_dir())
    assert len(chapters) == 5, chapters
    for chapter in chapters:
        main = diagnose.markdown(chapter, "sqlserver", "main")
        assert main.startswith(diagnose.SQLSERVER_UNRUN), chapter
        assert "not run on a SQL Server for this book" in main
        for other in (diagnose.markdown(chapter, "sqlserver", "more"), diagnose.markdown(chapter, "postgres", "main")):
            assert diagnose.SQLSERVER_UNRUN not in other, chapter
