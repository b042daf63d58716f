"""What the latch chapter shows: the article's recording and one measured recording (native or SQL Server)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contention_book.harness import recording as rec

from .spec import CHAPTER, DEFAULT_MEASURED, KINDS, LAYOUT, NATIVE_ACCOUNTING, NATIVE_COLUMNS, PUBLISHED


@rec.with_tables("latch", "spinlock", "wait", "log_space", "counters")
class LatchRecording(rec.RecordingView):
    """A recording of this chapter; the SQL Server statistics by name, the native sweep as its runs."""

    @property
    def is_native(self) -> bool:
        return self.engine == "native"

    @property
    def label(self) -> str:
        if self.engine == "native":
            return f"native lock sweep, {self.logical_cpus} logical CPUs ({self.kind})"
        return super().label

    @property
    def logical_cpus(self) -> int | None:
        return self.recording.host.get("logical_cpus")


@dataclass
class Shown:
    published: LatchRecording
    measured: LatchRecording


def load(ref: str | Path) -> LatchRecording:
    """Open a recording of this chapter by id or directory, checking the files its engine needs."""
    r = rec.open_chapter(CHAPTER, ref)
    if r.engine["name"] not in ("native", "sqlserver"):
        raise rec.RecordingError(f"recording {r.path}: engine {r.engine['name']!r}; this chapter reads 'native' or "
                                 "'sqlserver' recordings (there is no PostgreSQL analogue of this latch)")
    if r.engine["name"] == "native" and r.has(LAYOUT["runs"].path):
        # Every column of the sweep is checked before any identity or cell reads it, so a bad value is named
        # (file, line, column) instead of failing later in a calculation.
        frame = r.csv(LAYOUT["runs"].path, (*LAYOUT["runs"].columns, *NATIVE_COLUMNS))
        if frame.empty:
            raise rec.RecordingError(f"recording {r.path}: file {LAYOUT['runs'].path} has no rows; expected one row "
                                     "per lock kind, thread count and repetition")
        numeric = [c for c in (*NATIVE_COLUMNS, *NATIVE_ACCOUNTING) if c != "kind" and c in frame.columns]
        rec.check_values(r, LAYOUT["runs"].path, frame, numeric)
        odd = ~frame["kind"].astype(str).isin(KINDS)
        if odd.any():
            row = int(odd.to_numpy().nonzero()[0][0])
            raise rec.RecordingError(f"recording {r.path}: file {LAYOUT['runs'].path} line {row + 2} column kind: "
                                     f"{frame['kind'].iloc[row]!r}; expected one of {', '.join(KINDS)}")
    out = rec.load_view(CHAPTER, r.path, LAYOUT, LatchRecording)
    if out.is_native:
        if out.runs.empty:
            raise rec.RecordingError(f"recording {r.path}: file {LAYOUT['runs'].path}: every row was set aside "
                                     "(see the notes); nothing is left to show")
    return out


def load_shown(recording: str = "", stacks: str = "") -> Shown:
    if stacks:
        raise ValueError("stacks: this chapter shows no CPU stacks (its evidence is DMV deltas and the native sweep)")
    return Shown(load(PUBLISHED), load(recording or DEFAULT_MEASURED))


def header_note(shown: Shown) -> str:
    """The closing list of recordings, each named in words (this book's native reference run, the article's
    published numbers) rather than by its directory name; the Data page it links to lists the ids."""
    note = rec.shown_note([("Measured or reader's recording", shown.measured.recording)], [shown.published.recording])
    for r in (shown.measured.recording, shown.published.recording):
        note = note.replace(f"`{r.id}`", recording_words(r.id))
    return note


def recording_words(rid: str) -> str:
    """A recording's id as a reader says it: "measured-native-reference" is this book's native (C) reference run."""
    import re

    from contention_book.harness.provenance import ENGINE_NAMES

    m = re.fullmatch(r"measured-(\w+)-reference", rid)
    if m:
        return f"this book's {ENGINE_NAMES.get(m.group(1), m.group(1))} reference run"
    if rid.startswith("published-"):
        return "the article's published numbers"
    return f"the recording `{rid}`"
