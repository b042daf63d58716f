"""Poll a query at a fixed rate while a workload runs: a thread, its own connection.

Views like pg_stat_activity, sys.dm_os_waiting_tasks or pg_buffercache show
only the present moment, so the way to see where sessions wait is to look
often (10-20 Hz).  A share of samples estimates a share of time.  The
sampler does not burst to catch up when it falls behind, and records the
rate it actually achieved.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

import pandas as pd

from .redaction import redact


class PollingSampler:
    """Run ``sql`` every 1/hz seconds; keep (t_s, *row) tuples.  A failure stops it and is kept in ``error``."""

    def __init__(self, connect: Callable[[], Any], sql: str, params: Sequence[Any] = (), hz: float = 10.0,
                 name: str = "sampler"):
        if not 0 < hz <= 100:
            raise ValueError(f"{name}: hz={hz}: expected a rate above 0 and at most 100 per second")
        self.connect, self.sql, self.params, self.interval, self.name = connect, sql, list(params), 1.0 / hz, name
        self.rows: list[tuple] = []
        self.columns: list[str] = []
        self.ticks = 0
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = self._ended = 0.0

    def on_connect(self, conn) -> None:
        """Called with the sampler's connection before the first poll (subclasses note what they need)."""

    def on_close(self, thread_cpu_s: float) -> None:
        """Called when polling ends, with the CPU seconds the polling thread used."""

    def start(self) -> "PollingSampler":
        conn = self.connect()  # a bad target fails here, before the workload starts
        self.on_connect(conn)
        self._started = time.perf_counter()
        self._thread = threading.Thread(target=self._loop, args=(conn,), name=self.name, daemon=True)
        self._thread.start()
        return self

    def _loop(self, conn) -> None:
        cpu0 = time.thread_time()
        cur = conn.cursor()
        next_at = time.perf_counter()
        try:
            while not self._stop.is_set():
                t = time.perf_counter() - self._started
                cur.execute(self.sql, *self.params)
                if not self.columns:
                    self.columns = [d[0] for d in cur.description]
                self.rows.extend((t, *r) for r in cur.fetchall())
                self.ticks += 1
                next_at += self.interval
                delay = next_at - time.perf_counter()
                if delay > 0:
                    self._stop.wait(delay)
                else:
                    next_at = time.perf_counter()
        except Exception as exc:  # noqa: BLE001 - reported through .error
            self.error = redact(exc)
        finally:
            self.on_close(time.thread_time() - cpu0)
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass

    def __enter__(self) -> "PollingSampler":
        return self.start()

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    def stop(self) -> "PollingSampler":
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._ended = time.perf_counter()
        return self

    @property
    def achieved_hz(self) -> float:
        span = self._ended - self._started
        return self.ticks / span if span > 0 else float("nan")

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=["t_s", *self.columns] if self.columns else ["t_s"])
