"""What this machine's increment costs predict for the LMAX paper's counter test, and where the knee of the
article's version 1 should lie.

The paper increments a 64-bit counter 500 million times.  One thread with a
private counter pays t_private per increment: T₁ = 500M · t_private.  Two
threads on one counter pay a cache-line transfer each time the other thread
wrote last; this machine measures that as the contended atomic add
t_shared (wall time per increment of one thread, each making half):
T₂ = 250M · t_shared.

Version 1 of the article's queue has no lock or latch waits and is CPU bound;
on hyper-threaded cores two threads share one core's execution units, so
linear scaling should end between the physical core count C and the logical
CPU count L.
"""
from __future__ import annotations

from ..shared.capacity import Input, Prediction, predict
from .spec import SPEC

PAPER = "Thompson et al. 2011 (LMAX Disruptor paper)"
ADKIN = "Adkin 2016 (seed 004)"


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


def predictions(shown, native=None) -> list[Prediction]:
    from contention_book.harness.recording import open_chapter

    out: list[Prediction] = []
    paper = _pub(shown, "lmax-2011")
    native = native if native is not None else getattr(shown, "native", None)
    fs = native.table("false_sharing") if native is not None and hasattr(native, "table") else None
    if fs is None and native is not None and getattr(native, "recording", None) is not None \
            and native.recording.has("results/false_sharing.csv"):
        fs = native.recording.csv("results/false_sharing.csv")
    if paper is not None and fs is not None:
        inc = open_chapter(SPEC.chapter, paper.recording.id).csv("published/increment_costs.csv").set_index("method")
        src = f"measured: {native.recording.id}, the false-sharing runs"
        private = Input.measured("one thread incrementing a private counter", "t_private",
                                 fs.loc[fs["layout"] == "single", "ns_per_increment"], "ns", src)
        shared = Input.measured("two threads adding atomically to one counter", "t_shared",
                                fs.loc[fs["layout"] == "shared_atomic", "ns_per_increment"], "ns", src)
        n = float(inc.loc["single thread", "increments"])
        total = Input.exact("increments in the paper's test", "n", n, "increments", f"published: {PAPER}")
        out.append(predict(
            SPEC.chapter, "one private counter: one increment per t_private", "T₁ = n · t_private",
            "500M increments, one thread", "ms", "value", float(inc.loc["single thread", "elapsed_ms"]),
            f"{inc.loc['single thread', 'elapsed_ms']:,.0f} ms ({PAPER})",
            lambda v: v["n"] * v["t_private"] * 1e-6, (total, private), vary="n",
            lacks="the paper's machine (2010-era Intel, Java): a per-increment cost is the CPU's own, so this "
                  "prediction tests how far a cost travels between machines"))
        out.append(predict(
            SPEC.chapter, "one shared counter: one line transfer per increment", "T₂ = (n/2) · t_shared",
            "500M increments, two threads with CAS", "ms", "value", float(inc.loc["two threads with CAS", "elapsed_ms"]),
            f"{inc.loc['two threads with CAS', 'elapsed_ms']:,.0f} ms ({PAPER})",
            lambda v: v["n"] / 2 * v["t_shared"] * 1e-6, (total, shared), vary="n",
            lacks="the paper's compare-and-swap retries when the other thread wrote first; the atomic add measured "
                  "here never fails, so it is a floor for a CAS loop"))
    adkin = _pub(shown, "imoltp")
    if adkin is not None:
        host = adkin.recording.host
        cores, logical = host.get("cores"), host.get("logical_cpus")
        facts = open_chapter(SPEC.chapter, adkin.recording.id).csv("published/findings.csv")
        knee = facts.loc[facts["topic"] == "scaling_knee", "sessions"]
        if cores and logical and len(knee):
            lo = Input.exact("physical cores", "C", float(cores), "cores", f"published: {ADKIN}")
            hi = Input.exact("logical CPUs", "L", float(logical), "CPUs", f"published: {ADKIN}")
            from ..shared.spread import Spread

            band = Spread(float(cores), float(cores), float(logical), 2, "given interval")
            out.append(Prediction(
                SPEC.chapter, "CPU-bound threads stop scaling once they share cores", "C ≤ N_knee ≤ L",
                "where version 1 falls away from linear scaling", "threads", "value", float(knee.iloc[0]),
                f"{knee.iloc[0]:.0f} threads ({ADKIN})", band, (lo, hi),
                lacks="how much a hyper-thread sibling takes from its core for this code; the range is the "
                      "machine's topology, not a cost measured here"))
    return out


def usl_fits(shown):
    """USL fits to the database designs' delivered rate (messages dequeued per second) and the native queues'
    rate, with sessions or producers as the concurrency."""
    from ..shared.capacity_page import usl_curves
    from .spec import LABELS

    out = []
    db = getattr(shown, "db", None)
    if db is not None and db.runs is not None:
        rate = "dequeue_per_s" if "dequeue_per_s" in db.runs.columns else "throughput"
        out += usl_curves(db.runs, "sessions", rate, "variant", f"measured: {db.id}", LABELS)
    native = getattr(shown, "native", None)
    if native is not None and native.runs is not None:
        out += usl_curves(native.runs, "sessions", "throughput", "variant", f"measured: {native.id}",
                          {k: f"{v} (C model)" for k, v in LABELS.items()})
    return out
