"""Opening recordings of this chapter, published or measured, with every file checked."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pandas as pd

from contention_book.harness import recording as rec

from .common import (CHAPTER, DEFAULT_MEASURED, FALSE_SHARING_COLUMNS, FILES, FINDING_COLUMNS, INCREMENT_COLUMNS,
                     PUBLISHED_ADKIN, PUBLISHED_LMAX, RELATION_COLUMNS, RUNS_COLUMNS, SPINLOCK_COLUMNS,
                     WAIT_COLUMNS)


@dataclass
class LmaxRecording(rec.RecordingView):
    recording: rec.Recording
    runs: pd.DataFrame
    false_sharing: Optional[pd.DataFrame] = None
    waits: Optional[pd.DataFrame] = None
    relation: Optional[pd.DataFrame] = None
    spinlocks: Optional[pd.DataFrame] = None
    latches: Optional[pd.DataFrame] = None
    sqlwaits: Optional[pd.DataFrame] = None
    findings: Optional[pd.DataFrame] = None
    increments: Optional[pd.DataFrame] = None

    @property
    def label(self) -> str:
        eng = self.recording.engine
        kind = self.recording.kind
        if eng["name"] == "sqlserver":
            return f"SQL Server {eng['version']} ({kind})"
        if eng["name"] == "postgres":
            return f"PostgreSQL {str(eng['version']).split()[0]} ({kind})"
        if kind == "published":
            return "LMAX paper, Java (published)"
        return f"native C ({kind})"


_OPTIONAL = {
    "false_sharing": FALSE_SHARING_COLUMNS, "waits": WAIT_COLUMNS, "relation": RELATION_COLUMNS,
    "spinlocks": SPINLOCK_COLUMNS, "latches": ("variant", "sessions", "name", "waits", "wait_time_ms"),
    "sqlwaits": ("variant", "sessions", "name", "waits", "wait_time_ms"), "findings": FINDING_COLUMNS,
    "increments": INCREMENT_COLUMNS,
}


def load(ref: str | Path) -> LmaxRecording:
    """Open a recording of this chapter by id or directory."""
    r = rec.open_chapter(CHAPTER, ref)
    runs = r.csv(FILES["runs"], RUNS_COLUMNS)
    if runs.empty:
        raise rec.RecordingError(f"recording {r.path}: file {FILES['runs']} has no rows; expected one per run")
    out = LmaxRecording(r, runs)
    for attr, cols in _OPTIONAL.items():
        if r.has(FILES[attr]):
            setattr(out, attr, r.csv(FILES[attr], cols))
    if out.engine == "native" and r.kind == "measured" and out.false_sharing is None:
        raise rec.RecordingError(f"recording {r.path}: a measured native recording needs {FILES['false_sharing']}")
    return out


def load_published() -> tuple[LmaxRecording, LmaxRecording]:
    return load(PUBLISHED_ADKIN), load(PUBLISHED_LMAX)


def load_measured(recording: str | Path | None = "") -> tuple[LmaxRecording, LmaxRecording]:
    """(native, database) recordings to show: the references, with ``recording`` in place of its engine's one."""
    native = load(DEFAULT_MEASURED["native"])
    database = load(DEFAULT_MEASURED["postgres"])
    if recording:
        chosen = load(recording)
        if chosen.recording.kind != "measured":
            raise rec.RecordingError(f"recording {chosen.recording.path}: kind is {chosen.recording.kind!r}; "
                                     "expected a measured recording (the published ones are always shown)")
        if chosen.engine == "native":
            native = chosen
        else:
            database = chosen
    return native, database
