"""A page that shows a chapter's published recordings beside one measured recording (ghost, last page)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from contention_book.harness import recording as rec


@dataclass
class PublishedAndMeasured:
    published: list
    measured: Any


def load_published_and_measured(load: Callable[[str], Any], published: Sequence[str], reference: str,
                                 recording: str = "", stacks: str = "") -> PublishedAndMeasured:
    """The published recordings, and ``recording`` (or the book's reference) as the measured one."""
    if stacks:
        raise ValueError("stacks: this chapter shows the stacks its recordings hold; pass other captures to "
                         "`perftools` directly")
    return PublishedAndMeasured([load(pid) for pid in published], load(recording or reference))


def header_note(shown: PublishedAndMeasured, by_title: bool = False) -> str:
    """The closing list of the recordings shown; ``by_title``: each named by its manifest's title (:func:`titled`)."""
    note = rec.shown_note([("Measured or reader's recording", shown.measured.recording)],
                          [g.recording for g in shown.published])
    return titled(note, [shown.measured.recording, *(g.recording for g in shown.published)]) if by_title else note


def titled(note: str, recordings) -> str:
    """A Recordings list with each recording named by its manifest's title, not its id (a folder name a reader
    need not know); the id stays in the Data page link.  A recording without a title keeps its id, and one from
    outside this book's data (a reader's own) keeps it beside its title: the folder its reader will look for."""
    from contention_book.harness.provenance import in_book_data

    for r in recordings:
        title = str(r.manifest.get("title") or "").removeprefix("Published: ").strip()
        if title:
            note = note.replace(f"`{r.id}`", f"“{title[:1].upper() + title[1:]}”"
                                + ("" if in_book_data(r) else f" (`{r.id}`)"))
    return note
