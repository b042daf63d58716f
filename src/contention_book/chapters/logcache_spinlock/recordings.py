"""Opening recordings of this chapter, whatever engine made them."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from contention_book.harness import recording as rec

from .common import CHAPTER, COLUMNS, DEFAULT_MEASURED, FILES, PUBLISHED, PUBLISHED_C2C, RUNS_COLUMNS


@dataclass
class LogcacheRecording(rec.RecordingView):
    recording: rec.Recording
    runs: pd.DataFrame | None = None
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    stacks: dict[str, Path] = field(default_factory=dict)

    def table(self, key: str) -> pd.DataFrame | None:
        return self.tables.get(key)

    @property
    def trace_flags(self) -> list[int]:
        flags = self.recording.engine.get("settings", {}).get("trace_flags", [])
        return sorted(int(f) for f in flags)

    @property
    def label(self) -> str:
        eng = self.recording.engine
        if eng["name"] == "sqlserver":
            tf = f", TF {', '.join(map(str, self.trace_flags))}" if self.trace_flags else ""
            return f"SQL Server {eng['version']}{tf} ({self.kind})"
        if eng["name"] == "postgres":
            return f"PostgreSQL {eng['version'].split()[0]} ({self.kind})"
        cpu = self.recording.host.get("cpu_model") or "this machine"
        return f"native on {cpu} ({self.kind})"


def load(ref: str | Path) -> LogcacheRecording:
    """Open a recording by id (under data/logcache-spinlock/) or directory, checking the files it needs."""
    r = rec.open_chapter(CHAPTER, ref)
    out = LogcacheRecording(r)
    if r.has(FILES["runs"]):
        out.runs = r.csv(FILES["runs"], RUNS_COLUMNS)
    for key, cols in COLUMNS.items():
        if r.has(FILES[key]):
            out.tables[key] = r.csv(FILES[key], cols)
    out.stacks = {Path(f).name.split(".")[0]: r.path / f for f in r.files
                  if f.startswith("stacks/") and f.endswith(".folded.gz")}
    engine = out.engine
    needs = {"native": ("c2c", "chase", "ctxswitch"), "postgres": ("pg_waits",), "sqlserver": ("spinlocks",)}
    if r.kind == "measured":
        missing = [FILES[k] for k in needs[engine] if k not in out.tables]
        if out.runs is None and engine != "native":
            missing.insert(0, FILES["runs"])
        if missing:
            raise rec.RecordingError(f"recording {r.path}: a measured {engine} recording of this chapter needs "
                                     f"{', '.join(missing)}; they are not listed in its manifest")
    elif out.runs is None and "published_c2c" not in out.tables:
        raise rec.RecordingError(f"recording {r.path}: a published recording needs {FILES['runs']} or "
                                 f"{FILES['published_c2c']}")
    return out


def load_published() -> tuple[LogcacheRecording, LogcacheRecording]:
    return load(PUBLISHED), load(PUBLISHED_C2C)


def load_measured(recording: str | Path | None) -> dict[str, LogcacheRecording]:
    """The reference recordings per engine, with ``recording`` (any engine) taking its engine's place."""
    out: dict[str, LogcacheRecording] = {}
    for engine, rid in DEFAULT_MEASURED.items():
        if (rec.data_root() / CHAPTER / rid / rec.MANIFEST).is_file():
            out[engine] = load(rid)
    if recording:
        mine = load(recording)
        if mine.kind != "measured":
            raise rec.RecordingError(f"recording {mine.recording.path}: kind is {mine.kind!r}; the 'recording' "
                                     "parameter takes a measured recording (published ones are always shown)")
        out[mine.engine] = mine
    return out
