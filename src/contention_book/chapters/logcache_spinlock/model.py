"""What the article's own CPU profile allows for the gain from freeing the log writer's core.

Freeing the core can raise throughput only by giving workers CPU they spent
backing off, and it takes two of the 40 logical CPUs away from them.  If the
workers' useful CPU share is 1 − b (b: share of sampled CPU in
LogAppendContext::BackOff), the gain is at most
G ≤ (N_after / N_before) · (1 − b_after) / (1 − b_before).
No cost measured on this machine enters this bound: every input is the
article's own profile, so it is shown as *published only* and not scored; the article's own 2.34× lies
above it, and the verdict says so: a gain that large means time the CPU profile cannot see (workers
asleep or descheduled).

On this machine first (the native toy, two workers on two CPUs, one
spinlock): the appends are serialised by the lock, so two workers cannot
beat one worker's time per append t₁; if every append moved the lock's line
to the other core, each would add a one-way transfer t_xfer from the
recording's machine card.  The 2-worker rate lies in the range
1/(t₁ + t_xfer) … 1/t₁ (limiting cases, not a probability interval).
"""
from __future__ import annotations

from ..shared.capacity import (Input, Prediction, card_input, card_of, measured_from, measured_value, predict,
                               range_prediction)
from .spec import SPEC

CITE = "Adkin 2015"


def machine_predictions(shown, t_xfer: Input | None = None) -> list[Prediction]:
    """The toy's 2-worker rate (log writer sharing a worker's CPU) from its 1-worker rate and the card's transfer;
    ``t_xfer`` replaces the card's (tests feed contrary ones)."""
    m = shown.measured.get("native") if isinstance(shown.measured, dict) else shown.measured
    if m is None or m.runs is None or "workers" not in m.runs.columns:
        return []
    if t_xfer is None:
        card, rid = card_of(m)
        t_xfer = card_input(card, rid, "one_way_transfer", "t_xfer")
    if t_xfer is None:
        return []
    runs = m.runs[m.runs["variant"] == "writer_shared"]
    one, two = runs[runs["workers"] == 1], runs[runs["workers"] == 2]
    if one.empty or two.empty:
        return []
    t1 = Input.measured("time per append, 1 worker", "t₁", (1e9 / one["throughput"]).tolist(), "ns",
                        measured_from(m, "writer_shared, 1 worker"))
    got, lo, hi = measured_value(two["throughput"].tolist())
    a, x = t1.value.median, t_xfer.value.median
    return [range_prediction(
        SPEC.chapter, "one spinlock serialises the appends; at most one line transfer per append",
        "1/(t₁ + t_xfer) ≤ X₂ ≤ 1/t₁", "the toy's rate with 2 workers (this machine)", "appends/s", got,
        f"{got:,.0f} appends/s (p10–p90 {lo:,.0f}–{hi:,.0f}, this recording)", 1e9 / (a + x), 1e9 / a, (t1, t_xfer),
        lacks="the log writer's flushes and a preempted lock holder (the writer shares a worker's CPU), which can "
              "take the rate below the floor", value_low=lo, value_high=hi)]


def predictions(shown, shares=None) -> list[Prediction]:
    """``shares`` replaces the published backoff shares (tests feed contrary ones)."""
    pub = shown.published[0] if isinstance(shown.published, (list, tuple)) else shown.published
    runs = pub.runs
    if shares is None:
        from contention_book.harness.recording import open_chapter
        shares = open_chapter(SPEC.chapter, pub.recording.id).csv("published/backoff_shares.csv")
    by = {r["variant"]: r for _, r in runs.iterrows()}
    back = {r["variant"]: float(r["pct"]) / 100 for _, r in shares.iterrows()
            if str(r["function"]).endswith("LogAppendContext::BackOff")}
    if not {"default", "no_logwriter_core"} <= set(by) or not {"default", "no_logwriter_core"} <= set(back):
        return []
    inputs = (Input.exact("share of sampled CPU backing off, default mask", "b_before", back["default"], "",
                          f"published: {CITE}"),
              Input.exact("the same with the log writer's core removed", "b_after", back["no_logwriter_core"], "",
                          f"published: {CITE}"),
              Input.exact("worker threads, default mask", "N_before", float(by["default"]["sessions"]), "threads",
                          f"published: {CITE}"),
              Input.exact("worker threads, log writer's core removed", "N_after",
                          float(by["no_logwriter_core"]["sessions"]), "threads", f"published: {CITE}"))
    gain = float(by["no_logwriter_core"]["throughput"]) / float(by["default"]["throughput"])
    return [predict(
        SPEC.chapter, "the gain is at most the CPU the workers stop spending on backoff",
        "G ≤ (N_after/N_before) · (1 − b_after)/(1 − b_before)", "the insert rate's gain from freeing the core",
        "×", "at most", gain,
        f"{gain:.2f}× ({by['default']['throughput']:,.0f} → {by['no_logwriter_core']['throughput']:,.0f} inserts/s, "
        f"{CITE})",
        lambda v: v["N_after"] / v["N_before"] * (1 - v["b_after"]) / (1 - v["b_before"]), inputs, vary="b_before",
        lacks="time the default run spent neither working nor backing off: workers asleep or descheduled while the "
              "log writer, sharing its core, waits for CPU. CPU samples do not see a thread that is not running, so a "
              "gain above this bound says that time was large")]
    # every input is published: the verdict says so and nothing is scored, whatever this machine measured


def usl_fits(shown):
    """USL fits to the PostgreSQL analogue's insert rate per variant (sessions as the concurrency)."""
    from ..shared.capacity_page import recording_cpus, usl_curves
    from .spec import LABELS

    m = shown.measured.get("postgres") if isinstance(shown.measured, dict) else shown.measured
    if m is None or m.runs is None:
        return []
    return usl_curves(m.runs, "sessions", "throughput", "variant", measured_from(m), LABELS, cpus=recording_cpus(m))
