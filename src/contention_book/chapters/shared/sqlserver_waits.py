"""A SQL Server recording's wait tables, with the column names a DBA knows from sp_BlitzFirst.

The runs write them with plain column names (harness.sqlserver_waits); a page shows them renamed.
A recording made before these tables existed (or by another engine) has none: the functions return
None.  The ``show_*`` functions put one table on a page for every SQL Server recording the chapter shows,
through the book's table helper; where the page shows no SQL Server recording they print nothing.
:func:`show_sqlserver_waits` says what the three tables are and shows them, or prints nothing at all: a page
whose recordings are native or PostgreSQL gets no heading over tables it cannot have.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

from contention_book.harness.recording import Recording
from contention_book.harness.sqlserver_waits import DBA_COLUMNS

IN_FLIGHT_NAMES = {"wait_type": "wait_type", "wait_category": "wait_category", "samples": "Samples",
                   "share": "Share of samples", "avg_wait_duration_ms": "Avg Wait So Far (ms)",
                   "max_wait_duration_ms": "Max Wait So Far (ms)"}
SESSION_NAMES = {"wait_type": "wait_type", "wait_category": "wait_category", "session_count": "Sessions",
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


ROWS_PER_POINT = 5  # a DBA reads the top waits of each point; the recording keeps them all


def sqlserver_recordings(shown: Any, depth: int = 0) -> list[Recording]:
    """Every measured SQL Server recording a chapter's ``shown`` holds, once each, in the order met.

    Chapters hold their views differently (one ``measured``, a dict per engine, ``db``); this walks them
    so each page needs no code of its own.  Published recordings carry no wait tables and are skipped.
    """
    found: list[Recording] = []
    if depth > 3 or shown is None or isinstance(shown, (str, bytes, int, float, pd.DataFrame, Path)):
        return found
    recording = getattr(shown, "recording", None)
    if isinstance(recording, Recording):
        if recording.engine.get("name") == "sqlserver" and recording.kind != "published":
            found.append(recording)
        return found
    items = shown.values() if isinstance(shown, dict) else (
        shown if isinstance(shown, (list, tuple)) else (vars(shown).values() if hasattr(shown, "__dict__") else ()))
    for value in items:
        for r in sqlserver_recordings(value, depth + 1):
            if all(r.path != f.path for f in found):
                found.append(r)
    return found


def top_per_point(frame: pd.DataFrame, names: dict[str, str], rows: int = ROWS_PER_POINT) -> pd.DataFrame:
    """The first ``rows`` rows of each point (the tag columns: variant, sessions, repetition ...), tags as index."""
    tags = [c for c in frame.columns if c not in names.values()]
    if not tags:
        return frame.head(rows)
    return frame.groupby(tags, sort=False, dropna=False).head(rows).set_index(tags)


TABLES = {  # kind -> (reader, its column names, what the table is)
    "dba": (dba_waits, DBA_COLUMNS, "server-wide waits over each point, benign waits removed, in sp_BlitzFirst's "
            "columns"),
    "in_flight": (in_flight_waits, IN_FLIGHT_NAMES, "in-flight waits of the run's own sessions, sampled from "
                  "`sys.dm_os_waiting_tasks`"),
    "session": (session_waits, SESSION_NAMES, "the run's own sessions' waits from "
                "`sys.dm_exec_session_wait_stats`, resource and signal time apart"),
}


def wait_tables(shown: Any, kind: str, rows: int = ROWS_PER_POINT) -> list[tuple[str, pd.DataFrame | None]]:
    """(caption, table) of one kind for each SQL Server recording shown; table None where it was not recorded."""
    if kind not in TABLES:
        raise ValueError(f"kind={kind!r}: expected one of {', '.join(TABLES)}")
    read, names, what = TABLES[kind]
    out: list[tuple[str, pd.DataFrame | None]] = []
    for recording in sqlserver_recordings(shown):
        frame = read(recording.path)
        if frame is None:
            out.append((f"*{recording.id}: recorded before this table existed.*", None))
        else:
            out.append((f"*Measured, {recording.id}: {what} (top {rows} rows per point).*",
                        top_per_point(frame, names, rows)))
    return out


def _show(shown: Any, kind: str, rows: int) -> None:
    from IPython.display import Markdown, display

    for caption, table in wait_tables(shown, kind, rows):
        display(Markdown(caption))
        if table is not None:
            display(table)  # DataFrames render through display.table_html (installed by notebook.start)


def show_dba_waits(shown: Any, rows: int = ROWS_PER_POINT) -> None:
    """The server-wide waits of each point as sp_BlitzFirst shows them, benign waits removed."""
    _show(shown, "dba", rows)


def show_in_flight_waits(shown: Any, rows: int = ROWS_PER_POINT) -> None:
    """What the run's own sessions were waiting on when sampled (`sys.dm_os_waiting_tasks`)."""
    _show(shown, "in_flight", rows)


def show_session_waits(shown: Any, rows: int = ROWS_PER_POINT) -> None:
    """The run's own sessions' wait counters (`sys.dm_exec_session_wait_stats`), resource and signal apart."""
    _show(shown, "session", rows)


def lead(sessions: str, note: str = "") -> str:
    """The words over a SQL Server recording's three wait tables: what each holds, with the column names and units
    of sp_BlitzFirst; ``sessions`` names the run's own sessions ("the inserting sessions"), ``note`` says which
    wait the chapter is about."""
    return (f"**Your SQL Server's waits, as a DBA reads them.** The SQL Server recording shown keeps its waits with "
            "the column names and units of sp_BlitzFirst: the server-wide waits over each point with benign waits "
            f"removed and resource and signal time apart, what {sessions} were waiting on when sampled"
            + (f" ({note})" if note else "") + ", and those sessions' own wait counters.")


def show_sqlserver_waits(shown: Any, sessions: str = "the run's own sessions", note: str = "",
                         rows: int = ROWS_PER_POINT) -> bool:
    """The lead and the three wait tables where the page shows a SQL Server recording; nothing otherwise.
    True when it showed them."""
    from IPython.display import Markdown, display

    if not sqlserver_recordings(shown):
        return False
    display(Markdown(lead(sessions, note)))
    show_dba_waits(shown, rows)
    show_in_flight_waits(shown, rows)
    show_session_waits(shown, rows)
    return True
