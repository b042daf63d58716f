"""The sessions driver: N concurrent sessions, one connection per thread.

It plays the role of pgbench / ostress / SQLQueryStress, with what their
users ask for:

- every session connects and warms up first (for ``warmup_s`` seconds, or a
  number of calls), then all are released together by a barrier, so the
  measured window holds only concurrent work;
- closed loop (each session calls again as soon as its call returns), or open
  loop: ``rate`` calls per second across all sessions on a fixed or Poisson
  schedule (pgbench ``-R``).  An open-loop call's latency runs from its
  *scheduled* start, so time spent queued behind a slow call is not hidden
  (coordinated omission), and the schedule lag is kept beside it;
- every call's latency goes into an HDR histogram per point
  (:mod:`.latency`), which a recording stores encoded;
- one row per second of the window (calls, errors, retries, p50/p99/max),
  printed as the run goes in the manner of pgbench ``-P`` and kept;
- errors are classified by SQLSTATE (PostgreSQL) or error number (SQL
  Server), counted per class, never swallowed; serialization failures and
  deadlocks are retried when the workload says its call may be repeated;
  a statement the server refuses (no such column or object, bad syntax,
  no permission: ``session_rules.REFUSED``) stops the run, since no later
  call can succeed;
- a session whose connection is lost (terminated by an administrator,
  SQLSTATE 57P01; a reset; class 08) counts that call as one error, kept
  by class in ``lost_connections``, and reconnects with a bounded
  exponential back-off, so a dead session never piles up one error per
  try and errors never exceed the calls tried (``attempts``);
- Ctrl-C stops the sessions cleanly and re-raises, so the recording writer
  marks the recording incomplete.

Two ways to run the sessions.  A call given as a :class:`Statement` (one SQL
text, its parameters, what to do with its first row) on PostgreSQL through
libpq (harness.pg_client), with more sessions than CPUs, runs as pgbench
does: every connection non-blocking, multiplexed by one thread per CPU
(:mod:`.pg_loop`), so a finished call is answered without waking a thread
of its own.  Anything else (fewer sessions; a Python function; pyodbc, as
for SQL Server) runs one thread per session: pyodbc and libpq release the
GIL while a statement runs.  Either way the hot loop only appends to arrays, and everything else
is computed after the window.  An open-loop window of a Statement on libpq runs in C
(:mod:`.native_window`, ``native/pg_openloop.c``) on the connections either way opened and warmed
up: there the client's time between the timer and the send is latency.
"""
from __future__ import annotations

import gc
import os
import random
import sys
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Collection

import numpy as np
import pandas as pd

from . import native_window
from .latency import LatencyHistogram
from .redaction import redact
from .session_rules import (  # noqa: F401 (callers and tests read them here too)
    FATAL_WORDS, KINDS, LOST, RECONNECT_BUDGET_ENV, RECONNECT_BUDGET_S, RECONNECT_FIRST_S, RECONNECT_MAX_S, REFUSED,
    RETRYABLE, SessionDone, _pause, classify, kind, lost_connection, reconnect_budget_s, reconnect_failed,
    reconnect_given_up)

ARRIVALS = ("poisson", "fixed")
INTERVAL_COLUMNS = ["second", "interval_s", "operations", "errors", "retries", "throughput", "p50_ms", "p99_ms",
                    "max_ms", "lag_p99_ms"]


def precise_sleeps() -> None:
    """Wake this thread within about a microsecond of its timeout, not Linux's default 50 µs timer slack.

    An open-loop session sleeps until each call's scheduled start; the
    slack (prctl PR_SET_TIMERSLACK) would add up to 50 µs of schedule lag to
    every call that waited.  Elsewhere, or if refused, sleeps stay as they are.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(29, 1000, 0, 0, 0)  # PR_SET_TIMERSLACK, in ns, this thread only
    except (OSError, AttributeError):
        pass


def collection_off() -> bool:
    """Turn Python's garbage collector off for a measured window; returns whether it was on.

    The hot loops only append numbers to arrays, but anything else in the
    process (a sampler, a callback) may allocate, and one full collection over
    the heap pandas and numpy leave behind took 0.12-0.21 s in bench-driver's
    process (a busy 2-CPU machine): one such pause in a window is its p99.
    What exists at the window's start is frozen (never scanned again), and
    collection stays off until :func:`collection_back`.
    """
    was = gc.isenabled()
    gc.freeze()
    gc.disable()
    return was


def collection_back(was: bool) -> None:
    """Undo :func:`collection_off` after the window."""
    gc.unfreeze()
    if was:
        gc.enable()


class _Schedule:
    """Open-loop start times shared by all sessions: fixed gaps of 1/rate, or exponential ones (Poisson)."""

    def __init__(self, rate: float, arrival: str, seed: int | None):
        self.gap_ns = 1e9 / rate
        self.poisson = arrival == "poisson"
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.next_ns: float = 0.0

    def take(self) -> int:
        with self.lock:
            if not self.next_ns:
                self.next_ns = float(time.perf_counter_ns())
            at = self.next_ns
            self.next_ns += self.rng.expovariate(1.0) * self.gap_ns if self.poisson else self.gap_ns
            return int(at)


@dataclass
class SessionStats:
    """One session's calls: end times and latencies (ns), errors by class, retries."""

    session: int
    operations: int = 0
    errors: int = 0
    retries: int = 0
    error_samples: list[str] = field(default_factory=list)
    errors_by_code: dict[str, int] = field(default_factory=dict)
    lost: dict[str, int] = field(default_factory=dict)  # calls that failed because the connection went, by class
    reconnects: int = 0
    reconnect_failures: int = 0  # tries to reconnect that failed (not calls: never counted as errors)
    timeline: list[tuple[int, float, float]] = field(default_factory=list)  # (op, end clock s, latency s)
    ends: array = field(default_factory=lambda: array("q"))
    latencies: array = field(default_factory=lambda: array("q"))
    lags: array = field(default_factory=lambda: array("q"))
    error_ends: array = field(default_factory=lambda: array("q"))
    retry_ends: array = field(default_factory=lambda: array("q"))
    _histogram: LatencyHistogram | None = None

    @property
    def attempts(self) -> int:
        """Calls tried in the window: each ends as one operation or one error, so errors never exceed it."""
        return self.operations + self.errors

    @property
    def histogram(self) -> LatencyHistogram:
        if self._histogram is None:
            self._histogram = LatencyHistogram().record_many(self.latencies)
        return self._histogram


@dataclass
class RunResult:
    sessions: int
    elapsed_s: float
    operations: int
    errors: int
    latency: dict[str, float]
    per_session: list[SessionStats]
    window_start: float = 0.0
    histogram: LatencyHistogram = field(default_factory=LatencyHistogram)
    lag: LatencyHistogram | None = None
    retries: int = 0
    errors_by_code: dict[str, int] = field(default_factory=dict)
    rate: float | None = None
    arrival: str = "closed"
    warmup_s: float = 0.0
    lost_connections: dict[str, int] = field(default_factory=dict)  # class -> calls that lost their connection
    reconnects: int = 0
    lost_noted: bool = False  # load_record.record wrote its note
    driver: str = ""  # how the sessions were run: an event loop on n threads, or a thread per session

    @property
    def attempts(self) -> int:
        return sum(s.attempts for s in self.per_session) if self.per_session else self.operations + self.errors

    @property
    def lost(self) -> int:
        """Calls that failed because their session's connection was lost (each one is also an error)."""
        return sum(self.lost_connections.values())

    def lost_text(self) -> str:
        """``57P01 (connection terminated by the administrator) x5``: the lost connections by class."""
        return ", ".join(f"{c} ({kind(c)}) x{n}" for c, n in sorted(self.lost_connections.items()))

    @property
    def throughput(self) -> float:
        return self.operations / self.elapsed_s if self.elapsed_s > 0 else float("nan")

    def row(self, **extra: Any) -> dict[str, Any]:
        """One runs.csv row."""
        return {**extra, "sessions": self.sessions, "elapsed_s": self.elapsed_s, "operations": self.operations,
                "throughput": self.throughput, **self.latency, "errors": self.errors, "retries": self.retries}

    def timeline(self) -> pd.DataFrame:
        rows = [(s.session, op, end - self.window_start, lat)
                for s in self.per_session for op, end, lat in s.timeline]
        return pd.DataFrame(rows, columns=["session", "op", "end_s", "latency_s"])

    def intervals(self, every_s: float = 1.0) -> pd.DataFrame:
        """One row per ``every_s`` of the window (columns INTERVAL_COLUMNS); the last one may be shorter."""
        return interval_frame(self.per_session, self.window_start, self.elapsed_s, every_s)

    def errors_text(self) -> str:
        """``code (kind) xN`` per error class, for a log line or a note."""
        return ", ".join(f"{c} ({kind(c)}) x{n}" for c, n in sorted(self.errors_by_code.items()))


def _cat(parts: list[array]) -> np.ndarray:
    return np.concatenate([np.frombuffer(p, dtype=np.int64) for p in parts]) if parts else np.empty(0, np.int64)


def interval_frame(stats: list[SessionStats], window_start_s: float, elapsed_s: float,
                   every_s: float = 1.0) -> pd.DataFrame:
    """Per-interval calls, errors, retries and latency percentiles from the sessions' arrays."""
    if not stats or elapsed_s <= 0 or not any(len(s.ends) or len(s.error_ends) for s in stats):
        return pd.DataFrame(columns=INTERVAL_COLUMNS)
    start_ns = window_start_s * 1e9
    step = every_s * 1e9
    n = max(1, int(np.ceil(elapsed_s / every_s - 1e-9)))
    ends, lats = _cat([s.ends for s in stats]), _cat([s.latencies for s in stats])
    lags = _cat([s.lags for s in stats]) if any(len(s.lags) for s in stats) else None
    which = np.clip(((ends - start_ns) // step).astype(np.int64), 0, n - 1)
    errs = np.clip(((_cat([s.error_ends for s in stats]) - start_ns) // step).astype(np.int64), 0, n - 1)
    rets = np.clip(((_cat([s.retry_ends for s in stats]) - start_ns) // step).astype(np.int64), 0, n - 1)
    err_counts, ret_counts = np.bincount(errs, minlength=n), np.bincount(rets, minlength=n)
    order = np.argsort(which, kind="stable")
    which, lats = which[order], lats[order]
    lags = lags[order] if lags is not None and len(lags) == len(order) else None
    bounds = np.searchsorted(which, np.arange(n + 1))
    rows = []
    for k in range(n):
        lo, hi = bounds[k], bounds[k + 1]
        span = min(every_s, elapsed_s - k * every_s)
        chunk = lats[lo:hi]
        pct = np.percentile(chunk, [50, 99]) / 1e6 if hi > lo else (np.nan, np.nan)
        lag99 = float(np.percentile(lags[lo:hi], 99) / 1e6) if lags is not None and hi > lo else np.nan
        rows.append((k * every_s, span, int(hi - lo), int(err_counts[k]), int(ret_counts[k]),
                     (hi - lo) / span if span > 0 else np.nan, float(pct[0]), float(pct[1]),
                     float(chunk.max() / 1e6) if hi > lo else np.nan, lag99))
    return pd.DataFrame(rows, columns=INTERVAL_COLUMNS)


class _LiveIntervals:
    """The progress line, pgbench ``-P`` style, from what the sessions appended since the last line."""

    def __init__(self, stats: list[SessionStats], label: str, open_loop: bool):
        from .progress import interval_lines

        self.stats, self.label, self.open_loop = stats, label, open_loop
        self.cursor = [[0, 0, 0] for _ in stats]  # ends, error_ends, retry_ends already shown
        self.emit, self.every_s = interval_lines()
        self.last_s = 0.0

    def tick(self, elapsed_s: float, final: bool = False) -> None:
        if not final and elapsed_s - self.last_s < self.every_s:
            return
        lats, lags, errors, retries = [], [], 0, 0
        for st, cur in zip(self.stats, self.cursor):
            n = len(st.latencies)  # appended after ends (and before lags): every one of these is complete
            lats.append(np.frombuffer(st.latencies, dtype=np.int64)[cur[0]:n].copy())
            if self.open_loop:
                lags.append(np.frombuffer(st.lags, dtype=np.int64)[cur[0]:min(n, len(st.lags))].copy())
            errors += len(st.error_ends) - cur[1]
            retries += len(st.retry_ends) - cur[2]
            cur[:] = [n, len(st.error_ends), len(st.retry_ends)]
        span = max(elapsed_s - self.last_s, 1e-9)
        self.last_s = elapsed_s
        lat = np.concatenate(lats) if lats else np.empty(0)
        if len(lat):
            p50, p99 = np.percentile(lat, [50, 99]) / 1e6
            text = f"lat p50 {p50:.3f} p99 {p99:.3f} max {lat.max() / 1e6:.3f} ms"
        else:
            text = "lat -"
        lag = np.concatenate(lags) if lags else np.empty(0)
        if len(lag):
            text += f", lag p99 {np.percentile(lag, 99) / 1e6:.3f} ms"
        self.emit(f"progress: {self.label}: {elapsed_s:.1f} s, {len(lat) / span:,.1f} op/s, {text}, "
                  f"{errors} failed, {retries} retried")


# Points whose sessions lost connections, as (label, result), for the live runner: it notes each one in the
# recording even when the chapter's runner stops before recording the point (load_record.record notes the rest).
LOST_POINTS: list[tuple[str, "RunResult"]] = []


def take_lost_points() -> list[tuple[str, "RunResult"]]:
    """The points with lost connections since the last call (and forget them)."""
    out = list(LOST_POINTS)
    LOST_POINTS.clear()
    return out


def _loop_connection(connect: Callable[[], Any], operation: Any, sessions: int):
    """Session 0's connection when the event loop runs these sessions (a Statement, on a libpq connection in
    autocommit, more sessions than CPUs), else None: a thread per session.  With no more sessions than CPUs a
    thread per session is pgbench's own layout (``-j`` = clients), and a blocking call that releases the GIL
    costs the client less than the loop's non-blocking round of calls (bench-driver: 0.93 against 0.76 of
    pgbench's rate at 2 sessions)."""
    from . import pg_loop

    if not isinstance(operation, Statement) or not pg_loop.runs(sessions):
        return None
    try:
        conn = connect()
    except Exception as exc:  # noqa: BLE001 - as a session that cannot connect is reported
        raise SessionsFailed(f"sessions could not start: session 0: {redact(exc)}") from None
    from .pg_client import Connection

    if isinstance(conn, Connection) and conn.autocommit:
        return conn
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - a probe connection: nothing depends on its close
        pass
    return None


class SessionsFailed(RuntimeError):
    """Every call of a run failed: there is nothing to measure."""


@dataclass(frozen=True)
class Statement:
    """A call that is one SQL statement: run by either way of running sessions, with the same meaning.

    ``sql`` is one text (``?`` parameters), or one text per session.
    ``args`` is a tuple, or ``args(session, op)`` returning one (it may
    raise :class:`SessionDone`); it depends on nothing but its two
    arguments, since an open-loop window in C takes every call's values
    computed before the window starts.  ``on_result(session, op, row)`` gets the
    first row (None when there is none) and may return a pause in seconds:
    the session waits that long before its next call, outside the call's
    latency (a consumer that found its queue empty backs off).
    """

    sql: str | tuple[str, ...]
    args: tuple | Callable[[int, int], tuple] = ()
    on_result: Callable[[int, int, Any], float | None] | None = None

    def text(self, session: int) -> str:
        return self.sql if isinstance(self.sql, str) else self.sql[session]

    def values(self, session: int, op: int) -> tuple:
        return tuple(self.args(session, op)) if callable(self.args) else self.args

    def __call__(self, cur, session: int, op: int) -> float | None:
        """The thread-per-session way: execute, read the first row, return the pause."""
        cur.execute(self.text(session), *self.values(session, op))
        if self.on_result is None:
            return None
        row = cur.fetchone() if cur.description else None
        return self.on_result(session, op, row)


def run_sessions(
    connect: Callable[[], Any],
    operation: Callable[[Any, int, int], None],
    *,
    sessions: int = 1,
    operations_per_session: int | None = None,
    duration_s: float | None = None,
    warmup_operations: int = 0,
    warmup_s: float = 0.0,
    rate: float | None = None,
    arrival: str = "poisson",
    seed: int | None = None,
    retry_on: Collection[str] = (),
    max_retries: int = 10,
    setup_session: Callable[[Any, int], None] | None = None,
    keep_timeline: bool = False,
    progress: bool | str = True,
    on_tick: Callable[[float], None] | None = None,
    on_ready: Callable[[], None] | None = None,
    tick_s: float = 0.1,
    max_errors_per_session: int = 100,
) -> RunResult:
    """Run ``operation(cursor, session, op_index)`` in ``sessions`` threads.

    Stop after ``operations_per_session`` calls each, or after ``duration_s``
    of the measured window, whichever comes first.  Warm-up calls (op index
    -1, -2, ...) run for ``warmup_s`` seconds and at least
    ``warmup_operations`` times.  ``rate`` (calls/s across all sessions)
    makes the loop open, with ``arrival`` "poisson" or "fixed" gaps.  A call
    that fails with a class in ``retry_on`` is rolled back and repeated (at
    most ``max_retries`` times; its latency covers every try).  ``on_tick``
    is called from the main thread about every ``tick_s`` during the window
    (samplers hook in there); ``on_ready`` once, after every session has
    connected and warmed up and before any is released (profilers attach).
    """
    if operations_per_session is None and duration_s is None:
        raise ValueError("run_sessions: give operations_per_session, duration_s or both")
    if sessions < 1:
        raise ValueError(f"run_sessions: sessions must be at least 1, got {sessions}")
    if rate is not None and not rate > 0:
        raise ValueError(f"run_sessions: rate={rate}: expected calls per second above 0, or None (closed loop)")
    if arrival not in ARRIVALS:
        raise ValueError(f"run_sessions: arrival={arrival!r}: expected one of {', '.join(ARRIVALS)}")
    stats = [SessionStats(i) for i in range(sessions)]
    first = _loop_connection(connect, operation, sessions)  # a libpq connection: the event loop runs them
    if first is not None:
        from . import pg_loop
    serving = pg_loop.threads_for(sessions) if first is not None else sessions
    ready = threading.Barrier(serving + 1)  # everyone connected and warmed up
    barrier = threading.Barrier(serving + 1)  # released together: the measured window starts
    stop = threading.Event()
    ready_errors: list[str] = []
    window = {"start": 0.0}
    cursors: dict[int, Any] = {}
    schedule = _Schedule(rate, arrival, seed) if rate else None
    retryable = frozenset(retry_on)
    native = None if native_window.wanted(operation, rate) else native_window.NativeWindow(
        operation, sessions, max(1, min(sessions, os.cpu_count() or 1)), rate=rate,
        arrival=arrival, seed=seed, duration_s=duration_s, operations_per_session=operations_per_session,
        retry_on=retryable, max_retries=max_retries, max_errors_per_session=max_errors_per_session)
    budget_s = reconnect_budget_s()

    def rollback(cur) -> None:
        try:
            if not cur.connection.autocommit:
                cur.connection.rollback()
        except Exception:  # noqa: BLE001 - the next try reports whatever is really wrong
            pass

    def reconnect(i: int, old) -> Any:
        """A new connection (and session setup) for session ``i`` after its connection was lost, backing off
        50 ms, 100 ms, ... at most RECONNECT_MAX_S between tries; None if the window ended first, or if no try
        succeeded within the reconnect budget."""
        st = stats[i]
        cursors.pop(i, None)
        try:
            old.close()
        except Exception:  # noqa: BLE001 - the connection is already gone
            pass
        delay = RECONNECT_FIRST_S
        give_up = time.monotonic() + budget_s
        while not stop.wait(delay):
            conn = None
            try:
                conn = connect()
                cur = conn.cursor()
                if setup_session:
                    setup_session(cur, i)
            except Exception as exc:  # noqa: BLE001 - counted; the next try is later
                reconnect_failed(st, exc, conn)
                if time.monotonic() >= give_up:  # the server stays away: end the session, not the wait
                    reconnect_given_up(st, budget_s)
                    return None
                delay = min(delay * 2, RECONNECT_MAX_S, max(0.0, give_up - time.monotonic()))
                continue
            st.reconnects += 1
            cursors[i] = cur
            return conn
        return None

    def worker(i: int) -> None:
        st = stats[i]
        conn = None
        finished = False  # the session said it has no more calls (SessionDone)
        try:
            try:
                conn = connect()
                cur = conn.cursor()
                cursors[i] = cur
                if setup_session:
                    setup_session(cur, i)
                w, until = 0, time.perf_counter() + warmup_s
                while w < warmup_operations or time.perf_counter() < until:
                    pause = _pause(operation(cur, i, -1 - w))
                    w += 1
                    if pause:
                        time.sleep(pause)
            except SessionDone:
                finished = True
            except Exception as exc:  # noqa: BLE001 - reported to the caller below
                ready_errors.append(f"session {i}: {redact(exc)}")
                stop.set()
            try:
                ready.wait()
                barrier.wait()
            except threading.BrokenBarrierError:
                return
            if stop.is_set() or finished:
                if native is not None:
                    native.withdraw(f"session {i} ended in its warm-up")
                return
            if native is not None and native.hand([(i, conn)]):
                return  # C ran this session's window
            if schedule is not None:
                precise_sleeps()
            op = 0
            perf = time.perf_counter_ns
            ends, lats, lags = st.ends.append, st.latencies.append, st.lags.append
            while not stop.is_set():
                if operations_per_session is not None and op >= operations_per_session:
                    break
                if schedule is not None:
                    origin = schedule.take()
                    ahead = origin - perf()
                    if ahead > 0:
                        if stop.wait(ahead / 1e9):
                            break
                    start = perf()
                else:
                    start = origin = perf()
                tries = 0
                failed = None
                pause = None
                while True:
                    try:
                        pause = _pause(operation(cur, i, op))
                        break
                    except SessionDone:
                        finished = True
                        break
                    except Exception as exc:  # noqa: BLE001 - classified and counted
                        code = classify(exc)
                        if code in retryable and tries < max_retries and not stop.is_set():
                            tries += 1
                            st.retries += 1
                            st.retry_ends.append(perf())
                            rollback(cur)
                            continue
                        failed = (code, exc)
                        break
                end = perf()
                if finished:
                    break
                if failed is not None:
                    code, exc = failed
                    st.errors += 1
                    st.errors_by_code[code] = st.errors_by_code.get(code, 0) + 1
                    st.error_ends.append(end)
                    gone = lost_connection(code)
                    if len(st.error_samples) < 5:
                        st.error_samples.append(f"[{code}] {'connection lost: ' if gone else ''}{redact(exc)}")
                    if st.errors >= max_errors_per_session:
                        st.error_samples.append(f"stopped after {st.errors} errors")
                        break
                    if code in REFUSED:  # no later call can succeed: every session stops (raised below)
                        stop.set()
                        break
                    op += 1
                    if gone:  # one error for the call; then reconnect (backing off), not one error per dead try
                        st.lost[code] = st.lost.get(code, 0) + 1
                        conn = reconnect(i, conn)
                        if conn is None:
                            break
                        cur = cursors[i]
                    continue
                ends(end)
                lats(end - origin)
                if schedule is not None:
                    lags(start - origin)
                st.operations += 1
                if keep_timeline:
                    st.timeline.append((op, end / 1e9, (end - origin) / 1e9))
                op += 1
                if pause and stop.wait(pause):
                    break
        finally:
            if conn is not None:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass

    if first is not None:
        ctx = pg_loop.LoopContext(
            connect=connect, statement=operation, setup_session=setup_session, stats=stats, ready=ready,
            barrier=barrier, stop=stop, schedule=schedule, operations_per_session=operations_per_session,
            warmup_operations=warmup_operations, warmup_s=warmup_s, retryable=retryable, max_retries=max_retries,
            max_errors_per_session=max_errors_per_session, keep_timeline=keep_timeline, cursors=cursors,
            ready_errors=ready_errors, classify=classify, lost_connection=lost_connection,
            reconnect_first_s=RECONNECT_FIRST_S, reconnect_max_s=RECONNECT_MAX_S, precise_sleeps=precise_sleeps,
            reconnect_budget_s=budget_s, native=native)
        threads = [threading.Thread(target=pg_loop.serve, args=(ctx, list(range(t, sessions, serving)),
                                                                {0: first} if t == 0 else {}),
                                    name=f"sessions-loop-{t}", daemon=True) for t in range(serving)]
        how = f"event loop: {sessions} non-blocking libpq session(s) on {serving} thread(s)"
    else:
        threads = [threading.Thread(target=worker, args=(i,), name=f"session-{i}", daemon=True)
                   for i in range(sessions)]
        how = f"thread per session: {sessions} thread(s)"
    for t in threads:
        t.start()
    live = None
    gc_was = None  # the collector's state while it is off for the window
    try:
        ready.wait(timeout=600 + warmup_s)
        if ready_errors:
            barrier.abort()
            raise SessionsFailed("sessions could not start: " + "; ".join(ready_errors[:5]))
        if native is not None:
            native.compute_values()  # before the window, and before on_ready's samplers start
        if on_ready:
            on_ready()
        gc_was = collection_off()
        # taken before the release, not after it: a released session can end its first call before this thread
        # runs again, and a call that ended before the window's start had a negative time in the window
        window["start"] = time.perf_counter_ns() / 1e9
        barrier.wait(timeout=600)
        ran = native.run(on_tick, tick_s, stop) if native is not None else None
        if ran is not None:
            window["start"] = ran["start_ns"] / 1e9
            notes = native_window.fill(stats, ran, keep_timeline, max_errors_per_session)
            how += f"; the window in C (native/{native_window.PROGRAM}): {ran['summary'].removeprefix('pg_openloop: ')}"
            how += "".join(f"; {n}" for n in notes)
        elif native is not None:
            how += f"; the window in Python ({native.declined})"
        if progress:
            live = _LiveIntervals(stats, progress if isinstance(progress, str) else f"{sessions} sessions",
                                  schedule is not None)
        while any(t.is_alive() for t in threads):
            elapsed = time.perf_counter_ns() / 1e9 - window["start"]
            if duration_s is not None and elapsed >= duration_s:
                stop.set()
            if on_tick:
                on_tick(elapsed)
            if live is not None:
                live.tick(elapsed)
            for t in threads:
                t.join(timeout=tick_s / max(1, len(threads)))
        end = ran["end_ns"] / 1e9 if ran is not None else time.perf_counter_ns() / 1e9
        collection_back(gc_was)
        gc_was = None
        if live is not None and end - window["start"] - live.last_s > 0.05:
            live.tick(end - window["start"], final=True)
    except BaseException:
        if gc_was is not None:
            collection_back(gc_was)
        stop.set()
        ready.abort()
        barrier.abort()
        for cur in list(cursors.values()):  # a statement still running is cancelled, not waited for
            try:
                cur.cancel()
            except Exception:  # noqa: BLE001 - the session may already be gone
                pass
        for t in threads:
            t.join(timeout=30)
        raise
    merged = LatencyHistogram()
    for st in stats:
        merged.merge(st.histogram)
    lag = LatencyHistogram().record_many(_cat([st.lags for st in stats])) if schedule is not None else None
    ops = sum(st.operations for st in stats)
    errors = sum(st.errors for st in stats)
    by_code: dict[str, int] = {}
    lost: dict[str, int] = {}
    for st in stats:
        for c, n in st.errors_by_code.items():
            by_code[c] = by_code.get(c, 0) + n
        for c, n in st.lost.items():
            lost[c] = lost.get(c, 0) + n
    refused = sorted(c for c in by_code if c in REFUSED)
    if refused:
        sample = next((x for st in stats for x in st.error_samples if any(f"[{c}]" in x for c in refused)), "")
        raise SessionsFailed(f"the server refused a statement ({', '.join(refused)}: {kind(refused[0])}), which no "
                             f"retry can change; the run stops: {sample}")
    if ops == 0 and errors:
        samples = "; ".join(f"session {st.session}: {st.error_samples[0]}" for st in stats if st.error_samples)
        raise SessionsFailed(f"every call failed ({errors} errors): {samples}")
    result = RunResult(sessions=sessions, elapsed_s=end - window["start"], operations=ops, errors=errors,
                     latency=merged.summary(), per_session=stats, window_start=window["start"], histogram=merged,
                     lag=lag, retries=sum(st.retries for st in stats), errors_by_code=by_code, rate=rate,
                     arrival=arrival if rate else "closed", warmup_s=warmup_s, lost_connections=lost,
                     reconnects=sum(st.reconnects for st in stats), driver=how)
    if lost:
        LOST_POINTS.append((progress if isinstance(progress, str) else f"{sessions} sessions", result))
    return result
