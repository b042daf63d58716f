"""Sessions on a few threads, pgbench's way: non-blocking libpq connections, multiplexed.

Why: with one thread per session, every finished call wakes a thread of its
own and hands the GIL over; on a 2-CPU machine that client time is taken
from the server under test, and the driver fell to 0.61-0.86x pgbench at 8
sessions.  pgbench instead runs ``-j`` threads, each serving its share of
the connections with non-blocking libpq and one ``select`` for all of them.
This module does the same for a :class:`~.driver.Statement` on the psycopg
client (:mod:`.pg_client`): min(sessions, CPUs) threads, each waiting on its
sessions' sockets at once, sending the next call the moment one returns.

It fills the same :class:`~.driver.SessionStats` as the thread-per-session
way and keeps its rules: warm-up before the window, the window started for
all sessions together (the caller's barriers), closed or open loop (a
session takes the next scheduled start only when it is free, so a call
never queues behind a busy session; the lag is kept apart from the service
time), retries of retryable classes, errors by class, lost connections
counted once and reconnected with back-off, pauses a call asks for taken
outside its latency, and :class:`~.session_rules.SessionDone`.
"""
from __future__ import annotations

import os
import select
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from . import pg_client
from .session_rules import SessionDone, _pause, reconnect_failed, reconnect_given_up
from .redaction import redact

TICK_S = 0.05  # a thread with nothing due looks at the stop flag at least this often


class _Session:
    """One connection's state in a serving thread."""

    __slots__ = ("i", "conn", "pg", "fd", "st", "op", "origin", "start", "due", "tries", "names", "warm", "done",
                 "busy", "values", "delay", "ended", "lost_at")

    def __init__(self, i: int, conn, st):
        self.i, self.st = i, st
        self.op = 0
        self.origin = self.start = 0
        self.due = 0  # when an idle session may call next (ns; 0: now)
        self.tries = 0
        self.warm = 0  # warm-up calls made
        self.done = False  # nothing more to do in this phase (warm-up, or the window)
        self.ended = False  # no more calls at all: SessionDone, or too many errors
        self.busy = False
        self.values = None
        self.delay = 0.0  # the next reconnect back-off (s); 0 while connected
        self.lost_at = 0  # when the connection was lost (perf ns), for the reconnect budget
        self.attach(conn)

    def attach(self, conn) -> None:
        self.conn, self.pg = conn, conn.pgconn if conn is not None else None
        self.fd = self.pg.socket if self.pg is not None else -1
        self.names: dict[str, bytes] = {}
        self.values = None  # a new connection prepares its statement again


def _prepare(s: _Session, statement, op: int) -> tuple[bytes, Any]:
    """The prepared statement's name for this session's text and the call's values (libpq text format)."""
    values = statement.values(s.i, op)
    sql = statement.text(s.i)
    name = s.names.get(sql)
    if name is None:
        name = s.names[sql] = s.conn.prepared(sql, values)
    return name, pg_client.dump(values)


@dataclass
class LoopContext:
    """What the serving threads share with run_sessions (its barriers, stop flag, schedule and options)."""

    connect: Callable[[], Any]
    statement: Any  # driver.Statement
    setup_session: Callable[[Any, int], None] | None
    stats: list  # driver.SessionStats, one per session
    ready: threading.Barrier
    barrier: threading.Barrier
    stop: threading.Event
    schedule: Any  # driver._Schedule, or None for a closed loop
    operations_per_session: int | None
    warmup_operations: int
    warmup_s: float
    retryable: frozenset
    max_retries: int
    max_errors_per_session: int
    keep_timeline: bool
    cursors: dict
    ready_errors: list
    classify: Callable[[BaseException], str]
    lost_connection: Callable[[str], bool]
    reconnect_first_s: float
    reconnect_max_s: float
    precise_sleeps: Callable[[], None]
    reconnect_budget_s: float = 30.0  # driver.reconnect_budget_s(): then a lost session gives up
    native: Any = None  # native_window.NativeWindow: the open-loop window runs in C on these sessions


def open_session(ctx: LoopContext, i: int, conn=None):
    """Connect session ``i`` (or take ``conn``), run its setup, and check it can run non-blocking."""
    if conn is None:
        conn = ctx.connect()
    cur = conn.cursor()
    ctx.cursors[i] = cur
    if ctx.setup_session:
        ctx.setup_session(cur, i)
    if not conn.autocommit:
        raise RuntimeError("the event-loop driver runs each call as its own transaction: connect with autocommit")
    return conn


def serve(ctx: LoopContext, group: list[int], first: dict[int, Any]) -> None:
    """One serving thread: connect and warm up its sessions, wait at the barriers, run the window."""
    sessions: list[_Session] = []
    try:
        try:
            for i in group:
                sessions.append(_Session(i, open_session(ctx, i, first.pop(i, None)), ctx.stats[i]))
            for s in sessions:
                s.pg.nonblocking = 1
            until = time.perf_counter_ns() + int(ctx.warmup_s * 1e9)
            _run(ctx, sessions, warm_until=until)
        except Exception as exc:  # noqa: BLE001 - reported to the caller, as a thread session's would be
            where = f"session {sessions[-1].i if sessions else group[0]}"
            ctx.ready_errors.append(f"{where}: {redact(exc)}")
            ctx.stop.set()
        try:
            ctx.ready.wait()
            ctx.barrier.wait()
        except threading.BrokenBarrierError:
            return
        if ctx.stop.is_set():
            if ctx.native is not None:
                ctx.native.withdraw("the run stopped before its window")
            return
        if ctx.native is not None:
            if any(s.ended or s.conn is None for s in sessions):  # SessionDone, or lost, in the warm-up
                ctx.native.withdraw("a session ended in its warm-up")
            if ctx.native.hand([(s.i, s.conn) for s in sessions]):
                return  # C ran the window on these sessions
        ctx.precise_sleeps()
        for s in sessions:
            s.due, s.done = 0, s.ended
        _run(ctx, sessions, warm_until=None)
    finally:
        for s in sessions:
            if s.conn is not None:
                try:
                    s.conn.close()
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass


def _run(ctx: LoopContext, sessions: list[_Session], warm_until: int | None) -> None:
    """Serve ``sessions`` until each is done: the warm-up (``warm_until`` set; failures raise) or the window."""
    warming = warm_until is not None
    perf = time.perf_counter_ns
    statement, schedule, stop = ctx.statement, ctx.schedule, ctx.stop
    cap = ctx.operations_per_session
    by_fd: dict[int, _Session] = {}
    live = [s for s in sessions if not s.done]
    active = [len(live)]  # sessions not done: when all of them are in a call, nothing is pending
    constant = not callable(statement.args)  # the same values every call: prepared and dumped once per connection

    def finish(s: _Session, ended: bool = False) -> None:
        if not s.done:
            active[0] -= 1
        s.done = True
        s.ended = s.ended or ended
        by_fd.pop(s.fd, None)

    def send(s: _Session, now: int) -> None:
        """Start the session's next call (or its retry) now."""
        if not s.tries:
            if s.values is None or not constant:
                op = -1 - s.warm if warming else s.op
                try:
                    s.values = _prepare(s, statement, op)
                except SessionDone:
                    finish(s, ended=True)
                    return
            if schedule is not None and not warming:
                s.origin = s.origin or now  # an open-loop call keeps its scheduled start
            else:
                s.origin = now
        s.start = now
        name, values = s.values
        try:
            s.pg.send_query_prepared(name, values)
            while s.pg.flush():
                select.select([], [s.fd], [])
        except Exception:  # noqa: BLE001 - libpq could not send: the connection is gone
            fail(s, _broken(s), now)
            return
        s.busy = True
        by_fd[s.fd] = s

    def next_call(s: _Session, now: int, pause: float = 0.0) -> None:
        """Decide when an idle session calls again, and call now if it is due."""
        if warming:
            if s.warm >= ctx.warmup_operations and now >= warm_until:
                finish(s)
                return
        elif stop.is_set() or (cap is not None and s.op >= cap):
            finish(s)
            return
        s.tries = 0
        due = now + int(pause * 1e9) if pause else 0
        if schedule is not None and not warming:
            s.origin = schedule.take()
            due = max(due, s.origin)
        s.due = due
        if due <= now:
            send(s, now)

    def fail(s: _Session, exc: BaseException, end: int) -> None:
        """A call failed: retry it, or count it (by class) and go on; a lost connection reconnects."""
        s.busy = False
        by_fd.pop(s.fd, None)
        code = ctx.classify(exc)
        st = s.st
        if warming:
            raise exc
        if code in ctx.retryable and s.tries < ctx.max_retries and not stop.is_set() and \
                not ctx.lost_connection(code):
            s.tries += 1
            st.retries += 1
            st.retry_ends.append(end)
            send(s, end)
            return
        st.errors += 1
        st.errors_by_code[code] = st.errors_by_code.get(code, 0) + 1
        st.error_ends.append(end)
        gone = ctx.lost_connection(code)
        if len(st.error_samples) < 5:
            st.error_samples.append(f"[{code}] {'connection lost: ' if gone else ''}{redact(exc)}")
        s.op += 1
        if st.errors >= ctx.max_errors_per_session:
            st.error_samples.append(f"stopped after {st.errors} errors")
            finish(s, ended=True)
            return
        if gone:
            st.lost[code] = st.lost.get(code, 0) + 1
            try:
                s.conn.close()
            except Exception:  # noqa: BLE001 - already gone
                pass
            ctx.cursors.pop(s.i, None)
            s.attach(None)
            s.delay = ctx.reconnect_first_s
            s.lost_at = end
            s.due = end + int(s.delay * 1e9)
            return
        next_call(s, end)

    def reconnect(s: _Session, now: int) -> None:
        """Try to reconnect a session whose connection was lost; back off (doubling) on failure."""
        st = s.st
        conn = None
        try:
            conn = open_session(ctx, s.i)
            conn.pgconn.nonblocking = 1
        except Exception as exc:  # noqa: BLE001 - counted; the next try is later
            reconnect_failed(st, exc, conn)
            if perf() - s.lost_at >= ctx.reconnect_budget_s * 1e9:  # the server stays away: end the session
                reconnect_given_up(st, ctx.reconnect_budget_s)
                finish(s, ended=True)
                return
            s.delay = min(s.delay * 2, ctx.reconnect_max_s)
            s.due = perf() + int(s.delay * 1e9)
            return
        st.reconnects += 1
        s.attach(conn)
        s.delay = 0.0
        next_call(s, perf())

    def complete(s: _Session) -> None:
        """A session's socket is readable: take its result if the call is done."""
        pg = s.pg
        try:
            pg.consume_input()
            if pg.is_busy():
                return
            res = pg.get_result()
            while pg.get_result() is not None:  # one statement: its result, then None
                pass
        except Exception:  # noqa: BLE001 - the connection broke while reading
            fail(s, _broken(s), perf())
            return
        end = perf()
        if res is None or res.status not in (1, 2):  # COMMAND_OK, TUPLES_OK
            fail(s, s.conn._fail(res), end)
            return
        s.busy = False
        by_fd.pop(s.fd, None)
        op = -1 - s.warm if warming else s.op
        pause = 0.0
        if statement.on_result is not None:
            try:
                pause = _pause(statement.on_result(s.i, op, pg_client.first_row(res)))
            except SessionDone:
                finish(s, ended=True)
                return
        if warming:
            s.warm += 1
        else:
            st = s.st
            st.ends.append(end)
            st.latencies.append(end - s.origin)
            if schedule is not None:
                st.lags.append(s.start - s.origin)
            st.operations += 1
            if ctx.keep_timeline:
                st.timeline.append((s.op, end / 1e9, (end - s.origin) / 1e9))
            s.op += 1
            s.origin = 0
        next_call(s, end, pause)

    now = perf()
    for s in live:
        if s.conn is None:  # lost in the warm-up's last call: reconnect first
            s.due = s.lost_at = s.lost_at or now
        else:
            next_call(s, now)
    while True:
        pending = [s for s in live if not s.done and not s.busy] if len(by_fd) < active[0] else ()
        if not by_fd and not pending:
            return
        now = perf()
        timeout = TICK_S
        for s in pending:
            if stop.is_set() and not warming:
                finish(s)
                continue
            if s.due <= now:
                if s.conn is None:
                    reconnect(s, now)
                else:
                    send(s, now)
            else:
                timeout = min(timeout, (s.due - now) / 1e9)
        if not by_fd:
            if any(not s.done and not s.busy for s in live):
                if warming:
                    time.sleep(timeout)
                else:
                    stop.wait(timeout)
            continue
        ready, _, _ = select.select(list(by_fd), [], [], timeout)
        for fd in ready:
            s = by_fd.get(fd)
            if s is not None:
                complete(s)
        if stop.is_set() and not warming:  # no new calls: the ones in flight finish, as a thread's would
            for s in live:
                if not s.busy and not s.done:
                    finish(s)


def _broken(s: _Session) -> BaseException:
    """The error of a connection that broke: the server's own last words where it sent them (a FATAL result,
    e.g. 57P01 for a terminated backend), else libpq's."""
    try:
        s.pg.consume_input()
        res = s.pg.get_result()
    except Exception:  # noqa: BLE001 - nothing more to read
        res = None
    return s.conn._fail(res if res is not None and res.status == 7 else None)  # FATAL_ERROR


def runs(sessions: int) -> bool:
    """Whether the event loop runs this many sessions: more of them than CPUs (fewer: a thread each)."""
    return sessions > (os.cpu_count() or 1)


def threads_for(sessions: int) -> int:
    """Serving threads: one per CPU at most (pgbench ``-j``), never more than the sessions."""
    return max(1, min(sessions, os.cpu_count() or 1))
