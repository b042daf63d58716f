"""The article's claims against the measured recording: rows of data, each with its rule.

A native recording is a C model of the latch, so it can test the direction of each claim but never its size.
It is judged at one point only: the largest thread count no higher than the CPUs (the article's regime,
:func:`tables.regime`).  A reader's SQL Server recording is judged on its DMV deltas, and its size is compared
with the article's when it ran the article's rows and degree of parallelism on a machine of comparable size.
"""
from __future__ import annotations

import pandas as pd

from ..shared.claims import Claim, Size, above, below, judge, missing_point, table, tested_on
from ..shared.spread import ratio_spread, spread
from .spec import LATCH, LATCH_SPIN
from .tables import per_record, published_numbers, regime
from ..shared.memo import per_view

CLAIMS = ("The unfair latch waits far less often", "The unfair latch spins far more",
          "The unfair latch gives higher throughput", "The unfair latch's wait tail is shorter")
SPINS = CLAIMS[1]  # a verdict on SQL Server only: the C model's fair lock never spins by construction (see below)
_AT = "at the largest thread count ≤ CPUs"
RULES = {
    "native": [
        f"holds when the interval over repetitions of waits per record, spinning ÷ fair, {_AT}, lies below 0.1",
        "",  # no native rule: the C model's fair lock cannot spin, so spins are a counter check (spin_check)
        f"holds when the interval over repetitions of records/s, spinning ÷ fair, {_AT}, lies above 1",
        f"holds when the interval over repetitions of the 99th-percentile wait, spinning ÷ fair, {_AT}, lies below "
        "1 (the article printed the longest wait, but on a small machine a single wait measures its scheduler, so "
        "the C model compares the 99th percentile)",
    ],
    "sqlserver": [
        "holds when the interval over repetitions of latch waits, unfair ÷ fair, lies below 0.1; size: within 10× "
        "of the article's ratio",
        "holds when the interval over repetitions of LATCH_SPIN_STATS spins, unfair − fair, lies above 0; size: "
        "within 2× of the article's difference",
        "holds when the interval over repetitions of elapsed time, unfair ÷ fair, lies below 1; size: within 1.5× "
        "of the article's ratio",
        "holds when the interval over repetitions of the latch's max wait, unfair ÷ fair, lies below 1; size: "
        "within 2× of the article's ratio",
    ],
}
NATIVE_SIZE = ("a C model of the latch, not SQL Server's latch under a parallel insert on the article's "
               "{pub_cpus} CPUs")


def _sqlserver_size(published, measured, p) -> str:
    """Why a reader's SQL Server sizes cannot be set beside the article's, or "" when they can."""
    cpus, pub_cpus = measured.logical_cpus or 0, p["pub_logical_cpus"] or 0
    rows = float(measured.runs["operations"].max()) if "operations" in measured.runs else float("nan")
    dop = float(measured.runs["sessions"].max()) if "sessions" in measured.runs else float("nan")
    if not (pub_cpus / 2 <= cpus <= pub_cpus * 2):
        return f"{cpus} CPUs against the article's {pub_cpus}"
    if rows != p["pub_rows"] or dop != p["pub_maxdop"]:
        return (f"{rows:,.0f} rows at DOP {dop:.0f} against the article's {p['pub_rows']:,} rows at DOP "
                f"{p['pub_maxdop']}")
    return ""


def tail_longer(measured, threads) -> tuple[int, int] | None:
    """(in how many paired repetitions the spinning lock's 99th-percentile wait exceeded the fair lock's, how many
    pairs) at ``threads``; None when the recording has no such pair."""
    from .spec import SQL_UNFAIR_ANALOGUE

    r = measured.runs[measured.runs["threads"] == threads]
    if "repetition" not in r.columns:
        return None
    wide = r.pivot_table(index="repetition", columns="kind", values="wait_p99_ns", aggfunc="first")
    if not {"fair", SQL_UNFAIR_ANALOGUE} <= set(wide.columns):
        return None
    pairs = wide[["fair", SQL_UNFAIR_ANALOGUE]].dropna()
    return (int((pairs[SQL_UNFAIR_ANALOGUE] > pairs["fair"]).sum()), len(pairs)) if len(pairs) else None


_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def tail_longer_words(measured, threads) -> str:
    """In how many paired repetitions the spinning lock's 99th-percentile wait was the longer, and what the others
    were when they are the repetitions in which the fair lock convoyed: "longer in 4 of 5 paired repetitions; the
    fifth is the repetition where the fair lock convoyed".  "" without pairs."""
    from .spec import SQL_UNFAIR_ANALOGUE
    from .tables import convoyed

    longer = tail_longer(measured, threads)
    if longer is None:
        return ""
    k, n = longer
    text = f"longer in {k} of {n} paired repetitions"
    r = measured.runs[measured.runs["threads"] == threads]
    wide = r.pivot_table(index="repetition", columns="kind", values="wait_p99_ns", aggfunc="first")
    pairs = wide[["fair", SQL_UNFAIR_ANALOGUE]].dropna()
    others = sorted(int(i) for i in pairs.index[~(pairs[SQL_UNFAIR_ANALOGUE] > pairs["fair"])])
    conv = set(convoyed(measured, threads)[0])
    if others and set(others) <= conv:
        if len(others) == 1 and n - 1 < len(_ORDINALS):
            text += f"; the {_ORDINALS[n - 1]} is the repetition where the fair lock convoyed"
        else:
            text += f"; the other {len(others)} are the repetitions where the fair lock convoyed"
    return text


def spin_check(measured) -> str:
    """The spins of the C model's locks as a check of the benchmark, not a verdict: its fair lock cannot spin
    (nobody spins under FIFO hand-off), so 'the unfair lock spins more' could not have come out otherwise.  Words
    built from the recording, or "" when it has no point to check."""
    from .spec import SQL_UNFAIR_ANALOGUE

    if not getattr(measured, "is_native", False):
        return ""
    reg = regime(measured)
    if reg["missing"]:
        return ""
    r = measured.runs[measured.runs["threads"] == reg["threads"]]
    spins = {k: float((r[r["kind"] == k]["spins"] / r[r["kind"] == k]["records"].clip(lower=1)).median())
             for k in ("fair", SQL_UNFAIR_ANALOGUE)}
    fair_ok = spins["fair"] == 0
    return (f"A check of the benchmark, not a verdict: the fair lock is built so that nobody spins, so the claim "
            f"that the unfair latch spins more cannot fail on it. At {reg['threads']} threads the fair lock spun "
            f"{spins['fair']:,.2g} times per record{' as built' if fair_ok else ', which it should not'}, and the "
            f"spinning lock {spins[SQL_UNFAIR_ANALOGUE]:,.3g} times.")


@per_view
def verdicts(shown) -> pd.DataFrame:
    """For each claim of the article: what it reported, what was measured where, the rule and the verdict."""
    published, measured = shown.published, shown.measured
    p = published_numbers(published)
    pub = [
        f"{p['pub_fair_latch_waits']:,.0f} → {p['pub_unfair_latch_waits']:,.0f} latch waits",
        f"{LATCH_SPIN} spins {p['pub_fair_spins']:,.0f} → {p['pub_unfair_spins']:,.0f}",
        f"{p['pub_fair_s']:.1f} s → {p['pub_unfair_s']:.1f} s ({p['pub_speedup_x']:.2f}× faster)",
        f"max wait {p['pub_fair_latch_max_ms']:.0f} ms → {p['pub_unfair_latch_max_ms']:.0f} ms",
    ]
    rows = []
    where = tested_on(measured) if measured.recording.kind == "measured" else ""
    if measured.is_native:
        reg = regime(measured)
        sp, tx, t_in = reg["spreads"], reg["texts"], reg["threads"]
        size = Size.not_comparable(NATIVE_SIZE.format(pub_cpus=p["pub_logical_cpus"]))
        at = f"at {t_in} threads on {reg['cpus']} CPUs"
        measured_texts = [f"waits per record {tx['waits']} of the fair lock's {at}",
                          (f"{tx['spins']} spins per record against the fair lock's 0 {at}"
                           if tx["fair_spins"] == "0" else
                           f"{tx['spins']} more spins per record than the fair lock's {tx['fair_spins']} {at}"),
                          f"records/s {tx['rate']} the fair lock's {at}",
                          f"99th-percentile wait {tx['wait_p99']} the fair lock's {at}: {tx['spin_p99']} against "
                          f"{tx['fair_p99']}"]
        directions = [below(sp["waits"], 0.1), above(sp["spins"], 0.0), above(sp["rate"], 1.0),
                      below(sp["wait_p99"], 1.0)]
        if reg["missing"]:
            directions = [missing_point(reg["missing"])] * 4
            measured_texts = [f"no point to judge: the recording lacks {reg['missing']}"] * 4
        sizes = [size] * 4
        rules = RULES["native"]
        note = " (C model: fair lock against spin, back off, then park)"
        fair_waits = (per_record(measured.runs).query("kind == 'fair' and threads == @t_in")["waits_per_record"]
                      .median() if not reg["missing"] else float("nan"))
        if fair_waits == fair_waits and 0 < fair_waits < 0.01:  # the point barely exercises fairness: say so
            measured_texts[0] += f", where the fair lock queued on only {fair_waits:.2%} of its records"
        longer = tail_longer_words(measured, t_in) if not reg["missing"] else ""
        if longer:
            measured_texts[3] += f"; {longer}"
    elif measured.engine == "sqlserver" and measured.recording.kind == "measured":
        def dmv(key, name, col, difference=False):
            frame = measured.table(key)
            if frame is None:
                return spread([])
            part = frame[frame["name"] == name].groupby(["variant", "repetition"], as_index=False)[col].sum()
            return ratio_spread(part, col, "unfair", "fair", difference=difference)

        waits, spins = dmv("latch", LATCH, "waits"), dmv("spinlock", LATCH_SPIN, "spins", difference=True)
        wait_max = dmv("latch", LATCH, "max_wait_time_ms")
        elapsed = ratio_spread(measured.runs, "elapsed_s", "unfair", "fair")
        measured_texts = [f"latch waits {waits.text('fraction')} of the fair run's",
                          f"spins {spins.text(',.0f')} more than the fair run's",
                          f"elapsed {elapsed.text('.2f', '×')} the fair run's",
                          f"max wait {wait_max.text('.3g', '×')} the fair run's (a bound where the delta could not "
                          "be exact)"]
        directions = [below(waits, 0.1), above(spins, 0.0), below(elapsed, 1.0), below(wait_max, 1.0)]
        why = _sqlserver_size(published, measured, p)
        pub_values = [(p["pub_unfair_latch_waits"] / p["pub_fair_latch_waits"], waits, 10, "×"),
                      (p["pub_unfair_spins"] - p["pub_fair_spins"], spins, 2, " spins"),
                      (p["pub_unfair_s"] / p["pub_fair_s"], elapsed, 1.5, "×"),
                      (p["pub_unfair_latch_max_ms"] / p["pub_fair_latch_max_ms"], wait_max, 2, "×")]
        sizes = [Size.not_comparable(why) if why else Size.compare(v, s, f, unit) for v, s, f, unit in pub_values]
        rules = RULES["sqlserver"]
        note = ""
    else:
        measured_texts = ["no measured recording of fair against unfair"] * 4
        directions = ["not testable here: no measured recording"] * 4
        sizes = [Size.not_comparable("nothing measured")] * 4
        rules = RULES["native"]
        note = ""
    for claim, pub_text, meas, direction, size, rule in zip(CLAIMS, pub, measured_texts, directions, sizes, rules):
        if claim == SPINS and measured.is_native:
            continue  # the fair lock of the C model never spins by construction: a check (spin_check), not a verdict
        verdict, size_text = judge(direction, size)
        rows.append(Claim(claim=claim + note, published=pub_text, recording=measured.id, tested_on=where,
                          measured=meas, size=size_text, rule=rule, verdict=verdict))
    return table(rows)
