"""Sample PostgreSQL wait events from pg_stat_activity while a workload runs.

PostgreSQL has no cumulative wait statistics (no sys.dm_os_wait_stats), so
the way to see where sessions wait is to look often: every backend's
``wait_event_type`` / ``wait_event`` at 10-20 Hz (harness.polling).
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd

from .polling import PollingSampler

COLUMNS = ["t_s", "pid", "backend_type", "state", "wait_event_type", "wait_event"]
# The sampler's own query is left out; background processes (walwriter, checkpointer...)
# have no database, so they are kept whatever database is asked for.
QUERY = """
SELECT pid, backend_type, coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, '')
FROM pg_stat_activity
WHERE pid <> pg_backend_pid() AND (datname IS NULL OR datname = ?)
"""


class WaitSampler(PollingSampler):
    """pg_stat_activity at ``hz``; ``frame()`` has the columns in COLUMNS."""

    def __init__(self, connect: Callable[[], Any], database: str, hz: float = 20.0):
        super().__init__(connect, QUERY, [database], hz=hz, name="wait-sampler")

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=COLUMNS)


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


def shares(frame: pd.DataFrame, backend_type: str | None = "client backend") -> pd.DataFrame:
    """Share of samples per wait label (idle samples left out), for one kind of backend."""
    f = frame if backend_type is None else frame[frame["backend_type"] == backend_type]
    labs = label(f)
    labs = labs[labs != "idle"]
    counts = labs.value_counts()
    out = counts.rename_axis("wait").reset_index(name="samples")
    out["share"] = out["samples"] / out["samples"].sum() if len(out) else []
    return out


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
