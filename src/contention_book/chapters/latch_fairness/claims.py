"""The article's claims against the measured recording: rows of data, each with its rule."""
from __future__ import annotations

import pandas as pd

from ..shared.claims import Claim, above, below, rule_above, rule_below, table
from ..shared.spread import ratio_spread, spread
from .spec import KIND_LABELS, LATCH, LATCH_SPIN, SQL_UNFAIR_ANALOGUE
from .tables import published_numbers, within_cpus

RULES = {
    "native": [
        rule_below(0.1, "the spinning lock's waits per record over the fair lock's, at the largest thread count,"),
        rule_above(0.0, "the spinning lock's spins per record minus the fair lock's, at the largest thread count,"),
        rule_above(1.0, "the spinning lock's records/s over the fair lock's, at the largest thread count no higher "
                        "than the CPUs (the article's regime),"),
        rule_below(1.0, "the spinning lock's longest wait over the fair lock's, at the largest thread count,"),
    ],
    "sqlserver": [
        rule_below(0.1, "the unfair run's latch waits over the fair run's"),
        rule_above(0.0, "the unfair run's LATCH_SPIN_STATS spins minus the fair run's"),
        rule_below(1.0, "the unfair run's elapsed time over the fair run's"),
        rule_below(1.0, "the unfair run's max wait over the fair run's (a bound where the delta could not be exact)"),
    ],
}


def verdicts(shown) -> pd.DataFrame:
    """For each claim of the article: its direction, the direction measured here, the rule, the verdict."""
    published, measured = shown.published, shown.measured
    p = published_numbers(published)
    rows = []
    rules = RULES["native"] if measured.is_native else RULES["sqlserver"]

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
        runs, cpus = _per_record(measured.runs), measured.logical_cpus
        u = SQL_UNFAIR_ANALOGUE
        tmax = int(runs["threads"].max())
        t_in = within_cpus(runs["threads"].unique(), cpus)

        def ratio(col, t, difference=False):
            return ratio_spread(runs, col, u, "fair", where={"threads": t}, variant="kind", difference=difference)

        where = f"at {tmax} threads on {cpus} CPUs"
        waits, spins, wait_max = ratio("waits_per_record", tmax), ratio("spins_per_record", tmax, True), \
            ratio("wait_max_ns", tmax)
        rate = ratio("records_per_s", t_in) if t_in is not None else spread([])
        measured_dirs = [
            (f"waits per record {waits.text('fraction')} of the fair lock's {where}", below(waits, 0.1)),
            (f"spins per record {spins.text(',.1f')} more than the fair lock's {where}", above(spins, 0.0)),
            (f"records/s {rate.text(',.1f', '×')} the fair lock's at {t_in} threads on {cpus} CPUs "
             f"({ratio('records_per_s', tmax).text(',.0f', '×')} at {tmax}, oversubscribed)"
             if t_in is not None else "no thread count from 2 to the CPU count was run",
             above(rate, 1.0) if t_in is not None else "not testable here: no thread count within the CPUs"),
            (f"longest wait {wait_max.text('.2f', '×')} the fair lock's {where}", below(wait_max, 1.0)),
        ]
        note = f" (native: fair vs {KIND_LABELS[u]})"
    elif measured.engine == "sqlserver" and measured.recording.kind == "measured":
        def dmv(key, name, col, difference=False, small=False):
            frame = measured.table(key)
            if frame is None:
                return spread([]), "not recorded"
            part = frame[frame["name"] == name].groupby(["variant", "repetition"], as_index=False)[col].sum()
            r = ratio_spread(part, col, "unfair", "fair", difference=difference)
            if difference:
                return r, r.text(",.0f") + " more than"
            return r, r.text("fraction") + " of" if small else r.text(".3g", "×")

        waits, waits_text = dmv("latch", LATCH, "waits", small=True)
        spins, spins_text = dmv("spinlock", LATCH_SPIN, "spins", difference=True)
        wait_max, max_text = dmv("latch", LATCH, "max_wait_time_ms")
        elapsed = ratio_spread(measured.runs, "elapsed_s", "unfair", "fair")
        measured_dirs = [
            (f"latch waits {waits_text} the fair run's", below(waits, 0.1)),
            (f"spins {spins_text} the fair run's", above(spins, 0.0)),
            (f"elapsed {elapsed.text('.2f', '×')} the fair run's", below(elapsed, 1.0)),
            (f"max wait {max_text} the fair run's (a bound where the delta could not be exact)", below(wait_max, 1.0)),
        ]
        note = ""
    else:
        measured_dirs = [("no measured recording of fair vs unfair", "not testable here: no measured recording")] * 4
        note = ""
    for (claim, pub), (meas, verdict), rule in zip(claims, measured_dirs, rules):
        rows.append(Claim(claim=claim + note, published=pub, recording=measured.id, measured=meas, rule=rule,
                          verdict=verdict))
    return table(rows)


def _per_record(runs: pd.DataFrame) -> pd.DataFrame:
    """Native runs with the per-record rates the rules compare."""
    rec = runs["records"].clip(lower=1)
    return runs.assign(waits_per_record=runs["waits"] / rec, spins_per_record=runs["spins"] / rec)
