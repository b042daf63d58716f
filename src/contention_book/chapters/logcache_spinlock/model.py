"""What the article's own CPU profile allows for the gain from freeing the log writer's core.

Freeing the core can raise throughput only by giving workers CPU they spent
backing off, and it takes two of the 40 logical CPUs away from them.  If the
workers' useful CPU share is 1 − b (b: share of sampled CPU in
LogAppendContext::BackOff), the gain is at most
G ≤ (N_after / N_before) · (1 − b_after) / (1 − b_before).
No cost measured on this machine enters this bound: it is the article's
profile read as an Amdahl bound, and it can be wrong only if the published
gain exceeds it, which means time that the CPU samples did not see.
"""
from __future__ import annotations

from ..shared.capacity import Input, Prediction, predict
from .spec import SPEC

CITE = "Adkin 2015 (seed 001)"


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


def usl_fits(shown):
    """USL fits to the PostgreSQL analogue's insert rate per variant (sessions as the concurrency)."""
    from ..shared.capacity_page import usl_curves
    from .spec import LABELS

    m = shown.measured.get("postgres") if isinstance(shown.measured, dict) else shown.measured
    if m is None or m.runs is None:
        return []
    return usl_curves(m.runs, "sessions", "throughput", "variant", f"measured: {m.id}", LABELS)
