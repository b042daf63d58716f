"""Reading a ghost-cleanup recording (published or measured), checking every file it needs."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from contention_book.harness import recording as rec

from .common import (
    CHAPTER,
    COUNTER_COLUMNS,
    CURVE_COLUMNS,
    FILES,
    INDEX_COLUMNS,
    PUBLISHED,
    RELATION_COLUMNS,
    RUNS_COLUMNS,
)


@dataclass
class GhostRecording(rec.RecordingView):
    recording: rec.Recording
    runs: pd.DataFrame
    curve: pd.DataFrame | None = None
    index_stats: pd.DataFrame | None = None
    relation_stats: pd.DataFrame | None = None
    counters: pd.DataFrame | None = None
    stacks: dict[str, Path] = field(default_factory=dict)

    @property
    def label(self) -> str:
        eng = self.recording.engine
        if eng["name"] == "sqlserver":
            return f"SQL Server {eng['version']} ({self.recording.kind})"
        return f"PostgreSQL {eng['version'].split()[0]} ({self.recording.kind})"


def load(ref: str | Path) -> GhostRecording:
    """Open a recording of this chapter by id or directory, checking every file it needs."""
    r = rec.open_chapter(CHAPTER, ref)
    out = GhostRecording(r, r.csv(FILES["runs"], RUNS_COLUMNS))
    if r.has(FILES["curve"]):
        out.curve = r.csv(FILES["curve"], CURVE_COLUMNS)
    if r.has(FILES["index"]):
        out.index_stats = r.csv(FILES["index"], INDEX_COLUMNS)
    if r.has(FILES["relation"]):
        out.relation_stats = r.csv(FILES["relation"], RELATION_COLUMNS)
    if r.has(FILES["counters"]):
        out.counters = r.csv(FILES["counters"], COUNTER_COLUMNS)
    out.stacks = {Path(f).name.split(".")[0]: r.path / f for f in r.files
                  if f.startswith("stacks/") and f.endswith(".folded.gz")}
    if out.index_stats is None and out.relation_stats is None:
        raise rec.RecordingError(
            f"recording {r.path}: has neither {FILES['index']} nor {FILES['relation']}; "
            "expected the storage statistics of the test table")
    return out


def load_published() -> list[GhostRecording]:
    return [load(pid) for pid in PUBLISHED]
