"""The last-page chapter's "On your own server" queries: the T-SQL parses, the PostgreSQL runs.

They are shown on the page by reading these files, so what a reader copies is what ran here.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from tsql_parse import problems

from contention_book.chapters.last_page_insert import diagnose

ROOT = Path(__file__).resolve().parents[2] / "workloads" / "last-page-insert" / "diagnose"


def test_the_page_lists_every_file_in_order():
    for engine in ("sqlserver", "postgres"):
        files = sorted(p.name for p in (ROOT / engine).glob("*.sql"))
        assert [q.path.name for q in diagnose.queries(engine)] == files and files
        for q in diagnose.queries(engine):
            assert q.title and q.text.strip() and not q.title[0].isdigit()


@pytest.mark.parametrize("path", sorted((ROOT / "sqlserver").glob("*.sql")), ids=lambda p: p.name)
def test_tsql_parses(path):
    assert problems(path.read_text()) == []


@pytest.mark.live
@pytest.mark.parametrize("path", sorted((ROOT / "postgres").glob("*.sql")), ids=lambda p: p.name)
def test_postgres_query_runs_on_the_embedded_cluster(pg_target, path):
    conn = pg_target.connect("contention_test")
    with contextlib.closing(conn):
        cur = conn.cursor()
        text = path.read_text()
        for ext in ("pg_wait_sampling", "pgstattuple"):
            if ext in text:
                available = cur.execute("SELECT count(*) FROM pg_available_extensions WHERE name = ?",
                                        ext).fetchone()[0]
                preload = cur.execute("SELECT current_setting('shared_preload_libraries')").fetchone()[0]
                if not available or (ext == "pg_wait_sampling" and ext not in preload):
                    pytest.skip(f"{ext} is not available on this cluster")
                cur.execute(f"CREATE EXTENSION IF NOT EXISTS {ext}")
        cur.execute(text)
        cols = [d[0] for d in cur.description]
        cur.fetchall()
        assert cols
