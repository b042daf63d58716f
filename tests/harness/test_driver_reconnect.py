"""The sessions driver after a lost connection: one error per failed call, reconnects that back off."""
import json
import time

import pytest

from contention_book.harness import driver
from contention_book.harness.driver import run_sessions


class Lost(Exception):
    """What pyodbc raises when the server ended the session: (SQLSTATE, message)."""


class Conn:
    def __init__(self, log):
        self.log, self.dead = log, False
        self.autocommit = True

    def cursor(self):
        return self

    def close(self):
        self.log.append(("close", time.perf_counter()))

    @property
    def connection(self):
        return self


def test_reconnects_back_off_exponentially_up_to_the_bound(monkeypatch):
    monkeypatch.setattr(driver, "RECONNECT_FIRST_S", 0.02)
    monkeypatch.setattr(driver, "RECONNECT_MAX_S", 0.16)
    log, conns, refusals = [], [], {"left": 0}

    def connect():
        log.append(("connect", time.perf_counter()))
        if refusals["left"]:
            refusals["left"] -= 1
            raise Lost("57P03", "[57P03] FATAL: the database system is starting up")
        conns.append(Conn(log))
        return conns[-1]

    def op(cur, session, i):
        if i == 3 and len(conns) == 1:  # the first connection dies at the fourth call
            refusals["left"] = 6  # and the server refuses the next six connection tries
            raise Lost("57P01", "[57P01] FATAL: terminating connection due to administrator command")
        time.sleep(0.001)

    result = run_sessions(connect, op, sessions=1, operations_per_session=10, progress=False)
    st = result.per_session[0]
    assert result.errors == 1 and result.lost_connections == {"57P01": 1}  # the call, not the reconnect tries
    assert st.reconnect_failures == 6 and st.reconnects == 1 and result.operations == 9
    assert result.errors <= result.attempts == 10
    tries = [t for what, t in log if what == "connect"][1:]  # after the first connection
    gaps = [b - a for a, b in zip(tries, tries[1:])]
    expected = [0.04, 0.08, 0.16, 0.16, 0.16, 0.16]  # doubling from 20 ms, bounded at 160 ms
    assert len(gaps) == len(expected)
    for gap, want in zip(gaps, expected):
        assert want * 0.9 <= gap < want + 0.1, (gaps, expected)


def test_a_session_that_cannot_reconnect_stops_with_the_window(monkeypatch):
    monkeypatch.setattr(driver, "RECONNECT_FIRST_S", 0.01)
    monkeypatch.setattr(driver, "RECONNECT_MAX_S", 0.05)
    log, state = [], {"up": True}

    def connect():
        if not state["up"]:
            raise Lost("08001", "[08001] could not connect to server: Connection refused")
        return Conn(log)

    def op(cur, session, i):
        if i == 2:
            state["up"] = False
            raise Lost("08S01", "[08S01] SQLExecDirectW unable due to the connection lost (35)")
        time.sleep(0.001)

    started = time.perf_counter()
    result = run_sessions(connect, op, sessions=1, duration_s=0.5, progress=False)
    assert time.perf_counter() - started < 3
    assert result.errors == 1 and result.lost_connections == {"08S01": 1} and result.reconnects == 0
    assert result.per_session[0].reconnect_failures >= 5
    assert driver.kind("08S01") == "connection"


def test_other_errors_do_not_reconnect():
    log = []
    calls = {"n": 0}

    def connect():
        calls["n"] += 1
        return Conn(log)

    def op(cur, session, i):
        if i % 2:
            raise Lost("22012", "[22012] ERROR: division by zero")

    result = run_sessions(connect, op, sessions=1, operations_per_session=6, progress=False)
    assert result.errors == 3 and result.lost_connections == {} and calls["n"] == 1


@pytest.mark.parametrize("code, gone", [("57P01", True), ("57P02", True), ("08006", True), ("10054", True),
                                        ("40001", False), ("23505", False), ("Lost", False)])
def test_which_classes_mean_the_connection_is_gone(code, gone):
    assert driver.lost_connection(code) is gone


def test_a_point_with_lost_connections_is_marked_in_the_recording_and_set_aside(tmp_path):
    """load_record.record writes the lost calls by class into load_points and a note naming the point; on load
    the point is set aside, whatever share of its calls failed."""
    import pandas as pd

    from contention_book.harness import recording as rec
    from contention_book.harness.driver import RunResult, SessionStats
    from contention_book.harness.load_record import LOAD_TABLES, record
    from contention_book.harness.spec import Table

    def result(variant_lost):
        st = SessionStats(0, operations=10_000, errors=variant_lost, lost={"57P01": variant_lost} if variant_lost else {})
        return RunResult(sessions=1, elapsed_s=1.0, operations=10_000, errors=variant_lost, latency={},
                         per_session=[st], lost_connections=dict(st.lost), reconnects=variant_lost)

    dest = tmp_path / "rec"
    host = {"cpu_model": "test CPU", "sockets": 1, "cores": 2, "logical_cpus": 2, "numa_nodes": 1}
    with rec.RecordingWriter(dest, chapter="ghost-cleanup", kind="measured", engine={"name": "postgres",
                             "version": "15.0"}, host=host, parameters={}, title="t",
                             measured={"tool": "test", "tool_version": "0", "command": "pytest"}) as w:
        for variant, lost in (("good", 0), ("cut", 2)):
            w.append_csv("runs.csv", pd.DataFrame([{"variant": variant, "sessions": 1, "repetition": 0,
                                                    "operations": 10_000, "errors": lost, "elapsed_s": 1.0,
                                                    "throughput": 10_000.0}]))
            record(w, result(lost), variant=variant, sessions=1, repetition=0)
    notes = json.loads((dest / "manifest.json").read_text())["notes"]
    assert any("variant=cut, sessions=1, repetition=0: failed: 2 call(s) lost their session's connection "
               "(57P01 (connection terminated by the administrator) x2" in n for n in notes), notes
    layout = {"runs": Table("runs.csv", ("variant", "sessions", "operations", "errors"),
                            unique=("variant", "sessions", "repetition")), **LOAD_TABLES}
    view = rec.load_view("ghost-cleanup", dest, layout)
    assert list(view.runs["variant"]) == ["good"]
    assert list(view.tables["runs_set_aside"]["variant"]) == ["cut"]
    assert any("cut at 1 sessions (2 call(s) lost their connection)" in n for n in view.notes)


def test_a_fatal_that_arrives_as_the_socket_closes_is_classed_by_the_servers_words():
    """psqlODBC reports 08S01 when the server's FATAL comes with the closed connection; the class is the FATAL's."""
    seen = Lost("08S01", "[08S01] FATAL:  terminating connection due to administrator command\nserver closed the "
                         "connection unexpectedly\n;\nThe connection has been lost (35) (SQLExecDirectW)")
    assert driver.classify(seen) == "57P01"
    assert driver.classify(Lost("08S01", "[08S01] server closed the connection unexpectedly (35)")) == "08S01"
    assert driver.classify(Lost("57P01", "[57P01] FATAL: terminating connection due to administrator command")) \
        == "57P01"


def test_a_server_that_never_comes_back_ends_the_session_within_the_reconnect_budget(monkeypatch):
    """A run counted in calls (no window to end it) whose server went away for good: the session stops trying
    after the budget and says so; before the budget it waited forever (ghost-cleanup hung after pg_ctl stop)."""
    monkeypatch.setenv(driver.RECONNECT_BUDGET_ENV, "0.5")
    monkeypatch.setattr(driver, "RECONNECT_FIRST_S", 0.02)
    log, gone = [], {"now": False}

    def connect():
        if gone["now"]:
            raise Lost("08001", "[08001] connection to server failed: Connection refused")
        return Conn(log)

    def op(cur, session, i):
        if i == 2:
            gone["now"] = True
            raise Lost("57P02", "[57P02] FATAL: terminating connection because of crash of another server process")

    t0 = time.monotonic()
    result = run_sessions(connect, op, sessions=1, operations_per_session=1000, progress=False)
    took = time.monotonic() - t0
    st = result.per_session[0]
    assert took < 0.5 + 1.0, took
    assert result.operations == 2 and result.errors == 1 and result.lost_connections == {"57P02": 1}
    assert st.reconnects == 0 and st.reconnect_failures >= 2
    assert any("gave up reconnecting" in s and driver.RECONNECT_BUDGET_ENV in s for s in st.error_samples)


@pytest.mark.parametrize("raw", ["-1", "soon"])
def test_a_bad_reconnect_budget_is_refused_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv(driver.RECONNECT_BUDGET_ENV, raw)
    with pytest.raises(ValueError, match=f"{driver.RECONNECT_BUDGET_ENV}='{raw}': expected a number of seconds"):
        driver.reconnect_budget_s()
