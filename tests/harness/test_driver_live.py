"""The sessions driver against the test PostgreSQL."""
import threading
import time

import pytest

from contention_book.harness.driver import LatencyHistogram, SessionsFailed, run_sessions

pytestmark = pytest.mark.live


def test_histogram_percentiles():
    h = LatencyHistogram()
    for ms in range(1, 101):
        h.record(ms * 1_000_000)
    s = h.summary()
    assert s["p50_ms"] == pytest.approx(50, rel=0.02)
    assert s["p99_ms"] == pytest.approx(99, rel=0.02)
    assert s["max_ms"] == 100


def test_sessions_run_concurrently_and_count(pg_target):
    seen = set()
    lock = threading.Lock()

    def op(cur, session, i):
        cur.execute("SELECT pg_backend_pid(), pg_sleep(0.002)")
        with lock:
            seen.add(cur.fetchone()[0])

    result = run_sessions(lambda: pg_target.connect("contention_test"), op, sessions=4,
                          operations_per_session=25, warmup_operations=2, progress=False)
    assert result.operations == 100 and result.errors == 0
    assert len(seen) == 4  # one connection, so one backend, per session
    assert result.latency["p50_ms"] >= 2.0
    assert result.throughput == pytest.approx(100 / result.elapsed_s)
    assert result.elapsed_s < 0.15  # run one after another, 100 sleeps of 2 ms would take at least 0.2 s


def test_errors_are_counted_per_session_not_swallowed(pg_target):
    def op(cur, session, i):
        cur.execute("SELECT 1/0" if session == 1 and i % 2 else "SELECT 1")
        cur.fetchall()

    result = run_sessions(lambda: pg_target.connect("contention_test"), op, sessions=2,
                          operations_per_session=10, progress=False)
    assert result.errors == 5
    assert result.per_session[1].errors == 5 and result.per_session[0].errors == 0
    assert "division by zero" in result.per_session[1].error_samples[0]
    assert result.row(variant="x")["errors"] == 5


def test_all_failing_raises(pg_target):
    def op(cur, session, i):
        cur.execute("SELECT * FROM no_such_table")

    with pytest.raises(SessionsFailed, match="every call failed"):
        run_sessions(lambda: pg_target.connect("contention_test"), op, sessions=2, operations_per_session=3,
                     progress=False)


def test_duration_bound_and_ticks(pg_target):
    ticks = []
    result = run_sessions(lambda: pg_target.connect("contention_test"),
                          lambda cur, s, i: cur.execute("SELECT pg_sleep(0.001)"),
                          sessions=2, duration_s=0.5, on_tick=ticks.append, progress=False)
    assert 0.45 < result.elapsed_s < 2.0
    assert len(ticks) >= 3


def test_keyboard_interrupt_stops_sessions(pg_target):
    def interrupt(elapsed):
        if elapsed > 0.2:
            raise KeyboardInterrupt

    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run_sessions(lambda: pg_target.connect("contention_test"),
                     lambda cur, s, i: cur.execute("SELECT pg_sleep(0.01)"),
                     sessions=3, duration_s=60, on_tick=interrupt, progress=False)
    assert time.perf_counter() - started < 10
    busy = pg_target.connect("contention_test").cursor().execute(
        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(0.01)%' AND state = 'active'"
    ).fetchone()[0]
    assert busy == 0


def test_connection_failure_is_reported(monkeypatch):
    from contention_book.harness.targets import resolve_target

    monkeypatch.setenv("NOWHERE_PG", "Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=1;Uid=x;Pwd=nope-secret;")
    target = resolve_target("NOWHERE_PG")
    with pytest.raises(SessionsFailed, match="sessions could not start") as err:
        run_sessions(lambda: target.connect(timeout=2), lambda cur, s, i: None, sessions=2,
                     operations_per_session=1, progress=False)
    assert "nope-secret" not in str(err.value)


def test_on_ready_runs_before_the_window(pg_target):
    order = []
    run_sessions(lambda: pg_target.connect("contention_test"),
                 lambda cur, s, i: order.append("op"), sessions=2, operations_per_session=2,
                 setup_session=lambda cur, i: order.append("setup"), on_ready=lambda: order.append("ready"),
                 progress=False)
    assert order[:3] == ["setup", "setup", "ready"] and order.count("op") == 4
