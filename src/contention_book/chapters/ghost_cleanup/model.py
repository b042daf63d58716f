"""What this machine's per-version cost predicts for the article's update loop with a transaction held open.

While a concurrent transaction pins versions, every update of the one row
must step over the versions left by the updates before it.  If each step
costs t_v, update k costs t₀ + k·t_v, and n updates cost
T(n) = n·t₀ + t_v·n(n−1)/2.  t₀ is the article's own per-update time with
nothing held (RCSI alone), so only the growth is predicted; t_v is measured
here as the slope of the per-update time against the number of updates done
while a snapshot pins them, less the same slope with nothing held.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..shared.capacity import Input, Prediction, predict
from .spec import SPEC

CITE = "White 2024 (seed 002)"
PINNING = "open_snapshot"   # the idle REPEATABLE READ transaction: the variant whose snapshot pins every version
UNPINNED = "baseline"


def _slopes(curve: pd.DataFrame, variant: str) -> list[float]:
    """Per repetition: the least-squares slope of µs per update against updates done, in ns per version."""
    part = curve[curve["variant"] == variant]
    if "repetition" not in part.columns:
        part = part.assign(repetition=0)
    out = []
    for _, rep in part.groupby("repetition"):
        x, y = rep["updates_done"].to_numpy(float), rep["us_per_update"].to_numpy(float)
        if len(x) >= 3 and np.ptp(x) > 0:
            out.append(float(np.polyfit(x, y, 1)[0]) * 1000.0)
    return out


def per_version_cost(shown) -> Input | None:
    curve = shown.measured.by_repetition("curve") if hasattr(shown.measured, "by_repetition") else None
    if curve is None:
        curve = shown.measured.table("curve")
    if curve is None or PINNING not in set(curve["variant"]):
        return None
    held, free = _slopes(curve, PINNING), _slopes(curve, UNPINNED)
    if not held:
        return None
    base = float(np.median(free)) if free else 0.0
    return Input.measured("time to step over one pinned version", "t_v", [h - base for h in held], "ns",
                          f"measured: {shown.measured.id}, slope of the per-update time (held − nothing held)")


def predictions(shown) -> list[Prediction]:
    pubs = shown.published if isinstance(shown.published, (list, tuple)) else [shown.published]
    pub = next((p for p in pubs if "2019" in p.recording.id), None)
    if pub is None:
        return []
    runs = pub.runs
    by = {r["variant"]: r for _, r in runs.iterrows() if bool(r.get("delayed_durability", True))}
    t_v = per_version_cost(shown)
    if t_v is None or "rcsi" not in by or "rcsi_open_txn" not in by:
        return []
    n = float(by["rcsi_open_txn"]["operations"])
    updates = Input.exact("updates in the article's loop", "n", n, "updates", f"published: {CITE}")
    t0 = Input.exact("the article's time per update under RCSI with nothing held", "t₀",
                     float(by["rcsi"]["elapsed_s"]) / float(by["rcsi"]["operations"]) * 1e6, "µs",
                     f"published: {CITE} (1 min 22 s for the loop)")
    inputs = (updates, t0, t_v)
    return [predict(
        SPEC.chapter, "each update steps over every version pinned before it",
        "T = n·t₀ + t_v·n(n−1)/2", "the loop's time with a transaction held open (SQL Server 2019)", "s", "value",
        float(by["rcsi_open_txn"]["elapsed_s"]), f"over 4 min ({CITE}, SQL Server 2019, delayed durability)",
        lambda v: v["n"] * v["t₀"] * 1e-6 + v["t_v"] * 1e-9 * v["n"] * (v["n"] - 1) / 2, inputs,
        lacks="SQL Server's own cost per version: its versions live in row version chains and the version store, "
              "and the article saw about 6 million lock requests a second during the loop; PostgreSQL's step over a "
              "dead index entry and heap tuple is a different, likely cheaper, walk",
        published_kind="at least", vary="n")]
