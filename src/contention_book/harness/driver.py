"""The sessions driver: N concurrent sessions, one connection per thread.

It plays the role of ostress / SQLQueryStress, with what their users ask
for: every session connects and warms up first, then all are released
together by a barrier so the measured window holds only concurrent work;
each call's latency goes into a histogram (p50/p95/p99/max); errors are
counted per session and reported, never swallowed; a progress bar shows long
runs; Ctrl-C stops the sessions cleanly and re-raises, so the recording
writer marks the recording incomplete.

pyodbc releases the GIL while a statement runs, so threads are enough to
keep N server sessions busy.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .redaction import redact


class LatencyHistogram:
    """Log-bucketed latency histogram (about 1% resolution, 1 µs to ~20 min).

    Cheap to record into from a hot loop and to merge across sessions; the
    exact maximum is kept alongside.
    """

    GROWTH = 1.01
    FLOOR_NS = 1_000

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.max_ns = 0
        self.total = 0
        self._log_growth = math.log(self.GROWTH)

    def record(self, ns: int) -> None:
        idx = 0 if ns <= self.FLOOR_NS else int(math.log(ns / self.FLOOR_NS) / self._log_growth) + 1
        self.counts[idx] = self.counts.get(idx, 0) + 1
        self.total += 1
        if ns > self.max_ns:
            self.max_ns = ns

    def merge(self, other: "LatencyHistogram") -> "LatencyHistogram":
        for idx, n in other.counts.items():
            self.counts[idx] = self.counts.get(idx, 0) + n
        self.total += other.total
        self.max_ns = max(self.max_ns, other.max_ns)
        return self

    def percentile_ms(self, q: float) -> float:
        """The upper edge of the bucket holding the q-th percentile, in ms."""
        if not self.total:
            return float("nan")
        rank = math.ceil(q / 100 * self.total)
        seen = 0
        for idx in sorted(self.counts):
            seen += self.counts[idx]
            if seen >= rank:
                upper_ns = self.FLOOR_NS * self.GROWTH ** idx
                return min(upper_ns, self.max_ns) / 1e6
        return self.max_ns / 1e6

    def summary(self) -> dict[str, float]:
        return {
            "p50_ms": self.percentile_ms(50),
            "p95_ms": self.percentile_ms(95),
            "p99_ms": self.percentile_ms(99),
            "max_ms": self.max_ns / 1e6 if self.total else float("nan"),
        }


@dataclass
class SessionStats:
    session: int
    operations: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    histogram: LatencyHistogram = field(default_factory=LatencyHistogram)
    timeline: list[tuple[int, float, float]] = field(default_factory=list)  # (op, end clock s, latency s)


@dataclass
class RunResult:
    sessions: int
    elapsed_s: float
    operations: int
    errors: int
    latency: dict[str, float]
    per_session: list[SessionStats]
    window_start: float = 0.0

    @property
    def throughput(self) -> float:
        return self.operations / self.elapsed_s if self.elapsed_s > 0 else float("nan")

    def row(self, **extra: Any) -> dict[str, Any]:
        """One runs.csv row."""
        return {**extra, "sessions": self.sessions, "elapsed_s": self.elapsed_s, "operations": self.operations,
                "throughput": self.throughput, **self.latency, "errors": self.errors}

    def timeline(self):
        import pandas as pd

        rows = [(s.session, op, end - self.window_start, lat)
                for s in self.per_session for op, end, lat in s.timeline]
        return pd.DataFrame(rows, columns=["session", "op", "end_s", "latency_s"])


class SessionsFailed(RuntimeError):
    """Every call of a run failed: there is nothing to measure."""


def run_sessions(
    connect: Callable[[], Any],
    operation: Callable[[Any, int, int], None],
    *,
    sessions: int = 1,
    operations_per_session: int | None = None,
    duration_s: float | None = None,
    warmup_operations: int = 0,
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
    of the measured window, whichever comes first.  ``on_tick`` is called
    from the main thread about every ``tick_s`` during the window (samplers
    hook in there); ``on_ready`` once, after every session has connected and
    warmed up and before any is released (profilers attach there).
    """
    if operations_per_session is None and duration_s is None:
        raise ValueError("run_sessions: give operations_per_session, duration_s or both")
    if sessions < 1:
        raise ValueError(f"run_sessions: sessions must be at least 1, got {sessions}")
    stats = [SessionStats(i) for i in range(sessions)]
    ready = threading.Barrier(sessions + 1)  # everyone connected and warmed up
    barrier = threading.Barrier(sessions + 1)  # released together: the measured window starts
    stop = threading.Event()
    ready_errors: list[str] = []
    window = {"start": 0.0}
    done_counter = [0] * sessions
    cursors: dict[int, Any] = {}

    def worker(i: int) -> None:
        st = stats[i]
        conn = None
        try:
            try:
                conn = connect()
                cur = conn.cursor()
                cursors[i] = cur
                if setup_session:
                    setup_session(cur, i)
                for w in range(warmup_operations):
                    operation(cur, i, -1 - w)
            except Exception as exc:  # noqa: BLE001 - reported to the caller below
                ready_errors.append(f"session {i}: {redact(exc)}")
                stop.set()
            try:
                ready.wait()
                barrier.wait()
            except threading.BrokenBarrierError:
                return
            if stop.is_set():
                return
            op = 0
            perf = time.perf_counter_ns
            while not stop.is_set():
                if operations_per_session is not None and op >= operations_per_session:
                    break
                start = perf()
                try:
                    operation(cur, i, op)
                except Exception as exc:  # noqa: BLE001
                    st.errors += 1
                    if len(st.error_samples) < 5:
                        st.error_samples.append(redact(exc))
                    if st.errors >= max_errors_per_session:
                        st.error_samples.append(f"stopped after {st.errors} errors")
                        break
                    op += 1
                    done_counter[i] = op
                    continue
                end = perf()
                st.histogram.record(end - start)
                st.operations += 1
                if keep_timeline:
                    st.timeline.append((op, end / 1e9, (end - start) / 1e9))
                op += 1
                done_counter[i] = op
        finally:
            if conn is not None:
                try:
                    conn.close()
                except Exception:  # noqa: BLE001 - closing a broken connection
                    pass

    threads = [threading.Thread(target=worker, args=(i,), name=f"session-{i}", daemon=True) for i in range(sessions)]
    for t in threads:
        t.start()
    bar = None
    try:
        ready.wait(timeout=600)
        if ready_errors:
            barrier.abort()
            raise SessionsFailed("sessions could not start: " + "; ".join(ready_errors[:5]))
        if on_ready:
            on_ready()
        barrier.wait(timeout=600)
        window["start"] = time.perf_counter_ns() / 1e9
        total = operations_per_session * sessions if operations_per_session is not None else None
        if progress:
            from .progress import progress as make_progress

            bar = make_progress(total, progress if isinstance(progress, str) else f"{sessions} sessions", unit="op")
        while any(t.is_alive() for t in threads):
            elapsed = time.perf_counter_ns() / 1e9 - window["start"]
            if duration_s is not None and elapsed >= duration_s:
                stop.set()
            if on_tick:
                on_tick(elapsed)
            if bar is not None:
                bar.update(sum(done_counter) - bar.n)  # update() honours mininterval; refresh() would not
            for t in threads:
                t.join(timeout=tick_s / max(1, len(threads)))
        end = time.perf_counter_ns() / 1e9
    except BaseException:
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
    finally:
        if bar is not None:
            bar.close()
    merged = LatencyHistogram()
    for st in stats:
        merged.merge(st.histogram)
    ops = sum(st.operations for st in stats)
    errors = sum(st.errors for st in stats)
    if ops == 0 and errors:
        samples = "; ".join(f"session {st.session}: {st.error_samples[0]}" for st in stats if st.error_samples)
        raise SessionsFailed(f"every call failed ({errors} errors): {samples}")
    return RunResult(sessions=sessions, elapsed_s=end - window["start"], operations=ops, errors=errors,
                     latency=merged.summary(), per_session=stats, window_start=window["start"])
