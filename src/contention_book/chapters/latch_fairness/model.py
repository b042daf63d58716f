"""What a fair hand-off costs: first on this machine's own fair lock, then for the article's fair and unfair runs.

A fair latch grants ownership to the waiter at the head of its queue, who is
asleep: until that thread is woken and running, the latch is owned by nobody
who can use it.  The lock here parks its waiters on a futex, so the wake-up
on the path is the machine card's futex wake of a thread sleeping on another
CPU (t_wake), taken from the card of the recording this page renders.

On this machine first: with two threads, a record handed to a sleeper puts
a wake-up on the lock's path, so the fair lock's rate is
X₂ = 1 / (t_hold + h·t_wake), t_hold the time per record of the 1-thread
run and h the hand-offs per record the 2-thread run counted (a count, as the
ring's batch is).  Where h·t_wake is a small part of the time per record the
two threads hardly met, and the run cannot test the wake-up: *model invalid*.
Then the article: each of the W waits it counted put one wake-up on the
latch's path, so the fair run took at least W·t_wake; a barging latch takes
the wake-ups off the path, saving W·(t_wake − t_xfer).
"""
from __future__ import annotations

import numpy as np

from ..shared.capacity import (NO_CARD, Input, Prediction, card_input, card_of, gate, measured_from, measured_value,
                               no_model, precision, predict)
from .spec import SPEC
from .tables import published_numbers

CITE = "White 2022"


def _costs(shown, costs: dict | None) -> tuple[dict, str]:
    """The card's wake-up and transfer (``costs`` replaces them: tests feed contrary ones), or why not."""
    if costs is not None:
        return costs, ""
    card, rid = card_of(shown.measured)
    if card is None:
        return {}, NO_CARD
    out = {k: v for k, v in (("t_wake", card_input(card, rid, "futex_wake", "t_wake")),
                             ("t_xfer", card_input(card, rid, "one_way_transfer", "t_xfer"))) if v is not None}
    return out, "" if len(out) == 2 else "the machine card lacks the wake-up or the transfer, or a rule bars it"


def machine_predictions(shown, costs: dict | None = None) -> list[Prediction]:
    """The fair lock's 2-thread rate on this machine from its 1-thread hold time and the card's wake-up."""
    m = shown.measured
    runs = m.runs if getattr(m, "is_native", True) else None
    costs, _why = _costs(shown, costs)
    if runs is None or "t_wake" not in costs:
        return []
    fair = runs[runs["kind"] == "fair"]
    one, two = fair[fair["threads"] == 1], fair[fair["threads"] == 2]
    if one.empty or two.empty:
        return []
    hold = Input.measured("time per record, fair lock, 1 thread (all under the lock)", "t_hold",
                          (1e9 / one["records_per_s"]).tolist(), "ns", measured_from(m, "fair, 1 thread"))
    per = (two["handoffs"] / two["records"]).tolist() if {"handoffs", "records"} <= set(two.columns) else []
    if not per:
        return []
    h = Input.measured("hand-offs per record, fair lock, 2 threads", "h", per, "", measured_from(m, "fair, 2 threads"))
    share = h.value.median * costs["t_wake"].value.median
    share /= share + hold.value.median
    invalid = "" if share >= 0.1 else (
        f"the two threads hardly met ({h.value.median:.2g} hand-offs per record: the wake-ups are "
        f"{share:.0%} of the time per record), so this run does not test the wake-up")
    if not invalid and h.value.high > 10 * max(h.value.low, 1e-12):
        invalid = (f"the hand-offs per record, {h.value.low:.2g} to {h.value.high:.2g} over the repetitions (a "
                   "convoy formed in some and not in others), make the predicted rate span more than ten times, so "
                   "it tests nothing")
    got, lo, hi = measured_value(two["records_per_s"].tolist())
    return [predict(
        SPEC.chapter, "each hand-off to a sleeping thread puts one wake-up on the lock's path",
        "X₂ = 1 / (t_hold + h · t_wake)", "the fair lock's rate with 2 threads (this machine)", "records/s", "value",
        got, f"{got:,.0f} records/s (p10–p90 {lo:,.0f}–{hi:,.0f}, this recording)",
        lambda v: 1e9 / (v["t_hold"] + v["h"] * v["t_wake"]), (hold, h, costs["t_wake"]), published_low=lo,
        published_high=hi, domain=(0.0, 1e9 / hold.value.median, "above the lock's own capacity 1/t_hold"),
        invalid=invalid,
        lacks="a wake-up slower or faster than the card's: the sleeper's CPU may not have gone idle, or may be "
              "busy with other work. h is counted in the very run whose rate this predicts, so the row checks that "
              "hand-offs times the card's wake-up account for the lost time; it does not forecast the contended "
              "rate from uncontended numbers alone")]


def predictions(shown, costs: dict | None = None) -> list:
    """The article's runs; ``costs`` replaces the card's hand-off costs (tests feed contrary ones)."""
    p = published_numbers(shown.published)
    costs, why = _costs(shown, costs)
    if why:
        return [no_model(SPEC.chapter, "the fair run's elapsed time", f"around {p['pub_fair_s']:g} s ({CITE})", why)]
    waits = Input.exact("latch waits in the fair run", "W", p["pub_fair_latch_waits"], "waits",
                        f"published: {CITE}, sys.dm_os_latch_stats")
    wake, xfer = costs["t_wake"], costs["t_xfer"]
    fair_v, fair_lo, fair_hi = precision(f"{p['pub_fair_s']:g}")
    t_fair = Input.interval("the fair run's elapsed time (\"around\": half its last digit either side)", "T_fair",
                            fair_v, fair_lo, fair_hi, "s", f"published: {CITE}")
    unfair_v, unfair_lo, unfair_hi = precision(f"{p['pub_unfair_s']:g}")
    fair = predict(
        SPEC.chapter, "a fair hand-off puts one wake-up on the latch's path per wait",
        "T_fair ≥ W · t_wake", "the fair run's elapsed time", "s", "at least", fair_v,
        f"around {p['pub_fair_s']:g} s ({CITE})", lambda v: v["W"] * v["t_wake"] * 1e-9, (waits, wake), vary="W",
        published_low=fair_lo, published_high=fair_hi,
        lacks="the hold time and the work done outside the latch, which can only add to the bound; the wake-up "
              "cost of the article's machine (Windows on a laptop) rather than this one's")
    unfair = predict(
        SPEC.chapter, "barging removes the wake-ups from the latch's path",
        "T_unfair = T_fair − W · (t_wake − t_xfer)", "the unfair run's elapsed time", "s", "value",
        unfair_v, f"around {p['pub_unfair_s']:g} s ({CITE})",
        lambda v: v["T_fair"] - v["W"] * (v["t_wake"] - v["t_xfer"]) * 1e-9, (t_fair, waits, wake, xfer), vary="W",
        published_low=unfair_lo, published_high=unfair_hi,
        domain=(0.0, np.inf, "a negative elapsed time: the wake-ups it removes take longer than the whole fair "
                             "run, so they cannot all have been on its path"),
        lacks="any other serialisation: once the latch stops convoying, the parallel exchange (CXPACKET waits rose "
              "from about 4.9 s to 19.3 s of wait time in the article) and the insert work itself set the pace")
    return gate([fair, unfair], machine_predictions(shown, costs))


def usl_fits(shown):
    """USL fits to the native sweep's records/s per lock kind (threads as the concurrency)."""
    from ..shared.capacity_page import recording_cpus, usl_curves

    from .spec import KIND_LABELS

    return usl_curves(shown.measured.runs, "threads", "records_per_s", "kind", measured_from(shown.measured),
                      KIND_LABELS, cpus=recording_cpus(shown.measured))
