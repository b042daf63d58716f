"""Sample PostgreSQL wait events while a workload runs: inside the server, or by polling.

PostgreSQL has no cumulative wait statistics (no sys.dm_os_wait_stats), so
the way to see where sessions wait is to look often.  Two samplers give the
same frame (COLUMNS, one row per sample or per group of equal samples,
weighted by ``samples``):

- :class:`InServerWaitSampler`: the ``pg_wait_sampling`` extension's
  collector samples every backend every 10 ms inside the server; the run
  reads its cumulative profile before and after (no client polling at all);
- :class:`WaitSampler`: a client polls ``pg_stat_activity`` at 10-20 Hz
  (harness.polling); the fallback where the extension is not loaded.

Each reports its observer cost, ``cpu_per_s``: the CPU seconds it used per
second of run (the polling thread and the backend that answers it; or the
extension's collector process), counted from /proc where the server is
local.  :func:`sampler` picks one.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from .polling import PollingSampler
from .redaction import redact

COLUMNS = ["t_s", "pid", "backend_type", "state", "wait_event_type", "wait_event", "samples"]
SOURCES = ("auto", "pg_wait_sampling", "polling")
# The sampler's own query is left out; background processes (walwriter, checkpointer...)
# have no database, so they are kept whatever database is asked for.
QUERY = """
SELECT pid, backend_type, coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, '')
FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND (datname IS NULL OR datname = ?)
"""


def process_cpu_s(pid: int | None) -> float | None:
    """utime + stime of a local process, from /proc (Linux); None where it cannot be read."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class WaitSampler(PollingSampler):
    """pg_stat_activity at ``hz``; ``frame()`` has the columns in COLUMNS (each row one sample)."""

    source = "polling"

    def __init__(self, connect: Callable[[], Any], database: str, hz: float = 20.0):
        super().__init__(connect, QUERY, [database], hz=hz, name="wait-sampler")
        self._backend: int | None = None
        self._cpu0: float | None = None
        self.cpu_s: float | None = None

    def on_connect(self, conn) -> None:
        self._backend = int(conn.cursor().execute("SELECT pg_backend_pid()").fetchone()[0])
        self._cpu0 = process_cpu_s(self._backend)

    def on_close(self, thread_cpu_s: float) -> None:
        end = process_cpu_s(self._backend)
        server = end - self._cpu0 if end is not None and self._cpu0 is not None else None
        self.cpu_s = thread_cpu_s + (server or 0.0)
        self.server_measured = server is not None

    @property
    def cpu_per_s(self) -> float:
        """CPU seconds of the polling thread and its backend per second sampled (NaN before it stopped)."""
        span = self._ended - self._started
        return self.cpu_s / span if self.cpu_s is not None and span > 0 else float("nan")

    def frame(self, alive=()) -> pd.DataFrame:
        """Every poll's rows; ``alive`` is accepted for the in-server sampler's sake (a poll sees every backend)."""
        return pd.DataFrame([(*r, 1) for r in self.rows], columns=COLUMNS)


PROFILE = """
SELECT pid, coalesce(event_type, ''), coalesce(event, ''), sum(count) FROM pg_wait_sampling_profile GROUP BY 1, 2, 3
"""
BACKENDS = "SELECT pid, backend_type FROM pg_stat_activity"
COLLECTOR = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_wait_sampling collector'"


def in_server_available(conn) -> str | None:
    """None if pg_wait_sampling can be used through ``conn``, else why not (in words)."""
    cur = conn.cursor()
    libs = str(cur.execute("SELECT current_setting('shared_preload_libraries')").fetchone()[0])
    if "pg_wait_sampling" not in [x.strip() for x in libs.split(",")]:
        return "pg_wait_sampling is not in shared_preload_libraries"
    if not cur.execute("SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_wait_sampling'").fetchone()[0]:
        return "the pg_wait_sampling extension is not installed"
    return None


class InServerWaitSampler:
    """pg_wait_sampling's profile, read before and after: the per-backend, per-event sample counts in between.

    The collector samples every ``pg_wait_sampling.profile_period`` ms (10 by
    default).  Version 1.1.4 (Debian 12) counts only samples with a wait
    event, so a backend's on-CPU samples are the collector's ticks less its
    waits; the ticks are read off the busiest always-waiting process (the
    checkpointer, the launchers), which has a wait event at every tick.  The
    profile is cumulative and shared, so nothing is reset: other runs'
    counts cancel in the difference.  The profile has no backend type: a
    process seen in pg_stat_activity before or after gets its own, one that
    came and went in between is taken for a client backend.
    """

    source = "pg_wait_sampling"

    def __init__(self, connect: Callable[[], Any], database: str):
        self.connect, self.database = connect, database
        self.error: str | None = None
        self.ticks = 0
        self._before: dict[tuple, int] = {}
        self._after: dict[tuple, int] = {}
        self._period_ms = 10.0
        self._collector: int | None = None
        self._cpu0: float | None = None
        self.cpu_s: float | None = None
        self._started = self._ended = 0.0
        self._types: dict[int, str] = {}  # pid -> backend_type, seen before or after

    def _profile(self) -> dict[tuple, int]:
        conn = self.connect()
        try:
            cur = conn.cursor()
            rows = cur.execute(PROFILE).fetchall()
            self._types.update({int(p): str(t) for p, t in cur.execute(BACKENDS).fetchall()})
        finally:
            conn.close()
        return {(int(r[0]), r[1], r[2]): int(r[3]) for r in rows}

    def start(self) -> "InServerWaitSampler":
        conn = self.connect()
        try:
            cur = conn.cursor()
            why = in_server_available(conn)
            if why:
                raise RuntimeError(why)
            cur.execute("CREATE EXTENSION IF NOT EXISTS pg_wait_sampling")
            self._period_ms = float(cur.execute("SELECT current_setting('pg_wait_sampling.profile_period')")
                                    .fetchone()[0])
            row = cur.execute(COLLECTOR).fetchone()
            self._collector = int(row[0]) if row else None
        finally:
            conn.close()
        self._cpu0 = process_cpu_s(self._collector)
        self._before = self._profile()
        self._started = time.perf_counter()
        return self

    def stop(self) -> "InServerWaitSampler":
        if not self._started or self._ended:
            return self
        self._ended = time.perf_counter()
        try:
            self._after = self._profile()
        except Exception as exc:  # noqa: BLE001 - kept in .error, as a polling sampler does
            self.error = redact(exc)
        end = process_cpu_s(self._collector)
        self.cpu_s = end - self._cpu0 if end is not None and self._cpu0 is not None else None
        self.frame()  # counts the collector's ticks, for achieved_hz
        return self

    def __enter__(self) -> "InServerWaitSampler":
        return self.start()

    def __exit__(self, *exc) -> bool:
        self.stop()
        return False

    @property
    def achieved_hz(self) -> float:
        span = self._ended - self._started
        return self.ticks / span if span > 0 else float("nan")

    @property
    def cpu_per_s(self) -> float:
        """CPU seconds of the collector process per second of run (NaN where it is not local)."""
        span = self._ended - self._started
        return self.cpu_s / span if self.cpu_s is not None and span > 0 else float("nan")

    def frame(self, alive=()) -> pd.DataFrame:
        """The samples between start and stop.  ``alive``: client backends the caller knows were connected through
        the whole window; one the profile never saw waiting was on CPU at every tick (it has no row otherwise)."""
        delta = {k: v - self._before.get(k, 0) for k, v in self._after.items()}
        delta = {k: v for k, v in delta.items() if v > 0}
        per_pid: dict[int, int] = {}
        for (pid, _t, _e), n in delta.items():
            per_pid[pid] = per_pid.get(pid, 0) + n
        self.ticks = max(per_pid.values(), default=0)
        rows = []
        for (pid, etype, event), n in delta.items():
            state = "idle" if (etype, event) == ("Client", "ClientRead") else "active"
            rows.append((0.0, pid, self._types.get(pid, "client backend"), state, etype, event, n))
        for pid in alive:
            per_pid.setdefault(int(pid), 0)
        for pid, waited in per_pid.items():  # on CPU: the ticks at which the backend had no wait event
            bt = self._types.get(pid, "client backend")
            if bt == "client backend" and self.ticks > waited:
                rows.append((0.0, pid, bt, "active", "", "", self.ticks - waited))
        return pd.DataFrame(rows, columns=COLUMNS)


def sampler(connect: Callable[[], Any], database: str, hz: float = 20.0, source: str = "auto",
            log: Callable[[str], None] | None = None):
    """The in-server sampler where pg_wait_sampling is loaded (``auto`` or ``pg_wait_sampling``), else polling.

    ``source="pg_wait_sampling"`` where it is not available is an error that says why.
    """
    if source not in SOURCES:
        raise ValueError(f"wait_source={source!r}: expected one of {', '.join(SOURCES)}")
    if source != "polling":
        conn = connect()
        try:
            why = in_server_available(conn)
        finally:
            conn.close()
        if why is None:
            return InServerWaitSampler(connect, database)
        if source == "pg_wait_sampling":
            raise RuntimeError(f"wait_source=pg_wait_sampling: {why}; install it (Debian: "
                               "postgresql-<version>-pg-wait-sampling) and preload it, or use wait_source=polling")
        if log:
            log(f"[harness] wait sampling by polling pg_stat_activity at {hz:g} Hz ({why})")
    return WaitSampler(connect, database, hz=hz)


def label(frame: pd.DataFrame) -> pd.Series:
    """``Type:Event`` for a waiting sample, ``CPU`` for an active one that waits on nothing.

    A session with no transaction open that waits for its client is ``idle``;
    one that holds a transaction open while it waits for its client keeps
    ``Client:ClientRead``, since its locks and snapshot still count.
    """
    waiting = frame["wait_event_type"].ne("")
    lab = (frame["wait_event_type"] + ":" + frame["wait_event"]).where(waiting, "CPU")
    idle = frame["state"].eq("idle") | (~waiting & frame["state"].ne("active"))
    return lab.mask(idle, "idle")


def counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Samples per wait label, most first: (wait, samples, share); a frame without ``samples`` counts rows."""
    weight = frame["samples"] if "samples" in frame.columns else pd.Series(1, index=frame.index)
    out = (weight.groupby(label(frame)).sum().sort_values(ascending=False, kind="stable")
           .rename_axis("wait").reset_index(name="samples"))
    out["samples"] = out["samples"].astype(int)
    out = out[out["samples"] > 0].reset_index(drop=True)
    out["share"] = out["samples"] / out["samples"].sum() if len(out) else []
    return out


def shares(frame: pd.DataFrame, backend_type: str | None = "client backend") -> pd.DataFrame:
    """Share of samples per wait label (idle samples left out), for one kind of backend."""
    f = frame if backend_type is None else frame[frame["backend_type"] == backend_type]
    out = counts(f)
    out = out[out["wait"] != "idle"].reset_index(drop=True)
    out["share"] = out["samples"] / out["samples"].sum() if len(out) else []
    return out


def client_bound(frame: pd.DataFrame, pids=None) -> dict[str, float]:
    """Is the load client-bound?  Of the workload backends' samples: the share waiting for the client (the
    ``Client:ClientRead`` wait event, whatever the session's state), the share sleeping on purpose inside a
    workload's own loop (``Timeout:PgSleep``: a consumer backing off from an empty queue), and the share in the
    server (on CPU, or waiting on anything else).  The three add up to 1.

    The wait event, not pg_stat_activity's ``idle`` state, marks the client's time: a backend is already
    ``idle`` while it finishes a statement on CPU (commit, results, statistics) before it reads the next
    one, and pg_wait_sampling knows no state at all.
    """
    f = frame[frame["backend_type"] == "client backend"]
    if pids is not None:
        f = f[f["pid"].isin(set(pids))]
    weight = f["samples"] if "samples" in f.columns else pd.Series(1, index=f.index)
    client = weight[(f["wait_event_type"] == "Client") & (f["wait_event"] == "ClientRead")].sum()
    backoff = weight[(f["wait_event_type"] == "Timeout") & (f["wait_event"] == "PgSleep")].sum()
    total = weight.sum()
    if not total:
        return {"server_share": float("nan"), "client_share": float("nan"), "backoff_share": float("nan")}
    return {"server_share": float((total - client - backoff) / total), "client_share": float(client / total),
            "backoff_share": float(backoff / total)}


def wal_snapshot(cursor) -> dict[str, float]:
    """pg_stat_wal's cumulative counters (PostgreSQL 14+), for before/after deltas.

    A backend publishes its WAL counters at most once a second and when it
    exits: take the 'after' snapshot once the workload's sessions have closed.
    """
    cursor.execute("SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full, wal_write, wal_sync, "
                   "wal_write_time, wal_sync_time FROM pg_stat_wal")
    row = cursor.fetchone()
    names = [d[0] for d in cursor.description]
    return {n: float(v) for n, v in zip(names, row)}


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Counter deltas; a counter that went backwards was reset, and its delta is the after value."""
    return {k: (after[k] - before[k]) if after[k] >= before[k] else after[k] for k in after if k in before}
