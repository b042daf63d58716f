"""A SQL Server recording's wait tables, with the column names a DBA knows from sp_BlitzFirst.

The runs write them with plain column names (harness.sqlserver_waits); a page shows them renamed.
A recording made before these tables existed (or by another engine) has none: the functions return
None and the page says so.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from contention_book.harness.sqlserver_waits import DBA_COLUMNS

IN_FLIGHT_NAMES = {"wait_type": "wait_type", "wait_category": "wait_category", "samples": "Samples",
                   "share": "Share of samples", "avg_wait_duration_ms": "Avg Wait So Far (ms)",
                   "max_wait_duration_ms": "Max Wait So Far (ms)"}
SESSION_NAMES = {"wait_type": "wait_type", "wait_category": "wait_category", "sessions": "Sessions",
                 "waiting_tasks": "Number of Waits", "wait_time_ms": "Wait Time (ms)",
                 "signal_wait_time_ms": "Signal Wait Time (ms)", "resource_wait_time_ms": "Resource Wait Time (ms)",
                 "max_wait_time_ms": "Max Wait (ms)"}


def _read(recording: str | Path, name: str, names: dict[str, str]) -> pd.DataFrame | None:
    path = Path(recording) / name
    if not path.is_file():
        return None
    frame = pd.read_csv(path)
    tags = [c for c in frame.columns if c not in names]
    return frame[tags + [c for c in names if c in frame.columns]].rename(columns=names)


def dba_waits(recording: str | Path) -> pd.DataFrame | None:
    """Server-wide waits over each point, benign waits removed (dmv/waits_dba.csv)."""
    return _read(recording, "dmv/waits_dba.csv", DBA_COLUMNS)


def in_flight_waits(recording: str | Path) -> pd.DataFrame | None:
    """What the run's own sessions were waiting on when sampled (samples/in_flight_waits.csv)."""
    return _read(recording, "samples/in_flight_waits.csv", IN_FLIGHT_NAMES)


def session_waits(recording: str | Path) -> pd.DataFrame | None:
    """The run's own sessions' wait counters (dmv/session_waits.csv)."""
    return _read(recording, "dmv/session_waits.csv", SESSION_NAMES)
