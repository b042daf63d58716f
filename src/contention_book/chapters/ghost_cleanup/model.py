"""What a per-version step predicts: first for this machine's whole loop, then for the article's.

While a concurrent transaction pins versions, every update of the one row
must step over the versions left by the updates before it.  If each step
costs t_v, update k costs t₀ + k·t_v, and n updates cost
T(n) = n·t₀ + t_v·n(n−1)/2.

On this machine first: t_v is the slope of the per-update time against the
updates done while a snapshot pins them (less the same slope with nothing
held), fitted on the first half of the loop only.  The model predicts the
time of the second half alone, which the fit never saw: with nothing held
the second half takes B₂ (measured on the unheld run), and each update k
adds k·t_v, so T₂ = B₂ + t_v·(n(n−1) − m(m−1))/2, m the first half's
updates.  This is PostgreSQL's own model, tested on PostgreSQL only.

For the article, every input is the article's own (so the prediction is
"published only": nothing measured here enters it): t₀ is its locking READ
COMMITTED run (about 2 s for the loop; its RCSI run already pays for
versions, so taking t₀ from it would count them twice), and t_v is one lock
request per skipped ghost at the rate it counted in its plain RCSI test
(about 6 million a second).  A step measured on PostgreSQL is not used: a
dead heap tuple and index entry are not SQL Server's version ghost.  The
article's "over 4 min" is a lower bound and is compared as one: a prediction
above it agrees with it, and says nothing more about its size.  The article
later calls the time "4 minutes", so what a prediction far above the bound
would mean is said beside the verdict, not in it.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..shared.capacity import Input, Prediction, gate, measured_from, measured_value, precision, predict
from .spec import SPEC

CITE = "White 2024"
USES_MACHINE_CARD = False  # no model here takes a cost from the recording's machine card (shared.capacity_page)
PINNING = "open_snapshot"   # the idle REPEATABLE READ transaction: the variant whose snapshot pins every version
UNPINNED = "baseline"


def _slopes(curve: pd.DataFrame, variant: str, upto: float = np.inf) -> list[float]:
    """Per repetition: the least-squares slope of µs per update against updates done (up to ``upto``), in ns per
    version."""
    part = curve[(curve["variant"] == variant) & (curve["updates_done"] <= upto)]
    if "repetition" not in part.columns:
        part = part.assign(repetition=0)
    out = []
    for _, rep in part.groupby("repetition"):
        x, y = rep["updates_done"].to_numpy(float), rep["us_per_update"].to_numpy(float)
        if len(x) >= 3 and np.ptp(x) > 0:
            out.append(float(np.polyfit(x, y, 1)[0]) * 1000.0)
    return out


def _curve(shown) -> pd.DataFrame | None:
    m = shown.measured
    curve = m.by_repetition("curve") if hasattr(m, "by_repetition") else None
    if curve is None:
        curve = m.table("curve")
    if curve is None or PINNING not in set(curve["variant"]):
        return None
    return curve


def per_version_cost(shown, upto: float = np.inf, symbol: str = "t_v") -> Input | None:
    curve = _curve(shown)
    if curve is None:
        return None
    held, free = _slopes(curve, PINNING, upto), _slopes(curve, UNPINNED, upto)
    if not held:
        return None
    base = float(np.median(free)) if free else 0.0
    part = "" if not np.isfinite(upto) else f", first {upto:,.0f} updates"
    return Input.measured("time to step over one pinned version" + (" (first half)" if part else ""), symbol,
                          [h - base for h in held], "ns",
                          measured_from(shown.measured, f"slope of the per-update time (held − nothing held{part})"))


def _second_half(curve: pd.DataFrame, variant: str, half: float) -> tuple[list[float], list[float]]:
    """Per repetition: the seconds the loop spent after its last chunk within the first ``half`` updates, and the
    updates done at that chunk (where the second half starts)."""
    part = curve[curve["variant"] == variant]
    if "repetition" not in part.columns:
        part = part.assign(repetition=0)
    seconds, starts = [], []
    for _, rep in part.groupby("repetition"):
        first = rep[rep["updates_done"] <= half]
        if len(first) and len(rep) > len(first):
            seconds.append(float(rep["elapsed_s"].max() - first["elapsed_s"].max()))
            starts.append(float(first["updates_done"].max()))
    return seconds, starts


def machine_predictions(shown) -> list[Prediction]:
    """The pinned loop's second half on this machine, from the step fitted on its first half: out of sample."""
    m = shown.measured
    curve, runs = _curve(shown), m.runs
    if curve is None or runs is None or not {PINNING, UNPINNED} <= set(runs["variant"]):
        return []
    if not {"elapsed_s", "updates_done"} <= set(curve.columns):
        return []
    # n: where the curve ends (its last chunk), so that the measured and the predicted half cover the same updates
    held = curve[curve["variant"] == PINNING]
    n = float(held.groupby(held["repetition"] if "repetition" in held.columns else np.zeros(len(held)))
              ["updates_done"].max().median())
    held_2, starts = _second_half(curve, PINNING, n / 2)
    free_2, _ = _second_half(curve, UNPINNED, n / 2)
    if not held_2 or not free_2:
        return []
    start = float(np.median(starts))
    t_v = per_version_cost(shown, upto=start, symbol="t_v½")  # not the whole run's t_v the article row uses
    if t_v is None:
        return []
    b2 = Input.measured("second half's time with nothing held", "B₂", free_2, "s",
                        measured_from(m, f"{UNPINNED}, updates after the first {start:,.0f}"))
    updates = Input.exact("updates in the loop", "n", n, "updates", measured_from(m, "the curve's last chunk"))
    first = Input.exact("updates in the first half (the fit's)", "m", start, "updates",
                        measured_from(m, "the last chunk within half the loop"))
    got, lo, hi = measured_value(held_2)
    return [predict(
        SPEC.chapter, "each update steps over every version pinned before it (step fitted on the first half; the "
        "second half predicted)",
        "T₂ = B₂ + t_v½·(n(n−1) − m(m−1))/2", "the pinned loop's second half (this machine)", "s", "value",
        got, f"{got:.3g} s (10th to 90th percentile of its runs {lo:.3g}–{hi:.3g} s, this recording)",
        lambda v: v["B₂"] + v["t_v½"] * 1e-9 * (v["n"] * (v["n"] - 1) - v["m"] * (v["m"] - 1)) / 2,
        (updates, first, b2, t_v), published_low=lo, published_high=hi, domain=(0.0, np.inf, "a negative time"),
        lacks="a step that changes as the chain grows (cache misses once it outgrows a cache) and pruning by "
              "the server during the loop")]


def lock_request_cost(pub) -> Input | None:
    """t_v from the article alone: one lock request per skipped version ghost, at the rate its plain RCSI test
    counted (Lock Requests/sec), in ns per ghost.  None when the published recording has no such counter."""
    counters = pub.counters
    if counters is None:
        return None
    rows = counters[(counters["variant"] == "rcsi") & counters["counter"].str.contains("Lock Requests")]
    if rows.empty:
        return None
    rate = float(rows["per_second"].iloc[0])
    return Input.exact("time per skipped ghost: one lock request at the article's rate", "t_v", 1e9 / rate, "ns",
                       f"published: {CITE} (about {rate / 1e6:.0f} million lock requests a second in its plain RCSI "
                       "test)")


def predictions(shown) -> list:
    pubs = shown.published if isinstance(shown.published, (list, tuple)) else [shown.published]
    pub = next((p for p in pubs if "2019" in p.recording.id), None)
    if pub is None:
        return []
    runs = pub.runs
    by = {r["variant"]: r for _, r in runs.iterrows() if bool(r.get("delayed_durability", True))}
    t_v = lock_request_cost(pub)
    if t_v is None or "read_committed" not in by or "rcsi_open_txn" not in by:
        return gate([], machine_predictions(shown))
    n = float(by["rcsi_open_txn"]["operations"])
    updates = Input.exact("updates in the article's loop", "n", n, "updates", f"published: {CITE}")
    base = by["read_committed"]
    t_rc, t_rc_lo, t_rc_hi = precision(f"{float(base['elapsed_s']):g}")
    per = 1e6 / float(base["operations"])
    t0 = Input.interval("the article's time per update under locking READ COMMITTED (no versions)", "t₀",
                        t_rc * per, t_rc_lo * per, t_rc_hi * per, "µs",
                        f"published: {CITE} ({base.get('elapsed_note', 'about 2 s')} for the loop)")
    inputs = (updates, t0, t_v)
    over = float(by["rcsi_open_txn"]["elapsed_s"])
    expect = n * t0.value.median * 1e-6 + t_v.value.median * 1e-9 * n * (n - 1) / 2
    # "Over four minutes" is a lower bound: compared as one (shared.capacity), a prediction above it agrees with it
    # without its size being tested.  The article later says "4 minutes"; what that would mean is said here.
    skips = t_v.value.median * 1e-9 * n * (n - 1) / 2
    article = [predict(
        SPEC.chapter, "each update steps over every version pinned before it, one lock request per version",
        "T = n·t₀ + t_v·n(n−1)/2", "the loop's time with a transaction held open (SQL Server 2019)", "s", "value",
        over, f"over 4 min ({CITE}, SQL Server 2019, delayed durability)",
        lambda v: v["n"] * v["t₀"] * 1e-6 + v["t_v"] * 1e-9 * v["n"] * (v["n"] - 1) / 2, inputs,
        lacks="whether the lock rate of the plain RCSI test holds in this loop (the article gave no rate for it) and "
              "the cost of the scan itself beside the lock request. The article later puts the time at "
              f"{over / 60:.0f} minutes; if it was about that, the prediction of {expect / 60:.0f} minutes is "
              f"{expect / over:.1f} times too long: one lock request per skipped ghost at the article's "
              f"{1e3 / t_v.value.median:.0f} million a second already takes {skips / 60:.0f} minutes, so the loop "
              "must have passed a ghost faster than that",
        published_kind="at least", vary="n", domain=(0.0, np.inf, "a negative time"))]
    return gate(article, machine_predictions(shown))
