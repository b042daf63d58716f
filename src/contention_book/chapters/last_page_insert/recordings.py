"""What the last-page chapter shows: the two published sources and one measured recording."""
from __future__ import annotations

from pathlib import Path

from contention_book.harness import recording as rec

from ..shared.shown import PublishedAndMeasured, load_published_and_measured, titled

from .spec import CHAPTER, DEFAULT_MEASURED, LAYOUT, PUBLISHED

PUBLISHED_LABELS = {"published-sqlcat-2009": "SQLCAT 2009 (published)",
                    "published-latch-whitepaper": "latch whitepaper (published)"}


@rec.with_tables("waits", "pins", "index", "read_cost", "hot_pages", "wait_deltas", "latch_deltas", "facts",
                 "before_after")
class LpiRecording(rec.RecordingView):
    """A recording of this chapter; every table by name."""

    @property
    def label(self) -> str:
        eng = self.recording.engine
        if self.kind == "published":
            return PUBLISHED_LABELS.get(self.recording.id, f"{self.recording.id} (published)")
        name = "SQL Server" if eng["name"] == "sqlserver" else "PostgreSQL"
        return f"{name} {eng['version'].split()[0]} (measured)"

    @property
    def cpus(self) -> int | None:
        return self.recording.host.get("logical_cpus")

    @property
    def logical_cpus(self) -> int | None:  # the name shared.claims.tested_on reads
        return self.cpus


Shown = PublishedAndMeasured
__all__ = ["LpiRecording", "Shown", "load", "load_published", "load_shown", "header_note"]


def header_note(shown: "Shown") -> str:
    """The closing Recordings list, each recording named by its manifest's title and date, not its id (a folder
    name a reader need not know; the Data page link keeps it).  A reader's recording from outside this book's data
    keeps its id too, since that is the folder they will look for."""
    measured = shown.measured.recording
    note = titled(rec.shown_note([("Measured or reader's recording", measured)],
                                 [g.recording for g in shown.published]), [measured])
    for g in shown.published:  # "transcribed from <author>, <title> (<date>)" already names it
        note = note.replace(f"Published: `{g.recording.id}`, transcribed from ", "Published: transcribed from ", 1)
    return note


def load(ref: str | Path) -> LpiRecording:
    """Open a recording of this chapter by id or directory, checking the files it needs."""
    # a reader's short run may have caught no wait sample at all: the page then says which claims that leaves
    # untested, rather than refusing the recording
    return rec.load_view(CHAPTER, ref, LAYOUT, LpiRecording)


def load_published() -> list[LpiRecording]:
    return [load(pid) for pid in PUBLISHED]


def load_shown(recording: str = "", stacks: str = "") -> Shown:
    return load_published_and_measured(load, PUBLISHED, DEFAULT_MEASURED, recording, stacks)
