"""Opening recordings of this chapter, published or measured, with every file checked."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contention_book.harness import recording as rec

from .spec import CHAPTER, DEFAULT_MEASURED, LAYOUT, PUBLISHED_ADKIN, PUBLISHED_LMAX


@rec.with_tables("paced", "false_sharing", "waits", "relation", "spinlocks", "latches", "sqlwaits", "findings",
                 "increments")
class LmaxRecording(rec.RecordingView):
    """A recording of this chapter; every table by name."""

    @property
    def label(self) -> str:
        if self.engine == "native":
            return "LMAX paper, Java (published)" if self.kind == "published" else f"native C ({self.kind})"
        return super().label


@dataclass
class Shown:
    """The article's recording, the LMAX paper's, and the measured native and database recordings."""

    adkin: LmaxRecording
    lmax: LmaxRecording
    native: LmaxRecording
    db: LmaxRecording


def load(ref: str | Path) -> LmaxRecording:
    """Open a recording of this chapter by id or directory."""
    out = rec.load_view(CHAPTER, ref, LAYOUT, LmaxRecording)
    if out.runs.empty:
        aside = [n for n in out.notes if n.startswith("set aside")]
        why = ("; every point was set aside: " + " ".join(aside)) if aside else "; expected one per run"
        raise rec.RecordingError(f"recording {out.recording.path}: file {LAYOUT['runs'].path} has no rows to show{why}")
    return out


def load_measured(recording: str | Path | None = "") -> tuple[LmaxRecording, LmaxRecording]:
    """(native, database) recordings to show: the references, with ``recording`` in place of its engine's one."""
    chosen = load(recording) if recording else None
    if chosen is not None and chosen.recording.kind != "measured":
        raise rec.RecordingError(f"recording {chosen.recording.path}: kind is {chosen.recording.kind!r}; "
                                 "expected a measured recording (the published ones are always shown)")
    # a reference is opened only where the chosen recording does not take its place
    native = chosen if chosen is not None and chosen.engine == "native" else load(DEFAULT_MEASURED["native"])
    database = chosen if chosen is not None and chosen.engine != "native" else load(DEFAULT_MEASURED["postgres"])
    return native, database


def load_shown(recording: str = "", stacks: str = "") -> Shown:
    if stacks:
        raise ValueError("stacks: this chapter shows no CPU stacks")
    native, db = load_measured(recording)
    return Shown(load(PUBLISHED_ADKIN), load(PUBLISHED_LMAX), native, db)


def header_note(shown: Shown) -> str:
    measured = [("Measured (native)", shown.native.recording), (f"Measured ({shown.db.engine})", shown.db.recording)]
    return rec.shown_note(measured, [shown.adkin.recording, shown.lmax.recording])
