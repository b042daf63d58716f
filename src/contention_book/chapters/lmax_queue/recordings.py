"""Opening recordings of this chapter, published or measured, with every file checked."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

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


# A point's wait samples cannot outnumber its backends times the ticks of the sampler over the window; the
# sampler's window runs from the start line to the sessions' end, a little longer than the measured window, so
# a point is refused only beyond half again that many.
SAMPLE_CEILING = 1.5
# The load check's columns counted from the same samples (the driver's own columns are kept).
SAMPLED_LOAD_COLUMNS = ("server_share", "client_share", "backoff_share")


def set_aside_overcounted_waits(view: LmaxRecording) -> pd.DataFrame:
    """Points whose wait samples outnumber what the sampler could take, kept out of the wait profile and out of the
    load check's sampled shares, and returned (also as ``tables["waits_overcounted"]``, and named in a note).

    Why: the in-server sampler counts a workload backend as on CPU at every tick of its window at which it had
    no wait event, so a window that outlasts the sessions counts them as on CPU after they have ended.  A point
    whose samples pass backends × window × rate by more than :data:`SAMPLE_CEILING` has such a window; its CPU
    share is that mistake, not the workload.  ``offcpu`` says whether the point carried the off-CPU capture (the
    reference recording stopped its sampler only after that capture's post-processing)."""
    waits, runs = view.tables.get("waits_by_repetition"), view.runs
    empty = pd.DataFrame(columns=["variant", "sessions", "repetition", "samples", "ceiling", "offcpu"])
    need = {"variant", "sessions", "repetition", "elapsed_s", "wait_sample_hz"}
    if waits is None or waits.empty or runs is None or not need <= set(runs.columns):
        return empty
    keys = ["variant", "sessions", "repetition"]
    total = waits.groupby(keys, as_index=False)["samples"].sum()
    point = runs[[*keys, "elapsed_s", "wait_sample_hz"]].assign(
        backends=runs["sessions"] + (runs["consumers"] if "consumers" in runs.columns else 0))
    both = total.merge(point, on=keys)
    both["ceiling"] = both["backends"] * both["elapsed_s"] * both["wait_sample_hz"]
    over = both[both["samples"] > SAMPLE_CEILING * both["ceiling"]].reset_index(drop=True)
    if over.empty:
        return empty
    captured = set()
    if view.recording.has("stacks/offcpu_captures.csv"):
        cap = view.recording.csv("stacks/offcpu_captures.csv")
        captured = {tuple(r) for r in cap[keys].itertuples(index=False)} if set(keys) <= set(cap.columns) else set()
    over["offcpu"] = [tuple(r) in captured for r in over[keys].itertuples(index=False)]
    bad = set(map(tuple, over[keys].itertuples(index=False)))
    hit = lambda f: pd.Series([tuple(r) in bad for r in f[keys].itertuples(index=False)], index=f.index)  # noqa: E731
    keep = waits[~hit(waits)].reset_index(drop=True)
    view.tables["waits_by_repetition"] = keep
    view.tables["waits"] = rec.median_over_repetitions(keep, LAYOUT["waits"])
    points = view.tables.get("load_points_by_repetition")
    if points is not None and set(keys) <= set(points.columns):
        points = points.copy()
        cols = [c for c in SAMPLED_LOAD_COLUMNS if c in points.columns]
        points.loc[hit(points), cols] = float("nan")
        view.tables["load_points_by_repetition"] = points
        view.tables["load_points"] = rec.median_over_repetitions(points, LAYOUT["load_points"])
    out = over[[*keys, "samples", "ceiling", "offcpu"]]
    view.tables["waits_overcounted"] = out
    # a point that also carried the off-CPU capture ran beside perf: its rate is kept out of the rate medians too,
    # as its wait samples are kept out of the wait shares
    perturbed = set(map(tuple, out.loc[out["offcpu"], keys].itertuples(index=False)))
    if perturbed and runs is not None:
        view.tables["runs"] = runs[[tuple(r) not in perturbed for r in runs[keys].itertuples(index=False)]
                                   ].reset_index(drop=True)
    words = "; ".join(f"{r.variant} at {r.sessions} sessions, repetition {r.repetition}: {r.samples:,.0f} samples "
                      f"where the sampler could take about {r.ceiling:,.0f}" for r in out.itertuples())
    view.recording.manifest.setdefault("notes", []).append(
        f"set aside from the wait profile and the load check's sampled shares, because they hold more wait samples "
        f"than the sampler could take (and, where they carried the off-CPU capture, from the rates too): file "
        f"{FILES_WAITS} {words}")
    return out


FILES_WAITS = LAYOUT["waits"].path


def load(ref: str | Path) -> LmaxRecording:
    """Open a recording of this chapter by id or directory."""
    out = rec.load_view(CHAPTER, ref, LAYOUT, LmaxRecording)
    if out.recording.kind == "measured":
        set_aside_overcounted_waits(out)
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
    """The closing list of the recordings the chapter shows, each by its manifest's title and date, linked to the
    Data page row that says how it was made; a reader's own recording also by its id and folder, which is how
    its reader finds it.  The book-wide note (:func:`harness.recording.shown_note`) lists ids."""
    import html

    from contention_book.harness.provenance import anchor, engine_words, in_book_data, machine_words, public_text

    lines = ['How each measured recording was made (command, machine, compiler, load) is on the '
             '<a href="../data.html#provenance">Data page</a>.']
    for r in (shown.native.recording, shown.db.recording):
        m = r.manifest
        title = html.escape(str(m.get("title") or r.id))
        date = str(m.get("started") or "")[:10]
        if in_book_data(r):
            lines.append(f"- *{title}*: {engine_words(m)} on {machine_words(m)}, recorded {date} "
                         f'(<a href="../data.html#{anchor(r.chapter, r.id)}-made">how it was made</a>)')
        else:
            lines.append(f"- *{title}*: `{r.id}` (folder `{r.path.name}`), {engine_words(m)} on {machine_words(m)}, "
                         f"recorded {date}; a recording from outside this book's data: its `manifest.json` says how "
                         "it was made")
            lines += [f"  - note: {public_text(n, r.chapter, r.id)}" for n in m.get("notes") or []]
    for r in (shown.adkin.recording, shown.lmax.recording):
        c = r.manifest.get("citation") or {}
        source = f"“{c.get('title', '')}”"
        if str(c.get("url", "")).startswith(("https://", "http://")):
            source = f"[{source}]({c['url']})"
        title = html.escape(str(r.manifest.get("title") or r.id).removeprefix("Published: "))
        lines.append(f"- Published: *{title[:1].upper()}{title[1:]}*, transcribed from {c.get('author', '')}, {source} ({c.get('date', '')})")
    return "\n".join(lines)
