"""A process-per-session driver: the sessions driver's loop without threads sharing one interpreter.

harness.driver.run_sessions runs N sessions as N threads.  pyodbc releases
the GIL while a statement runs, but every call still does Python work under
the GIL (building the call, the latency clock, the histogram).  With short
statements that work is a large share of each call, and N threads serialise
on it.  Here each session is its own process with its own interpreter;
they are released together by a barrier, run for ``duration_s``, and send
back their counts and latency histograms, merged as run_sessions does.

The connection string is read from an environment variable in each child
(the *name* is passed, never the value).  Failed calls are counted once each,
by class; a session whose connection is lost reconnects with the same bounded
back-off as run_sessions.  This is a candidate for
harness/driver.py (see the chapter's report); it lives here until then.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue as queue_module
import time
from typing import Sequence

from contention_book.harness.driver import RunResult, SessionStats, SessionsFailed
from contention_book.harness.latency import LatencyHistogram


def _child(var: str, setup: Sequence[str], sql: str, args: Sequence, warmup: int, duration_s: float,
           barrier, queue, index: int) -> None:
    import pyodbc

    from contention_book.harness.driver import RECONNECT_FIRST_S, RECONNECT_MAX_S, classify, lost_connection

    def connect():
        conn = pyodbc.connect(os.environ[var], autocommit=True)
        cur = conn.cursor()
        for s in setup:
            cur.execute(s)
        return conn, cur

    try:
        conn, cur = connect()
        for _ in range(warmup):
            cur.execute(sql, *args)
    except Exception as exc:  # noqa: BLE001 - reported to the parent
        queue.put((index, "error", f"{type(exc).__name__}: {str(exc)[:300]}"))
        barrier.abort()
        return
    barrier.wait()
    hist = LatencyHistogram()
    perf = time.perf_counter_ns
    start = perf()
    end_at = start + int(duration_s * 1e9)
    ops, errors, reconnects = 0, 0, 0
    by_code: dict[str, int] = {}
    lost: dict[str, int] = {}
    now = start
    while now < end_at:
        try:
            cur.execute(sql, *args)
        except Exception as exc:  # noqa: BLE001 - one error per failed call, by class, as run_sessions counts
            code = classify(exc)
            errors += 1
            by_code[code] = by_code.get(code, 0) + 1
            now = perf()
            if lost_connection(code):  # reconnect, backing off, instead of failing every call on a dead one
                lost[code] = lost.get(code, 0) + 1
                delay = RECONNECT_FIRST_S
                while True:
                    time.sleep(delay)
                    if perf() >= end_at:
                        break
                    try:
                        conn, cur = connect()
                        reconnects += 1
                        break
                    except Exception:  # noqa: BLE001 - the next try is later
                        delay = min(delay * 2, RECONNECT_MAX_S)
                now = perf()
            continue
        t = perf()
        hist.record(t - now)
        now = t
        ops += 1
    try:
        conn.close()
    except Exception:  # noqa: BLE001 - a lost connection
        pass
    queue.put((index, "ok", (ops, (now - start) / 1e9, hist.encode(), errors, by_code, lost, reconnects)))


def run_processes(var: str, sql: str, *, sessions: int, duration_s: float, args: Sequence = (),
                  setup: Sequence[str] = (), warmup: int = 20) -> RunResult:
    """Run ``sql`` in ``sessions`` processes for ``duration_s`` each; connection string from env var ``var``."""
    if var not in os.environ:
        raise ValueError(f"run_processes: environment variable {var!r} is not set; expected a connection string in it")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(sessions + 1)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(var, list(setup), sql, list(args), warmup, duration_s, barrier, queue, i),
                         daemon=True) for i in range(sessions)]
    for p in procs:
        p.start()
    try:
        try:
            barrier.wait(timeout=120)
        except Exception:  # noqa: BLE001 - a child failed to start: collect why
            pass
        try:
            results = [queue.get(timeout=duration_s + 120) for _ in procs]
        except queue_module.Empty:
            raise SessionsFailed(f"a session process sent no result within {duration_s + 120:.0f} s (exit codes "
                                 f"{[p.exitcode for p in procs]})") from None
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.terminate()
    errors = [r[2] for r in results if r[1] == "error"]
    if errors:
        raise SessionsFailed("sessions could not start: " + "; ".join(errors[:3]))
    stats, merged, elapsed = [], LatencyHistogram(), 0.0
    by_code: dict[str, int] = {}
    lost: dict[str, int] = {}
    for index, _, (ops, secs, encoded, errors, codes, gone, reconnects) in sorted(results):
        h = LatencyHistogram.decode(encoded)
        merged.merge(h)
        stats.append(SessionStats(session=index, operations=ops, errors=errors, errors_by_code=dict(codes),
                                  lost=dict(gone), reconnects=reconnects, _histogram=h))
        elapsed = max(elapsed, secs)
        for c, n in codes.items():
            by_code[c] = by_code.get(c, 0) + n
        for c, n in gone.items():
            lost[c] = lost.get(c, 0) + n
    ops = sum(s.operations for s in stats)
    return RunResult(sessions=sessions, elapsed_s=elapsed, operations=ops, errors=sum(s.errors for s in stats),
                     latency=merged.summary(), per_session=stats, histogram=merged, errors_by_code=by_code,
                     lost_connections=lost, reconnects=sum(s.reconnects for s in stats))
