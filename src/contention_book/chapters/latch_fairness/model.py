"""What a fair hand-off costs: first on this machine's own fair lock, then for the article's fair and unfair runs.

A fair latch grants ownership to the waiter at the head of its queue, who is
asleep: until that thread is woken and running, the latch is owned by nobody
who can use it.

Which wake-up.  On this machine (its own fair lock) the machine card's futex
wake-up (FUTEX_WAKE on one CPU until the thread asleep in FUTEX_WAIT on the
other CPU runs again) times a hand-off.  The article's machine is another
matter: a SQLOS hand-off signals a worker that SQLOS schedules, not an idle
virtual CPU of a KVM guest, and the article measured its own cost: the
LATCH_EX signal wait per wait (from the signal to running again).  The
article's models are priced on that.  Every input but this machine's line
transfer is then the article's, and the transfer moves the unfair time by
well under 1% of it, so the shared verdict rule calls both *published only*
(capacity.measured_share) and scores neither: they test the article's own
arithmetic, not this machine.  The card's futex wake-up and its context
switch (the floor: two threads on one CPU, no idle CPU woken) are
sensitivity rows only, not scored.

On this machine first: with two threads, a record handed to a sleeper puts
a wake-up on the lock's path, so the fair lock's rate is
X₂ = 1 / (t_record + h·t_wake), t_record the whole time per record of the
1-thread run (the hold and the work outside the lock) and h the hand-offs
per record the 2-thread run counted (a count, as the
ring's batch is).  Where h·t_wake is a small part of the time per record the
two threads hardly met, and the run cannot test the wake-up: *model invalid*.
Then the article: each of the W waits it counted put one wake-up on the
latch's path, so the fair run took at least W·t_wake; a barging latch takes
the wake-ups off the path, saving W·(t_wake − t_xfer):
T_unfair = T_fair − W·(t_wake − t_xfer).  The two models are one inequality
read twice: T_unfair is positive only where W·t_wake < T_fair + W·t_xfer, so
a wake-up longer than T_fair / W (about 20 µs for the article's 5.5 s and
271,609 waits) breaks the bound and leaves T_unfair negative.  That is said
as *model invalid*, with the numbers, and no negative time is printed as a
prediction.  Each prediction has one verdict, the same on every page.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..shared.capacity import (NO_CARD, Input, Prediction, card_input, card_of, gate, measured_from, measured_share,
                               measured_value, no_model, precision, predict, ratio)
from ..shared.spread import spread
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
    hold = Input.measured("time per record alone, fair lock, 1 thread (the hold and the work outside the lock)",
                          "t_record", (1e9 / one["records_per_s"]).tolist(), "ns", measured_from(m, "fair, 1 thread"))
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
    f = lambda v: 1e9 / (v["t_record"] + v["h"] * v["t_wake"])  # noqa: E731
    # The interval is over the repetitions: each one's own hand-offs per record, at the other inputs' medians.  (A
    # triangular draw over h's min-max, skewed by one convoy, put the median prediction at the interval's edge.)
    per_rep = [float(f({"t_record": hold.value.median, "h": x, "t_wake": costs["t_wake"].value.median}))
               for x in per]
    pred = predict(
        SPEC.chapter, "each hand-off to a sleeping thread puts one wake-up on the lock's path",
        "X₂ = 1 / (t_record + h · t_wake)", "the fair lock's rate with 2 threads (this machine)", "records/s",
        "value", got, f"{got:,.0f} records/s (p10–p90 {lo:,.0f}–{hi:,.0f}, this recording)",
        f, (hold, h, costs["t_wake"]), published_low=lo,
        published_high=hi, domain=(0.0, 1e9 / hold.value.median, "above the lock's own capacity 1/t_record"),
        invalid=invalid,
        lacks="a wake-up slower or faster than the card's: the sleeper's CPU may not have gone idle, or may be "
              "busy with other work. h is counted in the very run whose rate this predicts, so the row checks that "
              "hand-offs times the card's wake-up account for the lost time; it does not forecast the contended "
              "rate from uncontended numbers alone. Its interval is over the repetitions' own hand-offs per "
              "record, the other inputs at their medians")
    from dataclasses import replace

    return [replace(pred, predicted=spread(per_rep))]


SIGNAL_WHY = ("t_wake is the article's own LATCH_EX signal wait per wait, from a waiter being signalled to it "
              "running again on the article's machine: the time a fair hand-off leaves the latch owned but idle. "
              "This machine's futex wake-up (a KVM guest waking a virtual CPU) and its context switch are "
              "sensitivity rows only, not scored")
WAKE_WHY = ("t_wake is the card's futex wake-up of a thread asleep on the other CPU, wake-to-run included (the "
            "article's own signal wait is not in this recording)")


class LatchPrediction(Prediction):
    """A :class:`Prediction` whose row never prints a time outside the model's domain as a prediction: a model
    invalid there says so, with why, in the predicted column too."""

    def row(self) -> dict:
        out = super().row()
        if self.category == "model invalid" and self.predicted.median == self.predicted.median and \
                self.predicted.median < 0:
            out["predicted"] = "none: model invalid (a negative time; see the verdict)"
        return out


def _latch(pred: Prediction) -> LatchPrediction:
    from dataclasses import fields

    return LatchPrediction(**{f.name: getattr(pred, f.name) for f in fields(pred) if f.init and f.name != "verdict"})


def _article(p: dict, wake: Input, xfer: Input, why: str = SIGNAL_WHY) -> tuple[Prediction, Prediction]:
    """The fair bound and the unfair time for one hand-off cost ``wake`` (its symbol is t_wake in the equations)."""
    waits = Input.exact("latch waits in the fair run", "W", p["pub_fair_latch_waits"], "waits",
                        f"published: {CITE}, sys.dm_os_latch_stats")
    fair_v, fair_lo, fair_hi = precision(f"{p['pub_fair_s']:g}")
    t_fair = Input.interval("the fair run's elapsed time (\"around\": half its last digit either side)", "T_fair",
                            fair_v, fair_lo, fair_hi, "s", f"published: {CITE}")
    unfair_v, unfair_lo, unfair_hi = precision(f"{p['pub_unfair_s']:g}")
    fair = predict(
        SPEC.chapter, "a fair hand-off wakes a sleeping waiter: one wake-up on the latch's path per wait",
        "T_fair ≥ W · t_wake", "the fair run's elapsed time", "s", "at least", fair_v,
        f"around {p['pub_fair_s']:g} s ({CITE})", lambda v: v["W"] * v["t_wake"] * 1e-9, (waits, wake), vary="W",
        published_low=fair_lo, published_high=fair_hi,
        lacks=f"{why}. Left out: the hold time and the work done outside the latch, which can only add to the "
              "bound")
    most = fair_v / p["pub_fair_latch_waits"] * 1e9     # ns: the longest hand-off the fair run leaves room for
    path = p["pub_fair_latch_waits"] * wake.value.median * 1e-9
    invalid = "" if path <= fair_v else (
        f"W · t_wake = {p['pub_fair_latch_waits']:,.0f} × {_us(wake.value.median)} = {path:.3g} s, more than the "
        f"fair run's whole {fair_v:g} s: the article's fair run leaves at most T_fair / W = {_us(most)} per "
        f"hand-off, so a hand-off of {_us(wake.value.median)} cannot have been the article's, and the wake-ups "
        "it would remove do not fit in the run they were on")
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
    return _latch(fair), _latch(unfair)


def _us(ns: float) -> str:
    return f"{ns / 1e3:.2g} µs" if ns < 1e4 else f"{ns / 1e3:,.0f} µs"


def _hand_off(shown, costs: dict) -> tuple[Input, str]:
    """The hand-off cost the scored models take: the article's own signal wait, or, where the published recording
    lacks it, the card's futex wake-up; with the words of why."""
    sig = signal_wait(shown.published)
    return (sig, SIGNAL_WHY) if sig is not None else (costs["t_wake"], WAKE_WHY)


def _scored(shown, p: dict, costs: dict) -> list:
    """The article's two predictions, priced on :func:`_hand_off`, gated by this machine's own check when that
    check *missed* (the model's structure failed here).  A machine check that could not test the model (*model
    invalid*: the threads hardly met, or met in some repetitions only) is no evidence either way, and the
    scored models do not take its futex wake-up, so it gates nothing."""
    from dataclasses import replace

    cost, why = _hand_off(shown, costs)
    article = list(_article(p, replace(cost, symbol="t_wake"), costs["t_xfer"], why))
    missed = [m for m in machine_predictions(shown, costs) if m.category == "missed"]
    return gate(article, missed)


def predictions(shown, costs: dict | None = None) -> list:
    """The article's runs; ``costs`` replaces the card's costs (tests feed contrary ones)."""
    p = published_numbers(shown.published)
    costs, why = _costs(shown, costs)
    if why:
        return [no_model(SPEC.chapter, "the fair run's elapsed time", f"around {p['pub_fair_s']:g} s ({CITE})", why)]
    return _scored(shown, p, costs)


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
SIGNAL_LABEL = "the article's LATCH_EX signal wait per wait (the Findings models' input)"
WAKE_LABEL = "futex wake-up on the other CPU, this machine (sensitivity)"
SWITCH_LABEL = "context switch on one CPU, this machine (the floor; sensitivity)"


def _short(pred: Prediction) -> str:
    """A verdict as a table cell, the same word the Findings page gives a scored prediction: its category, with
    the ratio of a miss against the prediction's stated value and the reason of an invalid model."""
    if pred.category == "model invalid":
        return "model invalid: W · t_wake > T_fair" if pred.invalid else "model invalid"
    if pred.category == "missed" and pred.predicted.median > 0:
        return f"missed ({pred.published / pred.predicted.median:.3g}× the prediction)"
    if pred.verdict.startswith("published only, the model fails on its source") and pred.predicted.median > 0:
        return f"published only; fails on its source ({pred.published / pred.predicted.median:.3g}× it)"
    return pred.category


def _cell(pred: Prediction, scored: bool = False) -> str:
    """The predicted column of the sensitivity table: never a negative time; a Findings prediction as the Findings
    page shows it, the others with their interval named for what it is: the 2.5-97.5 percentiles of the equation
    over draws of the cost from a triangular distribution between its p10 and p90 (capacity.propagate), so narrower
    than the equation at the cost's p10 and p90 themselves, and not a confidence interval of repeated runs."""
    if pred.category == "model invalid" and not pred.predicted.median > 0:
        return "none (model invalid)"
    shown = pred.row()["predicted"]
    return shown if scored else shown.replace("(95% ", "(95% of draws, the cost triangular over its p10–p90: ")


def _options(shown, costs: dict) -> list[tuple[str, str, Input]]:
    """(key, label, cost) of each hand-off cost the sensitivity tries, where the recordings have it; the Findings
    one first."""
    got = [("signal", SIGNAL_LABEL, signal_wait(shown.published)),
           ("wake", WAKE_LABEL if signal_wait(shown.published) is not None else
            "futex wake-up on the other CPU, this machine (the models' input)", costs.get("t_wake")),
           ("switch", SWITCH_LABEL, costs.get("t_cs"))]
    return [(k, label, c) for k, label, c in got if c is not None]


def _per_hand_off(key: str, cost: Input) -> str:
    v = cost.value
    if v.high > v.low:
        what = "p10–p90 of the card's two runs" if key in ("wake", "switch") else "range"
        return f"{_us(v.median)} ({what}: {_us(v.low)}–{_us(v.high)})"
    return _us(v.median)


def sensitivity(shown, costs: dict | None = None) -> pd.DataFrame:
    """The article's two models with each hand-off cost in turn: the article's own LATCH_EX signal wait (the scored
    models' input: its verdicts are the Findings page's), the card's futex wake-up and its context switch (what
    the verdict rule would say of each, not scored)."""
    p = published_numbers(shown.published)
    costs, why = _costs(shown, costs)
    if why:
        return pd.DataFrame(columns=SENSITIVITY_COLUMNS)
    rows = []
    for key, label, cost, fair, unfair in _tried(shown, p, costs):
        rows.append({SENSITIVITY_COLUMNS[0]: label, SENSITIVITY_COLUMNS[1]: _per_hand_off(key, cost),
                     SENSITIVITY_COLUMNS[2]: _cell(fair, key == "signal"), SENSITIVITY_COLUMNS[3]: _short(fair),
                     SENSITIVITY_COLUMNS[4]: _cell(unfair, key == "signal"), SENSITIVITY_COLUMNS[5]: _short(unfair)})
    return pd.DataFrame(rows, columns=SENSITIVITY_COLUMNS)


def _tried(shown, p: dict, costs: dict) -> list[tuple[str, str, Input, Prediction, Prediction]]:
    """Each hand-off cost with its two predictions; the scored cost's are the very ones :func:`predictions`
    returns, so a prediction has one verdict wherever it is shown."""
    from dataclasses import replace

    scored_cost, _why = _hand_off(shown, costs)
    out = []
    for key, label, cost in _options(shown, costs):
        if cost is scored_cost or (key == "signal"):
            fair, unfair = _scored(shown, p, costs)
        else:
            fair, unfair = _article(p, replace(cost, symbol="t_wake"), costs["t_xfer"], WAKE_WHY)
        out.append((key, label, cost, fair, unfair))
    return out


def sensitivity_words(shown, costs: dict | None = None) -> str:
    """What the page says over the sensitivity table: which hand-off cost the scored models take and why, and what
    the others give, from the numbers (nothing typed by hand); "" without a card."""
    p = published_numbers(shown.published)
    costs, why = _costs(shown, costs)
    if why:
        return ""
    tried = {key: (cost, fair, unfair) for key, _label, cost, fair, unfair in _tried(shown, p, costs)}
    most = p["pub_fair_s"] / p["pub_fair_latch_waits"] * 1e9
    words = ["**Which hand-off cost.**"]
    if "signal" in tried:
        sig, fair, unfair = tried["signal"]
        x, pub = unfair.predicted.median, p["pub_unfair_s"]
        words.append(
            f"The Findings models take the article's own LATCH_EX signal wait, from a waiter being signalled to it "
            f"running: {_us(sig.value.median)} a wait (over {_latch_ex_waits(shown.published):,.0f} LATCH_EX waits, "
            f"against the latch's {p['pub_fair_latch_waits']:,.0f}), measured where the hand-offs happened. Priced "
            f"at that, the fair run spent at least {fair.predicted.median:.3g} s of its {p['pub_fair_s']:g} s "
            f"handing off (every input published, so not scored), and the unfair model gives {x:.3g} s against the "
            f"article's {pub:g} s" + _unfair_words(unfair, x, pub))
    if "wake" in tried:
        wake, wfair, wunfair = tried["wake"]
        words.append(
            f"This machine's futex wake-up ({_us(wake.value.median)}) times an OS wake-up of a thread asleep on the "
            f"other CPU; the article's fair run leaves room for at most {_us(most)} per hand-off "
            f"({p['pub_fair_s']:g} s over {p['pub_fair_latch_waits']:,.0f} waits)"
            + (f", less than the wake-up measured here. Priced at it, the fair bound ({wfair.predicted.median:.3g} s) "
               f"exceeds the whole run, and the unfair time would be negative: the rule says *{_short(wfair)}* of the "
               f"first and *{_short(wunfair)}* of the second, in sensitivity rows only, not scored."
               if wake.value.median > most
               else ", so it is shown as a sensitivity only."))
    if "switch" in tried and "signal" in tried:
        cs, _f, at_cs = tried["switch"]
        sig = tried["signal"][0]
        if at_cs.category in ("predicted", "predicted as a bound") and cs.value.median < sig.value.median:
            words.append(f"The context switch's {at_cs.predicted.median:.3g} s lands near the article's only by "
                         f"pricing a hand-off at {cs.value.median / sig.value.median:.2g}× the article's own signal "
                         "wait, so it supports nothing.")
    words.append("Only the signal wait's predictions are the Findings page's; for the other costs the table gives "
                 "what the verdict rule would say." if "signal" in tried else
                 "Only the wake-up's predictions are scored; for the other costs the table gives what the verdict "
                 "rule would say.")
    return " ".join(words)


def _unfair_words(unfair: Prediction, x: float, pub: float) -> str:
    """The end of the sentence on the Findings unfair model: its verdict, in the rule's own terms, and what a miss
    or a failure on its source means for barging."""
    side = (": barging saved less time than the idle hand-offs it removed, so something else set the unfair run's "
            "pace." if x < pub else ": barging saved more than the hand-offs' idle time.")
    if unfair.category == "missed":
        return f", {_short(unfair)}" + side
    if unfair.category == "published only":
        share = measured_share(unfair)
        moved = (f"; its one input measured here, the line transfer t_xfer, moves it by {share[1]:.2g} s, under 1% "
                 "of it, so it too is published only: nothing measured here is tested" if share is not None else
                 "; every input is published, so it too is published only: nothing measured here is tested")
        if unfair.verdict.startswith("published only, the model fails on its source"):
            return (f"{moved}. The article's {pub:g} s is {ratio(pub, x)}× it, so the model fails on its own "
                    "source" + side)
        return moved + "."
    return f", {_short(unfair)}."


def usl_fits(shown):
    """USL fits to the native sweep's records/s per lock kind (threads as the concurrency)."""
    from ..shared.capacity_page import recording_cpus, usl_curves

    from .spec import KIND_LABELS

    return usl_curves(shown.measured.runs, "threads", "records_per_s", "kind", measured_from(shown.measured),
                      KIND_LABELS, cpus=recording_cpus(shown.measured))
