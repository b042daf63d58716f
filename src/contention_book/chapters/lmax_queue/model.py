"""What the machine card predicts: first this machine's own ring, then the LMAX paper's counter test and
where the knee of the article's version 1 should lie.

On this machine first: with one producer and one consumer, the ring's
cursor line travels to the consumer and back once per batch the consumer
takes, so the ring moves X₁ = b / (2·t_xfer) messages a second, b the
measured mean batch and t_xfer the one-way transfer from the recording's
machine card.

The paper increments a 64-bit counter 500 million times.  One thread with a
private counter pays t_private per increment: T₁ = n · t_private.  Two
threads on one counter pay the contended increment t_c (the wall time over
both threads' increments, as the paper counts its n): T₂ = n · t_c.  The card also
counts the increments per line transfer: the line stays with one core for a
batch of increments, so no model here assumes one transfer per increment.

Version 1 of the article's queue is CPU bound; on hyper-threaded cores its
linear scaling should end between the physical core count C and the logical
CPU count L: a range from the published topology alone, not scored.
"""
from __future__ import annotations

from ..shared.capacity import (Input, Prediction, card_input, card_of, gate, measured_from, measured_value, no_model,
                               placement_moved_why, precision, predict, range_prediction)
from .spec import SPEC
from .tables import PER_COUNTER, counter_costs

PAPER = "Thompson et al. 2011 (LMAX Disruptor paper)"
ADKIN = "Adkin 2016"


def _pub(shown, needle):
    """The published recording whose id holds ``needle`` (the chapter's Shown keeps them as ``adkin`` and
    ``lmax``; a test may pass them as ``published``)."""
    pubs = getattr(shown, "published", None)
    pubs = pubs if isinstance(pubs, (list, tuple)) else [pubs] if pubs is not None else []
    pubs = [*pubs, *(getattr(shown, a, None) for a in ("adkin", "lmax"))]
    for pub in pubs:
        if pub is not None and needle in pub.recording.id:
            return pub
    return None


def ring_handoff_rule(shown):
    """The ring's median enqueue-to-dequeue time against the card's one-way transfer (a hand-off faster than a
    transfer shared a core or a cache); None without a card."""
    from contention_book.harness import machine_card

    native = getattr(shown, "native", None)
    if native is None or native.runs is None:
        return None
    card, _ = card_of(native)
    ring = native.runs[(native.runs["variant"] == "ring") & (native.runs["sessions"] == 1)]
    if card is None or ring.empty or "p50_ns" not in ring:
        return None
    return machine_card.rule_handoff(card, float(ring["p50_ns"].median()), "ring's enqueue-to-dequeue hand-off")


def machine_predictions(shown, t_xfer: Input | None = None) -> list[Prediction]:
    """The native ring's one-producer rate from the card's transfer and the measured batch."""
    native = getattr(shown, "native", None)
    if native is None or native.runs is None:
        return []
    invalid = ""
    if t_xfer is None:
        card, rid = card_of(native)
        t_xfer = card_input(card, rid, "one_way_transfer", "t_xfer")
        invalid = placement_moved_why(card, "one_way_transfer", "t_xfer")
    ring = native.runs[(native.runs["variant"] == "ring") & (native.runs["sessions"] == 1)]
    if t_xfer is None or ring.empty or "mean_batch" not in ring:
        return []
    batch = Input.measured("messages the consumer takes per look at the cursor", "b", ring["mean_batch"].tolist(),
                           "messages", measured_from(native, "ring, 1 producer"))
    got, lo, hi = measured_value(ring["throughput"].tolist())
    return [predict(
        SPEC.chapter, "the cursor's line goes to the consumer and back once per batch", "X₁ = b / (2 · t_xfer)",
        "the ring's rate with one producer (this machine)", "messages/s", "value", got,
        f"{got:,.0f} messages/s (p10–p90 {lo:,.0f}–{hi:,.0f}, {getattr(native, 'label', native.id)} run)",
        lambda v: v["b"] / (2 * v["t_xfer"]) * 1e9, (batch, t_xfer), published_low=lo, published_high=hi,
        invalid=invalid,
        lacks="the slots' own lines, which also move from the producer to the consumer, and the producer's work "
              "per message")]


def _own(native, layout: str, name: str, symbol: str, what: str) -> Input | None:
    """One layout of the native recording's false-sharing runs (the numbers the chapter quotes), or None when the
    recording has none."""
    fs = getattr(native, "false_sharing", None) if native is not None else None
    if fs is None or "layout" not in fs:
        return None
    fs = counter_costs(native)  # per increment of one counter: the shared counter's over both threads' increments
    part = fs[fs["layout"] == layout][PER_COUNTER].dropna()
    if part.empty:
        return None
    return Input.measured(name, symbol, part.tolist(), "ns", measured_from(native, what))


def _shared_atomic(native) -> Input | None:
    """Two threads adding to one atomic counter, from the native recording's false-sharing runs: the wall time
    over both threads' increments, as the paper counts its 500 million and the card its contended increment.
    Preferred to the machine card's contended increment: the card's repetitions include runs in which the line
    never moved between the cores."""
    return _own(native, "shared_atomic", "an increment of one atomic counter shared by two threads", "t_c",
                "false-sharing test, shared atomic, wall time over both threads' increments")


def _single(native) -> Input | None:
    """One thread incrementing its own counter, from the same false-sharing runs (the single-thread number the
    page quotes), so the page shows one t_private, not the card's beside it."""
    return _own(native, "single", "one thread's increment of its own counter", "t_private",
                "false-sharing test, one thread")


def predictions(shown, native=None, costs: dict | None = None) -> list:
    """``costs`` ({"t_private", "t_c"} Inputs) replaces the card's (tests feed contrary ones)."""
    from contention_book.harness.recording import open_chapter

    out: list = []
    paper = _pub(shown, "lmax-2011")
    native = native if native is not None else getattr(shown, "native", None)
    if paper is not None:
        if costs is None:
            card, rid = card_of(native) if native is not None else (None, "?")
            costs = {} if card is None else {
                k: v for k, v in (("t_private", card_input(card, rid, "plain_private", "t_private")),
                                  ("t_c", card_input(card, rid, "atomic_contended", "t_c"))) if v is not None}
            from contention_book.harness import machine_card
            ghz = machine_card.clock_ghz(card) if card is not None else None
            for key, own in (("t_c", _shared_atomic(native)), ("t_private", _single(native))):
                if key == "t_private" and own is not None and ghz and own.value.median * ghz < 1.0:
                    continue  # below one cycle: the loop measured code generation, as the card's rule says
                if own is not None:  # the chapter's own false-sharing runs, whose numbers the page quotes
                    costs[key] = own
            card_private = card_input(card, rid, "plain_private", "t_private") if card is not None else None
            why = ("no machine card in this recording" if card is None else
                   "the machine card lacks the cost, or a rule of physics bars it")
        else:
            why = "the test's costs lack it"
            card_private = None
        inc = open_chapter(SPEC.chapter, paper.recording.id).csv("published/increment_costs.csv").set_index("method")
        n = float(inc.loc["single thread", "increments"])
        total = Input.exact("increments in the paper's test", "n", n, "increments", f"published: {PAPER}")
        for key, method, model, eq, f, lacks in (
                ("t_private", "single thread", "one private counter: one increment per t_private", "T₁ = n · t_private",
                 lambda v: v["n"] * v["t_private"] * 1e-6,
                 "the paper's machine (2010-era Intel, Java): a per-increment cost is the CPU's own, so this "
                 "prediction tests how far a cost travels between machines"
                 + (f"; t_private is the false-sharing test's one thread (the number the page quotes); the machine "
                    f"card's own private-counter loop took {card_private.value.median:.2f} ns, which would predict "
                    f"{n * card_private.value.median * 1e-6:,.0f} ms"
                    if card_private is not None and "false-sharing" in costs.get("t_private", card_private).source
                    else "")),
                ("t_c", "two threads with CAS", "one shared counter: two threads' contended increment",
                 "T₂ = n · t_c", lambda v: v["n"] * v["t_c"] * 1e-6,
                 "the paper's compare-and-swap retries when the other thread wrote first (the atomic add measured "
                 "here never fails), and its machine's batching of increments per line transfer")):
            ms = float(inc.loc[method, "elapsed_ms"])
            text = f"{ms:,.0f} ms ({PAPER})"
            if key not in costs:
                out.append(no_model(SPEC.chapter, f"500M increments, {method}", text, why))
                continue
            v, lo, hi = precision(f"{ms:g}")
            out.append(predict(SPEC.chapter, model, eq, f"500M increments, {method}", "ms", "value", v, text, f,
                               (total, costs[key]), vary="n", lacks=lacks, published_low=lo, published_high=hi))
    adkin = _pub(shown, "imoltp")
    if adkin is not None:
        host = adkin.recording.host
        cores, logical = host.get("cores"), host.get("logical_cpus")
        facts = open_chapter(SPEC.chapter, adkin.recording.id).csv("published/findings.csv")
        knee = facts.loc[facts["topic"] == "scaling_knee", "sessions"]
        if cores and logical and len(knee):
            lo_in = Input.exact("physical cores", "C", float(cores), "cores", f"published: {ADKIN}")
            hi_in = Input.exact("logical CPUs", "L", float(logical), "CPUs", f"published: {ADKIN}")
            out.append(range_prediction(
                SPEC.chapter, "CPU-bound threads stop scaling once they share cores", "C ≤ N_knee ≤ L",
                "where version 1 falls away from linear scaling", "threads", float(knee.iloc[0]),
                f"{knee.iloc[0]:.0f} threads ({ADKIN})", float(cores), float(logical), (lo_in, hi_in),
                lacks="how much a hyper-thread sibling takes from its core for this code; the range is the "
                      "machine's topology, not a cost measured here"))
    # a machine model left invalid by a moved placement tested nothing, so it gates nothing
    return gate(out, [m for m in machine_predictions(shown) if not m.invalid])


def usl_fits(shown):
    """USL fits to the database designs' delivered rate (messages dequeued per second) and the native queues'
    rate, with sessions or producers as the concurrency."""
    from ..shared.capacity_page import recording_cpus, usl_curves
    from .spec import LABELS

    out = []
    db = getattr(shown, "db", None)
    if db is not None and db.runs is not None:
        rate = "dequeue_per_s" if "dequeue_per_s" in db.runs.columns else "throughput"
        out += usl_curves(db.runs, "sessions", rate, "variant", measured_from(db), LABELS, cpus=recording_cpus(db))
    native = getattr(shown, "native", None)
    if native is not None and native.runs is not None:
        out += usl_curves(native.runs, "sessions", "throughput", "variant", measured_from(native),
                          {k: f"{v} (C model)" for k, v in LABELS.items()}, cpus=recording_cpus(native))
    return out
