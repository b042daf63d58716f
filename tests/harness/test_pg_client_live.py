"""harness.pg_client against the embedded cluster: what the chapters rely on behaves as it does over pyodbc."""
from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from contention_book.harness.driver import classify, lost_connection, run_sessions
from contention_book.harness.pg_client import CLIENT_ENV, Connection

pytestmark = pytest.mark.live
DB = "contention_test"


@pytest.fixture()
def libpq(pg_target):
    return dataclasses.replace(pg_target, client="psycopg")


def test_cursor_surface(libpq):
    conn = libpq.connect(DB)
    assert isinstance(conn, Connection)
    try:
        cur = conn.cursor()
        assert cur.execute("SHOW lock_timeout").fetchone()[0] == "2min"  # set_lock_timeout ran on this client too
        cur.execute("DROP TABLE IF EXISTS pgc_t")
        cur.execute("CREATE TABLE pgc_t (id int PRIMARY KEY, note text, ok bool, doc jsonb)")
        for i in range(3):  # the second run onwards is a prepared statement
            cur.execute("INSERT INTO pgc_t VALUES (?, ?, ?, ?)", i, f"n{i}", i % 2 == 0, '{"k": 1}')
        assert cur.rowcount == 1 and cur.description is None
        rows = cur.execute("SELECT id, note, ok, doc FROM pgc_t WHERE id >= ? ORDER BY id", (1,)).fetchall()
        assert [d[0] for d in cur.description] == ["id", "note", "ok", "doc"]
        assert rows == [(1, "n1", "0", '{"k": 1}'), (2, "n2", "1", '{"k": 1}')]
        assert cur.execute("SELECT 1 WHERE false").fetchone() is None
        assert conn.execute("SELECT ?::int + 1", 1).fetchone() == (2,)  # pyodbc's Connection.execute
        cur.execute("SELECT 1; SELECT 2")
        assert cur.fetchall() == [(1,)] and cur.nextset() and cur.fetchall() == [(2,)] and not cur.nextset()
        prepared = cur.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'INSERT INTO pgc_t%'")
        assert prepared.fetchone()[0] == 1
        with pytest.raises(Exception) as err:
            cur.execute("INSERT INTO pgc_t VALUES (?, 'dup', true, null)", 1)
        assert classify(err.value) == "23505"  # the driver classes psycopg errors as it classes pyodbc's
        with pytest.raises(Exception) as err:
            cur.execute("SELECT ?", 1, 2)
        assert err.value.args[0] == "07002"
        cur.execute("DROP TABLE pgc_t")
    finally:
        conn.close()


def test_autocommit_off_opens_a_transaction_that_rollback_undoes(libpq):
    conn = libpq.connect(DB, autocommit=False)
    try:
        cur = conn.cursor()
        cur.execute("CREATE TEMP TABLE pgc_tx (x int)")
        conn.commit()
        cur.execute("INSERT INTO pgc_tx VALUES (1)")
        assert cur.execute("SELECT count(*) FROM pgc_tx").fetchone()[0] == 1
        conn.rollback()
        assert cur.execute("SELECT count(*) FROM pgc_tx").fetchone()[0] == 0
        assert cur.execute("SELECT xact_start IS NOT NULL FROM pg_stat_activity WHERE pid = pg_backend_pid()"
                           ).fetchone()[0] == "1"
    finally:
        conn.close()


def test_cancel_from_another_thread_stops_a_running_statement(libpq):
    conn = libpq.connect(DB)
    try:
        cur = conn.cursor()
        for sql, args in (("SELECT pg_sleep(5)", ()), ("SELECT pg_sleep(?)", (5,))):  # simple and prepared paths
            timer = threading.Timer(0.3, cur.cancel)
            timer.start()
            t0 = time.perf_counter()
            with pytest.raises(Exception) as err:
                cur.execute(sql, *args)
            assert classify(err.value) == "57014" and time.perf_counter() - t0 < 3
    finally:
        conn.close()


@pytest.mark.parametrize("runs_before", [0, 2])  # simple protocol; a prepared statement (PQexecPrepared)
def test_a_terminated_session_is_classed_as_a_lost_connection(libpq, runs_before):
    conn, admin = libpq.connect(DB), libpq.connect(DB)
    try:
        pid = conn.cursor().execute("SELECT pg_backend_pid()").fetchone()[0]
        for _ in range(runs_before):
            conn.execute("SELECT 1")
        admin.cursor().execute("SELECT pg_terminate_backend(?)", pid)
        time.sleep(0.2)
        codes = []
        for _ in range(2):
            with pytest.raises(Exception) as err:
                conn.cursor().execute("SELECT 1")
            codes.append(classify(err.value))
        assert codes[0] == "57P01" and all(lost_connection(c) for c in codes)
    finally:
        conn.close()
        admin.close()


def test_the_sessions_driver_runs_on_it_and_the_manifest_names_it(libpq, pg_target):
    result = run_sessions(lambda: libpq.connect(DB), lambda cur, _s, _o: cur.execute("SELECT ?", 1), sessions=2,
                          duration_s=0.5, warmup_operations=5, progress=False)
    assert result.operations > 100 and result.errors == 0
    odbc = dataclasses.replace(pg_target, client="odbc")
    opened, other = libpq.connect(DB), odbc.connect(DB)
    try:
        assert isinstance(opened, Connection) and not isinstance(other, Connection)
        assert libpq.client_description(opened).startswith("psycopg 3.")
        assert odbc.client_description(other).startswith("pyodbc ")  # psqlODBC on request, and the manifest says so
    finally:
        opened.close()
        other.close()


def test_the_default_postgresql_client_is_libpq(pg_target, monkeypatch):
    monkeypatch.delenv(CLIENT_ENV, raising=False)
    conn = pg_target.connect(DB)  # the session's target, with no client chosen
    try:
        assert isinstance(conn, Connection) and pg_target.client_description(conn).startswith("psycopg 3.")
    finally:
        conn.close()
