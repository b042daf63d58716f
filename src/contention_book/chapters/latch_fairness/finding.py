"""The chapter's opening and every number its prose glues: built from the tables and the verdict rows, so it sits
above both (tables <- claims <- finding)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .claims import spin_check, verdicts
from .recordings import LatchRecording
from .tables import NAN, _at, machine_sentence, native_numbers, native_summary, priced, published_numbers
from ..shared.memo import per_view


@per_view
def key_numbers(shown) -> dict[str, Any]:
    """Every number the prose glues, and the opening's finding in the verdicts' own words."""
    from ..shared.claims import head, tested_on

    published, measured = shown.published, shown.measured
    nums = published_numbers(published)
    nums.update(native_numbers(measured if measured.is_native else None))
    nums["m_label"] = measured.label
    nums["m_tested_on"] = tested_on(measured) if measured.recording.kind == "measured" else "no measured recording"
    nums["in_short"] = in_short(nums, verdicts(shown), measured)
    nums["m_machine_sentence"] = machine_sentence(measured)
    nums["m_spin_check"] = spin_check(measured)
    nums["default_sweep_minutes"] = default_sweep_seconds() / 60
    if measured.is_native and "fair" in set(measured.runs["kind"]):
        s = native_summary(measured)
        t_in = nums["m_in_threads"]
        rate1 = _at(s, "fair", 1, "records_per_s")
        rate_in, waits = _at(s, "fair", t_in, "records_per_s"), _at(s, "fair", t_in, "waits_per_record")
        nums["m_record_ns_1"] = 1e9 / rate1 if rate1 == rate1 else NAN
        nums["m_handoff_ns"] = (1e9 / rate_in - 1e9 / rate1) / waits if priced(rate1, rate_in, waits) else NAN
    else:
        nums["m_record_ns_1"] = nums["m_handoff_ns"] = NAN
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in nums.items()}


def default_sweep_seconds() -> float:
    """How long the native sweep runs with its default parameters (the points alone, no build)."""
    from contention_book.harness.runner import resolve_params

    from .run_native import expected_seconds
    from .spec import SPEC

    p = resolve_params(SPEC, "native", {})
    return expected_seconds(p["variants"], p["sessions"], round(p["duration_s"] * 1000), p["repetitions"])


def _ratio(text: str) -> float:
    """A verdict row's median ratio as a number: "15×" -> 15, "1/120" -> 1/120; NaN when it is neither."""
    t = text.strip().rstrip("×").replace(",", "")
    try:
        return 1 / float(t[2:]) if t.startswith("1/") else float(t)
    except ValueError:
        return NAN


def tail_measured(median: str, native: bool) -> str:
    """What was measured of the tail claim, with its direction from the median ratio itself: "measured 15× longer at
    the 99th percentile (spin-then-park ÷ fair)"; "shorter" below 1, no direction word at 1 or without a number."""
    at, by = ("at the 99th percentile", "spin-then-park ÷ fair") if native else ("at the longest wait", "unfair ÷ fair")
    r = _ratio(median)
    if r > 1:
        return f"measured {median} longer {at} ({by})"
    if r < 1:
        return f"measured shorter {at}, {median} ({by})"
    return f"measured {median} {at} ({by})"


def in_short(n: dict[str, Any], rows: pd.DataFrame, measured: LatchRecording) -> str:
    """The opening: one plain sentence of what was tested, one of what was found, the action, then every verdict
    beside its median (the intervals are the verdict table's)."""
    from ..shared.in_short import Markdown, number, verdict_list
    from .claims import CLAIMS, tail_longer_words
    from .tables import regime, seldom_words

    native = measured.is_native and n["m_in_threads"] == n["m_in_threads"]
    where = (f"a C model of the latch at {n['m_in_threads']} threads on {n['m_cpus']} CPUs, not on SQL Server"
             if native else n["m_tested_on"])
    names = {CLAIMS[0]: "fewer latch waits (spin-then-park ÷ fair)" if measured.is_native else
             "fewer latch waits (unfair ÷ fair)", CLAIMS[1]: "more spins", CLAIMS[2]: "higher throughput",
             CLAIMS[3]: "shorter wait tail (the article's claim)" if measured.is_native
             else "shorter longest wait (the article's claim)"}
    claims = [str(c) for c in rows["claim"]]
    labels = {c: names[next(k for k in CLAIMS if c.startswith(k))] for c in claims}
    medians = {c: number(m).split(" (")[0] for c, m in zip(claims, rows["measured"])}
    for c in claims:  # the tail: the label names the claim's direction, the number says what was measured, either way
        if c.startswith(CLAIMS[3]) and medians[c]:
            medians[c] = tail_measured(medians[c], measured.is_native)
            longer = tail_longer_words(measured, n["m_in_threads"]) if native and _ratio(medians[c].split()[1]) > 1 \
                else ""  # tail_measured: "measured 15× longer ..."; medians[c] was the bare ratio before
            if longer:  # in how many repetitions, and what the others were (a convoy of the fair lock)
                count, _, why = longer.partition("; ")
                medians[c] += f", {count}" + (f" ({why})" if why else "")
    tested = (f"**Tested:** whether letting threads barge and spin beats a fair hand-off of a hot latch, "
              f"as trace flag 3933 did for the article's parallel insert ({n['pub_speedup_x']:.2f}× as fast, "
              f"{n['pub_latch_wait_drop_x']:,.0f} times fewer latch waits), in {where}.")
    by = dict(zip(claims, rows["verdict"].astype(str)))
    rate_claim = next((c for c in claims if c.startswith(CLAIMS[2])), None)
    rate = medians.get(rate_claim, "") if rate_claim else ""
    reliable = bool(rate_claim) and by[rate_claim].startswith(("direction reproduced", "reproduced"))
    found = "**Found:** "
    if native:
        reg = regime(measured)
        fewer = (f"The spin-then-park lock queued {reg['texts']['waits'].split(' (')[0]} as often per record as the "
                 "fair lock" if reg["spreads"]["waits"].n else "The spin-then-park lock was not compared")
        found += fewer + (f" and ran {rate} as fast (median of per-repetition ratios)" if rate else "") + \
            ("" if reliable else ", not reliably")
        met = _at(native_summary(measured), "fair", n["m_in_threads"], "waits_per_record")
        seldom = seldom_words(measured, n["m_in_threads"], met) if met == met and met > 0 else ""
        found += f". But {seldom}." if seldom else "."  # few hand-offs, so little convoy for barging to remove
    else:
        found += (f"An unfair latch's throughput was {rate} a fair one's"
                  + ("" if reliable else ", not reliably higher") + f", in {where}." if rate else
                  f"Nothing measured to compare, in {where}.")
    return Markdown(
        f"{tested} {found} **For a DBA:** when NESTING_TRANSACTION_FULL waits take a real share of a "
        "parallel data change, log less or lower its degree of parallelism first; trace flag 3933 is undocumented: "
        f"ask Microsoft Support first. **Verdicts:** {verdict_list(rows, labels, medians)}")
