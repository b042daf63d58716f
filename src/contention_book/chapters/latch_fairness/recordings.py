"""Reading any recording of this chapter: published, measured on SQL Server, or a native sweep."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from contention_book.harness import recording as rec

from .common import (CHAPTER, COUNTER_COLUMNS, FILES, LATCH_COLUMNS, NATIVE_COLUMNS, PUBLISHED, RUNS_COLUMNS,
                     SPINLOCK_COLUMNS, WAIT_COLUMNS)


@dataclass
class LatchRecording(rec.RecordingView):
    recording: rec.Recording
    runs: pd.DataFrame
    latch: pd.DataFrame | None = None
    spinlock: pd.DataFrame | None = None
    wait: pd.DataFrame | None = None
    log_space: pd.DataFrame | None = None
    counters: pd.DataFrame | None = None

    @property
    def is_native(self) -> bool:
        return self.engine == "native"

    @property
    def label(self) -> str:
        eng = self.recording.engine
        if eng["name"] == "sqlserver":
            return f"SQL Server {eng['version']} ({self.recording.kind})"
        if eng["name"] == "native":
            cpus = self.recording.host.get("logical_cpus")
            return f"native lock sweep, {cpus} logical CPUs ({self.recording.kind})"
        return f"{eng['name']} {eng['version']} ({self.recording.kind})"

    @property
    def logical_cpus(self) -> int | None:
        return self.recording.host.get("logical_cpus")


def load(ref: str | Path) -> LatchRecording:
    """Open a recording of this chapter by id or directory, checking the files its engine needs."""
    r = rec.open_chapter(CHAPTER, ref)
    engine = r.engine["name"]
    if engine == "native":
        runs = r.csv(FILES["runs"], (*RUNS_COLUMNS, *NATIVE_COLUMNS))
        if runs.empty:
            raise rec.RecordingError(f"recording {r.path}: file {FILES['runs']} has no rows; expected one row "
                                     "per lock kind, thread count and repetition")
        return LatchRecording(r, runs)
    if engine != "sqlserver":
        raise rec.RecordingError(f"recording {r.path}: engine {engine!r}; this chapter reads 'native' or "
                                 "'sqlserver' recordings (there is no PostgreSQL analogue of this latch)")
    out = LatchRecording(r, r.csv(FILES["runs"], RUNS_COLUMNS))
    for key, cols in (("latch", LATCH_COLUMNS), ("spinlock", SPINLOCK_COLUMNS), ("wait", WAIT_COLUMNS)):
        if not r.has(FILES[key]):
            raise rec.RecordingError(f"recording {r.path}: has no {FILES[key]}; expected the {key} statistics "
                                     "of each variant")
        setattr(out, key, r.csv(FILES[key], cols))
    if r.has(FILES["log_space"]):
        out.log_space = r.csv(FILES["log_space"])
    if r.has(FILES["counters"]):
        out.counters = r.csv(FILES["counters"], COUNTER_COLUMNS)
    return out


def load_published() -> LatchRecording:
    return load(PUBLISHED)
