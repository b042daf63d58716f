"""What one latch per partition allows hash partitioning to buy.

With a sequential key every insert takes the exclusive latch of the same last
page, so the page admits one inserter at a time.  Spread over P partitions,
there are P last pages and P latches; if the page latch was the only limit the
insert rate rises at most P-fold: G ≤ P.  The article gives P but not the
share of time the inserts waited on the latch, which would turn the bound
into a number (Amdahl: G = 1/(1 − w + w/P)).  G ≤ P follows from the
partition count alone, so it is shown as a *workload bound*, not scored.

On this machine first: two sessions inserting sequential keys share only
the last page; if each insert moves the page latch's cache line to the other
CPU once, two sessions insert at most X₂ = 2 / (t₁ + t_xfer), t₁ the
1-session time per row and t_xfer the recording's machine card.  At most,
not exactly: the two sessions' backends and everything else that runs (the
client's driver threads, the wait sampler, PostgreSQL's WAL writer and other
background processes, other work on the machine) share the machine's CPUs.
With one session that other work could run on the second, otherwise idle
CPU, so t₁ holds little of it; with two sessions on two CPUs it takes its
time from the backends, so X₂ can only fall below 2 / (t₁ + t_xfer).  The recording does
not measure that other work's CPU, so the model is a ceiling (kind "at
most"), as the other chapters' models are bounds where an unmeasured cost
can only add time: it is *missed* when the two sessions insert faster.
The model is tried only where the machine has at least two CPUs.
"""
from __future__ import annotations

from ..shared.capacity import Input, card_input, card_of, measured_from, measured_value, no_model, predict
from .spec import SPEC

CITE = "Kejser et al. 2009"


def machine_predictions(shown, t_xfer: Input | None = None) -> list:
    """The sequential key's 2-session rate here from its 1-session rate and the card's transfer."""
    m = shown.measured
    runs = getattr(m, "runs", None)
    if runs is None or "sessions" not in runs.columns:
        return []
    cpus = m.recording.host.get("logical_cpus") if getattr(m, "recording", None) is not None else None
    if t_xfer is None:
        card, rid = card_of(m)
        t_xfer = card_input(card, rid, "one_way_transfer", "t_xfer")
    seq = runs[runs["variant"] == "sequential"]
    one, two = seq[seq["sessions"] == 1], seq[seq["sessions"] == 2]
    if t_xfer is None or one.empty or two.empty or (cpus is not None and cpus < 2):
        return []
    t1 = Input.measured("time per row, sequential key, 1 session", "t₁", (1e9 / one["throughput"]).tolist(), "ns",
                        measured_from(m, "sequential, 1 session"))
    got, lo, hi = measured_value(two["throughput"].tolist())
    ceiling = 2e9 / (t1.value.median + t_xfer.value.median)
    return [predict(
        SPEC.chapter, "two sessions share only the last page: one line transfer per insert, on CPUs they share "
                      "with the client and the server's other processes",
        "X₂ ≤ 2 / (t₁ + t_xfer)", "the sequential key's insert rate with 2 sessions (this machine)", "rows/s",
        "at most", got, f"{got:,.0f} rows/s (p10–p90 {lo:,.0f}–{hi:,.0f}, this recording)",
        lambda v: 2e9 / (v["t₁"] + v["t_xfer"]), (t1, t_xfer), published_low=lo, published_high=hi,
        domain=(0.0, 2e9 / t1.value.median, "above twice the 1-session rate"),
        lacks=("a ceiling, not a rate: with 2 sessions the backends fill the "
               f"{cpus if cpus else 'two'} CPUs, so the client's driver threads, the wait sampler and PostgreSQL's "
               "background processes (with 1 session they could run on the other, otherwise idle CPU, so t₁ holds "
               "little of them) take their CPU time from the inserts; the recording does not measure it. The WAL "
               "insert lock, the commit path and the sequence, which the two sessions also share, can only lower the "
               "rate too. Here the rate came to "
               f"{got / ceiling:.2f}× the ceiling"))]


def predictions(shown, partitions: int = 4) -> list:
    """``partitions``: the article's P (tests feed a contrary one)."""
    from contention_book.harness.recording import open_chapter

    out: list = []
    sqlcat = None
    for pub in (shown.published if isinstance(shown.published, (list, tuple)) else [shown.published]):
        if "sqlcat" in pub.recording.id:
            sqlcat = pub
    if sqlcat is None:
        return out
    facts = open_chapter(SPEC.chapter, sqlcat.recording.id).csv("published/facts.csv")
    gain_pct = facts.loc[facts["fact"] == "insert rate gain", "value"]
    if len(gain_pct) == 0:
        return out
    gain = 1 + float(gain_pct.iloc[0]) / 100
    parts = Input.exact("hash partitions in the customer case", "P", partitions, "partitions",
                        f"published: {CITE} (a computed column ID % 4)")
    out.append(predict(
        SPEC.chapter, "P last pages admit at most P inserters at once", "G ≤ P",
        "the insert rate's gain from hash partitioning", "×", "workload bound", gain, f"+{gain_pct.iloc[0]:.0f}% ({CITE})",
        lambda v: v["P"], (parts,), vary="P",
        lacks="the share of time inserts waited on the last page's latch, which the article does not give with the "
              "rate; with it, Amdahl's law would predict the gain itself rather than a ceiling"))
    out.append(no_model(SPEC.chapter, "the insert rate's gain on the 32-core lab (17K → 26K SQL tx/s)",
                        f"1.53× ({CITE}, a comment)", "the comment gives neither the partition count nor the waits"))
    return out


def usl_fits(shown):
    """USL fits to the measured insert rate per key design (sessions as the concurrency)."""
    from ..shared.capacity_page import recording_cpus, usl_curves
    from .spec import LABELS

    m = shown.measured
    return usl_curves(m.runs, "sessions", "throughput", "variant", measured_from(m), LABELS, cpus=recording_cpus(m))
