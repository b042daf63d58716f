"""What the ghost-cleanup chapter shows: the article's two recordings and one measured recording."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from contention_book.harness import recording as rec

from ..shared.shown import PublishedAndMeasured, header_note as _header_note, load_published_and_measured

from .spec import CHAPTER, DEFAULT_MEASURED, LABELS, LAYOUT, PUBLISHED


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
    _set_aside_vacuumed_points(out)
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
    points = set(zip(gone["variant"], gone["repetition"].astype(int)))
    _drop_points(view, points, ("curve", "index", "relation", "counters", "holder"))


def _drop_points(view, points: set, keys) -> None:
    """Leave the (variant, repetition) ``points`` out of the view's per-repetition tables ``keys``, and take their
    medians again from what is left."""
    for key in keys:
        frame = view.tables.get(f"{key}_by_repetition", view.tables.get(key))
        if frame is None or "repetition" not in frame:
            continue
        keep = frame[[(v, int(r)) not in points for v, r in zip(frame["variant"], frame["repetition"])]]
        keep = keep.reset_index(drop=True)
        if f"{key}_by_repetition" in view.tables:
            view.tables[f"{key}_by_repetition"] = keep
            view.tables[key] = rec.median_over_repetitions(keep, LAYOUT[key])
        else:
            view.tables[key] = keep


# The variant whose VACUUM is the experiment: a VACUUM in it is expected, not a confound.
VACUUMED_ON_PURPOSE = "vacuum_each_chunk"
HEAP, INDEX = "ghost_test", "ghost_test_pkey"


def vacuumed_during_run(view: GhostRecording) -> pd.DataFrame:
    """Per PostgreSQL run (variant, repetition): whether a VACUUM the harness did not ask for (autovacuum) reached
    the test table during the loop, and the evidence, in words.

    A recording that read ``pg_stat_user_tables.autovacuum_count`` before and after the loop (column
    ``autovacuum_during_run``) says so directly.  An older one is judged from what it counted right after the loop:
    a key update is never HOT, so each of the loop's updates leaves one line pointer in the heap, and pruning can
    only mark it dead (an index entry still points at it).  Freeing a line pointer (``lp_unused`` above 0), fewer
    line pointers in use (normal, redirected or dead) than the row versions the loop wrote (updates + 1), or a
    deleted index page is VACUUM's work alone.  Without line-pointer counts, the table's dead-tuple counter
    (``n_dead_tup``) below the updates made is the sign, since VACUUM resets it.  The VACUUM control is left out.
    Empty when the recording has no PostgreSQL storage statistics."""
    cols = ["variant", "repetition", "vacuumed", "evidence"]
    rel, runs = view.by_repetition("relation"), view.runs
    if rel is None or runs is None or "repetition" not in rel or "repetition" not in runs:
        return pd.DataFrame(columns=cols)
    end = rel[(rel["phase"] == "after_run") & (rel["variant"] != VACUUMED_ON_PURPOSE)]
    heap = end[end["relation"] == HEAP].set_index(["variant", "repetition"])
    index = end[end["relation"] == INDEX].set_index(["variant", "repetition"])
    updates = runs.set_index(["variant", "repetition"])["operations"]
    rows = []

    def num(frame, key, col):
        if col not in frame.columns or key not in frame.index:
            return np.nan
        return float(pd.to_numeric(pd.Series([frame.loc[key, col]]), errors="coerce").iloc[0])

    for key in heap.index:
        if key not in updates.index:
            continue
        n = float(updates.loc[key])
        why = []
        counted = num(heap, key, "autovacuum_during_run")
        if not np.isnan(counted):
            if counted > 0:
                why.append(f"pg_stat_user_tables counted {counted:.0f} autovacuum run(s) of the table during the loop")
        else:
            in_use = sum(num(heap, key, c) for c in ("lp_normal", "lp_redirect", "lp_dead"))
            unused, deleted = num(heap, key, "lp_unused"), num(index, key, "deleted_pages")
            if not np.isnan(in_use):
                if unused > 0:
                    why.append(f"{unused:,.0f} freed line pointers")
                if in_use < n + 1:
                    why.append(f"{in_use:,.0f} line pointers in use for {n + 1:,.0f} row versions written")
                if deleted > 0:
                    why.append(f"{deleted:,.0f} deleted index page{'s' if deleted != 1 else ''}")
            else:
                stat = num(heap, key, "stat_dead_tuples")
                if stat < n:
                    why.append(f"the dead-tuple counter at {stat:,.0f} after {n:,.0f} updates")
        rows.append({"variant": key[0], "repetition": int(key[1]), "vacuumed": bool(why), "evidence": "; ".join(why)})
    return pd.DataFrame(rows, columns=cols)


def _set_aside_vacuumed_points(view: GhostRecording) -> None:
    """Runs that autovacuum reached mid-loop (:func:`vacuumed_during_run`) leave ``runs``, the curve and the storage
    statistics, so no time, ratio, growth or size uses them; they stay in ``tables["runs_vacuumed"]`` (with the
    evidence) for the page to name, and a note on the page says which."""
    found = vacuumed_during_run(view)
    hit = found[found["vacuumed"]]
    if hit.empty:
        return
    points = set(zip(hit["variant"], hit["repetition"].astype(int)))
    runs = view.runs
    mask = [(v, int(r)) in points for v, r in zip(runs["variant"], runs["repetition"])]
    view.tables["runs_vacuumed"] = runs[mask].merge(hit[["variant", "repetition", "evidence"]],
                                                    on=["variant", "repetition"]).reset_index(drop=True)
    view.tables["runs"] = runs[[not m for m in mask]].reset_index(drop=True)
    _drop_points(view, points, ("curve", "relation"))
    words = "; ".join(f"{LABELS.get(v, v)}, repetition {int(r) + 1} ({e})" for v, r, e in
                      zip(hit["variant"], hit["repetition"], hit["evidence"]))
    view.recording.manifest.setdefault("notes", []).append(
        "set aside from every time, ratio, growth and table size, because autovacuum reached the test table during "
        f"the loop (only VACUUM frees line pointers or deletes index pages): {words}")


def header_note(shown: Shown) -> str:
    """The closing list of the recordings shown, each named by its manifest's title, not its id."""
    return _header_note(shown, by_title=True)


def load_published() -> list[GhostRecording]:
    return [load(pid) for pid in PUBLISHED]


def load_shown(recording: str = "", stacks: str = "") -> Shown:
    return load_published_and_measured(load, PUBLISHED, DEFAULT_MEASURED, recording, stacks)
