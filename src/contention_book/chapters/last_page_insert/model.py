"""What one latch per partition allows hash partitioning to buy.

With a sequential key every insert takes the exclusive latch of the same last
page, so the page admits one inserter at a time.  Spread over P partitions,
there are P last pages and P latches; if the page latch was the only limit the
insert rate rises at most P-fold: G ≤ P.  The article gives P but not the
share of time the inserts waited on the latch, which would turn the bound
into a number (Amdahl: G = 1/(1 − w + w/P)).  G ≤ P follows from the
partition count alone, so it is shown as a *workload bound*, not scored.

On this machine first, a trivial ceiling: two sessions inserting sequential
keys insert at most twice as fast as one, X₂ ≤ 2·X₁.  A model that added a
line transfer per insert, X₂ ≤ 2 / (t₁ + t_xfer), would change that ceiling by
about t_xfer/t₁, about 1% at most here (a transfer of tens to hundreds of
nanoseconds against a row of about 19 µs); where the machine card's transfer
moved between the recording's start and end, the page gives the range that the
span of the two leads to, and says plainly that the bound is 2× the one-session
rate.  It tests no contention model, so it is marked a *workload
bound* (not scored), like G ≤ P: it follows from the workload (two sessions each
doing one session's work) once X₁ is measured.  Its numbers use the page's one
interval (:mod:`shared.spread`: the median over repetitions and its 95%
interval), the same as the page's prose.  It is tried only where the machine
has at least two CPUs.
"""
from __future__ import annotations

from ..shared.capacity import Input, card_of, measured_from, no_model, predict
from ..shared.spread import spread
from .spec import SPEC

CITE = "Kejser et al. 2009"


def machine_predictions(shown) -> list:
    """The trivial ceiling on the sequential key's 2-session rate: twice its 1-session rate."""
    m = shown.measured
    runs = getattr(m, "runs", None)
    if runs is None or "sessions" not in runs.columns:
        return []
    cpus = m.recording.host.get("logical_cpus") if getattr(m, "recording", None) is not None else None
    seq = runs[runs["variant"] == "sequential"]
    one, two = seq[seq["sessions"] == 1], seq[seq["sessions"] == 2]
    if one.empty or two.empty or (cpus is not None and cpus < 2):
        return []
    ones = one["throughput"].tolist()
    x1s, x2 = spread(ones), spread(two["throughput"].tolist())
    # the bound is drawn at X₁'s median (a workload bound has no interval of its own); X₁'s interval is said below
    x1 = Input.exact("insert rate, sequential key, 1 session", "X₁", x1s.median, "rows/s",
                     measured_from(m, "sequential, 1 session"))
    got = x2.median
    ceiling = 2 * x1s.median
    card, _ = card_of(m)
    xfer = _transfer_words(card, 1e9 / x1s.median) if card is not None else ""
    side = ("under" if x2.high < 2 * x1s.low else "above" if x2.low > 2 * x1s.high else "across")
    where = {"under": "lies under all of it",
             "above": "lies above all of it, which two sessions sharing the work cannot do unless something held "
                      "the one-session runs back",
             "across": "overlaps it"}[side]
    return [predict(
        SPEC.chapter, "a trivial ceiling: two sessions at most double one session's rate",
        "X₂ ≤ 2 · X₁", "the sequential key's insert rate with 2 sessions (this machine)", "rows/s",
        "workload bound", got, f"this recording: {x2.text(',.0f', ' rows/s')}",
        lambda v: 2 * v["X₁"], (x1,), published_low=x2.low, published_high=x2.high,
        lacks=("everything about the latch: the bound only says that two sessions did not insert more than twice "
               "as fast as one, so it tests no contention model and is a workload bound, not scored." + xfer +
               f" X₁ is {x1s.text(',.0f', ' rows/s')}; at the ends of that interval the ceiling runs from "
               f"{2 * x1s.low:,.0f} to {2 * x1s.high:,.0f} rows/s, and the measured X₂, "
               f"{x2.text(',.0f', ' rows/s')}, {where}. Here the rate came to {got / ceiling:.2f}× the ceiling"))]


def _transfer_words(card: dict, t1: float) -> str:
    """What one line transfer per insert would take off the ceiling, t_xfer/t₁, from the recording's own card.
    When the card says the transfer moved between its start and its end, no one t_xfer describes the runs
    between them, so the sentence takes the span of the two (as the page's rule for a moved cost says) and gives
    the range of t_xfer/t₁ it leads to."""
    from contention_book.harness import machine_card

    c = machine_card.cost(card, "one_way_transfer")
    if c is None:
        return ""
    phases = card.get("phases", {})
    ends = {name: phases.get(name, {}).get("costs", {}).get("one_way_transfer", {}).get("median")
            for name in ("start", "end")}
    if "one_way_transfer" in machine_card.placement_moved(card) and all(ends.values()):
        lo, hi = min(ends.values()), max(ends.values())
        return (f" A line transfer per insert would lower it by t_xfer/t₁, against t₁ = {t1:,.0f} ns per row. The "
                "machine card says the transfer moved during the recording: its one-way cache-line transfer between "
                f"the two CPUs went from {_ns(ends['start'])} ns at the start to {_ns(ends['end'])} ns at the end, "
                "so no one t_xfer describes the runs between them. Taking the span of the two, "
                f"{_ns(lo)}–{_ns(hi)} ns, t_xfer/t₁ lies between {lo / t1:.2%} and {hi / t1:.1%}, and the ceiling "
                f"between {2e9 / (t1 + hi):,.0f} and {2e9 / (t1 + lo):,.0f} rows/s.")
    return (f" A line transfer per insert would lower it by only t_xfer/t₁ = {c.median / t1:.1%} "
            f"(t_xfer {_ns(c.median)} ns from the machine card against t₁ = {t1:,.0f} ns per row).")


def _ns(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


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
        lambda v: v["P"], (parts,),  # no curve: G ≤ P drawn against P is the bound itself
        lacks="the share of time inserts waited on the last page's latch, which the article does not give with the "
              "rate; with it, Amdahl's law would predict the gain itself rather than a ceiling"))
    out.append(no_model(SPEC.chapter, "the insert rate's gain on the 32-core lab (17K → 26K SQL tx/s)",
                        "1.53× (Kejser, in a comment under the article)",
                        "the comment gives neither the partition count nor the waits"))
    return out


def usl_fits(shown):
    """USL fits to the measured insert rate per key design (sessions as the concurrency)."""
    from ..shared.capacity_page import recording_cpus, usl_curves
    from .spec import LABELS

    m = shown.measured
    return usl_curves(m.runs, "sessions", "throughput", "variant", measured_from(m), LABELS, cpus=recording_cpus(m))
