"""The chapter's finding in words, glued into its "In short" opening: built from the verdict rows, so the
opening says what the Findings page says."""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from ..shared.claims import head
from .claims import C, verdicts
from .tables import Prose
from .tables import key_numbers as table_numbers
from ..shared.memo import per_view

VERDICT_KEYS = {key: claim for key, claim in C.items()}


def _verdict_words(rows) -> dict[str, str]:
    by_claim = rows.set_index("claim")["verdict"]
    return {f"v_{key}": head(by_claim.get(claim, "not testable with this recording")) for key, claim in C.items()}


LABELS = {"queue": "queue at the last page (samples)", "last_page": "waited page is the rightmost leaf (pins)",
          "hash_rate": "hash-partitioned rate", "hash_waits": "its buffer-latch samples",
          "elimination": "hash-partitioned lookup, pages without ÷ with pruning", "splits": "non-sequential key's leaf density",
          "optimized": "OPTIMIZE_FOR_SEQUENTIAL_KEY"}


def fixes_text(n: dict[str, Any]) -> str:
    """Whether the article's fixes paid off at the deciding point, from the quoted per-repetition ratios."""
    parts = [(label, n.get(f"q_{key}_text", "not measured"), n.get(f"q_{key}", "not measured"))
             for key, label in (("hash_vs_seq", "hash partitioning"), ("random_vs_seq", "the non-sequential key"))]
    parts = [(label, text, med) for label, text, med in parts if text != "not measured"]
    if not parts:
        return "the recording holds neither fix at the deciding point"
    rates = " and ".join(f"{label} at {text}" for label, text, _ in parts) + " the sequential key's rate"
    def first_float(text: str) -> float:
        m = re.search(r"-?\d+(?:\.\d+)?", str(text).replace(",", ""))
        return float(m.group(0)) if m else float("nan")

    meds = [first_float(med) for _, _, med in parts]
    # the interval's upper end: the first number after its dash ("0.73× (0.61–1.01)", "(range 0.99×–1.22×, 3 runs)")
    highs = [first_float(text.split("–", 1)[1]) for _, text, _ in parts if "–" in text]
    if all(m < 1 for m in meds):
        reach = ((" (both intervals reach 1, so a loss is not certain either)" if len(highs) > 1 else
                  " (the interval reaches 1, so a loss is not certain either)")
                 if any(h >= 1 for h in highs) else "")
        head_ = "neither fix paid off measurably" if len(parts) > 1 else f"{parts[0][0]} did not pay off measurably"
        return f"{head_}: {rates}{reach}"
    return f"the fixes ran: {rates}"


# the short names the opening lists each verdict under (claim key -> label), in the claims table's order
VERDICT_LABELS = {"queue": "a queue at the last leaf", "last_page": "the waited page is the last one",
                  "hash_rate": "hash partitioning's rate",
                  "hash_waits": "fewer buffer-lock samples with hash partitioning",
                  "elimination": "more pages read without pruning",
                  "splits": "a non-sequential key's lower leaf density", "optimized": "OPTIMIZE_FOR_SEQUENTIAL_KEY"}


def in_short(n: dict[str, Any], engine: str, rows=None) -> str:
    """The opening (review: the finding leads): what was found, with its one number, then the action, then every
    verdict beside its own number (:func:`shared.in_short.verdict_list`; the untested named together at the end)."""
    from ..shared.in_short import Markdown, verdict_list

    where = n["v_tested_on"]
    sqlcat = n.get("sqlcat_gain_pct", float("nan"))
    gain = f"+{sqlcat:.0f}%" if isinstance(sqlcat, float) and np.isfinite(sqlcat) else "a published gain"
    if n.get("q_seq_over_random", "not measured") != "not measured":
        # PostgreSQL does not say which buffer a waiter waits for: the leaf's share is an inference, the difference
        # from a control that shares everything but the leaf (the median of the per-repetition differences)
        queue = (f"in a {where}, inserts on an ever-growing key waited for the index's last leaf in an "
                 f"estimated {n['q_seq_over_random']} of samples at {n['m_nd_text']} ({n['q_seq_hot']} on "
                 f"`LWLock:BufferContent` less the non-sequential key's {n['q_random_hot']}): a short queue")
    elif n.get("q_seq_hot", "not measured") != "not measured":
        queue = (f"in a {where}, inserts on an ever-growing key waited on the last page's latch in "
                 f"{n['q_seq_hot']} of samples at {n['m_nd_text']}")
    else:
        queue = f"in a {where}, the recording has no wait samples at the deciding point"
    found = f"**Found:** {queue[:1].upper() + queue[1:]}. {_fixes_sentence(n, gain)}"
    action = ("**For a DBA:** confirm the page first (the queries at the end) and spread the inserts only where that "
              "queue is long; on SQL Server 2019 and later, where a convoy forms, `OPTIMIZE_FOR_SEQUENTIAL_KEY` is "
              "the cheaper first try (untested here).")
    listed = ""
    if rows is not None and len(rows):
        # the queue row's first number is the one-session share; the opening quotes the leaf's estimate, and for
        # the lookup the ratio, not the pages read without pruning
        numbers = {C["queue"]: n.get("q_seq_over_random_text", "")
                   if n.get("q_seq_over_random", "not measured") != "not measured" else "",
                   C["elimination"]: n.get("q_noprune_ratio", "")
                   if n.get("q_noprune_ratio", "not measured") != "not measured" else ""}
        listed = f" **Verdicts:** {verdict_list(rows, {C[k]: v for k, v in VERDICT_LABELS.items()}, numbers)}"
    return Markdown(f"{found} {action}{listed}")


def _fixes_sentence(n: dict[str, Any], gain: str) -> str:
    """Whether the article's fixes paid off, for the opening: both ratios with their intervals, and the hash
    partitioning's median loss in percent where both fixes lost at their medians; else :func:`fixes_text`."""
    hx, rx = n.get("q_hash_vs_seq_text", "not measured"), n.get("q_random_vs_seq_text", "not measured")
    text = fixes_text(n)
    if "not measured" in (hx, rx) or not text.startswith("neither fix paid off measurably"):
        return f"Here {text}."
    med = float(re.search(r"\d+(?:\.\d+)?", str(n["q_hash_vs_seq"])).group(0))
    reach = text[text.index(" (both"):].strip(" ()") if " (both" in text else ""
    # the rate is shown, but a rate beside a short queue does not test the article's gain: the verdict says so
    untested = (", which a queue this short cannot test"
                if str(n.get("v_hash_rate", "")).startswith("not testable here") else "")
    return (f"Neither fix paid off measurably{untested}: hash partitioning, {gain} for the article's customer, ran at "
            f"{hx} the sequential key's rate (a median {1 - med:.0%} slower), the non-sequential key at {rx}"
            + (f"; {reach}." if reach else "."))


def _short_queue(n) -> bool:
    """Hash partitioning lost, or the sequential key's queue was too short for it to win (not testable here)."""
    return str(n["v_hash_rate"]).startswith(("differs", "not testable here"))


@per_view
def key_numbers(shown) -> dict[str, Any]:
    """Every number and verdict word the page glues: the tables' numbers, each claim's verdict word
    (``v_<claim key>``), where the claims were tested, and the "In short" text."""
    n = table_numbers(shown)
    rows = verdicts(shown)
    n.update(_verdict_words(rows))
    n["v_tested_on"] = str(rows["tested_on"].iloc[0]) if len(rows) else "no recording"
    n["lpi_in_short"] = in_short(n, shown.measured.engine, rows)
    # the pieces the notebook's "In short" glues between its own words (so only the findings stand out)
    engine = shown.measured.engine
    n["lpi_how"] = Prose("the same B-tree mechanism under PostgreSQL's buffer content lock, not SQL Server"
                    if engine == "postgres" else "the article's own tables and waits")
    n["lpi_lesson"] = Prose(fixes_text(n))
    n["v_hash_rate_text"] = n["v_hash_rate"] + (f" ({n['q_hash_vs_seq']} the sequential key's rate)"
                                                 if n["q_hash_vs_seq"] != "not measured" else "")
    return n
