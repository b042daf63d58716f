"""What the machine card predicts: first this machine's own ring, then where the knee of the article's
version 1 should lie.

On this machine first: with one producer and one consumer, the ring's
cursor line travels to the consumer and back once per batch the consumer
takes, so the ring moves X₁ = b / (2·t_xfer) messages a second, b the
measured mean batch and t_xfer the one-way transfer from the recording's
machine card.

Version 1 of the article's queue is CPU bound; on hyper-threaded cores its
linear scaling should end between the physical core count C and the logical
CPU count L: a range from the published topology alone, not scored.

The LMAX paper's counter timings (500 million increments, Java, 2011) are not
predicted from this machine's costs: a time per increment is the CPU's own.
The chapter sets their ratio beside its own instead (claims.py).
"""
from __future__ import annotations

from ..shared.capacity import (Input, Prediction, card_input, card_of, measured_from, placement_moved_why, predict,
                               range_prediction)
from ..shared.spread import spread
from .spec import SPEC

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
    got = spread(ring["throughput"])  # the book's one interval: the median with its 95% interval over repetitions
    return [predict(
        SPEC.chapter, "the cursor's line goes to the consumer and back once per batch", "X₁ = b / (2 · t_xfer)",
        "the ring's rate with one producer (this machine)", "messages/s", "value", got.median,
        f"{got.text(',.0f', ' messages/s')}, {getattr(native, 'label', native.id)} run",
        lambda v: v["b"] / (2 * v["t_xfer"]) * 1e9, (batch, t_xfer), published_low=got.low, published_high=got.high,
        invalid=invalid,
        lacks="the slots' own lines, which also move from the producer to the consumer, and the producer's work "
              "per message")]


def predictions(shown) -> list:
    """The article's machine: where version 1's linear scaling should end, from the published topology alone.

    No per-increment cost measured here predicts the LMAX paper's counter timings: those are a Java loop on a
    2010-era server, and a C loop on this machine's CPU says nothing about that CPU's cycle.  The chapter
    prints the paper's timings for scale beside its own, and compares ratios (contended over uncontended), not
    times."""
    from contention_book.harness.recording import open_chapter

    out: list = []
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
    # not gated by the ring's model on this machine (shared.capacity.gate): the range takes no input measured here,
    # so whether that model held says nothing about it
    return out


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
