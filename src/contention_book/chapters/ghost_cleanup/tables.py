"""Tables, key numbers, verdicts and notes computed from ghost-cleanup recordings."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..shared.spread import ratio_spread, spread
from .spec import BASELINE, LABELS
from ..shared.stacks import StackSection, absent_text, diff_table, flame, hottest, top_table
from .recordings import GhostRecording
from ..shared.memo import per_view

HELD = {"postgres": "open_snapshot", "sqlserver": "rcsi_open_txn"}    # the open transaction pins versions (2019)
UNHELD = {"postgres": "baseline", "sqlserver": "rcsi"}                # the same row versioning, nothing held
UNPINNED = {"postgres": "idle_read_committed", "sqlserver": "rcsi_open_txn"}  # open, but pins nothing (2022 RCSI)
VACUUM_CONTROL = {"postgres": "vacuum_each_chunk"}                    # nothing held, dead entries removed as it goes
# How a measured text starts when no repetition is left with both runs of a paired ratio (a recording may set aside
# the runs autovacuum reached, :func:`set_aside`): the verdict and the opening say so instead of printing a ratio.
NO_PAIR = "no repetition left"
# PostgreSQL's cap on line pointers in one heap page, MaxHeapTuplesPerPage, for 8 KB pages: (BLCKSZ 8192 − the 24-byte
# page header) / (the 24-byte MAXALIGNed tuple header + the 4-byte line pointer) = 291 (src/include/access/
# htup_details.h; PageGetHeapFreeSpace in src/backend/storage/page/bufpage.c calls a page with that many line pointers,
# none unused, full).  Said on the page only where the recording's own counts show a heap filled to it.
MAX_HEAP_TUPLES_PER_PAGE = (8192 - 24) // (24 + 4)
HTUP_DETAILS = "https://github.com/postgres/postgres/blob/REL_15_STABLE/src/include/access/htup_details.h"
BUFPAGE = "https://github.com/postgres/postgres/blob/REL_15_STABLE/src/backend/storage/page/bufpage.c"


def set_aside(g: GhostRecording, *variants: str) -> int:
    """How many runs (of ``variants``, or of any) the loader set aside because autovacuum reached the test table
    mid-loop (``recordings._set_aside_vacuumed_points``): 0 in a recording made with autovacuum off the table.
    Every text that speaks of runs set aside, or of runs autovacuum did or did not reach, asks this first."""
    hit = g.tables.get("runs_vacuumed")
    if hit is None or hit.empty:
        return 0
    return int(len(hit[hit["variant"].isin(variants)]) if variants else len(hit))


def autovacuum_kept_off(g: GhostRecording, variant: str) -> bool:
    """Whether every run of ``variant`` recorded its test table's autovacuum_enabled option as off."""
    rel = g.by_repetition("relation") if g.relation_stats is not None else None
    if rel is None or "autovacuum_enabled" not in rel:
        return False
    part = rel[(rel["variant"] == variant) & (rel["relation"] == "ghost_test") & (rel["phase"] == "after_run")]
    flags = pd.to_numeric(part["autovacuum_enabled"], errors="coerce").dropna()
    return bool(len(flags)) and bool((flags == 0).all())


def _timed_runs(g: GhostRecording) -> pd.DataFrame:
    """The runs a chapter compares: with delayed durability where a recording also holds runs without it."""
    runs = g.runs
    if "delayed_durability" in runs:
        runs = runs[runs["delayed_durability"].astype(str).str.lower().isin(("true", "1"))]
    return runs


def elapsed_table(recordings: Sequence[GhostRecording]) -> pd.DataFrame:
    """Elapsed time per variant (median, and its interval over repetitions), and two ratios.

    ``vs_baseline`` divides by the recording's own baseline (locking read
    committed on SQL Server; no open transaction on PostgreSQL).
    ``vs_versioned`` divides by the same engine's row-versioned run without
    an open transaction (RCSI; PostgreSQL's baseline, which is row-versioned
    too), so the open transaction's cost compares like with like across
    engines; its interval comes from ratios paired by repetition.
    ``lower_bound`` marks a published time the source gave as "over".
    """
    rows = []
    for g in recordings:
        runs = _timed_runs(g)
        base_v, twin_v = BASELINE[g.engine], UNHELD[g.engine]
        base = runs.loc[runs["variant"] == base_v, "elapsed_s"].median()
        twin = runs.loc[runs["variant"] == twin_v, "elapsed_s"].median()
        for variant in runs["variant"].drop_duplicates():
            s = spread(runs.loc[runs["variant"] == variant, "elapsed_s"])
            r = ratio_spread(runs, "elapsed_s", variant, twin_v)
            notes = runs.loc[runs["variant"] == variant, "elapsed_note"].dropna() if "elapsed_note" in runs else []
            note = str(notes.iloc[0]) if len(notes) else ""
            rows.append({"recording": g.label, "group": group_words(g), "kind": g.recording.kind,
                         "engine": g.engine, "variant": variant,
                         "setting": LABELS.get(variant, variant), "elapsed_s": s.median, "low": s.low,
                         "high": s.high, "n": s.n,
                         "vs_baseline": float(s.median / base) if base and not np.isnan(base) else np.nan,
                         # the paired ratios' median where there are pairs, so the interval always holds it
                         "vs_versioned": (r.median if r.n > 1 else
                                          float(s.median / twin) if twin and not np.isnan(twin) else np.nan),
                         "vs_versioned_low": r.low if r.n > 1 else np.nan,
                         "vs_versioned_high": r.high if r.n > 1 else np.nan,
                         "lower_bound": "lower bound" in note, "note": note})
    return pd.DataFrame(rows)


SQLSERVER_YEARS = {13: "2016", 14: "2017", 15: "2019", 16: "2022", 17: "2025"}  # major version -> product name


def group_words(g: GhostRecording) -> str:
    """A recording as a figure's heading names it: engine and version, and whether published or measured
    ("SQL Server 2019 (published)", "PostgreSQL 15.18 (measured)")."""
    if g.engine == "sqlserver":
        version = str(g.recording.engine.get("version", ""))
        try:
            name = SQLSERVER_YEARS.get(int(version.split(".")[0]), version)
        except ValueError:
            name = version
        return f"SQL Server {name} ({g.recording.kind})"
    return g.label


def _fit(part: pd.DataFrame) -> dict[str, float] | None:
    x = part["updates_done"].to_numpy(float)
    y = part["us_per_update"].to_numpy(float)
    if len(x) < 3:
        return None
    order = np.argsort(x)
    x, y = x[order], y[order]
    slope, intercept = np.polyfit(x, y, 1)
    fitted = slope * x + intercept
    ss_res = float(np.sum((y - fitted) ** 2))
    ss_tot = float(np.sum((y - y.mean()) ** 2)) or float("nan")
    tenth = max(1, len(y) // 10)
    return {"first_us": float(np.median(y[:tenth])), "last_us": float(np.median(y[-tenth:])),
            "growth": float(np.median(y[-tenth:]) / np.median(y[:tenth])),
            "slope_us_per_1000": float(slope * 1000), "r2": 1 - ss_res / ss_tot}


def growth_by_repetition(curve: pd.DataFrame) -> pd.DataFrame:
    """One straight-line fit per variant and repetition (see :func:`curve_growth`)."""
    curve = curve if "repetition" in curve else curve.assign(repetition=0)
    rows = []
    for (variant, rep), part in curve.groupby(["variant", "repetition"], sort=False):
        fit = _fit(part)
        if fit is not None:
            rows.append({"variant": variant, "repetition": rep, **fit})
    return pd.DataFrame(rows, columns=["variant", "repetition", "first_us", "last_us", "growth",
                                       "slope_us_per_1000", "r2"])


def curve_growth(curve: pd.DataFrame) -> pd.DataFrame:
    """Does time per update grow with the updates before it?  A straight-line fit per variant.

    If each update must step over every version it cannot remove, µs per update
    grows linearly with updates done (so the total grows quadratically).  The
    slope is µs per update gained per 1,000 updates; ``r2`` says how straight.
    Each repetition is fitted on its own; the table gives the medians, and the
    growth's interval over repetitions.
    """
    per = growth_by_repetition(curve)
    rows = []
    for variant, part in per.groupby("variant", sort=False):
        g = spread(part["growth"])
        rows.append({"variant": variant, "setting": LABELS.get(variant, variant),
                     **{c: float(part[c].median()) for c in ("first_us", "last_us", "growth",
                                                               "slope_us_per_1000", "r2")},
                     "growth_low": g.low, "growth_high": g.high, "repetitions": g.n})
    return pd.DataFrame(rows, columns=["variant", "setting", "first_us", "last_us", "growth", "slope_us_per_1000",
                                       "r2", "growth_low", "growth_high", "repetitions"])


def growth_ratio(curve: pd.DataFrame, held: str, base: str):
    """The held run's growth over its unheld twin's, paired by repetition: the claim's own test.

    The unheld run can grow too (a heap that only gets longer), so the claim is
    that holding the horizon makes the growth steeper than the control's.
    """
    return ratio_spread(growth_by_repetition(curve), "growth", held, base)


def _storage(index_stats: pd.DataFrame | None, relation_stats: pd.DataFrame | None) -> pd.DataFrame:
    if index_stats is not None:
        s = index_stats
        leaf = s[s["level"] == 0]
        total_pages = s.groupby(["variant", "phase"], sort=False)["pages"].sum().rename("pages")
        dead = leaf.groupby(["variant", "phase"], sort=False)[["ghosts", "ghost_versions"]].sum()
        dead["not_removed"] = dead[["ghosts", "ghost_versions"]].max(axis=1)
        out = pd.concat([total_pages, dead["not_removed"]], axis=1).reset_index()
        out["levels"] = s.groupby(["variant", "phase"], sort=False)["level"].max().to_numpy() + 1
    else:
        s = relation_stats
        pages = s.groupby(["variant", "phase"], sort=False)["pages"].sum().rename("pages")
        heap = s[s["relation"] == "ghost_test"].set_index(["variant", "phase"])["dead_tuples"].rename("not_removed")
        out = pd.concat([pages, heap], axis=1).reset_index()
        levels = s[s["relation"] == "ghost_test_pkey"].set_index(["variant", "phase"])["tree_level"] + 1
        out["levels"] = levels.reindex(pd.MultiIndex.from_frame(out[["variant", "phase"]])).to_numpy()
    return out


def storage_long(g: GhostRecording) -> pd.DataFrame:
    """Pages and dead/ghost counts per variant and phase (medians over repetitions), in one long frame."""
    out = _storage(g.index_stats, g.relation_stats)
    out.insert(0, "recording", g.label)
    out["setting"] = out["variant"].map(lambda v: LABELS.get(v, v))
    return out


def storage_by_repetition(g: GhostRecording) -> pd.DataFrame:
    """:func:`storage_long`'s pages and counts for each repetition on its own (for ratios paired by repetition)."""
    index, rel = g.by_repetition("index"), g.by_repetition("relation")
    frame = index if index is not None else rel
    if frame is None or "repetition" not in frame:
        return _storage(g.index_stats, g.relation_stats).assign(repetition=0)
    return pd.concat([(_storage(part, None) if index is not None else _storage(None, part)).assign(repetition=rep)
                      for rep, part in frame.groupby("repetition")], ignore_index=True)


def ghost_visits(updates: int) -> int:
    """Ghosts stepped over in all if none can be removed: the k-th update skips k-1."""
    return updates * (updates - 1) // 2


@per_view
def measured_numbers(g: GhostRecording) -> dict[str, Any]:
    """The same keys for any recording: ``base`` is the variant without, ``held`` with, the open transaction.

    A key whose variant is not in the recording is NaN, so the prose still renders.  ``*_text`` keys give
    a number with its spread over repetitions, as the prose prints it.
    """
    el = elapsed_table([g]).set_index("variant")
    base, held = UNHELD[g.engine], HELD[g.engine]
    nan = float("nan")
    runs = _timed_runs(g)
    nums: dict[str, Any] = {"m_engine": g.label, "m_updates": int(g.runs["operations"].max()),
                            "m_base_label": LABELS[base], "m_held_label": LABELS[held],
                            "m_repetitions": g.repetitions}
    for role, variant in (("base", base), ("held", held)):
        nums[f"m_{role}_s"] = float(el.loc[variant, "elapsed_s"]) if variant in el.index else nan
        nums[f"m_{role}_s_text"] = spread(runs.loc[runs["variant"] == variant, "elapsed_s"]).text(".2f", " s")
    nums["m_held_x"] = nums["m_held_s"] / nums["m_base_s"]
    nums["m_held_x_text"] = ratio_spread(runs, "elapsed_s", held, base).text(".1f", "×")
    nums["m_ghost_visits"] = ghost_visits(nums["m_updates"])
    growth = curve_growth(g.curve).set_index("variant") if g.curve is not None else pd.DataFrame()
    storage = storage_long(g).set_index(["variant", "phase"])
    roles = (("base", base), ("held", held), ("rc", UNPINNED.get(g.engine)), ("vacuum", VACUUM_CONTROL.get(g.engine)))
    for role, variant in roles[2:]:
        nums[f"m_{role}_label"] = LABELS.get(variant, "") if variant else ""
        nums[f"m_{role}_s"] = float(el.loc[variant, "elapsed_s"]) if variant in el.index else nan
        nums[f"m_{role}_s_text"] = spread(runs.loc[runs["variant"] == variant, "elapsed_s"]).text(".2f", " s")
        pairs = ratio_spread(runs, "elapsed_s", variant, base) if variant in el.index and base in el.index else None
        nums[f"m_{role}_x_text"] = pairs.text(".2f", "×") if pairs is not None else "not recorded"
        nums[f"m_{role}_pairs"] = pairs.n if pairs is not None else 0
    for role, variant in roles:
        for col in ("first_us", "last_us", "growth", "r2"):
            nums[f"m_{role}_{col}"] = float(growth.loc[variant, col]) if variant in growth.index else nan
        for phase in ("after_run", "after_cleanup"):
            row = storage.loc[(variant, phase)] if (variant, phase) in storage.index else None
            nums[f"m_{role}_{phase}_pages"] = float(row["pages"]) if row is not None else nan
            nums[f"m_{role}_{phase}_dead"] = float(row["not_removed"]) if row is not None else nan
    if g.curve is not None:
        per = growth_by_repetition(g.curve)
        for role, variant in roles:
            nums[f"m_{role}_growth_text"] = spread(per.loc[per["variant"] == variant, "growth"]).text(".1f", "×")
        nums["m_growth_ratio_text"] = growth_ratio(g.curve, held, base).text(".1f", "×")
    else:
        nums.update({f"m_{role}_growth_text": "not recorded" for role, _ in roles})
        nums["m_growth_ratio_text"] = "not recorded"
    nums.update({f"m_lp_{k}": v for k, v in line_pointer_numbers(g).items()})
    return nums


@per_view
def key_numbers(shown) -> dict[str, Any]:
    """Numbers the prose quotes, each taken from a recording (never typed by hand)."""
    published, measured = shown.published, shown.measured
    nums: dict[str, Any] = {}
    el = elapsed_table([*published, measured])
    for g in published:
        tag = "pub" + g.recording.engine["version"].split(".")[0]
        part = el[el["recording"] == g.label].set_index("variant")
        nums[f"{tag}_updates"] = int(g.runs["operations"].max())
        for variant, row in part.iterrows():
            nums[f"{tag}_{variant}_s"] = row["elapsed_s"]
            nums[f"{tag}_{variant}_x"] = row["vs_baseline"]
            nums[f"{tag}_{variant}_vs_rcsi"] = row["vs_versioned"]
        if g.index_stats is not None:
            s = g.index_stats
            for variant in s["variant"].unique():
                end = s[(s["variant"] == variant) & (s["phase"] == "after_run")]
                nums[f"{tag}_{variant}_leaf_pages"] = int(end.loc[end["level"] == 0, "pages"].sum())
                nums[f"{tag}_{variant}_levels"] = int(end["level"].max() + 1)
                nums[f"{tag}_{variant}_ghost_versions"] = int(end.loc[end["level"] == 0, "ghost_versions"].sum())
                nums[f"{tag}_{variant}_leaf_record_bytes"] = float(end.loc[end["level"] == 0, "avg_size"].max())
            if {f"{tag}_rcsi_leaf_record_bytes", f"{tag}_read_committed_leaf_record_bytes"} <= set(nums):
                nums[f"{tag}_version_tag_bytes"] = (nums[f"{tag}_rcsi_leaf_record_bytes"]
                                                    - nums[f"{tag}_read_committed_leaf_record_bytes"])
        slow = g.runs[(g.runs["variant"] == "rcsi_open_txn")]
        if "delayed_durability" in slow:
            slow = slow[~slow["delayed_durability"].astype(str).str.lower().isin(("true", "1"))]
            if len(slow):
                nums[f"{tag}_rcsi_open_txn_without_dd_min"] = float(slow["elapsed_s"].iloc[0]) / 60
        if g.counters is not None:
            for _, row in g.counters.iterrows():
                key = "lock_requests" if "Lock" in row["counter"] else "skipped_ghosts"
                nums[f"{tag}_{row['variant']}_{key}_per_s"] = row["per_second"]
    nums.update(measured_numbers(measured))
    nums["m_scan_text"] = scan_text(measured)
    nums["ghost_visits_published"] = ghost_visits(int(published[0].runs["operations"].max())) if published else np.nan
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in nums.items()}


def growth_note(g: GhostRecording) -> str:
    """What the run without the open transaction shows, in words built from the recording."""
    n = measured_numbers(g)
    if np.isnan(n["m_base_growth"]):
        return ""
    text = f"Without the open transaction the time per update still grew {n['m_base_growth']:.1f}× over the run. "
    if g.engine == "postgres":
        lp = line_pointer_numbers(g)
        if np.isnan(lp.get("base_lp_dead", np.nan)):
            return text + ("This recording did not count line pointers and index entries, so it cannot say where "
                           "the unheld run's dead versions were.")
        kept = g.runs.loc[g.runs["variant"] == UNHELD[g.engine], "repetition"].nunique()
        aside = set_aside(g, UNHELD[g.engine])
        which = (f" (in the {kept} runs autovacuum did not reach; the {_runs(aside)} it reached "
                 f"{'are' if aside != 1 else 'is'} set aside)" if aside else "")
        vacuum = ("only VACUUM removes both, and in the runs set aside autovacuum did" if aside else
                  "only VACUUM removes both, and with autovacuum off on the test table none ran"
                  if autovacuum_kept_off(g, UNHELD[g.engine]) else "only VACUUM removes both")
        text += (f"Its dead versions did not go{which}: at the end the heap held {lp['base_lp_dead']:,.0f} dead line "
                 f"pointers on {lp['base_heap_pages']:,.0f} pages (up to {lp['base_lp_max']:,.0f} on one page), and "
                 f"the index held {lp['base_entries_dead']:,.0f} entries pointing at them, for one live row. "
                 "A key update is never a heap-only (HOT) update, so each one adds an index entry. Pruning frees a "
                 "dead tuple's storage but must leave its line pointer while an index entry still points there; "
                 f"{vacuum}. That is PostgreSQL's ghost. " + line_pointer_cap_text(lp))
        if not np.isnan(n.get("m_vacuum_growth", np.nan)):
            text += (f"With `VACUUM` after every chunk the table stayed at {n['m_vacuum_after_run_pages']:,.0f} "
                     f"pages and time per update grew {n['m_vacuum_growth']:.1f}×.")
    else:
        text += ("Here the cleanup task runs, but it removes ghosts only after each transaction ends, and the "
                 "next update has already started by then.")
    return text


def line_pointer_cap_text(lp: dict[str, float]) -> str:
    """Why the unheld heap has the pages it has, where its counts show it: every page holds as many line pointers as
    PostgreSQL allows (:data:`MAX_HEAP_TUPLES_PER_PAGE`), and the line pointers at that many a page need exactly the
    heap's pages.  '' when the counts show anything else."""
    total = lp.get("base_lp_dead", np.nan) + lp.get("base_lp_normal", np.nan)
    cap, pages = lp.get("base_lp_max", np.nan), lp.get("base_heap_pages", np.nan)
    if np.isnan(total) or cap != MAX_HEAP_TUPLES_PER_PAGE or -(-total // cap) != pages:
        return ""
    return (f"The {cap:,.0f} on one page is PostgreSQL's cap for an 8 KB heap page ([`MaxHeapTuplesPerPage`]"
            f"({HTUP_DETAILS}); [`PageGetHeapFreeSpace`]({BUFPAGE}) then calls the page full, though a dead line "
            f"pointer takes only 4 bytes), and {total:,.0f} line pointers at {cap:,.0f} a page fit in no fewer than "
            f"{pages:,.0f} pages, the heap's size: the cap on line pointers, not their bytes, set how far it grew. ")


def chunk_words(g: GhostRecording) -> str:
    """What one driver call of the loop is, in words from the recording: a chunk of updates ("chunks/s (1,235
    updates each, the last 1,191)"); "" when the recording does not say its chunk or its calls are not its chunks."""
    p = g.recording.manifest.get("parameters") or {}
    try:
        updates, chunk = int(p["updates"]), int(p["chunk"])
    except (KeyError, TypeError, ValueError):
        return ""
    if updates < 1 or chunk < 1:
        return ""
    full, rest = divmod(updates, chunk)
    points = g.by_repetition("load_points")
    if points is None or "operations" not in points or (points["operations"] != full + bool(rest)).any():
        return ""
    if full == 0:
        return f"chunks/s ({rest:,} updates each)"
    return f"chunks/s ({chunk:,} updates each" + (f", the last {rest:,})" if rest else ")")


def per_chunk(load: Any, g: GhostRecording) -> Any:
    """The load check with its calls named for what they are here, chunks of updates (:func:`chunk_words`)."""
    words = chunk_words(g)
    if not isinstance(load, pd.DataFrame) or not words or "calls_per_s" not in load:
        return load
    out = load.rename(columns={"calls_per_s": words})
    out.attrs = {**load.attrs, "caption": str(load.attrs.get("caption", "")).replace("calls a second",
                                                                                     "chunks a second")}
    return out


def _runs(n: int) -> str:
    return "one run" if n == 1 else f"{n} runs"


def line_pointer_numbers(g: GhostRecording) -> dict[str, float]:
    """Medians over repetitions, right after the run: dead line pointers, the most on one page, heap pages and
    index entries pointing at dead line pointers or at stored tuples, per role (``base``, ``held``, ``rc``,
    ``vacuum``).  NaN where the recording has no such counts."""
    nan = float("nan")
    rel = g.relation_stats
    roles = {"base": UNHELD[g.engine], "held": HELD[g.engine], "rc": UNPINNED.get(g.engine),
             "vacuum": VACUUM_CONTROL.get(g.engine)}
    out: dict[str, float] = {}
    for role, variant in roles.items():
        for key in ("lp_dead", "lp_normal", "lp_max", "heap_pages", "index_pages", "entries", "entries_dead",
                    "entries_stored", "dead_stored"):
            out[f"{role}_{key}"] = nan
        if rel is None or variant is None or "lp_dead" not in rel:
            continue
        end = rel[(rel["variant"] == variant) & (rel["phase"] == "after_run")]
        heap, index = end[end["relation"] == "ghost_test"], end[end["relation"] == "ghost_test_pkey"]
        if heap.empty or index.empty:
            continue
        out.update({f"{role}_lp_dead": float(heap["lp_dead"].median()),
                    f"{role}_lp_normal": float(heap["lp_normal"].median()),
                    f"{role}_lp_max": float(heap["lp_max_per_page"].median()),
                    f"{role}_heap_pages": float(heap["pages"].median()),
                    f"{role}_dead_stored": float(heap["dead_tuples"].median()),
                    f"{role}_index_pages": float(index["pages"].median()),
                    f"{role}_entries": float(index["index_entries"].median()),
                    f"{role}_entries_dead": float(index["entries_to_dead_pointers"].median()),
                    f"{role}_entries_stored": float(index["entries_to_stored_tuples"].median())})
    return out


def scan_text(g: GhostRecording) -> str:
    """What the one-row UPDATE's sequential scan meets in the heap at the end of a run, from the recording's line
    pointer counts (medians over repetitions): with nothing held, mostly dead line pointers (pruned, no tuple
    left to check); with the horizon held, every dead version stored, each one checked for visibility."""
    if g.engine != "postgres":
        return ""
    lp = line_pointer_numbers(g)
    head = ("PostgreSQL's table is a heap, not the clustered index, so the one-row `UPDATE` reads it with a sequential "
            "scan that visits every page.")
    if any(np.isnan(lp.get(k, np.nan)) for k in ("base_lp_dead", "base_lp_normal", "held_lp_normal",
                                                  "held_dead_stored")):
        return head + " This recording did not count line pointers, so it cannot say what the scan met on them."
    base_all = lp["base_lp_dead"] + lp["base_lp_normal"]
    return (head + f" With nothing held, {lp['base_lp_dead']:,.0f} of the heap's {base_all:,.0f} line pointers at the "
            f"end were dead (LP_DEAD: pruned, with no tuple left to check) and {lp['base_lp_normal']:,.0f} still "
            f"pointed at a stored tuple. With the horizon held, "
            + ("none was pruned: all " if lp.get("held_lp_dead", np.nan) == 0 else
               f"{lp.get('held_lp_dead', np.nan):,.0f} were pruned and ")
            + f"{lp['held_lp_normal']:,.0f} line pointers pointed at stored tuples, {lp['held_dead_stored']:,.0f} of "
            "them dead but pinned by the held snapshot, and the scan checks the visibility of each one.")


def where_dead_versions_live(g: GhostRecording) -> pd.DataFrame:
    """One row per setting: heap line pointers by state and index entries by what they point at, right after the
    run (medians over repetitions).  Empty when the recording did not count them."""
    rel = g.relation_stats
    if rel is None or "lp_dead" not in rel:
        return pd.DataFrame()
    end = rel[rel["phase"] == "after_run"]
    heap = end[end["relation"] == "ghost_test"].groupby("variant", sort=False)[
        ["pages", "lp_normal", "lp_dead", "lp_unused", "lp_max_per_page", "dead_tuples"]].median()
    index = end[end["relation"] == "ghost_test_pkey"].groupby("variant", sort=False)[
        ["pages", "index_entries", "entries_to_dead_pointers", "entries_to_stored_tuples"]].median()
    out = heap.join(index, lsuffix="_heap", rsuffix="_index")
    out.index = [LABELS.get(v, v) for v in out.index]
    return out


def pins_table(g: GhostRecording) -> pd.DataFrame:
    """What each idle holder pinned (``pg_stat_activity``): in how many repetitions it showed a backend_xmin or a
    backend_xid, and the xmin's age at the end of the loop.  Empty when the recording has no holder rows."""
    h = g.by_repetition("holder")
    if h is None or h.empty:
        return pd.DataFrame()
    h = h if "repetition" in h else h.assign(repetition=0)
    rows = []
    for variant, part in h.groupby("variant", sort=False):
        per = part.groupby("repetition")
        end = part[part["phase"] == "after_run"]
        rows.append({"setting": LABELS.get(variant, variant), "isolation": str(part["isolation"].iloc[0]),
                     "repetitions": int(part["repetition"].nunique()),
                     "xmin_held": int((per["xmin_held"].min() > 0).sum()),
                     "xid_held": int((per["xid_held"].max() > 0).sum()),
                     "xmin_age_end": float(end["xmin_age"].median()) if len(end) else float("nan")})
    return pd.DataFrame(rows).set_index("setting")


# -- stacks --------------------------------------------------------------------------------
def unresolved_share(profile) -> float:
    """Share of sampled frames perf could not name (``[unknown]``), weighted by samples."""
    unknown = np.array(["[unknown]" in str(n) for n in profile.frame_names()], dtype=float)
    per_stack = np.bincount(profile.entry_stack(), weights=unknown[profile.stack_frames],
                            minlength=profile.n_stacks)
    weights = profile.stack_weights()
    total = float(np.sum(profile.stack_lengths() * weights))
    return float(np.sum(per_stack * weights) / total) if total else float("nan")


def _unresolved_words(share: float) -> str:
    """What the first capture's unnamed frames were, in words: none, or their share (Debian strips its binary of the
    static functions' names)."""
    if np.isnan(share):
        return "The first capture held no frames to count."
    if share < 0.0005:
        return "Every sampled frame in the first capture resolved to a function name."
    return (f"{share:.1%} of sampled frames in the first capture show as `[unknown]`: Debian's postgres binary is "
            "stripped of its static functions' names.")


def stack_section(shown, top: int = 12) -> StackSection:
    """Text, figures and tables for the CPU-stacks section, or why there are none."""
    g = shown.measured
    if not g.stacks:
        return StackSection(text=absent_text(g))
    from contention_book import perftools

    out = StackSection()
    profiles = {variant: perftools.load(path) for variant, path in sorted(g.stacks.items())}
    for variant, prof in profiles.items():
        setting = LABELS.get(variant, variant)
        out.tables.append(top_table(prof, setting, top).rename_axis(["setting", "function"]))
        out.figures.append(flame(prof, f"{g.label}: {setting}"))
    base, held = UNHELD[g.engine], HELD[g.engine]
    if base in profiles and held in profiles:
        out.tables.append(diff_table(profiles[base], profiles[held], LABELS[base], LABELS[held], top))
    unknown = unresolved_share(next(iter(profiles.values())))
    out.text = (
        "The hottest function per setting: " + hottest(profiles, lambda v: LABELS.get(v, v)) + ". " +
        f"Stacks were sampled with `perf` at the measured window of each setting. " + _unresolved_words(unknown) +
        " The call chains are complete, and exported functions resolve by name. The tables give the "
        "functions with the largest exclusive share. The last table gives the change in share between the two "
        "settings."
    )
    hit = g.tables.get("runs_vacuumed")
    if hit is not None and not hit.empty:
        first = [LABELS.get(v, v) for v in profiles if ((hit["variant"] == v) & (hit["repetition"] == 0)).any()]
        if first:
            out.text += (f" The profile of *{'* and *'.join(first)}* comes from its first repetition, which autovacuum "
                         "reached; it is shown, but no number or verdict uses it.")
    return out


def published_index_table(published) -> pd.DataFrame:
    """The article's index statistics, one row per recording, setting, moment and level, in words."""
    if not published:
        return pd.DataFrame()
    frame = pd.concat([g.index_stats.assign(recording=g.label) for g in published if g.index_stats is not None],
                      ignore_index=True)
    frame = frame.assign(setting=frame["variant"].map(lambda v: LABELS.get(v, v)),
                         moment=frame["phase"].map({"after_run": "right after the run",
                                                    "after_cleanup": "after cleanup"}).fillna(frame["phase"]))
    cols = {"ghost_versions": "ghost versions", "ghosts": "ghosts", "versions": "versioned records",
            "pages": "pages", "used_pct": "page space used (%)", "avg_size": "average record (bytes)",
            "rows": "records"}
    out = frame.set_index(["recording", "setting", "moment", "level"])[list(cols)].rename(columns=cols)
    return out.rename_axis(index={"level": "index level"})
