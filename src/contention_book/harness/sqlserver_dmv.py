"""SQL Server's cumulative statistics, read twice and turned into deltas.

The articles clear the counters server-wide (``DBCC SQLPERF(..., CLEAR)``)
before a test.  That destroys every other tool's baseline on the server, so
the book reads a snapshot before and one after and subtracts; clearing is a
server change, opt-in and printed (:func:`clear_change`).

Maximum columns (``max_wait_time_ms``) are not additive: a maximum since the
last clear cannot be subtracted.  :func:`delta` reports the after value when
it grew during the window (then it *is* the window's maximum: something in
the window exceeded the old maximum) and otherwise marks the window's
maximum as "at most" the prior one.

Performance counters are interpreted by ``cntr_type``, as
sys.dm_os_performance_counters documents them.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from .guard import Change
from .polling import PollingSampler

# -- the three statistics DMVs ----------------------------------------------------
WAIT_STATS = ("SELECT wait_type AS name, waiting_tasks_count AS waits, wait_time_ms, max_wait_time_ms, "
              "signal_wait_time_ms FROM sys.dm_os_wait_stats")
LATCH_STATS = ("SELECT latch_class AS name, waiting_requests_count AS waits, wait_time_ms, max_wait_time_ms "
               "FROM sys.dm_os_latch_stats")
SPINLOCK_STATS = ("SELECT name, collisions, spins, spins_per_collision, sleep_time, backoffs "
                  "FROM sys.dm_os_spinlock_stats")

ADDITIVE = {
    "wait": ["waits", "wait_time_ms", "signal_wait_time_ms"],
    "latch": ["waits", "wait_time_ms"],
    "spinlock": ["collisions", "spins", "sleep_time", "backoffs"],
}
MAXIMA = {"wait": ["max_wait_time_ms"], "latch": ["max_wait_time_ms"], "spinlock": []}
QUERIES = {"wait": WAIT_STATS, "latch": LATCH_STATS, "spinlock": SPINLOCK_STATS}
CLEAR_TARGETS = {"wait": "sys.dm_os_wait_stats", "latch": "sys.dm_os_latch_stats",
                 "spinlock": "sys.dm_os_spinlock_stats"}
# CLEAR is documented for all three: the DBCC SQLPERF page for the wait and latch statistics, and
# sys.dm_os_spinlock_stats' own page for the spinlock statistics ("You can reset the contents of
# sys.dm_os_spinlock_stats by using DBCC SQLPERF ... DBCC SQLPERF ('sys.dm_os_spinlock_stats', CLEAR);",
# https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/
# sys-dm-os-spinlock-stats-transact-sql; issue 33, defect 8).


def snapshot(conn, kind: str) -> pd.DataFrame:
    """One read of a statistics DMV (kind: wait | latch | spinlock)."""
    if kind not in QUERIES:
        raise ValueError(f"snapshot: kind {kind!r}, expected one of {sorted(QUERIES)}")
    cur = conn.cursor()
    cur.execute(QUERIES[kind])
    cols = [d[0] for d in cur.description]
    return pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)


def delta(before: pd.DataFrame, after: pd.DataFrame, kind: str) -> pd.DataFrame:
    """after - before per name; a counter that went backwards was cleared meanwhile and counts from 0.

    For each maximum column ``m``, ``m`` holds the window's maximum where it is
    known exactly and the prior maximum otherwise, and ``m_bound`` says
    ``exact`` or ``at most``.
    """
    add, maxima = ADDITIVE[kind], MAXIMA[kind]
    missing = [c for c in ["name", *add, *maxima] if c not in before.columns or c not in after.columns]
    if missing:
        raise ValueError(f"{kind} stats delta: missing columns {missing}")
    both = after.merge(before, on="name", how="left", suffixes=("", "_before"))
    out = pd.DataFrame({"name": both["name"]})
    cleared = pd.Series(False, index=both.index)
    for col in add:
        prior = both[f"{col}_before"].fillna(0).astype(float)
        now = both[col].astype(float)
        cleared |= now < prior
        out[col] = np.where(now >= prior, now - prior, now)
    for col in maxima:
        prior = both[f"{col}_before"].fillna(0).astype(float)
        now = both[col].astype(float)
        exact = (now > prior) | cleared
        out[col] = now
        out[f"{col}_bound"] = np.where(exact, "exact", "at most")
    if kind == "spinlock":
        out["spins_per_collision"] = np.where(out["collisions"] > 0, out["spins"] / out["collisions"].where(
            out["collisions"] > 0), np.nan)
    keep = out[add].sum(axis=1) > 0
    return out[keep].sort_values(add[1] if len(add) > 1 else add[0], ascending=False).reset_index(drop=True)


def first(frame: pd.DataFrame, names: Sequence[str]) -> pd.DataFrame:
    """The rows named in ``names`` first, in that order (present or not, as zeros), then the rest."""
    named = pd.DataFrame({"name": list(names)}).merge(frame, on="name", how="left")
    for col in frame.columns:
        if col != "name" and pd.api.types.is_numeric_dtype(frame[col]):
            named[col] = named[col].fillna(0)
    rest = frame[~frame["name"].isin(names)]
    return pd.concat([named, rest], ignore_index=True)


def clear_change(kinds: Sequence[str] = ("wait", "latch", "spinlock")) -> Change:
    """DBCC SQLPERF(..., CLEAR): server-wide, cannot be undone, so opt-in and printed like any server change."""
    targets = [CLEAR_TARGETS[k] for k in kinds]
    return Change(
        description="clear " + ", ".join(targets) + " server-wide (every other tool's baseline is lost; "
                    "this cannot be restored)",
        scope="server", read=lambda conn: None,
        apply=lambda prior: [f"DBCC SQLPERF('{t}', CLEAR)" for t in targets],
        restore=lambda prior: [],
    )


# -- trace flags ------------------------------------------------------------------
def trace_flag_change(flag: int) -> Change:
    """A global trace flag, on for the run and back to its prior state after (read with DBCC TRACESTATUS)."""
    flag = int(flag)

    def read(conn):
        cur = conn.cursor()
        cur.execute(f"DBCC TRACESTATUS({flag}, -1) WITH NO_INFOMSGS")
        rows = cur.fetchall() if cur.description else []
        return bool(rows and rows[0][2])  # columns: TraceFlag, Status, Global, Session

    return Change(
        description=f"global trace flag {flag}",
        scope="server", read=read,
        apply=lambda prior: [] if prior else [f"DBCC TRACEON({flag}, -1)"],
        restore=lambda prior: [] if prior else [f"DBCC TRACEOFF({flag}, -1)"],
    )


# -- performance counters ---------------------------------------------------------
PERF_COUNTER_BULK_COUNT = 272696576  # cumulative count: rate = delta / seconds
PERF_COUNTER_COUNTER = 272696320  # 32-bit cumulative count, same arithmetic
PERF_COUNTER_LARGE_RAWCOUNT = 65792  # an instantaneous value
PERF_LARGE_RAW_FRACTION = 537003264  # value / base, as a ratio
PERF_AVERAGE_BULK = 1073874176  # delta value / delta base (e.g. average latch wait time)
PERF_LARGE_RAW_BASE = 1073939712  # the base of the two above
RATE_TYPES = (PERF_COUNTER_BULK_COUNT, PERF_COUNTER_COUNTER)
KEY = ["object_name", "counter_name", "instance_name"]


def perf_counters_query(counters: Sequence[tuple[str, str]]) -> tuple[str, list[str]]:
    """SELECT for (object suffix, counter name) pairs, with their bases; returns (sql, params).

    The object is matched by suffix (``%:Latches``) because its prefix is
    ``SQLServer`` or ``MSSQL$INSTANCE``.
    """
    if not counters:
        raise ValueError("perf_counters_query: name at least one (object, counter) pair")
    clauses, params = [], []
    for obj, name in counters:
        clauses.append("(RTRIM(object_name) LIKE ? AND LOWER(RTRIM(counter_name)) IN (LOWER(?), LOWER(?)))")
        params += [f"%:{obj}", name, _base_name(name)]
    sql = ("SELECT RTRIM(object_name) AS object_name, RTRIM(counter_name) AS counter_name, "
           "RTRIM(instance_name) AS instance_name, cntr_value, cntr_type "
           "FROM sys.dm_os_performance_counters WHERE " + " OR ".join(clauses))
    return sql, params


def _base_name(counter: str) -> str:
    return (counter.rsplit(" (", 1)[0] if counter.endswith(")") else counter) + " Base"


def interpret(before: pd.DataFrame, after: pd.DataFrame, seconds: float) -> pd.DataFrame:
    """Counter values over a window, each by its type.

    Returns one row per non-base counter with ``value`` and ``unit``:
    rates for cumulative counts (per second), delta-over-delta-base for
    averages, value/base for fractions, the after value for raw counts.
    """
    if seconds <= 0:
        raise ValueError(f"interpret: window of {seconds} s; expected a positive duration")
    both = after.merge(before, on=KEY + ["cntr_type"], how="left", suffixes=("", "_before"))
    both["cntr_value_before"] = both["cntr_value_before"].fillna(both["cntr_value"])
    d = both["cntr_value"].astype(float) - both["cntr_value_before"].astype(float)
    both["delta"] = d.where(d >= 0, both["cntr_value"].astype(float))  # cleared meanwhile: counts from 0
    bases = both[both["cntr_type"] == PERF_LARGE_RAW_BASE].assign(counter_name=lambda f: f["counter_name"].str.lower())
    bases = bases.set_index(["object_name", "counter_name", "instance_name"])
    rows = []
    for r in both[both["cntr_type"] != PERF_LARGE_RAW_BASE].itertuples(index=False):
        t = int(r.cntr_type)
        base_key = (r.object_name, _base_name(r.counter_name).lower(), r.instance_name)  # "CPU usage % base"
        base = bases.loc[base_key] if base_key in bases.index else None
        if t in RATE_TYPES:
            value, unit = r.delta / seconds, "per second"
        elif t == PERF_AVERAGE_BULK:
            bd = float(base["delta"]) if base is not None else float("nan")
            value, unit = (r.delta / bd if bd > 0 else float("nan")), "average per event"
        elif t == PERF_LARGE_RAW_FRACTION:
            bv = float(base["cntr_value"]) if base is not None else float("nan")
            value, unit = (float(r.cntr_value) / bv if bv > 0 else float("nan")), "fraction"
        else:
            value, unit = float(r.cntr_value), "value"
        rows.append({"object_name": r.object_name, "counter": r.counter_name, "instance_name": r.instance_name,
                     "cntr_type": t, "value": value, "unit": unit})
    return pd.DataFrame(rows, columns=["object_name", "counter", "instance_name", "cntr_type", "value", "unit"])


class CounterSampler(PollingSampler):
    """Reads the named performance counters every ``every_s``; ``series()`` interprets each interval."""

    def __init__(self, connect: Callable[[], Any], counters: Sequence[tuple[str, str]], every_s: float = 1.0):
        sql, params = perf_counters_query(counters)
        super().__init__(connect, sql, params, hz=1.0 / every_s, name="counter-sampler")

    def series(self) -> pd.DataFrame:
        """One interpreted row per counter per interval, stamped with the interval's end (seconds)."""
        reads = [(t, f.drop(columns="t_s")) for t, f in self.frame().groupby("t_s", sort=True)] if self.rows else []
        frames = []
        for (t0, a), (t1, b) in zip(reads, reads[1:]):
            f = interpret(a, b, t1 - t0)
            f.insert(0, "t_s", round(t1, 3))
            frames.append(f)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["t_s", "object_name", "counter", "instance_name", "cntr_type", "value", "unit"])
