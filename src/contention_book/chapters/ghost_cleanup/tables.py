"""Tables, key numbers, verdicts and notes computed from ghost-cleanup recordings."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from .spec import BASELINE, LABELS
from ..shared.stacks import StackSection, absent_text, diff_table, flame, hottest, top_table
from .recordings import GhostRecording


def elapsed_table(recordings: Sequence[GhostRecording]) -> pd.DataFrame:
    """Elapsed time per variant and its ratio to the recording's own baseline."""
    rows = []
    for g in recordings:
        runs = g.runs
        if "delayed_durability" in runs:
            runs = runs[runs["delayed_durability"].astype(str).str.lower().isin(("true", "1"))]
        per_variant = runs.groupby("variant", sort=False)["elapsed_s"].median()
        base = per_variant.get(BASELINE[g.engine], np.nan)
        for variant, elapsed in per_variant.items():
            note = ""
            if "elapsed_note" in runs:
                notes = runs.loc[runs["variant"] == variant, "elapsed_note"].dropna()
                note = str(notes.iloc[0]) if len(notes) else ""
            rows.append({"recording": g.label, "kind": g.recording.kind, "engine": g.engine, "variant": variant,
                         "setting": LABELS.get(variant, variant), "elapsed_s": float(elapsed),
                         "vs_baseline": float(elapsed / base) if base and not np.isnan(base) else np.nan,
                         "note": note})
    return pd.DataFrame(rows)


def curve_growth(curve: pd.DataFrame) -> pd.DataFrame:
    """Does time per update grow with the updates before it?  A straight-line fit per variant.

    If each update must step over every version it cannot remove, µs per update
    grows linearly with updates done (so the total grows quadratically).  The
    slope is µs per update gained per 1,000 updates; ``r2`` says how straight.
    """
    rows = []
    for variant, part in curve.groupby("variant", sort=False):
        x = part["updates_done"].to_numpy(float)
        y = part["us_per_update"].to_numpy(float)
        if len(x) < 3:
            continue
        slope, intercept = np.polyfit(x, y, 1)
        fitted = slope * x + intercept
        ss_res = float(np.sum((y - fitted) ** 2))
        ss_tot = float(np.sum((y - y.mean()) ** 2)) or float("nan")
        tenth = max(1, len(y) // 10)
        rows.append({"variant": variant, "setting": LABELS.get(variant, variant),
                     "first_us": float(np.median(y[:tenth])), "last_us": float(np.median(y[-tenth:])),
                     "growth": float(np.median(y[-tenth:]) / np.median(y[:tenth])),
                     "slope_us_per_1000": float(slope * 1000), "r2": 1 - ss_res / ss_tot})
    return pd.DataFrame(rows)


def storage_long(g: GhostRecording) -> pd.DataFrame:
    """Pages and dead/ghost counts per variant and phase, in one long frame for plotting."""
    if g.index_stats is not None:
        s = g.index_stats
        leaf = s[s["level"] == 0]
        total_pages = s.groupby(["variant", "phase"], sort=False)["pages"].sum().rename("pages")
        dead = leaf.groupby(["variant", "phase"], sort=False)[["ghosts", "ghost_versions"]].sum()
        dead["not_removed"] = dead[["ghosts", "ghost_versions"]].max(axis=1)
        out = pd.concat([total_pages, dead["not_removed"]], axis=1).reset_index()
        out["levels"] = s.groupby(["variant", "phase"], sort=False)["level"].max().to_numpy() + 1
    else:
        s = g.relation_stats
        pages = s.groupby(["variant", "phase"], sort=False)["pages"].sum().rename("pages")
        heap = s[s["relation"] == "ghost_test"].set_index(["variant", "phase"])["dead_tuples"].rename("not_removed")
        out = pd.concat([pages, heap], axis=1).reset_index()
        levels = s[s["relation"] == "ghost_test_pkey"].set_index(["variant", "phase"])["tree_level"] + 1
        out["levels"] = levels.reindex(pd.MultiIndex.from_frame(out[["variant", "phase"]])).to_numpy()
    out.insert(0, "recording", g.label)
    out["setting"] = out["variant"].map(lambda v: LABELS.get(v, v))
    return out


HELD = {"postgres": "open_snapshot", "sqlserver": "rcsi_open_txn"}
UNHELD = {"postgres": "baseline", "sqlserver": "rcsi"}


def ghost_visits(updates: int) -> int:
    """Ghosts stepped over in all if none can be removed: the k-th update skips k-1."""
    return updates * (updates - 1) // 2


def measured_numbers(g: GhostRecording) -> dict[str, Any]:
    """The same keys for any recording: ``base`` is the variant without, ``held`` with, the open transaction.

    A key whose variant is not in the recording is NaN, so the prose still renders.
    """
    el = elapsed_table([g]).set_index("variant")
    base, held = UNHELD[g.engine], HELD[g.engine]
    nan = float("nan")
    nums: dict[str, Any] = {"m_engine": g.label, "m_updates": int(g.runs["operations"].max()),
                            "m_base_label": LABELS[base], "m_held_label": LABELS[held]}
    for role, variant in (("base", base), ("held", held)):
        nums[f"m_{role}_s"] = float(el.loc[variant, "elapsed_s"]) if variant in el.index else nan
    nums["m_held_x"] = nums["m_held_s"] / nums["m_base_s"]
    nums["m_ghost_visits"] = ghost_visits(nums["m_updates"])
    growth = curve_growth(g.curve).set_index("variant") if g.curve is not None else pd.DataFrame()
    storage = storage_long(g).set_index(["variant", "phase"])
    for role, variant in (("base", base), ("held", held)):
        for col in ("first_us", "last_us", "growth", "r2"):
            nums[f"m_{role}_{col}"] = float(growth.loc[variant, col]) if variant in growth.index else nan
        for phase in ("after_run", "after_cleanup"):
            row = storage.loc[(variant, phase)] if (variant, phase) in storage.index else None
            nums[f"m_{role}_{phase}_pages"] = float(row["pages"]) if row is not None else nan
            nums[f"m_{role}_{phase}_dead"] = float(row["not_removed"]) if row is not None else nan
    return nums


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
        if g.index_stats is not None:
            s = g.index_stats
            for variant in s["variant"].unique():
                end = s[(s["variant"] == variant) & (s["phase"] == "after_run")]
                nums[f"{tag}_{variant}_leaf_pages"] = int(end.loc[end["level"] == 0, "pages"].sum())
                nums[f"{tag}_{variant}_levels"] = int(end["level"].max() + 1)
                nums[f"{tag}_{variant}_ghost_versions"] = int(end.loc[end["level"] == 0, "ghost_versions"].sum())
        if g.counters is not None:
            for _, row in g.counters.iterrows():
                key = "lock_requests" if "Lock" in row["counter"] else "skipped_ghosts"
                nums[f"{tag}_{row['variant']}_{key}_per_s"] = row["per_second"]
    nums.update(measured_numbers(measured))
    nums["ghost_visits_published"] = ghost_visits(int(published[0].runs["operations"].max())) if published else np.nan
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in nums.items()}


def _tf7006_direction(el: pd.DataFrame) -> str:
    if {"rcsi_open_txn", "rcsi_open_txn_tf7006"} <= set(el.index):
        return f"{el.loc['rcsi_open_txn', 'elapsed_s']:.0f} s without, {el.loc['rcsi_open_txn_tf7006', 'elapsed_s']:.0f} s with TF 7006"
    return "variant not in this recording"


def _tf7006_agrees(el: pd.DataFrame) -> bool | None:
    if {"rcsi_open_txn", "rcsi_open_txn_tf7006"} <= set(el.index):
        return bool(el.loc["rcsi_open_txn_tf7006", "elapsed_s"] > el.loc["rcsi_open_txn", "elapsed_s"])
    return None


def growth_note(g: GhostRecording) -> str:
    """What the run without the open transaction shows, in words built from the recording."""
    n = measured_numbers(g)
    if np.isnan(n["m_base_growth"]):
        return ""
    text = (f"Without the open transaction the time per update still grew {n['m_base_growth']:.1f}× over the run, "
            f"though only {n['m_base_after_run_dead']:,.0f} removable versions were left at its end. ")
    if g.engine == "postgres":
        text += (f"The growth comes from the table's size, not from dead tuples: heap and index grew to "
                 f"{n['m_base_after_run_pages']:,.0f} pages for one live row. The one-row `UPDATE` reads the "
                 "heap with a sequential scan, and the scan visits every page, even one that pruning has emptied. "
                 f"`VACUUM` did not give the pages back ({n['m_base_after_cleanup_pages']:,.0f} afterwards), "
                 "because it returns only empty pages at the end of the file.")
    else:
        text += ("Here the cleanup task runs, but it removes ghosts only after each transaction ends, and the "
                 "next update has already started by then.")
    return text


# -- stacks --------------------------------------------------------------------------------
def unresolved_share(profile) -> float:
    """Share of sampled frames perf could not name (``[unknown]``), weighted by samples."""
    unknown = np.array(["[unknown]" in str(n) for n in profile.frame_names()], dtype=float)
    per_stack = np.bincount(profile.entry_stack(), weights=unknown[profile.stack_frames],
                            minlength=profile.n_stacks)
    weights = profile.stack_weights()
    total = float(np.sum(profile.stack_lengths() * weights))
    return float(np.sum(per_stack * weights) / total) if total else float("nan")


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
        f"Stacks were sampled with `perf` at the measured window of each setting. Debian's postgres binary is "
        f"stripped, so static functions show as `[unknown]` ({unknown:.0%} of sampled frames in the first "
        "capture). The call chains are complete, and exported functions resolve by name. The tables give the "
        "functions with the largest exclusive share. The last table gives the change in share between the two "
        "settings."
    )
    return out
