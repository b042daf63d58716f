"""What a fair hand-off costs: first on this machine's own fair lock, then for the article's fair and unfair runs.

A fair latch grants ownership to the waiter at the head of its queue, who is
asleep: until that thread is woken and running, the latch is owned by nobody
who can use it.

Which wake-up.  The releaser of a fair lock runs on (it goes back to its work
outside the lock), so the new owner must run on another CPU, and that CPU
went idle when the owner fell asleep.  The machine card's futex wake-up
(t_wake: FUTEX_WAKE on one CPU until the thread asleep in FUTEX_WAIT on the
other CPU runs again) times exactly that, the wake-to-run latency included,
so the models use it.  The card's context switch times two threads on one
CPU passing a futex token: the woken thread runs as soon as its waker goes
to sleep, so no idle CPU is woken.  That is the least a hand-off could cost,
where the new owner's CPU is running anyway; it is shown beside them as a
sensitivity, not scored, with the article's own LATCH_EX signal wait per
wait (from the signal to running again, on the article's machine).

On this machine first: with two threads, a record handed to a sleeper puts
a wake-up on the lock's path, so the fair lock's rate is
X₂ = 1 / (t_hold + h·t_wake), t_hold the time per record of the 1-thread
run and h the hand-offs per record the 2-thread run counted (a count, as the
ring's batch is).  Where h·t_wake is a small part of the time per record the
two threads hardly met, and the run cannot test the wake-up: *model invalid*.
Then the article: each of the W waits it counted put one wake-up on the
latch's path, so the fair run took at least W·t_wake; a barging latch takes
the wake-ups off the path, saving W·(t_wake − t_xfer):
T_unfair = T_fair − W·(t_wake − t_xfer).  The two models are one inequality
read twice: T_unfair is positive only where W·t_wake < T_fair + W·t_xfer, so
a wake-up longer than T_fair / W (about 20 µs for the article's 5.5 s and
271,609 waits) breaks the bound and leaves T_unfair negative.  That is said
as *model invalid*, with the numbers: the wake-up measured here cannot have
been the article's.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..shared.capacity import (NO_CARD, Input, Prediction, card_input, card_of, gate, measured_from, measured_value,
                               no_model, precision, predict)
from .spec import SPEC
from .tables import published_numbers

CITE = "White 2022"


def _costs(shown, costs: dict | None) -> tuple[dict, str]:
    """The card's wake-up and transfer (``costs`` replaces them: tests feed contrary ones), or why not; the card's
    context switch too, as ``t_cs``, where it has one (the sensitivity's)."""
    if costs is not None:
        return costs, ""
    card, rid = card_of(shown.measured)
    if card is None:
        return {}, NO_CARD
    out = {k: v for k, v in (("t_wake", card_input(card, rid, "futex_wake", "t_wake")),
                             ("t_xfer", card_input(card, rid, "one_way_transfer", "t_xfer")),
                             ("t_cs", card_input(card, rid, "context_switch", "t_cs"))) if v is not None}
    why = "" if {"t_wake", "t_xfer"} <= set(out) else \
        "the machine card lacks the wake-up or the transfer, or a rule bars it"
    return out, why


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


WAKE_WHY = ("t_wake is the card's futex wake-up of a thread asleep on the other CPU, wake-to-run included: a fair "
            "hand-off's new owner is asleep, its CPU idle unless other work runs there, while the releaser runs on. "
            "The card's context switch wakes no idle CPU (its two threads share one), so it is the floor of a "
            "hand-off, shown as a sensitivity")


def _article(p: dict, wake: Input, xfer: Input) -> tuple[Prediction, Prediction]:
    """The fair bound and the unfair time for one hand-off cost ``wake`` (its symbol is t_wake in the equations)."""
    waits = Input.exact("latch waits in the fair run", "W", p["pub_fair_latch_waits"], "waits",
                        f"published: {CITE}, sys.dm_os_latch_stats")
    fair_v, fair_lo, fair_hi = precision(f"{p['pub_fair_s']:g}")
    t_fair = Input.interval("the fair run's elapsed time (\"around\": half its last digit either side)", "T_fair",
                            fair_v, fair_lo, fair_hi, "s", f"published: {CITE}")
    unfair_v, unfair_lo, unfair_hi = precision(f"{p['pub_unfair_s']:g}")
    fair = predict(
        SPEC.chapter, "a fair hand-off wakes a sleeping waiter on another CPU: one wake-up on the latch's path per "
                      "wait",
        "T_fair ≥ W · t_wake", "the fair run's elapsed time", "s", "at least", fair_v,
        f"around {p['pub_fair_s']:g} s ({CITE})", lambda v: v["W"] * v["t_wake"] * 1e-9, (waits, wake), vary="W",
        published_low=fair_lo, published_high=fair_hi,
        lacks=f"{WAKE_WHY}. Left out: the hold time and the work done outside the latch, which can only add to the "
              "bound; the wake-up cost of the article's machine (Windows on a laptop) rather than this one's")
    most = fair_v / p["pub_fair_latch_waits"] * 1e9     # ns: the longest hand-off the fair run leaves room for
    path = p["pub_fair_latch_waits"] * wake.value.median * 1e-9
    invalid = "" if path <= fair_v else (
        f"W · t_wake = {p['pub_fair_latch_waits']:,.0f} × {_us(wake.value.median)} = {path:.3g} s, more than the "
        f"fair run's whole {fair_v:g} s: the article's fair run leaves at most T_fair / W = {_us(most)} per "
        f"hand-off, so the wake-up measured here ({_us(wake.value.median)}) cannot have been the article's, and "
        "the wake-ups it would remove do not fit in the run they were on")
    unfair = predict(
        SPEC.chapter, "barging removes the wake-ups from the latch's path",
        "T_unfair = T_fair − W · (t_wake − t_xfer)", "the unfair run's elapsed time", "s", "value",
        unfair_v, f"around {p['pub_unfair_s']:g} s ({CITE})",
        lambda v: v["T_fair"] - v["W"] * (v["t_wake"] - v["t_xfer"]) * 1e-9, (t_fair, waits, wake, xfer), vary="W",
        published_low=unfair_lo, published_high=unfair_hi, invalid=invalid,
        domain=(0.0, np.inf, "a negative elapsed time: the wake-ups it removes take longer than the whole fair "
                             "run, so they cannot all have been on its path"),
        lacks="any other serialisation: once the latch stops convoying, the parallel exchange (CXPACKET waits rose "
              "from about 4.9 s to 19.3 s of wait time in the article) and the insert work itself set the pace")
    return fair, unfair


def _us(ns: float) -> str:
    return f"{ns / 1e3:.2g} µs" if ns < 1e4 else f"{ns / 1e3:,.0f} µs"


def predictions(shown, costs: dict | None = None) -> list:
    """The article's runs; ``costs`` replaces the card's hand-off costs (tests feed contrary ones)."""
    p = published_numbers(shown.published)
    costs, why = _costs(shown, costs)
    if why:
        return [no_model(SPEC.chapter, "the fair run's elapsed time", f"around {p['pub_fair_s']:g} s ({CITE})", why)]
    return gate(list(_article(p, costs["t_wake"], costs["t_xfer"])), machine_predictions(shown, costs))


def _latch_ex_waits(published) -> float:
    frame = published.wait
    return float(frame[(frame["variant"] == "fair") & (frame["name"] == "LATCH_EX")]["waits"].sum())


def signal_wait(published) -> Input | None:
    """The article's own LATCH_EX signal wait per wait: sys.dm_os_wait_stats' time from a waiter being signalled
    to it running again, the part of each fair hand-off the latch sat owned and idle, on the article's machine."""
    frame = getattr(published, "wait", None)
    if frame is None or "signal_wait_time_ms" not in frame:
        return None
    row = frame[(frame["variant"] == "fair") & (frame["name"] == "LATCH_EX")]
    if row.empty or not float(row["waits"].sum()):
        return None
    ns = float(row["signal_wait_time_ms"].sum()) / float(row["waits"].sum()) * 1e6
    return Input.exact("the article's LATCH_EX signal wait per wait (signalled to running)", "t_wake", ns, "ns",
                       f"published: {CITE}, sys.dm_os_wait_stats (LATCH_EX signal wait ÷ waits, fair run)")


SENSITIVITY_COLUMNS = ["hand-off cost", "per hand-off", "fair run, T_fair ≥ W · t_wake", "rule says",
                       "unfair run, T_unfair = T_fair − W · (t_wake − t_xfer)", "rule says "]


def _short(pred: Prediction) -> str:
    """A verdict as a table cell: its category, with the ratio of a miss and the reason of an invalid model."""
    import re

    if pred.category == "model invalid":
        return "model invalid: W · t_wake > T_fair" if pred.invalid else "model invalid"
    ratio = re.search(r"\(([\d.,]+)× the prediction\)", pred.verdict)
    if pred.category == "missed" and ratio:
        return f"missed ({ratio.group(1)}× the prediction)"
    return pred.category


def _options(shown, costs: dict) -> list[tuple[str, str, Input]]:
    """(key, label, cost) of each hand-off cost the sensitivity tries, where the recordings have it."""
    got = [("wake", "futex wake-up on the other CPU (the models' input)", costs.get("t_wake")),
           ("switch", "context switch on one CPU (the floor)", costs.get("t_cs")),
           ("signal", "the article's LATCH_EX signal wait per wait", signal_wait(shown.published))]
    return [(k, label, c) for k, label, c in got if c is not None]


def sensitivity(shown, costs: dict | None = None) -> pd.DataFrame:
    """The article's two models with each hand-off cost in turn: the card's futex wake-up (the models' input), the
    card's context switch (the floor), and the article's own LATCH_EX signal wait per wait.  What the verdict rule
    would say of each, not scored and not gated (the page says so)."""
    p = published_numbers(shown.published)
    costs, why = _costs(shown, costs)
    if why:
        return pd.DataFrame(columns=SENSITIVITY_COLUMNS)
    from ..shared.capacity import _fmt

    rows = []
    for _key, label, cost, fair, unfair in _tried(shown, p, costs):
        shown_value = (f"{_us(cost.value.median)}" + (f" ({_us(cost.value.low)}–{_us(cost.value.high)})"
                                                      if cost.value.high > cost.value.low else ""))
        rows.append({SENSITIVITY_COLUMNS[0]: label, SENSITIVITY_COLUMNS[1]: shown_value,
                     SENSITIVITY_COLUMNS[2]: fair.row()["predicted"], SENSITIVITY_COLUMNS[3]: _short(fair),
                     SENSITIVITY_COLUMNS[4]: unfair.row()["predicted"] if unfair.category != "model invalid" else
                     f"{_fmt(unfair.predicted.median)} s", SENSITIVITY_COLUMNS[5]: _short(unfair)})
    return pd.DataFrame(rows, columns=SENSITIVITY_COLUMNS)


def _tried(shown, p: dict, costs: dict) -> list[tuple[str, str, Input, Prediction, Prediction]]:
    from dataclasses import replace

    out = []
    for key, label, cost in _options(shown, costs):
        fair, unfair = _article(p, replace(cost, symbol="t_wake"), costs["t_xfer"])
        out.append((key, label, cost, fair, unfair))
    return out


def sensitivity_words(shown, costs: dict | None = None) -> str:
    """What the page says over the sensitivity table: why the models take the wake-up, and what the other two costs
    give, from the numbers (nothing typed by hand); "" without a card."""
    p = published_numbers(shown.published)
    costs, why = _costs(shown, costs)
    if why:
        return ""
    tried = {key: (cost, fair, unfair) for key, _label, cost, fair, unfair in _tried(shown, p, costs)}
    most = p["pub_fair_s"] / p["pub_fair_latch_waits"] * 1e9
    wake = tried["wake"][0].value.median
    words = [f"**Which hand-off cost.** The models take the card's futex wake-up ({_us(wake)}): a fair hand-off's "
             "new owner is asleep, its CPU idle unless other work runs there, while the releaser runs on, so each "
             "hand-off wakes a thread on another CPU and waits for it to run. The card's context switch "
              "times the same wake and switch between two threads on one CPU, where no idle CPU is woken: the floor "
              "of a hand-off, reached only where the new owner's CPU is running anyway. The article's fair run "
              f"leaves room for at most {_us(most)} per hand-off ({p['pub_fair_s']:g} s over "
              f"{p['pub_fair_latch_waits']:,.0f} waits)" + (", less than the wake-up measured here." if wake > most
                                                          else ".")]
    if "signal" in tried:
        sig, _f, unfair = tried["signal"]
        x, pub = unfair.predicted.median, p["pub_unfair_s"]
        words.append(
            f"The article measured its own: the LATCH_EX signal wait, from a waiter being signalled to it running, "
            f"was {_us(sig.value.median)} a wait (over {_latch_ex_waits(shown.published):,.0f} LATCH_EX waits, "
            f"against the latch's {p['pub_fair_latch_waits']:,.0f}). Priced at that, the unfair model gives "
            f"{x:.3g} s against the article's {pub:g} s" + (": barging saved less time than the idle hand-offs it removed, so something "
                                     "else set the unfair run's pace." if unfair.category == "missed" and x < pub else
                                     ": slower than the article's, so barging saved more than the hand-offs' idle "
                                     "time." if unfair.category == "missed" else "."))
        if "switch" in tried:
            cs, _f, at_cs = tried["switch"]
            if at_cs.category in ("predicted", "predicted as a bound") and cs.value.median < sig.value.median:
                words.append(f"The context switch's {at_cs.predicted.median:.3g} s lands near the article's only "
                             f"by pricing a hand-off at {cs.value.median / sig.value.median:.2g}× the article's own "
                             "signal wait, so it supports nothing.")
    words.append("Only the wake-up's predictions are scored (above); for the other costs the table gives what the "
                 "verdict rule would say.")
    return " ".join(words)


def usl_fits(shown):
    """USL fits to the native sweep's records/s per lock kind (threads as the concurrency)."""
    from ..shared.capacity_page import recording_cpus, usl_curves

    from .spec import KIND_LABELS

    return usl_curves(shown.measured.runs, "threads", "records_per_s", "kind", measured_from(shown.measured),
                      KIND_LABELS, cpus=recording_cpus(shown.measured))
