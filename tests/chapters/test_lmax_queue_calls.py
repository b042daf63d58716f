"""The PostgreSQL point's calls as a driver Statement: which SQL each session runs, when a producer is done,
and how the rows its calls return are counted (no server: rows are made up here, the live tests run the SQL).
"""
from __future__ import annotations

import threading

import pytest

from contention_book.chapters.lmax_queue import run_postgres as rp
from contention_book.chapters.lmax_queue.run_postgres import QueueCalls
from contention_book.harness.driver import SessionDone, Statement, run_sessions


def test_producers_come_first_and_every_loop_carries_the_server_back_off():
    calls = QueueCalls("ring", producers=2, consumers=2, per_call=50, queue_size=100)
    st = calls.statement()
    assert isinstance(st, Statement)
    assert [st.text(i) for i in range(4)] == [rp.PUSH_LOOP["ring"]] * 2 + [rp.POP_LOOP["ring"]] * 2
    assert st.values(0, 0) == (rp.MESSAGE, 100, 50, rp.SERVER_BACKOFF_S, rp.CALL_BUDGET_S)
    assert st.values(3, 0) == (50, 100, rp.SERVER_BACKOFF_S, rp.CALL_BUDGET_S)
    queue = QueueCalls("skip_locked", 1, 1, per_call=5, queue_size=100)
    assert queue.statement().values(0, 0) == (rp.MESSAGE, 5, rp.CALL_BUDGET_S)
    assert queue.statement().values(1, 0) == (5, True, rp.SERVER_BACKOFF_S, rp.CALL_BUDGET_S)
    assert QueueCalls("naive", 1, 1, 5, 100).statement().values(1, 0)[1] is False
    single = QueueCalls("naive", 1, 1, per_call=1, queue_size=100)  # one statement per message: no loop
    assert "INSERT" in single.statement().text(0) and "DELETE" in single.statement().text(1)
    assert single.statement().values(0, 0) == (rp.MESSAGE,) and single.statement().values(1, 0) == ()
    # the ring runs its loops even at one message per call, so its producers can wait at a full ring
    assert QueueCalls("ring_unlogged", 1, 1, per_call=1, queue_size=10).statement().text(0) == rp.PUSH_LOOP["ring"]
    assert 0 < rp.CALL_BUDGET_S <= 0.1 and rp.SERVER_BACKOFF_S >= 0.001  # pg_sleep waits whole milliseconds


def test_a_producer_that_reached_its_cap_ends_its_session():
    calls = QueueCalls("ring", 2, 2, per_call=50, queue_size=100, cap=120)  # 120 messages: 3 calls of 50
    assert calls.calls_cap == 3
    for op in (-5, -1, 0, 2):  # warm-up calls and the capped window's first three
        calls.args(1, op)
    with pytest.raises(SessionDone):
        calls.args(1, 3)
    assert calls.args(2, 10**6) == calls.pop_args  # consumers have no cap
    uncapped = QueueCalls("ring", 1, 1, 50, 100, cap=None)
    assert uncapped.calls_cap is None and uncapped.args(0, 10**6) == uncapped.push_args


def test_ring_rows_are_counted_in_the_window_only_and_need_no_client_pause():
    calls = QueueCalls("ring", producers=2, consumers=2, per_call=50, queue_size=100)
    assert calls.on_result(1, -1, (50, 0)) is None  # warm-up: in the backlog the window starts with
    assert calls.on_result(1, 0, (37, 4)) is None  # the ring filled; the call waited in the server
    assert calls.on_result(0, 3, (50, 0)) is None
    assert calls.on_result(3, -2, ("0.5", 0, 0)) is None
    assert calls.on_result(3, 0, ("0.001,0.002", 3, 0)) is None  # found the ring empty three times, in the server
    assert calls.on_result(2, 1, ("", 20, 0)) is None  # nothing within the call's budget: call again at once
    assert calls.pushed == [50, 37] and calls.full == [0, 4]
    assert calls.taken == [0, 2] and calls.empty == [20, 3] and calls.lost == [0, 0]
    t = calls.totals()
    assert (t["pushed"], t["dequeued"], t["full_polls"], t["empty_polls"], t["idle_consumers"], t["lost"]) == \
        (87, 2, 4, 23, 1, 0)
    assert 1.0 <= t["age_p50_ms"] <= t["age_p99_ms"] <= 2.1
    calls.on_result(2, 2, ("0.003", 0, 2))  # slots overwritten by a later lap: counted as lost, not taken
    assert calls.totals()["lost"] == 2 and calls.taken == [1, 2]


def test_queue_loops_and_single_statements_are_counted_and_only_the_single_pop_backs_off_in_the_client():
    loop = QueueCalls("naive", 1, 1, per_call=5, queue_size=100)
    assert loop.on_result(0, 0, (5,)) is None and loop.on_result(0, 1, (3,)) is None  # the budget ended the second
    assert loop.on_result(1, 0, ("0.1,0.2", 7)) is None
    assert loop.totals()["pushed"] == 8 and loop.taken == [2] and loop.empty == [7]
    single = QueueCalls("skip_locked", 1, 1, per_call=1, queue_size=100)
    assert single.on_result(0, 0, None) is None and single.pushed == [1]
    assert single.on_result(1, 0, None) == rp.BACKOFF_S  # nothing deleted: the client backs off
    assert single.on_result(1, 1, (0.25,)) is None
    assert single.on_result(1, -1, None) == rp.BACKOFF_S and single.empty == [1]  # warm-up: paused, not counted
    assert single.taken == [1] and single.totals()["dequeued"] == 1


class _Cursor:
    """Answers each call as the loops would: producers push per_call minus one, consumers take one of two."""

    def __init__(self, conn):
        self.connection, self.description, self.row = conn, None, None

    def execute(self, sql, *params):
        if "push" in sql:
            self.description, self.row = [("pushed",), ("full_polls",)], (params[2] - 1, 1)
        else:
            self.description, self.row = [("ages",), ("empty_polls",), ("lost",)], ("0.001", 1, 0)
        return self

    def fetchone(self):
        return self.row


class _Conn:
    def cursor(self):
        return _Cursor(self)

    def rollback(self):
        pass

    def close(self):
        pass


def test_the_driver_runs_the_statement_and_keeps_each_sessions_counts_apart():
    calls = QueueCalls("ring", producers=2, consumers=3, per_call=10, queue_size=100, cap=40)
    seen = set()

    def on_result(session, op, row):  # every session's rows arrive on that session's own thread
        seen.add((session, threading.current_thread().name))
        return calls.on_result(session, op, row)

    st = Statement(sql=calls.statement().sql, args=calls.args, on_result=on_result)
    result = run_sessions(_Conn, st, sessions=5, operations_per_session=6, warmup_operations=2, progress=False)
    assert result.errors == 0
    assert [s.operations for s in result.per_session] == [4, 4, 6, 6, 6]  # producers stop at 40 messages
    assert calls.pushed == [4 * 9, 4 * 9] and calls.full == [4, 4]
    assert calls.taken == [6, 6, 6] and calls.empty == [6, 6, 6]
    assert len({name for _, name in seen}) == 5


def test_a_paced_producer_passes_its_schedule_and_starts_it_again_with_the_window(monkeypatch):
    """Message k is due at start + k / rate: the lead passed to the loop is that due time less now, whatever the
    calls took; the schedule starts at the first warm-up call and again at the window's first (the wait at the
    start line is not owed as a burst); consumers are not paced."""
    clock = [100.0]
    monkeypatch.setattr(rp.time, "perf_counter", lambda: clock[0])
    calls = QueueCalls("naive", 1, 1, per_call=100, queue_size=10, push_rate=1000.0)
    st = calls.statement()
    assert st.text(0) == rp.PACED_PUSH_LOOP["queue"] and st.text(1) == rp.POP_LOOP["queue"]
    first = st.values(0, -1)
    assert first[:3] == (rp.MESSAGE, 100, rp.CALL_BUDGET_S) and first[3:] == (0.001, 0.0)
    calls.on_result(0, -1, (40,))  # 40 pushed: the next is due 40 ms after the start
    clock[0] = 100.030
    assert st.values(0, -1)[4] == pytest.approx(0.010)
    clock[0] = 100.100  # late: a negative lead, sent at once
    assert st.values(0, -1)[4] == pytest.approx(-0.060)
    clock[0] = 105.0  # the window: a new schedule, nothing owed from the warm-up or the start line
    assert st.values(0, 0)[4] == 0.0
    calls.on_result(0, 0, (20,))
    assert st.values(0, 1)[4] == pytest.approx(0.020)
    assert calls.pushed == [20]
    assert st.values(1, 0) == (100, False, rp.SERVER_BACKOFF_S, rp.CALL_BUDGET_S)  # the consumer: as before
    ring = QueueCalls("ring", 1, 1, per_call=1, queue_size=10, push_rate=500.0)
    assert ring.statement().text(0) == rp.PACED_PUSH_LOOP["ring"] and ring.statement().values(0, 0)[5] == 0.002


def test_pacing_is_refused_where_no_loop_could_keep_the_schedule():
    with pytest.raises(ValueError, match="pushes_per_call above 1"):
        QueueCalls("naive", 1, 1, per_call=1, queue_size=10, push_rate=1000.0)
    with pytest.raises(ValueError, match="at least 100"):
        QueueCalls("ring", 1, 1, per_call=10, queue_size=10, push_rate=50.0)


def test_the_paced_rate_is_half_the_slowest_compared_design_rounded_down():
    rows = [{"variant": v, "sessions": n, "dequeue_per_s": r} for v, n, r in (
        ("ring", 1, 9000.0), ("ring", 1, 9400.0), ("naive", 1, 3456.0), ("naive", 1, 3500.0),
        ("skip_locked", 1, 4000.0), ("ring_durable", 1, 300.0), ("naive", 2, 100.0))]
    # the slowest compared design at one session is naive (median 3,478): half, to two figures, rounded down
    assert rp.paced_rate(rows, 0.5, 1000) == 1700.0
    assert rp.paced_rate(rows, 0.0, 1000) == 0.0  # not asked for
    assert rp.paced_rate(rows, 0.5, 1) == 0.0  # one statement per message: no loop to pace
    assert rp.paced_rate([r for r in rows if r["variant"] in ("ring", "ring_durable")], 0.5, 1000) == 0.0
    assert rp.paced_rate([{"variant": "ring", "sessions": 1, "dequeue_per_s": 150.0},
                          {"variant": "naive", "sessions": 1, "dequeue_per_s": 150.0}], 0.5, 1000) == 0.0


@pytest.mark.parametrize("ends", ["done", "failed"])
def test_the_wait_sampler_stops_before_the_off_cpu_capture_is_finished(monkeypatch, ends):
    """The in-server sampler counts a session with no wait event as on CPU at every tick of its window; a window
    that ran on through the off-CPU capture's post-processing (folding its stacks takes tens of seconds) counted the
    ended sessions as on CPU throughout (the reference recording's first repetition at 8 producers: 4.6 to 13 times
    the samples of the others).  So the sampler stops first, whether the point ends well or not."""
    from types import SimpleNamespace

    events = []

    class Sampler:
        error, achieved_hz = None, 100.0

        def start(self):
            events.append("sampler start")

        def stop(self):
            events.append("sampler stop")

    class Stop(Exception):
        pass

    def run_sessions(*_, on_ready, **__):
        on_ready()
        if ends == "failed":
            raise Stop("the point failed")
        return SimpleNamespace(per_session=[], errors=0)

    backlogs = iter([0])

    def backlog(_ring):  # read at the start line; the second read comes after the point: the test ends there
        try:
            return next(backlogs)
        except StopIteration:
            raise Stop("after the point") from None

    monkeypatch.setattr(rp, "wait_sampler", lambda *a, **k: Sampler())
    monkeypatch.setattr(rp, "start_offcpu", lambda *a, **k: events.append("off-CPU start") or "capture")
    monkeypatch.setattr(rp, "finish_offcpu", lambda *a, **k: events.append("off-CPU finish (stops perf, folds)"))
    monkeypatch.setattr(rp, "run_sessions", run_sessions)
    monkeypatch.delenv("OFFCPU", raising=False)
    run = rp.PostgresQueueRun(None, "db", None, queue_size=100, duration_s=1.0, messages_per_session=0, log=print,
                              pushes_per_call=10)
    run.sessions = [1, 8]
    monkeypatch.setattr(run, "prepare", lambda variant: None)
    monkeypatch.setattr(run, "backlog", backlog)
    with pytest.raises(Stop):
        run.point("ring", 8, repetition=0)
    assert events == ["off-CPU start", "sampler start", "sampler stop", "off-CPU finish (stops perf, folds)"]
