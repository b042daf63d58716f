"""What the cache-line chapter shows: its recordings, opened whatever engine made them."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contention_book.harness import recording as rec

from ..shared.shown import titled
from ..shared.stacks import load_profiles, parse_spec
from .spec import CHAPTER, DEFAULT_MEASURED, LAYOUT, PUBLISHED, PUBLISHED_C2C


class LogcacheRecording(rec.RecordingView):
    """A recording of this chapter (the base view's tables, stacks and label, and the machine's CPU count)."""

    @property
    def logical_cpus(self) -> int | None:
        return self.recording.host.get("logical_cpus")


@dataclass
class Shown:
    """Everything the page shows: the published recordings, the measured ones by engine, the stacks."""

    published: LogcacheRecording
    pub_c2c: LogcacheRecording
    measured: dict[str, LogcacheRecording]
    stack_groups: dict[str, dict[str, Any]] = field(default_factory=dict)  # recording -> variant -> Profile
    stacks_param: str = ""


# runs.csv columns the pages and identities compute with (the toy's and the PostgreSQL analogue's), checked as
# numbers before any of them is used, so a bad value is named by file, line and column.
NUMERIC_RUNS = ("workers", "writer_cpu", "elapsed_s", "records", "throughput", "collisions", "spins", "backoffs",
                "collisions_per_record", "spins_per_record", "backoffs_per_record", "writer_flushes",
                "writer_flushes_per_s", "writer_backoffs", "writer_wait_p50_ns", "writer_wait_p99_ns",
                "record_bytes", "buffer_bytes", "inline_flushes", "bytes_appended", "bytes_flushed", "bytes_left",
                "inline_bytes", "writer_bytes", "rows", "rows_counted", "errors",
                "retries", "batch_rows", "operations", "repetition")


def load(ref: str | Path) -> LogcacheRecording:
    """Open a recording by id (under data/logcache-spinlock/) or directory, checking the files it needs."""
    r = rec.open_chapter(CHAPTER, ref)
    if r.kind == "measured" and r.has(LAYOUT["runs"].path):
        frame = r.csv(LAYOUT["runs"].path)
        rec.check_values(r, LAYOUT["runs"].path, frame, [c for c in NUMERIC_RUNS if c in frame.columns])
    out = rec.load_view(CHAPTER, r.path, LAYOUT, LogcacheRecording)
    if out.kind == "published" and out.runs is None and out.table("published_c2c") is None:
        raise rec.RecordingError(f"recording {out.recording.path}: a published recording needs "
                                 f"{LAYOUT['runs'].path} or {LAYOUT['published_c2c'].path}")
    return out


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


def load_shown(recording: str = "", stacks: str = "") -> Shown:
    measured = load_measured(recording or None)
    groups = {g.id: load_profiles(g.stacks) for g in measured.values() if g.stacks}
    if stacks:
        groups["stacks parameter"] = load_profiles(parse_spec(stacks))
    return Shown(load(PUBLISHED), load(PUBLISHED_C2C), measured, groups, stacks)


def header_note(shown: Shown) -> str:
    measured = shown.measured
    listed = [("Measured", measured[e].recording) for e in ("native", "postgres", "sqlserver") if e in measured]
    published = [shown.published.recording, shown.pub_c2c.recording]
    lines = [titled(rec.shown_note(listed, published), [r for _, r in listed] + published)]
    if "sqlserver" not in measured:
        lines.append("- No SQL Server recording: the SQL Server figures are the article's. Pass a recording made "
                     "with `ENGINE=sqlserver` as `RECORDING=` to see your own.")
    if shown.stacks_param:
        lines.append(f"- Stacks — from the `stacks` parameter: {shown.stacks_param}")
    return "\n".join(lines)
