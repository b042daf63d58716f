"""What a recording keeps about how each point's load was driven and watched.

Two tables every PostgreSQL chapter declares (``LOAD_TABLES``) and its
runner fills through :func:`record`:

- ``samples/intervals.csv``: one row per second of each point's window
  (calls, errors, retries, calls/s, p50/p99/max latency, p99 schedule lag),
  so a figure can show throughput over time, where a convoy's onset shows;
- ``results/load_points.csv``: one row per point: loop (closed, or open with
  its rate and arrival), latency percentiles, the point's HDR histogram
  encoded (:mod:`.latency`; any percentile can be read later), the schedule
  lag's, how the driver ran the sessions (an event loop, or a thread each), errors by class, calls tried,
  calls that lost their connection (by
  class; such a point is noted as failed and set aside on load), the wait sampler used and its observer cost (CPU
  seconds per second of run), and the share of the workload backends'
  samples spent in the server against waiting for the client.

Recordings made before these tables existed load without them.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import pandas as pd

from .driver import RunResult
from .spec import Table

INTERVALS = Table("samples/intervals.csv",
                  ("variant", "sessions", "second", "interval_s", "operations", "errors", "throughput", "p50_ms",
                   "p99_ms", "max_ms"),
                  description="one row per second of each point's window",
                  unique=("variant", "sessions", "repetition", "second"))
POINTS = Table("results/load_points.csv",
               ("variant", "sessions", "operations", "errors", "retries", "p50_ms", "p99_ms", "p999_ms", "max_ms",
                "histogram"),
               description="per point: loop, latency HDR histogram (encoded), errors by class, sampler cost",
               unique=("variant", "sessions", "repetition"),
               text=("histogram", "lag_histogram", "loop", "arrival", "error_classes", "wait_source", "lost_classes",
                     "driver"))
LOAD_TABLES = {"intervals": INTERVALS, "load_points": POINTS}


def point_row(result: RunResult, **keys: Any) -> dict[str, Any]:
    """One load_points.csv row for a point."""
    h = result.histogram
    lag = result.lag
    return {**keys, "loop": "open" if result.rate else "closed", "rate": result.rate or math.nan,
            "arrival": result.arrival if result.rate else "", "warmup_s": result.warmup_s,
            "operations": result.operations, "errors": result.errors, "retries": result.retries,
            "throughput": result.throughput, "p50_ms": h.percentile_ms(50), "p90_ms": h.percentile_ms(90),
            "p99_ms": h.percentile_ms(99), "p999_ms": h.percentile_ms(99.9), "max_ms": h.max_ns / 1e6 if h.total
            else math.nan, "lag_p50_ms": lag.percentile_ms(50) if lag else math.nan,
            "lag_p99_ms": lag.percentile_ms(99) if lag else math.nan, "histogram": h.encode(),
            "lag_histogram": lag.encode() if lag else "", "error_classes": result.errors_text(),
            "attempts": result.attempts, "lost_connections": result.lost, "lost_classes": result.lost_text(),
            "reconnects": result.reconnects, "driver": result.driver}


def sampler_columns(sampler, frame=None, pids=None) -> dict[str, Any]:
    """The wait sampler's name, rate and observer cost, and the client-bound shares from its frame."""
    from .pg_waits import client_bound

    out = {"wait_source": getattr(sampler, "source", ""), "wait_sample_hz": sampler.achieved_hz,
           "observer_cpu_per_s": getattr(sampler, "cpu_per_s", math.nan)}
    if frame is not None:
        out.update(client_bound(frame, pids))
    return out


def record(writer, result: RunResult, *, log: Callable[[str], None] | None = None, sampler=None, frame=None,
           pids=None, **keys: Any) -> dict[str, Any]:
    """Append a point's interval rows and its load_points row; log the client-bound check."""
    intervals = result.intervals()
    if len(intervals):
        writer.append_csv(INTERVALS.path, pd.concat([pd.DataFrame([keys] * len(intervals)), intervals], axis=1))
    row = point_row(result, **keys)
    if result.lost:  # the point ran with sessions that lost their connections: not a clean measurement
        where = ", ".join(f"{k}={v}" for k, v in keys.items())
        writer.add_note(f"point {where}: failed: {result.lost} call(s) lost their session's connection "
                        f"({result.lost_text()}; {result.reconnects} reconnect(s), {result.errors} error(s) in "
                        f"{result.attempts} call(s) tried); set aside, not a result")
        result.lost_noted = True
        if log:
            log(f"[load] {where}: sessions lost their connections: {result.lost_text()}; the point is marked "
                "failed in the recording")
    if sampler is not None:
        row.update(sampler_columns(sampler, frame, pids))
    writer.append_csv(POINTS.path, pd.DataFrame([row]))
    if log and sampler is not None and not math.isnan(row.get("client_share", math.nan)):
        where = ", ".join(f"{k}={v}" for k, v in keys.items())
        backoff = row.get("backoff_share", 0.0)
        log(f"[load] {where}: backends in the server {row['server_share']:.0%} of samples, waiting for the client "
            f"{row['client_share']:.0%}" + (f", backing off in their own loop {backoff:.0%}" if backoff > 0 else "")
            + f"; sampler {row['wait_source']} cost {row['observer_cpu_per_s'] * 1e3:.1f} "
            f"ms CPU per s" + (f"; errors {row['error_classes']}" if row["error_classes"] else ""))
    return row


def driver_options(params: dict[str, Any]) -> dict[str, Any]:
    """run_sessions keywords from a chapter's parsed parameters (harness.params.load)."""
    return {"warmup_s": params.get("warmup_s") or 0.0, "rate": params.get("rate"),
            "arrival": params.get("arrival") or "poisson"}


NO_LOAD_POINTS = ("This recording has no load_points table: it was made before the driver kept per-point "
                  "histograms, sampler costs and client-bound shares. A fresh live run writes them.")


def load_summary(view) -> pd.DataFrame | str:
    """Per variant and session count (medians over repetitions): calls/s, p99, the share of the workload
    backends' samples in the server and waiting for the client, the sampler and its cost; or a note saying
    the recording predates these columns."""
    points = view.by_repetition("load_points") if view is not None else None
    if points is None or points.empty:
        return NO_LOAD_POINTS
    cols = [c for c in ("throughput", "p99_ms", "lag_p99_ms", "server_share", "client_share", "backoff_share",
                        "observer_cpu_per_s",
                        "retries", "errors") if c in points.columns]
    out = points.groupby(["variant", "sessions"], sort=False)[cols].median()
    if "backoff_share" in out and not out["backoff_share"].fillna(0).any():
        out = out.drop(columns="backoff_share")  # no loop backed off in the server: nothing to show
    if "wait_source" in points.columns:
        out["wait_source"] = points.groupby(["variant", "sessions"], sort=False)["wait_source"].first()
    if "observer_cpu_per_s" in out:
        out["observer_cpu_per_s"] = out["observer_cpu_per_s"] * 1e3
        out = out.rename(columns={"observer_cpu_per_s": "sampler CPU ms/s"})
    # the harness's own bookkeeping (errors, retries, the sampler and its cost) is one sentence, not columns:
    # a column that says the same in every row goes into it; one that varies stays a column
    said = []
    for col, words in (("errors", "errors"), ("retries", "retries"), ("wait_source", "wait sampler")):
        if col in out and out[col].nunique(dropna=False) == 1:
            value = out[col].iloc[0]
            said.append(f"{words} {value:,.0f}" if isinstance(value, (int, float)) else f"{words} {value}")
            out = out.drop(columns=col)
    if "sampler CPU ms/s" in out:
        said.append(f"the sampler's own CPU at most {out['sampler CPU ms/s'].max():.1f} ms a second")
        out = out.drop(columns="sampler CPU ms/s")
    out.attrs["said_once"] = "Every point: " + "; ".join(said) + "." if said else ""
    # the driver counts calls: one row, or a server-side loop's worth of rows or messages
    return out.rename(columns={"throughput": "calls_per_s"}).round(3)


def wait_sampler_text(g) -> str:
    """How this recording sampled wait events, in words (the load check names its sampler)."""
    points = g.by_repetition("load_points")
    source = ""
    if points is not None and "wait_source" in points and points["wait_source"].notna().any():
        source = str(points["wait_source"].dropna().iloc[0])
    hz = (f", about {points['wait_sample_hz'].median():.0f} times a second"
          if source and "wait_sample_hz" in points and points["wait_sample_hz"].notna().any() else "")
    if source == "pg_wait_sampling":
        return f"Wait events are sampled inside the server by the pg_wait_sampling extension{hz}."
    if source:
        return f"Wait events are sampled by polling pg_stat_activity{hz}."
    return "Wait events are sampled by polling pg_stat_activity 20 times a second."
