"""What one latch per partition allows hash partitioning to buy.

With a sequential key every insert takes the exclusive latch of the same last
page, so the page admits one inserter at a time.  Spread over P partitions,
there are P last pages and P latches; if the page latch was the only limit the
insert rate rises at most P-fold: G ≤ P.  The article gives P but not the
share of time the inserts waited on the latch, which would turn the bound
into a number (Amdahl: G = 1/(1 − w + w/P)).
"""
from __future__ import annotations

from ..shared.capacity import Input, no_model, predict
from .spec import SPEC

CITE = "Kejser et al. 2009 (seed 003)"


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
        "the insert rate's gain from hash partitioning", "×", "at most", gain, f"+{gain_pct.iloc[0]:.0f}% ({CITE})",
        lambda v: v["P"], (parts,), vary="P",
        lacks="the share of time inserts waited on the last page's latch, which the article does not give with the "
              "rate; with it, Amdahl's law would predict the gain itself rather than a ceiling"))
    out.append(no_model(SPEC.chapter, "the insert rate's gain on the 32-core lab (17K → 26K SQL tx/s)",
                        f"1.53× ({CITE}, a comment)", "the comment gives neither the partition count nor the waits"))
    return out


def usl_fits(shown):
    """USL fits to the measured insert rate per key design (sessions as the concurrency)."""
    from ..shared.capacity_page import usl_curves
    from .spec import LABELS

    m = shown.measured
    return usl_curves(m.runs, "sessions", "throughput", "variant", f"measured: {m.id}", LABELS)
