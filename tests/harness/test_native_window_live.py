"""The open-loop window in C (harness.native_window, native/pg_openloop.c) against the embedded cluster: the same
sessions Python opened, set up and warmed up; every call counted once; errors by class; a lost session counted
once; the Python window where C cannot run; a stop that leaves no program and no busy session behind."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import threading
import time

import numpy as np
import pytest

from contention_book.harness import native, native_window
from contention_book.harness.driver import SessionDone, Statement, run_sessions

pytestmark = pytest.mark.live
DB = "contention_test"


@pytest.fixture()
def libpq(pg_target, monkeypatch):
    monkeypatch.delenv(native_window.ENV, raising=False)
    return dataclasses.replace(pg_target, client="psycopg")


@pytest.fixture()
def table(libpq):
    conn = libpq.connect(DB)
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS native_t")
    cur.execute("CREATE TABLE native_t (id bigserial PRIMARY KEY, session int, op int, app text)")
    yield conn
    cur.execute("DROP TABLE IF EXISTS native_t")
    conn.close()


def rows(conn, where: str = "true") -> int:
    return int(conn.cursor().execute(f"SELECT count(*) FROM native_t WHERE {where}").fetchone()[0])


INSERT = "INSERT INTO native_t (session, op, app) VALUES (?, ?, current_setting('application_name'))"


def setup(cur, i):
    cur.execute(f"SET application_name = 'native-{i}'")


@pytest.mark.parametrize("sessions", [2, 5])
def test_the_window_runs_in_c_on_the_sessions_python_set_up(libpq, table, sessions):
    stmt = Statement(INSERT, args=lambda i, op: (i, op))
    result = run_sessions(lambda: libpq.connect(DB), stmt, sessions=sessions, duration_s=1.0, rate=600,
                          warmup_operations=3, setup_session=setup, seed=3, progress=False)
    assert "the window in C (native/pg_openloop)" in result.driver
    assert 450 <= result.operations <= 750 and result.errors == 0
    # every call the window counted is a row, inserted by the session that counted it, with its own op numbers
    assert rows(table, "op >= 0") == result.operations
    assert rows(table, "op < 0") == 3 * sessions
    assert rows(table, "app <> 'native-' || session") == 0
    for st in result.per_session:
        assert rows(table, f"session = {st.session} AND op >= 0") == st.operations
        lat = np.frombuffer(st.latencies, dtype=np.int64)
        lag = np.frombuffer(st.lags, dtype=np.int64)
        assert len(lat) == len(lag) == st.operations and (lag >= 0).all() and (lat > lag).all()
    ends = np.concatenate([np.frombuffer(s.ends, dtype=np.int64) for s in result.per_session]) / 1e9
    assert ends.min() >= result.window_start and ends.max() - result.window_start < result.elapsed_s + 0.01
    assert result.lag is not None and result.lag.total == result.operations


def test_a_slow_call_on_a_fixed_schedule_queues_and_the_lag_shows_it(libpq):
    slow = run_sessions(lambda: libpq.connect(DB), Statement("SELECT pg_sleep(0.04)"), sessions=1, duration_s=1.0,
                        rate=50, arrival="fixed", progress=False)
    assert "the window in C" in slow.driver
    assert slow.lag.percentile_ms(99) > 100  # later calls started well after their slot
    assert slow.latency["p99_ms"] > slow.lag.percentile_ms(99) + 35


def test_where_c_cannot_run_the_python_window_does_and_says_why(libpq, table, monkeypatch):
    stmt = Statement(INSERT, args=lambda i, op: (i, op))
    reads = Statement("SELECT 1", on_result=lambda i, op, row: None)
    r = run_sessions(lambda: libpq.connect(DB), reads, sessions=2, duration_s=0.3, rate=200, progress=False)
    assert "the window in C" not in r.driver and r.operations > 0
    closed = run_sessions(lambda: libpq.connect(DB), stmt, sessions=2, operations_per_session=5, progress=False)
    assert "the window in C" not in closed.driver
    monkeypatch.setenv(native_window.ENV, "python")
    r = run_sessions(lambda: libpq.connect(DB), stmt, sessions=2, duration_s=0.3, rate=200, progress=False)
    assert "the window in C" not in r.driver and r.operations > 0
    monkeypatch.delenv(native_window.ENV)
    odbc = run_sessions(lambda: dataclasses.replace(libpq, client="odbc").connect(DB), stmt, sessions=2,
                        duration_s=0.3, rate=200, progress=False)
    assert "the window in Python (session" in odbc.driver and "not a libpq connection" in odbc.driver
    assert odbc.operations > 0


def test_errors_are_counted_by_class_and_retries_are_not_errors(libpq):
    # op 3, 6, 9 ... divide by zero (22012); a retryable class list that holds it: each is tried again, then counted
    stmt = Statement("SELECT 1 / ?::int", args=lambda i, op: (0 if op % 3 == 0 and op else 1,))
    r = run_sessions(lambda: libpq.connect(DB), stmt, sessions=2, operations_per_session=10, duration_s=5, rate=400,
                     retry_on={"22012"}, max_retries=2, progress=False)
    assert "the window in C" in r.driver
    assert r.errors_by_code == {"22012": 6} and r.errors == 6  # ops 3, 6, 9 in each session
    assert all(st.error_samples[0] == "[22012] division by zero" for st in r.per_session)  # the server's words
    assert r.retries == 12  # two retries before each of them
    assert r.operations == 14 and r.attempts == 20
    assert not r.lost_connections


def test_a_statement_the_server_refuses_stops_every_session_and_the_run_says_why(libpq):
    from contention_book.harness.driver import SessionsFailed

    conn = libpq.connect(DB)
    conn.cursor().execute("CREATE OR REPLACE FUNCTION native_refuse(op int) RETURNS int LANGUAGE plpgsql AS $$ "
                          "BEGIN IF op = 20 THEN RAISE EXCEPTION 'no access to the queue' USING ERRCODE = '42501'; "
                          "END IF; RETURN op; END $$")
    try:
        started = time.monotonic()
        with pytest.raises(SessionsFailed, match=r"refused a statement \(42501.*no access to the queue"):
            run_sessions(lambda: libpq.connect(DB), Statement("SELECT native_refuse(?)", args=lambda i, op: (op,)),
                         sessions=2, duration_s=20, rate=200, progress=False)
        assert time.monotonic() - started < 5  # stopped at the refusal, not at the window's end
    finally:
        conn.cursor().execute("DROP FUNCTION IF EXISTS native_refuse(int)")
        conn.close()


def test_session_done_ends_a_session_without_an_error(libpq, table):
    def args(i, op):
        if i == 0 and op >= 4:
            raise SessionDone("session 0 is done")
        return (i, op)

    r = run_sessions(lambda: libpq.connect(DB), Statement(INSERT, args=args), sessions=2, duration_s=0.5, rate=400,
                     progress=False)
    assert "the window in C" in r.driver and "ran out" not in r.driver
    assert r.per_session[0].operations == 4 and r.per_session[1].operations > 4 and r.errors == 0


@pytest.mark.parametrize("last", [0, 1])
def test_a_session_whose_values_end_early_makes_no_more_calls(libpq, table, last):
    """SessionDone at op 0 or 1 (no value set, or one): the session ends there; its one set is not every call's."""
    def args(i, op):
        if i == 0 and op >= last:
            raise SessionDone("done")
        return (i, op)

    r = run_sessions(lambda: libpq.connect(DB), Statement(INSERT, args=args), sessions=2, duration_s=0.4, rate=200,
                     progress=False)
    assert "the window in C" in r.driver and r.errors == 0
    assert r.per_session[0].operations == last and rows(table, "session = 0 AND op >= 0") == last
    assert r.per_session[1].operations > 10


def test_a_terminated_session_is_lost_once_and_the_others_go_on(libpq, table):
    pids = {}

    def remember(cur, i):
        pids[i] = int(cur.execute("SELECT pg_backend_pid()").fetchone()[0])

    admin = libpq.connect(DB)
    fired = []

    def tick(elapsed):
        if elapsed > 0.3 and not fired:
            fired.append(admin.cursor().execute("SELECT pg_terminate_backend(?)", pids[0]).fetchone()[0])

    stmt = Statement(INSERT, args=lambda i, op: (i, op))
    r = run_sessions(lambda: libpq.connect(DB), stmt, sessions=2, duration_s=1.0, rate=300, setup_session=remember,
                     on_tick=tick, tick_s=0.05, progress=False)
    admin.close()
    assert fired
    lost = r.lost_connections
    assert sum(lost.values()) == 1 and set(lost) <= {"57P01", "08006"}, lost
    assert r.errors == 1
    assert r.per_session[1].operations > r.per_session[0].operations > 0  # session 0 ended when it was lost
    assert rows(table, "op >= 0") == r.operations


def test_a_stop_mid_window_leaves_no_program_and_no_busy_session(libpq):
    def tick(elapsed):
        if elapsed > 0.3:
            raise KeyboardInterrupt

    stmt = Statement("SELECT pg_sleep(0.05)")
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_sessions(lambda: libpq.connect(DB), stmt, sessions=3, duration_s=30, rate=100, setup_session=setup,
                     on_tick=tick, tick_s=0.05, progress=False)
    assert time.monotonic() - started < 10
    left = subprocess.run(["pgrep", "-P", str(os.getpid()), "pg_openloop"], capture_output=True, text=True).stdout
    assert not left.strip()
    conn = libpq.connect(DB)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        busy = conn.cursor().execute("SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'native-%'"
                                     ).fetchone()[0]
        if not busy:
            break
        time.sleep(0.1)
    conn.close()
    assert busy == 0


def test_a_spec_the_program_cannot_read_is_a_clear_error(tmp_path):
    exe = native.build(native_window.PROGRAM)
    spec = tmp_path / "spec"
    spec.write_bytes(b"OLSPEC1\0" + b"\1\0\0\0")
    r = subprocess.run([str(exe), str(spec), str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 2 and "the spec file ends early" in r.stderr
    assert not (tmp_path / "out").exists()
    spec.write_bytes(b"something else entirely")
    r = subprocess.run([str(exe), str(spec), str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 2 and "does not start with OLSPEC1" in r.stderr


def test_threads_see_the_hand_over_end_even_when_one_session_withdraws():
    window = native_window.NativeWindow(Statement("SELECT 1"), 2, 1, rate=10, arrival="fixed", seed=1,
                                        duration_s=1, operations_per_session=None, retry_on=(), max_retries=0,
                                        max_errors_per_session=5)
    window.compute_values()
    got = []
    t = threading.Thread(target=lambda: got.append(window.hand([(0, object())])))
    t.start()
    window.withdraw("session 1 ended in its warm-up")
    assert window.run(None, 0.05, threading.Event()) is None
    t.join(5)
    assert got == [False] and "session 0: not a libpq connection" in window.declined
