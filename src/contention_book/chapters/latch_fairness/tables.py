"""Tables and glued numbers from recordings of this chapter (verdicts: claims.py).

Every number the chapter's prose quotes comes from :func:`key_numbers`; none
is typed by hand.  Keys that a recording cannot supply are NaN, so the prose
still renders for any recording (a reader's SQL Server run has no native
sweep, and the other way round).
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from ..shared.spread import ratio_spread, spread
from .spec import KIND_LABELS, KINDS, LATCH, LATCH_SPIN, SQL_UNFAIR_ANALOGUE, VARIANT_LABELS
from .recordings import LatchRecording
from ..shared.memo import per_view


SQL_SERVER_RELEASES = {"13": "2016", "14": "2017", "15": "2019", "16": "2022"}


def product_version(engine: dict) -> str:
    """'2019 CU17' from version '15.0' and build 'CU17 (...)': the name a reader knows, without build notes."""
    version = str(engine.get("version") or "")
    release = SQL_SERVER_RELEASES.get(version.split(".")[0], version)
    build = re.sub(r"\s*\(.*\)", "", str(engine.get("build") or "")).strip()
    return f"{release} {build}".strip()


NAN = float("nan")
# The lock kinds as the prose names them ("the spinning lock").
NAMES = {"fair": "fair", "unfair": "plain unfair", "spin_then_park": "spinning", "eventual": "eventually fair"}
REGIME_WORDS = {False: "article's regime (threads ≤ CPUs)", True: "oversubscribed (shown, not judged)"}


# -- the article's convoy arithmetic ----------------------------------------------------
def convoy(hold_ms: float, arrivals_per_s: float, seconds: float = 1.0) -> dict[str, float]:
    """One exclusive holder, hold time ``hold_ms``: the most it can serve, and how a queue grows beyond that.

    Capacity is 1000 / hold_ms per second; arrivals above it add
    (arrivals - capacity) requests to the queue every second, and the n-th
    request in line waits n * hold_ms before its turn.
    """
    if hold_ms <= 0 or arrivals_per_s < 0 or seconds <= 0:
        raise ValueError(f"convoy: hold_ms={hold_ms}, arrivals_per_s={arrivals_per_s}, seconds={seconds}: "
                         "expected a positive hold time and duration, non-negative arrivals")
    capacity = 1000.0 / hold_ms
    growth = max(0.0, arrivals_per_s - capacity)
    queue = growth * seconds
    return {"capacity_per_s": capacity, "queue_growth_per_s": growth, "queue_after": queue,
            "wait_of_last_ms": queue * hold_ms}


# -- SQL Server recordings (published or measured) --------------------------------------------
def _pick(frame: pd.DataFrame | None, name: str, col: str) -> pd.Series:
    """Median over repetitions of one DMV row's column, per variant (NaN where absent)."""
    if frame is None:
        return pd.Series(dtype=float)
    part = frame[frame["name"] == name]
    return part.groupby(["variant", "repetition"])[col].sum().groupby("variant").median()


def sql_metrics(g: LatchRecording) -> pd.DataFrame:
    """The article's headline counters per variant: one row per (metric, variant)."""
    specs = [
        ("elapsed (s)", None, None, None),
        (f"{LATCH} waits", g.latch, LATCH, "waits"),
        (f"{LATCH} wait time (ms)", g.latch, LATCH, "wait_time_ms"),
        (f"{LATCH} max wait (ms)", g.latch, LATCH, "max_wait_time_ms"),
        (f"{LATCH_SPIN} spins", g.spinlock, LATCH_SPIN, "spins"),
        (f"{LATCH_SPIN} backoffs", g.spinlock, LATCH_SPIN, "backoffs"),
        ("LATCH_EX waits", g.wait, "LATCH_EX", "waits"),
        ("CXPACKET waits", g.wait, "CXPACKET", "waits"),
    ]
    rows = []
    elapsed = g.runs.groupby("variant")["elapsed_s"].median()
    for metric, frame, name, col in specs:
        values = elapsed if frame is None else _pick(frame, name, col)
        for variant in ("fair", "unfair"):
            rows.append({"recording": g.label, "metric": metric, "variant": variant,
                         "setting": VARIANT_LABELS[variant], "value": float(values.get(variant, NAN))})
    return pd.DataFrame(rows)


def sql_table(g: LatchRecording, kind: str) -> pd.DataFrame:
    """One DMV's rows, fair and unfair side by side (median over repetitions)."""
    frame = getattr(g, kind)
    value_cols = [c for c in frame.columns if c not in ("variant", "repetition", "name")
                  and pd.api.types.is_numeric_dtype(frame[c])]
    med = frame.groupby(["variant", "name"], sort=False)[value_cols].median()
    return med.unstack("variant").swaplevel(axis=1).sort_index(axis=1, level=0)


# -- native sweeps --------------------------------------------------------------------
@per_view
def native_summary(g: LatchRecording) -> pd.DataFrame:
    """Per lock kind and thread count: medians over repetitions, per-record rates, and the worst max wait."""
    r = g.runs.copy()
    rec = r["records"].clip(lower=1)
    r["waits_per_record"] = r["waits"] / rec
    r["spins_per_record"] = r["spins"] / rec
    r["backoffs_per_record"] = r["backoffs"] / rec
    r["handoffs_per_record"] = r["handoffs"] / rec
    r["cs_per_record"] = (r["voluntary_cs"] + r["involuntary_cs"]) / rec
    r["voluntary_cs_per_record"] = r["voluntary_cs"] / rec
    r["cpu_ns_per_record"] = r["cpu_s"] * 1e9 / rec
    med_cols = ["records_per_s", "waits_per_record", "spins_per_record", "backoffs_per_record",
                "handoffs_per_record", "cs_per_record", "voluntary_cs_per_record", "cpu_ns_per_record",
                "wait_p50_ns", "wait_p99_ns", "wait_p999_ns", "jain_index", "min_share"]
    grouped = r.groupby(["kind", "threads"], sort=False)
    out = grouped[med_cols].median()
    out["records_per_s_min"] = grouped["records_per_s"].min()
    out["records_per_s_max"] = grouped["records_per_s"].max()
    for col in ("records_per_s", "wait_p99_ns", "waits_per_record", "spins_per_record", "cs_per_record"):
        spreads = grouped[col].apply(spread)  # the interval each figure draws as a band
        out[f"{col}_low"] = spreads.map(lambda x: x.low)
        out[f"{col}_high"] = spreads.map(lambda x: x.high)
    out["wait_max_ns"] = grouped["wait_max_ns"].max()
    out["repetitions"] = grouped.size()
    out = out.reset_index()
    out["setting"] = out["kind"].map(lambda k: KIND_LABELS.get(k, k))
    order = {k: i for i, k in enumerate(KINDS)}
    return out.sort_values(["kind", "threads"], key=lambda s: s.map(order) if s.name == "kind" else s) \
              .reset_index(drop=True)


def throughput_ratios(g: LatchRecording) -> pd.DataFrame:
    """Each barging kind's records/s over the fair lock's, at every thread count, paired by repetition.

    ``oversubscribed`` marks thread counts above the CPU count, where a woken
    fair waiter must also wait for a CPU: the ratio there measures the
    scheduler as much as the lock, and no verdict uses it.
    """
    runs, cpus = g.runs, g.logical_cpus
    rows = []
    kinds = set(runs["kind"])
    for kind in [k for k in KINDS if k != "fair" and k in kinds and "fair" in kinds]:
        for t in sorted(runs["threads"].unique()):
            r = ratio_spread(runs, "records_per_s", kind, "fair", where={"threads": t}, variant="kind")
            rows.append({"kind": kind, "setting": KIND_LABELS.get(kind, kind), "threads": int(t),
                         "oversubscribed": bool(cpus and t > cpus), "ratio": r.median, "low": r.low,
                         "high": r.high, "repetitions": r.n, "text": r.text(",.1f", "×")})
    return pd.DataFrame(rows, columns=["kind", "setting", "threads", "oversubscribed", "ratio", "low", "high",
                                       "repetitions", "text"])


def ratio_table(g: LatchRecording) -> pd.DataFrame:
    """:func:`throughput_ratios` as a page shows it: one row per thread count, one column per barging kind."""
    r = throughput_ratios(g)
    if r.empty:
        return pd.DataFrame({"note": ["this recording has no fair lock and barging lock run side by side"]})
    r = r.assign(regime=r["oversubscribed"].map(REGIME_WORDS))
    wide = r.pivot_table(index=["threads", "regime"], columns="setting", values="text", aggfunc="first")
    wide.columns.name = None
    return wide[[KIND_LABELS[k] for k in KINDS if KIND_LABELS[k] in wide.columns]]


def within_cpus(threads, cpus: int | None) -> int | None:
    """The largest thread count of at least 2 and at most the CPUs: the article's regime (fewer workers than
    schedulers), where no thread waits for a CPU.  Every verdict and every sentence about the article's regime
    is decided there; None when the recording has no such count."""
    fits = [int(t) for t in sorted(threads) if cpus and 2 <= t <= cpus]
    return fits[-1] if fits else None


def oversubscribed_threads(threads, cpus: int | None) -> list[int]:
    """Thread counts above the CPU count: shown and labelled, never deciding a verdict."""
    return [int(t) for t in sorted(threads) if cpus and t > cpus]


def oversubscribed(summary: pd.DataFrame, cpus: int | None) -> list[int]:
    """:func:`oversubscribed_threads` of a summary's thread counts."""
    return oversubscribed_threads(summary["threads"].unique(), cpus)


def _at(summary: pd.DataFrame, kind: str, threads, col: str) -> float:
    if threads is None or (isinstance(threads, float) and np.isnan(threads)):
        return NAN
    row = summary[(summary["kind"] == kind) & (summary["threads"] == threads)]
    return float(row[col].iloc[0]) if len(row) else NAN


def per_record(runs: pd.DataFrame) -> pd.DataFrame:
    """Native runs with the per-record rates the verdicts and the prose compare."""
    rec = runs["records"].clip(lower=1)
    return runs.assign(waits_per_record=runs["waits"] / rec, spins_per_record=runs["spins"] / rec)


# What the article's regime compares: the spinning lock against the fair lock, paired repetition by repetition.
REGIME_QUANTITIES = {  # key -> (column, difference?, format)
    "waits": ("waits_per_record", False, "fraction"),
    "spins": ("spins_per_record", True, ",.2f"),
    "rate": ("records_per_s", False, ",.1f"),
    "wait_max": ("wait_max_ns", False, ".2f"),
    "wait_p99": ("wait_p99_ns", False, "sig"),
}


def p99_text(runs: pd.DataFrame, kind: str, threads) -> str:
    """One lock's 99th-percentile wait at ``threads``: the median over repetitions with its interval, in µs."""
    ns = runs[(runs["kind"] == kind) & (runs["threads"] == threads)]["wait_p99_ns"]
    s = spread(ns.tolist())
    if s.n and s.median < 1e3:  # under a microsecond: in ns, as a reader says 88 ns, not 0.088 µs
        return s.text(",.0f", " ns")
    if s.n and s.median >= 1e6:  # a millisecond or more
        return spread((ns / 1e6).tolist()).text("sig", " ms")
    return spread((ns / 1e3).tolist()).text("sig", " µs")


def regime(g: LatchRecording) -> dict[str, Any]:
    """The point every verdict about the article's regime uses, and what is missing for it.

    ``threads``: the largest count from 2 to the CPUs (None if none); ``missing``: words naming the point a
    verdict needs and the recording lacks ("" when it has it); ``spreads``: the spinning lock over the fair
    lock at that point for each of :data:`REGIME_QUANTITIES`; ``texts``: the same as the page prints them."""
    runs, cpus = per_record(g.runs), g.logical_cpus
    t_in = within_cpus(runs["threads"].unique(), cpus)
    kinds = set(runs["kind"])
    u = SQL_UNFAIR_ANALOGUE
    if t_in is None:
        missing = (f"a point from 2 threads to the CPU count ({cpus}), the article's regime; this recording ran "
                   f"{', '.join(map(str, sorted(int(t) for t in runs['threads'].unique())))} "
                   f"thread{'s' if runs['threads'].max() > 1 or runs['threads'].nunique() > 1 else ''}")
    elif not {"fair", u} <= kinds:
        absent = [KIND_LABELS[k] for k in ("fair", u) if k not in kinds]
        missing = f"the {' and the '.join(absent)} lock at {t_in} threads (variants {', '.join(sorted(kinds))} ran)"
    else:
        missing = ""
    spreads, texts = {}, {}
    for key, (col, diff, fmt) in REGIME_QUANTITIES.items():
        s = (ratio_spread(runs, col, u, "fair", where={"threads": t_in}, variant="kind", difference=diff)
             if not missing else spread([]))
        spreads[key] = s
        texts[key] = s.text(fmt, "" if diff or fmt == "fraction" else "×")
    fair = (runs[(runs["kind"] == "fair") & (runs["threads"] == t_in)]["spins_per_record"].median()
            if not missing else NAN)
    texts["fair_spins"] = "0" if fair == 0 else f"{fair:,.2f}"  # the spins difference is measured from this
    for kind, key in (("fair", "fair_p99"), (u, "spin_p99")):  # each lock's own tail, beside their ratio
        texts[key] = p99_text(runs, kind, t_in) if not missing else "not measured"
    return {"threads": t_in, "cpus": cpus, "missing": missing, "spreads": spreads, "texts": texts,
            "over": oversubscribed_threads(runs["threads"].unique(), cpus)}


def _mrate(v: float) -> str:
    return f"{v / 1e6:,.2f} million" if v == v else "not measured"


def _us(ns: float) -> str:
    return "not measured" if ns != ns else (f"{ns / 1e3:,.1f} µs" if ns >= 1e3 else f"{ns:,.0f} ns")


def _ms(v: float) -> str:
    return "not measured" if v != v else (f"{v:.1f} ms" if v >= 1 else f"{v:.2f} ms")


def _sig(v: float) -> str:
    """A small count as significant digits (0.00038, not 0.00), a larger one with two decimals."""
    return "not measured" if v != v else ("0" if v == 0 else f"{v:.2g}" if abs(v) < 0.01 else f"{v:,.2f}")


def machine_sentence(g) -> str:
    """Where the C model ran, from its machine card: the CPUs and, when the card found one, the hypervisor (a
    guest's wake-up includes waking a virtual CPU, which the models price); "" without a card."""
    from ..shared.capacity import card_of

    card, _ = card_of(g) if g is not None and getattr(g, "is_native", False) else (None, "")
    topo = (card or {}).get("topology") or {}
    if not topo:
        return ""
    cpus = topo.get("logical_cpus") or g.logical_cpus or "an unrecorded number of"
    hv = topo.get("hypervisor")
    where = f"a {hv} virtual machine" if hv else "a machine"
    return (f"The C model ran on {where} with {cpus} logical CPUs ({topo.get('cpu_model', 'CPU model not recorded')})"
            + (f", so the wake-up this page measures includes waking a virtual CPU through the {hv} hypervisor: "
               "it need not be what a hand-off costs on the article's laptop." if hv else "."))


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


CONVOY_SHARE = 0.1  # a repetition in which the fair lock ran below a tenth of its median rate at that point convoyed


def convoyed(g: LatchRecording, threads) -> tuple[list[int], int]:
    """(the repetitions in which the fair lock convoyed at ``threads``, how many repetitions it ran there): a convoy
    is a repetition whose rate fell below :data:`CONVOY_SHARE` of the fair lock's median rate at that point."""
    runs = g.runs if g is not None and g.runs is not None else pd.DataFrame()
    if not {"kind", "threads", "records_per_s"} <= set(runs.columns):
        return [], 0
    fair = runs[(runs["kind"] == "fair") & (runs["threads"] == threads)]
    rates = fair["records_per_s"]
    reps = fair["repetition"] if "repetition" in fair else pd.Series(range(len(fair)), index=fair.index)
    return [int(r) for r in reps[rates < CONVOY_SHARE * rates.median()]], len(fair)


def seldom_words(g: LatchRecording, threads, waits: float) -> str:
    """When the fair lock seldom queued at the deciding point (under 1% of its records), what that point can and
    cannot say, in words built from the recording: "the fair lock queued on only 0.09% of its records and a convoy
    formed in 1 of 5 repetitions, so this point barely exercises fairness"; "" when it queued more often."""
    if not (waits == waits and waits < 0.01):
        return ""
    conv, reps = convoyed(g, threads)
    convoy = (f"a convoy formed in {len(conv)} of {reps} repetitions" if conv else
              f"no convoy formed in {reps} repetitions")
    return (f"the fair lock queued on only {waits:.2%} of its records and {convoy}, so this point barely "
            "exercises fairness")


def priced(rate1: float, rate_in: float, waits: float) -> bool:
    """Whether a hand-off's cost can be read from a point: enough acquisitions queued (1% or more) and a rate
    below the lone thread's (the extra time per record is what the queued acquisitions cost)."""
    return rate1 == rate1 and rate_in == rate_in and waits >= 0.01 and rate_in < rate1


def native_numbers(g: LatchRecording | None) -> dict[str, Any]:
    """The measured section's numbers and sentences; every one from the point it describes."""
    keys: dict[str, Any] = {}
    s = native_summary(g) if g is not None and g.is_native else None
    params = g.recording.parameters if g is not None else {}
    threads = sorted(int(t) for t in s["threads"].unique()) if s is not None else []
    keys["m_cpus"] = g.logical_cpus if g is not None and g.logical_cpus else NAN
    keys["m_threads_list"] = ", ".join(map(str, threads)) if threads else "none"
    duration_ms = params.get("duration_ms", params.get("duration_s", NAN) * 1000)  # older runs: duration_ms
    keys["m_duration_ms"] = duration_ms if s is not None else NAN
    for k in ("repetitions", "record_bytes", "fair_after_us", "spin_us"):
        keys[f"m_{k}"] = params.get(k, NAN) if s is not None else NAN
    if s is None:
        none = "(This recording holds no native sweep.)"
        keys.update({"m_in_threads": NAN, "m_regime_sentence": none, "m_alone_sentence": "",
                     "m_fair_sentence": "", "m_half_sentence": "", "m_barging_sentence": "",
                     "m_over_sentence": "", "m_tail_sentence": "", "m_over_tail_sentence": "",
                     "m_share_sentence": "", "m_eventual_sentence": "", "m_conclusion_sentence": none,
                     "m_lone_max_ms": NAN})
        return keys
    reg = regime(g)
    t_in, cpus, over = reg["threads"], reg["cpus"], reg["over"]
    keys["m_in_threads"] = t_in if t_in is not None else NAN
    at = lambda kind, col, t=t_in: _at(s, kind, t, col)  # noqa: E731
    kinds = [k for k in KINDS if k in set(s["kind"])]
    # -- which points decide
    if t_in is None:
        keys["m_regime_sentence"] = (f"This recording has no thread count from 2 to the machine's {cpus} CPUs, the "
                                     "article's regime, so the verdicts below are not testable with it.")
    else:
        keys["m_regime_sentence"] = (
            f"Everything said below about the article's regime is measured at {t_in} threads on {cpus} CPUs: the "
            "largest thread count no higher than the CPU count, as the article ran fewer workers than schedulers. "
            + (f"The points at {_names(list(map(str, over)))} threads are oversubscribed (more threads than CPUs, so a "
               "woken waiter waits for a CPU as well as for the lock). They are shown and labelled as such, and "
               "decide no verdict." if over else ""))
    # -- a lone thread, then the fair lock in the article's regime
    t1 = threads[0] if threads and threads[0] == 1 else None
    rate1 = at("fair", "records_per_s", t1) if t1 else NAN
    keys["m_alone_sentence"] = (f"Alone, a thread appended about {_mrate(rate1)} records per second, about "
                                f"{1e9 / rate1:,.0f} ns per record including the work outside the lock."
                                if rate1 == rate1 else "This recording has no single-thread point of the fair lock.")
    rate_in = at("fair", "records_per_s")
    if t_in is not None and rate_in == rate_in:
        rec_ns = 1e9 / rate_in
        waits, cs = at("fair", "waits_per_record"), at("fair", "cs_per_record")
        seldom = seldom_words(g, t_in, waits) if waits > 0 else ""
        queued = f"{waits:.0%}" if waits >= 0.01 else ("none" if waits == 0 else f"{waits:.2%}")
        text = (f"At {t_in} threads the fair lock managed {_mrate(rate_in)} records per second, so each record took "
                f"{_us(rec_ns)}. " + (f"At that point {seldom}: it counted {_sig(cs)} context switches per record, "
                                      "too few hand-offs to price one." if seldom
                                      else f"At that point {queued} of its acquisitions queued and it counted "
                                           f"{_sig(cs)} context switches per record."))
        if priced(rate1, rate_in, waits):
            extra_ns = rec_ns - 1e9 / rate1
            per_handoff = extra_ns / waits
            text += (f" The {_us(extra_ns)} per record above a lone thread's, spread over {waits:.2f} queued "
                     f"acquisitions per record, is about {_us(per_handoff)} per queued acquisition: what a fair "
                     f"hand-off costs here, waking the next owner and switching to it, about "
                     f"{per_handoff * rate1 / 1e9:,.0f} times a lone thread's whole time per record. This is the "
                     "convoy arithmetic with the wake-up added to the hold time.")
        elif rate1 == rate1 and not seldom:
            text += (" Too few acquisitions queued, or the rate fell too little, to price a fair hand-off from this "
                     "point.")
        keys["m_fair_sentence"] = text
    else:
        keys["m_fair_sentence"] = ("The fair lock was not measured in the article's regime in this recording."
                                   if t_in is not None else "")
    fair = s[s["kind"] == "fair"].set_index("threads")["records_per_s"]
    if rate1 == rate1 and len(fair):
        half = [int(t) for t in fair.index if fair[t] < rate1 / 2]
        if half:
            h = half[0]
            keys["m_half_sentence"] = (f"Its rate first fell below half the single-thread rate at {h} threads"
                                       f"{' (oversubscribed)' if h in over else ''}, where it appended "
                                       f"{_mrate(fair[h])} records per second, {_us(1e9 / fair[h])} per record.")
        else:
            keys["m_half_sentence"] = "Its rate never fell below half the single-thread rate in this recording."
    else:
        keys["m_half_sentence"] = ""
    # -- the barging locks in the article's regime
    if t_in is not None and rate_in == rate_in:
        parts = []
        for kind in ("unfair", "spin_then_park", "eventual"):
            if kind not in kinds:
                continue
            r = ratio_spread(g.runs, "records_per_s", kind, "fair", where={"threads": t_in},
                             variant="kind")
            part = (f"The {NAMES[kind]} lock reached {_mrate(at(kind, 'records_per_s'))} records per second, "
                    f"{at(kind, 'records_per_s') / rate_in:.2f}× the fair lock's median (median of the "
                    f"per-repetition ratios: {r.text(',.1f', '×')}).")
            if kind == SQL_UNFAIR_ANALOGUE and not reg["missing"]:
                part += (f" It queued {reg['texts']['waits']} as often per record as the fair lock and spun "
                         f"{at(kind, 'spins_per_record'):,.2f} times per record.")
            if kind == "unfair" and "fair" in kinds:
                q = ratio_spread(per_record(g.runs), "waits_per_record", "unfair", "fair", where={"threads": t_in},
                                 variant="kind")
                if q.n and q.median == q.median:
                    part += (f" Without the spin it queued {q.text('sig', '×')} as often per record as the fair lock"
                             + (": barging alone, where a thread that finds the lock held sleeps at once, did not "
                                "cut the waits." if q.median > 1 else "."))
            parts.append(part)
        keys["m_barging_sentence"] = (f"The barging locks kept the lock busy at {t_in} threads. {' '.join(parts)}"
                                      if parts else
                                      "No barging lock was run in this recording.")
    else:
        keys["m_barging_sentence"] = ""
    # -- oversubscribed points: shown, labelled, deciding nothing
    if over and "fair" in kinds:
        tmax = over[-1]
        r_over = [ratio_spread(per_record(g.runs), "records_per_s", SQL_UNFAIR_ANALOGUE, "fair",
                               where={"threads": t}, variant="kind").median for t in over]
        r_over = [x for x in r_over if x == x]
        keys["m_over_sentence"] = (
            f"Oversubscribed, and so outside the article's regime: at {tmax} threads on {cpus} CPUs the fair lock "
            f"appended {_mrate(at('fair', 'records_per_s', tmax))} records per second, and "
            f"{at('fair', 'waits_per_record', tmax):.0%} of its acquisitions queued."
            + (f" The spinning lock did {min(r_over):,.0f}× to {max(r_over):,.0f}× the fair lock's work at "
               f"{_names(list(map(str, over)))} threads (medians of paired ratios); there every fair hand-off also "
               "waits for the scheduler to run the woken thread, so these ratios measure the scheduler as much as "
               "the lock." if r_over else ""))
    else:
        keys["m_over_sentence"] = ""
    # -- the latency tail, in the article's regime first
    keys["m_lone_max_ms"] = lone_max_ms(s)
    if t_in is not None and "fair" in kinds:
        p99 = "; ".join(f"{NAMES[k]} {_us(at(k, 'wait_p99_ns'))}" for k in kinds)
        mx = "; ".join(f"{NAMES[k]} {_ms(at(k, 'wait_max_ns') / 1e6)}" for k in kinds)
        tail = (f"At {t_in} threads the 99th percentile wait was: {p99}. The longest single wait (worst repetition) "
                f"was: {mx}.")
        worse = [NAMES[k] for k in kinds if k != "fair" and at(k, "wait_max_ns") > at("fair", "wait_max_ns")]
        tail += (f" The longest wait of the {_names(worse)} lock{'s' if len(worse) > 1 else ''} exceeded the fair "
                 "lock's: a thread that keeps losing the race, or is descheduled while it waits, can wait longer than "
                 "it would in a queue." if worse else " No barging lock's longest wait exceeded the fair lock's.")
        if keys["m_lone_max_ms"] == keys["m_lone_max_ms"]:
            tail += (f" For scale: a lone thread, which never waits for anyone, once took {_ms(keys['m_lone_max_ms'])} "
                     "from asking for the lock to holding it. That much is the operating system preempting it, not "
                     "the lock.")
        keys["m_tail_sentence"] = tail
    else:
        keys["m_tail_sentence"] = ""
    if over and "fair" in kinds:
        tmax = over[-1]
        keys["m_over_tail_sentence"] = (
            f"Oversubscribed (shown, not judged): at {tmax} threads the longest waits were "
            + "; ".join(f"{NAMES[k]} {_ms(at(k, 'wait_max_ns', tmax) / 1e6)}" for k in kinds)
            + ". There a waiter can spend most of its wait waiting for a CPU, not for the lock.")
    else:
        keys["m_over_tail_sentence"] = ""
    if t_in is not None and {"fair", SQL_UNFAIR_ANALOGUE} <= set(kinds):
        f_share, u_share = at("fair", "min_share"), at(SQL_UNFAIR_ANALOGUE, "min_share")
        keys["m_share_sentence"] = (
            f"At {t_in} threads the least lucky thread won {f_share:.0%} of the average share of records under the "
            f"fair lock and {u_share:.0%} under the spinning one"
            + (", so the spinning lock was the less even." if u_share < f_share else "."))
    else:
        keys["m_share_sentence"] = ""
    bound_ms = keys["m_fair_after_us"] / 1000 if isinstance(keys["m_fair_after_us"], (int, float)) else NAN
    e_max = at("eventual", "wait_max_ns") / 1e6
    if t_in is None or "eventual" not in kinds or not bound_ms > 0 or e_max != e_max:
        keys["m_eventual_sentence"] = ""
    elif e_max > 2 * bound_ms:
        keys["m_eventual_sentence"] = (
            f"At {t_in} threads its longest wait was {_ms(e_max)}, {e_max / bound_ms:,.0f} times its bound of "
            f"{bound_ms * 1000:.0f} µs; the rest was time when the waiter, or the thread holding the lock, was not "
            "running (preempted by other work on the machine).")
    else:
        keys["m_eventual_sentence"] = (f"At {t_in} threads its longest wait, {_ms(e_max)}, stayed within twice its "
                                       f"bound of {bound_ms * 1000:.0f} µs.")
    # -- the conclusion, in the article's regime
    if reg["missing"]:
        keys["m_conclusion_sentence"] = (f"This recording cannot weigh the two sides in the article's regime: it "
                                         f"lacks {reg['missing']}.")
    else:
        m = reg["spreads"]["wait_p99"]
        tx = reg["texts"]
        from .claims import tail_longer_words

        longer = tail_longer_words(g, t_in)
        tail = ("The spinning lock's tail was reliably shorter." if m.lies_below(1) else
                "The fair queue kept the tail reliably shorter." if m.lies_above(1) else
                "Neither lock's tail was reliably shorter by the rule (the interval straddles 1).")
        if longer:
            tail += (" The spinning lock's 99th-percentile wait was "
                     + longer.replace("longer in", "longer than the fair lock's in", 1) + ".")
        floor = preemption_floor(s, t_in)
        longest = (f" The longest single waits, on the details page, measure preemption here: a lone thread, which "
                   f"waits for no one, was held up for {_ms(floor[0])}." if floor else
                   " The longest single waits are on the details page.")
        keys["m_conclusion_sentence"] = (
            f"On this machine, at {t_in} threads on {cpus} CPUs, barging with a spin gave {tx['rate']} the fair "
            f"lock's throughput, and its 99th-percentile wait was {tx['wait_p99']} the fair lock's: "
            f"{tx['spin_p99']} against {tx['fair_p99']}, medians over the repetitions with their intervals (for "
            f"a ratio, the median of the per-repetition ratios). {tail}"
            + longest)
    return keys


def lone_max_ms(summary: pd.DataFrame) -> float:
    """The longest 'wait' of a lone thread (any kind): it never waits for the lock, so this is preemption noise."""
    one = summary[summary["threads"] == 1]
    return float(one["wait_max_ns"].max()) / 1e6 if len(one) else NAN


def preemption_floor(summary: pd.DataFrame, threads) -> tuple[float, float] | None:
    """(a lone thread's longest wait, the shorter of the two locks' longest waits at ``threads``), in ms, when the
    first is at least half the second: the longest wait then measures preemption on this machine, not the lock, and
    is not judged (claims) nor weighed (the conclusion).  None otherwise."""
    lone = lone_max_ms(summary)
    at = summary[(summary["threads"] == threads) & summary["kind"].isin(["fair", SQL_UNFAIR_ANALOGUE])]
    if lone != lone or at.empty:
        return None
    shortest = float(at["wait_max_ns"].min()) / 1e6
    return (lone, shortest) if lone >= 0.5 * shortest else None


def published_numbers(p: LatchRecording) -> dict[str, Any]:
    m = sql_metrics(p).set_index(["metric", "variant"])["value"]

    def v(metric, variant):
        return float(m.get((metric, variant), NAN))

    rows = int(p.runs["operations"].max())
    keys: dict[str, Any] = {
        "pub_rows": rows, "pub_maxdop": int(p.runs["sessions"].max()),
        "pub_logical_cpus": p.recording.host.get("logical_cpus"), "pub_cores": p.recording.host.get("cores"),
        "pub_version": product_version(p.recording.engine),
        "pub_fair_s": v("elapsed (s)", "fair"), "pub_unfair_s": v("elapsed (s)", "unfair"),
    }
    for variant in ("fair", "unfair"):
        keys[f"pub_{variant}_latch_waits"] = v(f"{LATCH} waits", variant)
        keys[f"pub_{variant}_latch_wait_ms"] = v(f"{LATCH} wait time (ms)", variant)
        keys[f"pub_{variant}_latch_max_ms"] = v(f"{LATCH} max wait (ms)", variant)
        keys[f"pub_{variant}_spins"] = v(f"{LATCH_SPIN} spins", variant)
        keys[f"pub_{variant}_backoffs"] = v(f"{LATCH_SPIN} backoffs", variant)
        keys[f"pub_{variant}_latch_ex_waits"] = v("LATCH_EX waits", variant)
        keys[f"pub_{variant}_cxpacket_waits"] = v("CXPACKET waits", variant)
    spin = p.spinlock[(p.spinlock["variant"] == "unfair") & (p.spinlock["name"] == LATCH_SPIN)]
    keys["pub_unfair_collisions"] = float(spin["collisions"].sum())
    keys["pub_unfair_spins_per_collision"] = keys["pub_unfair_spins"] / keys["pub_unfair_collisions"]
    keys["pub_speedup_x"] = keys["pub_fair_s"] / keys["pub_unfair_s"]
    keys["pub_latch_wait_drop_x"] = keys["pub_fair_latch_waits"] / keys["pub_unfair_latch_waits"]
    keys["pub_fair_waits_per_1000_rows"] = keys["pub_fair_latch_waits"] / rows * 1000
    keys["pub_unfair_spins_per_row"] = keys["pub_unfair_spins"] / rows
    keys["pub_fair_wait_s_per_worker"] = keys["pub_fair_latch_wait_ms"] / 1000 / keys["pub_maxdop"]
    keys["pub_fair_wait_share"] = keys["pub_fair_wait_s_per_worker"] / keys["pub_fair_s"]
    keys["pub_fair_avg_wait_us"] = keys["pub_fair_latch_wait_ms"] / keys["pub_fair_latch_waits"] * 1000
    keys["pub_cxpacket_x"] = keys["pub_unfair_cxpacket_waits"] / keys["pub_fair_cxpacket_waits"]
    c = convoy(2.0, 600.0)
    keys["convoy_hold_ms"] = 2.0
    keys["convoy_capacity"] = c["capacity_per_s"]
    keys["convoy_arrivals"] = 600.0
    keys["convoy_growth"] = c["queue_growth_per_s"]
    keys["convoy_last_wait_ms"] = c["wait_of_last_ms"]
    return keys


def measured_note(measured: LatchRecording) -> str:
    """Which points of the recording decide, in words built from it (the SQL Server case says what it holds)."""
    if measured.is_native:
        return "*" + native_numbers(measured)["m_regime_sentence"] + "*"
    return ("*This recording is a SQL Server run; it holds no native sweep, so the native figures below are empty. "
            "Its DMV deltas appear in the comparison with the article above and in the verdicts.*")


RUNS_TABLE_COLUMNS = {"records_per_s": "records/s (millions)", "waits_per_record": "queued acquisitions per record",
                      "spins_per_record": "spins per record", "cs_per_record": "context switches per record",
                      "wait_p99_ns": "99th percentile wait (µs)", "wait_max_ns": "longest wait (ms)",
                      "jain_index": "Jain's fairness index"}


def runs_table(g: LatchRecording) -> pd.DataFrame:
    """Medians per lock kind and thread count, with human column names and each point's regime."""
    if not g.is_native:
        return g.runs
    s = native_summary(g)
    over = set(oversubscribed(s, g.logical_cpus))
    out = s.assign(records_per_s=s["records_per_s"] / 1e6, wait_p99_ns=s["wait_p99_ns"] / 1e3,
                   wait_max_ns=s["wait_max_ns"] / 1e6,
                   regime=[REGIME_WORDS[int(t) in over] for t in s["threads"]])
    out["threads"] = out["threads"].astype(int)
    out = out[["setting", "threads", "regime", *RUNS_TABLE_COLUMNS]].rename(columns=RUNS_TABLE_COLUMNS)
    return out.round(4).set_index(["setting", "threads", "regime"])


__all__ = ["ratio_table", "throughput_ratios", "convoy", "sql_metrics", "sql_table", "native_summary", "key_numbers",
           "measured_note", "oversubscribed", "runs_table", "lone_max_ms", "regime", "within_cpus", "per_record"]
