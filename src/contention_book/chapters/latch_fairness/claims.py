"""The article's claims against the measured recording: rows of data, each with its rule."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..shared.claims import Claim, table
from .spec import KIND_LABELS, LATCH, LATCH_SPIN, SQL_UNFAIR_ANALOGUE
from .tables import NAN, _at, max_wait_verdict, native_summary, oversubscribed, published_numbers, sql_metrics

RULES = {
    "native": [
        "agrees when waits per record fall to a tenth or less, at the largest thread count",
        "agrees when spins per record rise, at the largest thread count",
        "agrees when the unfair lock's records/s exceed the fair lock's at every oversubscribed thread count",
        "agrees when the unfair lock's longest wait is no longer than the fair lock's, beyond the lone-thread "
        "noise floor",
    ],
    "sqlserver": [
        "agrees when latch waits fall to a tenth or less",
        "agrees when LATCH_SPIN_STATS spins rise",
        "agrees when the unfair run's elapsed time is shorter",
        "agrees when the unfair run's max wait is no longer (a bound where the delta could not be exact)",
    ],
}


def verdicts(shown) -> pd.DataFrame:
    """For each claim of the article: its direction, the direction measured here, the rule, the verdict."""
    published, measured = shown.published, shown.measured
    p = published_numbers(published)
    rows = []
    rules = RULES["native"] if measured.is_native else RULES["sqlserver"]

    def add(claim, pub, meas, agree, rule):
        rows.append(Claim(claim=claim, published=pub, recording=measured.id, measured=meas, rule=rule,
                          verdict="not testable here" if agree is None else ("agrees" if agree else "differs")))

    claims = [
        ("The unfair latch waits far less often",
         f"{p['pub_fair_latch_waits']:,.0f} → {p['pub_unfair_latch_waits']:,.0f} latch waits"),
        ("The unfair latch spins far more",
         f"{LATCH_SPIN} spins {p['pub_fair_spins']:,.0f} → {p['pub_unfair_spins']:,.0f}"),
        ("The unfair latch gives higher throughput",
         f"{p['pub_fair_s']:.1f} s → {p['pub_unfair_s']:.1f} s ({p['pub_speedup_x']:.2f}× faster)"),
        ("The unfair latch's maximum wait is no worse",
         f"max wait {p['pub_fair_latch_max_ms']:.0f} ms → {p['pub_unfair_latch_max_ms']:.0f} ms"),
    ]
    if measured.is_native:
        s = native_summary(measured)
        over = oversubscribed(s, measured.logical_cpus)
        u = SQL_UNFAIR_ANALOGUE
        tmax = over[-1]
        fw, uw = _at(s, "fair", tmax, "waits_per_record"), _at(s, u, tmax, "waits_per_record")
        fs, us = _at(s, "fair", tmax, "spins_per_record"), _at(s, u, tmax, "spins_per_record")
        ratios = [(_at(s, u, t, "records_per_s") / _at(s, "fair", t, "records_per_s")) for t in over]
        where = f"at {tmax} threads on {measured.logical_cpus} CPUs"
        measured_dirs = [
            (f"waits per record {fw:.3f} → {uw:.4f} {where}", uw <= fw / 10),
            (f"spins per record {fs:.1f} → {us:.1f} {where}", us > fs),
            (f"{min(ratios):.1f}× to {max(ratios):.1f}× the fair lock's records/s at "
             f"{', '.join(map(str, over))} threads", min(ratios) > 1),
            max_wait_verdict(s, measured.logical_cpus, tmax),
        ]
        note = f" (native: fair vs {KIND_LABELS[u]})"
    elif measured.engine == "sqlserver" and measured.recording.kind == "measured":
        m = sql_metrics(measured).set_index(["metric", "variant"])["value"]

        def pair(metric):
            return float(m.get((metric, "fair"), NAN)), float(m.get((metric, "unfair"), NAN))

        fw, uw = pair(f"{LATCH} waits")
        fs, us = pair(f"{LATCH_SPIN} spins")
        fe, ue = pair("elapsed (s)")
        fm, um = pair(f"{LATCH} max wait (ms)")
        have = not np.isnan(uw)
        measured_dirs = [
            (f"{fw:,.0f} → {uw:,.0f} latch waits", uw <= fw / 10 if have else None),
            (f"spins {fs:,.0f} → {us:,.0f}", us > fs if have else None),
            (f"{fe:.2f} s → {ue:.2f} s", ue < fe if have else None),
            (f"max wait {fm:.0f} ms → {um:.0f} ms (a bound where the delta could not be exact)",
             um <= fm if have else None),
        ]
        note = ""
    else:
        measured_dirs = [("no measured recording of fair vs unfair", None)] * 4
        note = ""
    for (claim, pub), (meas, agree), rule in zip(claims, measured_dirs, rules):
        add(claim + note, pub, meas, None if agree is None or (isinstance(agree, float) and np.isnan(agree))
            else bool(agree), rule)
    return table(rows)
