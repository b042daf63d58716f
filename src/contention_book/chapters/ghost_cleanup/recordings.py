"""What the ghost-cleanup chapter shows: the article's two recordings and one measured recording."""
from __future__ import annotations

from pathlib import Path

from contention_book.harness import recording as rec

from ..shared.shown import PublishedAndMeasured, header_note, load_published_and_measured

from .spec import CHAPTER, DEFAULT_MEASURED, LAYOUT, PUBLISHED


@rec.with_tables("curve", "counters", "holder", index_stats="index", relation_stats="relation")
class GhostRecording(rec.RecordingView):
    """A recording of this chapter; its storage statistics and update-rate curve by name."""

    @property
    def logical_cpus(self) -> int | None:  # the name shared.claims.tested_on reads
        return self.recording.host.get("logical_cpus")


Shown = PublishedAndMeasured
__all__ = ["GhostRecording", "Shown", "load", "load_published", "load_shown", "header_note"]


def load(ref: str | Path) -> GhostRecording:
    """Open a recording of this chapter by id or directory, checking every file it needs."""
    out = rec.load_view(CHAPTER, ref, LAYOUT, GhostRecording)
    _drop_set_aside_points(out)
    if out.index_stats is None and out.relation_stats is None:
        raise rec.RecordingError(
            f"recording {out.recording.path}: has neither {LAYOUT['index'].path} nor {LAYOUT['relation'].path}; "
            "expected the storage statistics of the test table")
    return out


def _drop_set_aside_points(view: GhostRecording) -> None:
    """A run the loader set aside (it did not balance, or too many of its calls failed) takes its curve, storage
    and holder rows with it, so no figure or verdict uses any part of it."""
    gone = view.tables.get("runs_set_aside")
    if gone is None or gone.empty or "repetition" not in gone:
        return
    points = set(zip(gone["variant"], gone["repetition"]))
    for key in ("curve", "index", "relation", "counters", "holder"):
        frame = view.tables.get(f"{key}_by_repetition", view.tables.get(key))
        if frame is None or "repetition" not in frame:
            continue
        keep = frame[[(v, r) not in points for v, r in zip(frame["variant"], frame["repetition"])]]
        keep = keep.reset_index(drop=True)
        if f"{key}_by_repetition" in view.tables:
            view.tables[f"{key}_by_repetition"] = keep
            view.tables[key] = rec.median_over_repetitions(keep, LAYOUT[key])
        else:
            view.tables[key] = keep


def load_published() -> list[GhostRecording]:
    return [load(pid) for pid in PUBLISHED]


def load_shown(recording: str = "", stacks: str = "") -> Shown:
    return load_published_and_measured(load, PUBLISHED, DEFAULT_MEASURED, recording, stacks)
