"""The chapter's opening and every number its prose glues: built from the tables and the verdict rows, so it sits
above both (tables <- claims <- finding)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .claims import verdicts
from .recordings import LatchRecording
from .tables import NAN, _at, native_numbers, native_summary, priced, published_numbers
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


def in_short(n: dict[str, Any], rows: pd.DataFrame, measured: LatchRecording) -> str:
    """The opening: the finding, the number that carries it, the action, then every verdict beside its number."""
    from ..shared.in_short import Markdown, number, verdict_list
    from .claims import CLAIMS

    where = (f"a C model of the latch on {n['m_cpus']} CPUs, judged at {n['m_in_threads']} threads, not on SQL "
             "Server" if measured.is_native and n["m_in_threads"] == n["m_in_threads"] else n["m_tested_on"])
    labels = dict(zip([str(c) for c in rows["claim"]], ("fewer latch waits (unfair ÷ fair)", "more spins per record",
                                                       "higher throughput",
                                                       "99th-percentile wait" if measured.is_native
                                                       else "longest wait")))
    rate = number(rows["measured"].iloc[2]) if len(rows) > 2 else ""
    reliable = len(rows) > 2 and str(rows["verdict"].iloc[2]).startswith(("direction reproduced", "reproduced"))
    carried = (f"an unfair latch's throughput was {rate} a fair one's"
               + ("" if reliable else ", not reliably higher") + f", in {where}" if rate else f"Tested on {where}")
    if rate and measured.is_native:  # the toy does nothing but take the latch: its ratio is the lock's alone
        from ..shared.capacity import card_cost

        wake = card_cost(measured, "futex_wake")
        met = _at(native_summary(measured), "fair", n["m_in_threads"], "waits_per_record")
        if met == met and 0 < met < 0.01:  # the threads seldom met: few hand-offs, so little convoy to remove
            fair = measured.runs[(measured.runs["kind"] == "fair") & (measured.runs["threads"] == n["m_in_threads"])]
            rates = fair["records_per_s"]
            convoyed = int((rates < 0.1 * rates.median()).sum())  # a convoy: the fair lock at a tenth of its usual
            carried += (f"; the two threads seldom met (the fair lock queued once per {1 / met:,.0f} records): a "
                        + (f"convoy formed in {convoyed} of {len(rates)} repetitions, which set the intervals' "
                           "upper ends" if convoyed else
                           f"convoy formed in none of {len(rates)} repetitions"))
        carried += (". It measures the latch alone"
                    + (f", where a futex wake-up across CPUs took {wake.median / 1e3:.0f} µs"
                       if wake is not None else ", with no other work"))
    return Markdown(
        f"**The article:** SQL Server's NESTING_TRANSACTION_FULL latch is fair by default, so every contended "
        f"hand-off waits for the next owner to wake; trace flag 3933 makes it unfair, and a parallel insert ran "
        f"{n['pub_speedup_x']:.2f}× as fast with {n['pub_latch_wait_drop_x']:,.0f} times fewer latch waits. "
        f"**Found here:** {carried[:1].upper() + carried[1:]}. **For a DBA:** when NESTING_TRANSACTION_FULL waits take a real share of a "
        "parallel data change, log less or lower the degree of parallelism first; trace flag 3933 is undocumented, "
        f"so ask Microsoft Support before using it. **Verdicts:** {verdict_list(rows, labels)}")
