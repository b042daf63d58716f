"""What this machine's hand-off costs predict for the article's fair and unfair runs.

A fair latch grants ownership to the waiter at the head of its queue, who is
asleep: until that thread is woken and running, the latch is owned by
nobody who can use it.  So each of the W waits the article counted put one
cross-CPU wake-up (t_wake) on the latch's critical path, and the fair run
cannot have taken less than W·t_wake.  A barging latch is taken by a thread
that is already running; the gap between owners shrinks to a cache-line
transfer (t_xfer).  If the latch were the only thing that serialised the
run, removing the wake-ups would save W·(t_wake − t_xfer).
"""
from __future__ import annotations

import numpy as np

from ..shared.capacity import Input, Prediction, machine_costs, predict
from .spec import SPEC
from .tables import published_numbers

CITE = "White 2022 (seed 000)"


def predictions(shown, costs_recording: str = "", costs: dict | None = None) -> list[Prediction]:
    """``costs`` replaces the measured hand-off costs (tests feed contrary ones)."""
    p = published_numbers(shown.published)
    costs = costs if costs is not None else machine_costs(costs_recording)
    waits = Input.exact("latch waits in the fair run", "W", p["pub_fair_latch_waits"], "waits",
                        f"published: {CITE}, sys.dm_os_latch_stats")
    t_fair = Input.exact("the fair run's elapsed time", "T_fair", p["pub_fair_s"], "s", f"published: {CITE}")
    if "t_wake" not in costs or "t_xfer" not in costs:
        return []
    wake, xfer = costs["t_wake"], costs["t_xfer"]
    bound_inputs = (waits, wake)
    fair = predict(
        SPEC.chapter, "a fair hand-off puts one wake-up on the latch's path per wait",
        "T_fair ≥ W · t_wake", "the fair run's elapsed time", "s", "at least", p["pub_fair_s"],
        f"{p['pub_fair_s']:.1f} s ({CITE})", lambda v: v["W"] * v["t_wake"] * 1e-9, bound_inputs, vary="W",
        lacks="the hold time and the work done outside the latch, which can only add to the bound; the wake-up "
              "cost of the article's machine (Windows on a laptop) rather than this one's")
    unfair_inputs = (t_fair, waits, wake, xfer)
    unfair = predict(
        SPEC.chapter, "barging removes the wake-ups from the latch's path",
        "T_unfair = T_fair − W · (t_wake − t_xfer)", "the unfair run's elapsed time", "s", "value",
        p["pub_unfair_s"], f"{p['pub_unfair_s']:.1f} s ({CITE})",
        lambda v: np.maximum(0.0, v["T_fair"] - v["W"] * (v["t_wake"] - v["t_xfer"]) * 1e-9), unfair_inputs, vary="W",
        lacks="any other serialisation: once the latch stops convoying, the parallel exchange (CXPACKET waits rose "
              "from about 4.9 s to 19.3 s of wait time in the article) and the insert work itself set the pace, "
              "so the saving cannot reach the wake-up time the first model puts on the latch")
    return [fair, unfair]


def usl_fits(shown):
    """USL fits to the native sweep's records/s per lock kind (threads as the concurrency)."""
    from ..shared.capacity_page import usl_curves

    from .spec import KIND_LABELS

    return usl_curves(shown.measured.runs, "threads", "records_per_s", "kind", f"measured: {shown.measured.id}",
                      KIND_LABELS)
