"""Waits as a DBA reads them: categorised, benign ones set aside, resource and signal time apart.

Three views of one run, each written to the recording:

- ``dmv/waits_dba.csv``: the server-wide ``sys.dm_os_wait_stats`` delta over the window, benign waits
  removed, each wait type with its category and the columns sp_BlitzFirst users know (wait time in
  seconds, per core per second, signal wait time, resource wait time, percent signal, number of waits,
  average ms per wait).  The categories and the benign list are data:
  ``harness/data/sqlserver_wait_categories.csv`` (its header cites its sources).
- ``samples/in_flight_waits.csv``: ``sys.dm_os_waiting_tasks`` sampled during the run, for the run's
  own database's sessions only: what is being waited on right now, and for how long.
- ``dmv/session_waits.csv``: ``sys.dm_exec_session_wait_stats`` (2016+) of the run's own sessions.
  Those counters vanish with their session, so they are read during the run (1 Hz) and the last
  reading of each session is kept: a lower bound that misses at most the last second of each session.

Units follow the DMVs' documentation: milliseconds in, seconds in the DBA table where sp_BlitzFirst
shows seconds.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd

from .polling import PollingSampler

CATEGORIES = Path(__file__).with_name("data") / "sqlserver_wait_categories.csv"
IN_FLIGHT = ("SELECT wt.session_id, wt.wait_type, wt.wait_duration_ms, wt.blocking_session_id, "
             "wt.resource_description FROM sys.dm_os_waiting_tasks AS wt "
             "JOIN sys.dm_exec_sessions AS s ON s.session_id = wt.session_id "
             "WHERE s.database_id = DB_ID() AND wt.session_id <> @@SPID")
SESSION_WAITS = ("SELECT sw.session_id, sw.wait_type, sw.waiting_tasks_count, sw.wait_time_ms, sw.max_wait_time_ms, "
                 "sw.signal_wait_time_ms FROM sys.dm_exec_session_wait_stats AS sw "
                 "JOIN sys.dm_exec_sessions AS s ON s.session_id = sw.session_id "
                 "WHERE s.database_id = DB_ID() AND sw.session_id <> @@SPID")
DBA_COLUMNS = {  # our column -> the name sp_BlitzFirst shows
    "wait_type": "wait_type", "wait_category": "wait_category", "wait_time_s": "Wait Time (Seconds)",
    "per_core_per_second": "Per Core Per Second", "signal_wait_time_s": "Signal Wait Time (Seconds)",
    "resource_wait_time_s": "Resource Wait Time (Seconds)", "percent_signal": "Percent Signal Waits",
    "waiting_tasks": "Number of Waits", "avg_ms_per_wait": "Avg ms Per Wait",
}


@lru_cache(maxsize=1)
def categories() -> pd.DataFrame:
    table = pd.read_csv(CATEGORIES, comment="#", keep_default_na=False)
    bad = table[~table["benign"].isin([0, 1])]
    if len(bad):
        raise ValueError(f"{CATEGORIES}: column benign must be 0 or 1, line(s) {list(bad.index + 2)}")
    return table


def classify(wait_type: str) -> tuple[str, bool]:
    """(category, benign) of a wait type: exact name first, then the longest matching ``prefix%``."""
    table = categories()
    exact = table[table["pattern"] == wait_type]
    if len(exact):
        return str(exact.iloc[0]["category"]), bool(exact.iloc[0]["benign"])
    best = None
    for row in table.itertuples(index=False):
        if row.pattern.endswith("%") and wait_type.startswith(row.pattern[:-1]):
            if best is None or len(row.pattern) > len(best.pattern):
                best = row
    return (str(best.category), bool(best.benign)) if best is not None else ("Other", False)


def dba_table(delta: pd.DataFrame, seconds: float, cores: int | None) -> pd.DataFrame:
    """A wait-stats delta (harness.sqlserver_dmv.delta of kind "wait") as a DBA's table, benign waits removed."""
    if delta.empty:
        return pd.DataFrame(columns=list(DBA_COLUMNS))
    kinds = delta["name"].map(classify)
    out = pd.DataFrame({
        "wait_type": delta["name"],
        "wait_category": [k[0] for k in kinds],
        "benign": [k[1] for k in kinds],
        "wait_time_s": delta["wait_time_ms"].astype(float) / 1000,
        "signal_wait_time_s": delta["signal_wait_time_ms"].astype(float) / 1000,
        "waiting_tasks": delta["waits"].astype(float),
    })
    out = out[~out["benign"]].drop(columns="benign")
    out["resource_wait_time_s"] = out["wait_time_s"] - out["signal_wait_time_s"]
    out["per_core_per_second"] = out["wait_time_s"] / seconds / cores if cores and seconds > 0 else float("nan")
    out["percent_signal"] = (100 * out["signal_wait_time_s"] / out["wait_time_s"]).where(out["wait_time_s"] > 0)
    out["avg_ms_per_wait"] = (1000 * out["wait_time_s"] / out["waiting_tasks"]).where(out["waiting_tasks"] > 0)
    return out.sort_values("wait_time_s", ascending=False)[list(DBA_COLUMNS)].reset_index(drop=True)


def in_flight_summary(samples: pd.DataFrame) -> pd.DataFrame:
    """Sampled waiting tasks per wait type: samples, share of samples, mean and max wait so far (ms)."""
    cols = ["wait_type", "wait_category", "samples", "share", "avg_wait_duration_ms", "max_wait_duration_ms"]
    if samples.empty:
        return pd.DataFrame(columns=cols)
    g = samples.groupby("wait_type")["wait_duration_ms"].agg(["size", "mean", "max"]).reset_index()
    g.columns = ["wait_type", "samples", "avg_wait_duration_ms", "max_wait_duration_ms"]
    g["share"] = g["samples"] / g["samples"].sum()
    g["wait_category"] = g["wait_type"].map(lambda w: classify(w)[0])
    return g.sort_values("samples", ascending=False)[cols].reset_index(drop=True)


def session_totals(samples: pd.DataFrame) -> pd.DataFrame:
    """The last reading of each session's counters, summed over the run's sessions per wait type."""
    # "session_count", not "sessions": the point's tags (variant, sessions ...) are added to these rows
    cols = ["wait_type", "wait_category", "session_count", "waiting_tasks", "wait_time_ms", "signal_wait_time_ms",
            "resource_wait_time_ms", "max_wait_time_ms"]
    if samples.empty:
        return pd.DataFrame(columns=cols)
    last = samples.sort_values("t_s").groupby(["session_id", "wait_type"]).tail(1)
    g = last.groupby("wait_type").agg(session_count=("session_id", "nunique"), waiting_tasks=("waiting_tasks_count", "sum"),
                                      wait_time_ms=("wait_time_ms", "sum"), signal_wait_time_ms=("signal_wait_time_ms", "sum"),
                                      max_wait_time_ms=("max_wait_time_ms", "max")).reset_index()
    g["resource_wait_time_ms"] = g["wait_time_ms"] - g["signal_wait_time_ms"]
    g["wait_category"] = g["wait_type"].map(lambda w: classify(w)[0])
    return g.sort_values("wait_time_ms", ascending=False)[cols].reset_index(drop=True)


class WaitWatch:
    """Samples in-flight waits (``hz``) and the run's sessions' wait counters (1 Hz) while a point runs."""

    def __init__(self, connect: Callable[[], Any], hz: float = 10.0):
        self.in_flight = PollingSampler(connect, IN_FLIGHT, hz=hz, name="in-flight-waits")
        self.sessions = PollingSampler(connect, SESSION_WAITS, hz=1.0, name="session-waits")

    def start(self) -> "WaitWatch":
        self.in_flight.start()
        self.sessions.start()
        return self

    def stop(self) -> "WaitWatch":
        self.in_flight.stop()
        self.sessions.stop()
        return self

    def write(self, writer, tags: Mapping[str, Any], before: pd.DataFrame, after: pd.DataFrame, seconds: float,
              cores: int | None) -> None:
        """The three tables of this point, tagged (variant, sessions, repetition ...)."""
        from .sqlserver_dmv import delta

        writer.append_csv("dmv/waits_dba.csv", dba_table(delta(before, after, "wait"), seconds, cores).assign(**tags))
        writer.append_csv("samples/in_flight_waits.csv", in_flight_summary(self.in_flight.frame()).assign(**tags))
        writer.append_csv("dmv/session_waits.csv", session_totals(self.sessions.frame()).assign(**tags))
        for s in (self.in_flight, self.sessions):
            if s.error:
                writer.add_note(f"{s.name} sampling stopped early ({', '.join(f'{k}={v}' for k, v in tags.items())}): "
                                f"{s.error}")
