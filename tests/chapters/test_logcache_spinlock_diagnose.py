"""Chapter 2's PostgreSQL "On your own server" queries find the WAL waits under both spellings of their names.

PostgreSQL 16 and earlier name the WAL I/O wait events in capitals (``IO:WALWrite``, as this chapter's own
PostgreSQL 15 recording shows); from 17 the names are made from ``wait_event_names.txt`` in camel case
(``IO:WalWrite``, ``IO:WalSync``; ``generate-wait_event_types.pl``).  A case-sensitive ``LIKE 'WAL%'`` finds
only the first.  Each query's own filter runs here on the embedded cluster over rows that carry both spellings.
"""
from __future__ import annotations

import os
import re
import subprocess

import pytest

from contention_book.chapters import logcache_spinlock as lc

SPELLINGS = [("IO", "WALWrite"), ("IO", "WALSync"), ("IO", "WalWrite"), ("IO", "WalSync"), ("IO", "WalInitWrite"),
             ("LWLock", "WALInsert"), ("LWLock", "WALWrite"), ("LWLock", "WALBufMapping")]
NOT_WAL = [("IO", "DataFileRead"), ("LWLock", "BufferContent"), ("Client", "ClientRead"), ("LWLock", "XidGen")]


def _query(title: str):
    return next(q for q in lc.diagnose.queries("postgres") if q.title.lower() == title)


def _values(rows, with_pid: bool) -> str:
    return ", ".join(f"({'1, ' if with_pid else ''}'{t}', '{e}'{', 1::bigint' if with_pid else ''})" for t, e in rows)


def test_the_wal_queries_match_io_events_whatever_their_case():
    for title in ("wal waits now", "wal waits sampled"):
        text = _query(title).text
        assert not re.search(r"(?<!I)LIKE\s+'WAL%'", text), f"{title}: a case-sensitive LIKE misses WalWrite (17+)"
        assert "ILIKE 'wal%'" in text, title
        assert "17" in _query(title).purpose, f"{title}: the paragraph says which versions spell the names how"


@pytest.fixture(scope="module")
def psql(pg):
    from contention_book.harness.embedded_pg import SUPERUSER

    env = {**os.environ, "PGPASSWORD": pg.password, "PGCONNECT_TIMEOUT": "10"}
    base = [str(pg.bindir / "psql"), "-X", "-q", "-A", "-t", "-F", "|", "-h", "127.0.0.1", "-p", str(pg.port),
            "-U", SUPERUSER, "-d", "postgres", "-v", "ON_ERROR_STOP=1"]

    def run(sql: str) -> list[str]:
        done = subprocess.run([*base, "-c", sql], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stdout.splitlines() if line.strip()]
    return run


def _events(lines: list[str]) -> set[tuple[str, str]]:
    return {tuple(line.split("|")[:2]) for line in lines}


def test_the_wal_waits_now_query_finds_both_spellings_on_a_server(psql):
    """The query as the page shows it, its ``pg_stat_activity`` replaced by rows with both spellings."""
    sql = _query("wal waits now").shown
    fake = f"(VALUES {_values(SPELLINGS + NOT_WAL, False)}) AS pg_stat_activity(wait_event_type, wait_event)"
    assert sql.count("FROM pg_stat_activity") == 1
    found = _events(psql(sql.replace("FROM pg_stat_activity", f"FROM {fake}")))
    assert found == set(SPELLINGS), found ^ set(SPELLINGS)


def test_the_wal_waits_sampled_query_finds_both_spellings_on_a_server(psql):
    """The same for the sampled profile: ``pg_wait_sampling_profile`` and the backend join replaced by rows."""
    sql = _query("wal waits sampled").shown
    profile = f"(VALUES {_values(SPELLINGS + NOT_WAL, True)}) AS p(pid, event_type, event, count)"
    backends = "(VALUES (1, 'client backend')) AS a(pid, backend_type)"
    assert "FROM pg_wait_sampling_profile AS p" in sql and "JOIN pg_stat_activity AS a" in sql
    sql = sql.replace("FROM pg_wait_sampling_profile AS p", f"FROM {profile}") \
             .replace("JOIN pg_stat_activity AS a", f"JOIN {backends}")
    found = _events(psql(sql))
    assert found == set(SPELLINGS), found ^ set(SPELLINGS)


def test_the_case_check_can_fail(psql):
    """The old filter, ``LIKE 'WAL%'``, misses the 17+ names: the check above would have caught it."""
    sql = _query("wal waits now").shown.replace("ILIKE 'wal%'", "LIKE 'WAL%'")
    fake = f"(VALUES {_values(SPELLINGS, False)}) AS pg_stat_activity(wait_event_type, wait_event)"
    found = _events(psql(sql.replace("FROM pg_stat_activity", f"FROM {fake}")))
    assert ("IO", "WalWrite") not in found and ("IO", "WALWrite") in found
