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
        cur.execute("SELECT 1 / 0")

    with pytest.raises(SessionsFailed, match="every call failed"):
        run_sessions(lambda: pg_target.connect("contention_test"), op, sessions=2, operations_per_session=3,
                     progress=False)


def test_a_statement_the_server_refuses_stops_the_run(pg_target):
    def op(cur, session, i):
        cur.execute("SELECT 1" if session == 0 else "SELECT * FROM no_such_table")

    with pytest.raises(SessionsFailed, match=r"refused a statement \(42P01: statement refused\).*no_such_table"):
        run_sessions(lambda: pg_target.connect("contention_test"), op, sessions=2, duration_s=30, progress=False)


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


def test_hdr_histogram_roundtrips_through_its_encoding():
    h = LatencyHistogram().record_many([ms * 1_000_000 for ms in range(1, 1001)])
    back = LatencyHistogram.decode(h.encode())
    assert back.total == 1000
    assert back.percentile_ms(99.9) == pytest.approx(999, rel=0.002)
    assert LatencyHistogram.decode("").total == 0
    with pytest.raises(ValueError, match="HDR"):
        LatencyHistogram.decode("not-a-histogram")


def test_errors_are_classified_by_sqlstate_and_server_number():
    from contention_book.harness.driver import classify, kind

    class FakeOdbcError(Exception):
        pass

    pg = FakeOdbcError("40P01", "[40P01] ERROR: deadlock detected;\nError while executing the query (1) (SQLExecDirectW)")
    ss = FakeOdbcError("40001", "[40001] [Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Transaction (Process ID 57) "
                                "was deadlocked on lock resources with another process (1205) (SQLExecDirectW)")
    assert classify(pg) == "40P01" and kind("40P01") == "deadlock"
    assert classify(ss) == "1205" and kind("1205") == "deadlock"
    assert classify(ZeroDivisionError("x")) == "ZeroDivisionError" and kind("ZeroDivisionError") == "other"


SERIALIZATION = "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$"


def test_serialization_failures_are_retried_when_allowed_and_classified_when_not(pg_target):
    tries = {}

    def op(cur, session, i):
        tries[(session, i)] = tries.get((session, i), 0) + 1
        cur.execute(SERIALIZATION if i % 3 == 0 and tries[(session, i)] == 1 else "SELECT 1")

    connect = lambda: pg_target.connect("contention_test")  # noqa: E731
    retried = run_sessions(connect, op, sessions=1, operations_per_session=9, retry_on=("40001",), progress=False)
    assert retried.errors == 0 and retried.retries == 3 and retried.operations == 9
    tries.clear()
    failed = run_sessions(connect, op, sessions=1, operations_per_session=9, progress=False)
    assert failed.errors == 3 and failed.errors_by_code == {"40001": 3} and failed.retries == 0
    assert "serialization failure" in failed.errors_text()


def test_time_based_warmup_runs_before_the_window(pg_target):
    warm = []
    result = run_sessions(lambda: pg_target.connect("contention_test"),
                          lambda cur, s, i: warm.append(time.perf_counter()) if i < 0 else cur.execute("SELECT 1"),
                          sessions=1, operations_per_session=5, warmup_s=0.3, progress=False)
    assert warm and warm[-1] - warm[0] >= 0.25 and result.operations == 5


def test_open_loop_counts_queueing_from_the_scheduled_start(pg_target):
    """50 calls/s on a fixed schedule into one session whose call takes 40 ms: the queue grows, latency shows it."""
    connect = lambda: pg_target.connect("contention_test")  # noqa: E731
    slow = run_sessions(connect, lambda cur, s, i: cur.execute("SELECT pg_sleep(0.04)"), sessions=1,
                        duration_s=1.0, rate=50, arrival="fixed", progress=False)
    assert slow.arrival == "fixed" and slow.lag is not None
    assert slow.lag.percentile_ms(99) > 100  # later calls started well after their slot
    assert slow.latency["p99_ms"] > slow.lag.percentile_ms(99) + 35  # latency = lag + service time
    easy = run_sessions(connect, lambda cur, s, i: cur.execute("SELECT 1"), sessions=2, duration_s=1.0, rate=40,
                        arrival="poisson", seed=7, progress=False)
    assert 20 <= easy.operations <= 70  # about 40 in a second
    assert easy.latency["p50_ms"] < 20


def test_interval_rows_cover_the_window_and_add_up(pg_target):
    result = run_sessions(lambda: pg_target.connect("contention_test"),
                          lambda cur, s, i: cur.execute("SELECT pg_sleep(0.005)"), sessions=2, duration_s=2.3,
                          progress="interval test")
    frame = result.intervals()
    assert list(frame["second"]) == [0.0, 1.0, 2.0]
    assert frame["operations"].sum() == result.operations
    assert (frame["p99_ms"] >= 5).all() and frame["interval_s"].iloc[-1] < 1.0


def test_sessions_whose_backends_are_terminated_reconnect_and_count_one_error_each(pg_target):
    """pg_terminate_backend on every session mid-window: one 57P01 error per session, a reconnect each, calls
    go on after it, and errors never exceed the calls tried (a dead connection used to fail every call)."""
    connect = lambda: pg_target.connect("contention_test")  # noqa: E731
    pids: dict[int, int] = {}
    killed = {"at": None}

    def setup(cur, i):
        pids[i] = cur.execute("SELECT pg_backend_pid()").fetchone()[0]

    def tick(elapsed):
        if killed["at"] is None and elapsed > 0.4:
            with connect() as conn:
                for pid in list(pids.values()):
                    conn.cursor().execute("SELECT pg_terminate_backend(?)", pid).fetchall()
            killed["at"] = elapsed

    result = run_sessions(connect, lambda cur, s, i: cur.execute("SELECT pg_sleep(0.002)"), sessions=3,
                          duration_s=1.5, setup_session=setup, on_tick=tick, progress=False)
    assert killed["at"] is not None
    # 57P01 when the server's FATAL reached the client; 08S01 (psqlODBC) or 08006 (libpq) when only the socket close
    assert set(result.lost_connections) <= {"57P01", "08S01", "08006"}, \
        (result.errors_by_code, result.lost_connections)
    assert result.errors == 3 and result.reconnects == 3 and result.lost == 3
    assert result.errors <= result.attempts == result.operations + result.errors
    for st in result.per_session:  # every session called again after its reconnect
        assert st.reconnects == 1 and st.ends[-1] / 1e9 - result.window_start > killed["at"] + 0.1
        assert any("connection lost" in s for s in st.error_samples)



def test_the_process_driver_counts_terminated_sessions_once_and_reconnects(pg, pg_target):
    """harness.procdriver: pg_terminate_backend on its sessions mid-run; one 57P01 error each, a reconnect each."""
    from contention_book.harness.procdriver import run_processes
    from conftest import TEST_ENV_VAR

    def terminate():
        # both children started (spawned processes start slowly on a loaded machine) and past their warm-up
        where = "query LIKE 'SELECT pg_sleep(0.002)%' AND pid <> pg_backend_pid()"
        with pg_target.connect("postgres") as conn:
            cur = conn.cursor()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if int(cur.execute(f"SELECT count(*) FROM pg_stat_activity WHERE {where}").fetchone()[0]) >= 2:
                    break
                time.sleep(0.05)
            time.sleep(0.3)
            cur.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE {where}").fetchall()

    killer = threading.Thread(target=terminate)
    killer.start()
    result = run_processes(TEST_ENV_VAR, "SELECT pg_sleep(0.002)", sessions=2, duration_s=2.5, warmup=5)
    killer.join()
    # 57P01 when the server's FATAL reached the client; 08S01 when psqlODBC saw only the socket close
    assert sum(result.lost_connections.values()) == 2 and set(result.lost_connections) <= {"57P01", "08S01"}, \
        (result.errors_by_code, result.lost_connections)
    assert result.errors == 2 and result.reconnects == 2 and result.errors <= result.attempts
    assert result.operations > 100
