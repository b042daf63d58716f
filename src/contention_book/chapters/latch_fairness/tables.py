"""Tables and glued numbers from recordings of this chapter (verdicts: claims.py).

Every number the chapter's prose quotes comes from :func:`key_numbers`; none
is typed by hand.  Keys that a recording cannot supply are NaN, so the prose
still renders for any recording (a reader's SQL Server run has no native
sweep, and the other way round).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..shared.spread import ratio_spread, spread
from .spec import KIND_LABELS, KINDS, LATCH, LATCH_SPIN, SQL_UNFAIR_ANALOGUE, VARIANT_LABELS
from .recordings import LatchRecording

NAN = float("nan")


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
    scheduler as much as the lock.
    """
    runs, cpus = g.runs, g.logical_cpus
    rows = []
    for kind in [k for k in KINDS if k != "fair" and k in set(runs["kind"])]:
        for t in sorted(runs["threads"].unique()):
            r = ratio_spread(runs, "records_per_s", kind, "fair", where={"threads": t}, variant="kind")
            rows.append({"kind": kind, "setting": KIND_LABELS.get(kind, kind), "threads": int(t),
                         "oversubscribed": bool(cpus and t > cpus), "ratio": r.median, "low": r.low,
                         "high": r.high, "repetitions": r.n, "text": r.text(",.1f", "×")})
    return pd.DataFrame(rows)


def ratio_table(g: LatchRecording) -> pd.DataFrame:
    """:func:`throughput_ratios` as a page shows it: one row per thread count, one column per barging kind."""
    r = throughput_ratios(g)
    wide = r.pivot_table(index=["threads", "oversubscribed"], columns="setting", values="text", aggfunc="first")
    return wide[[KIND_LABELS[k] for k in KINDS if KIND_LABELS[k] in wide.columns]]


def within_cpus(threads, cpus: int | None) -> int | None:
    """The largest thread count of at least 2 and at most the CPUs: the article's regime (fewer workers than
    schedulers), where no thread waits for a CPU."""
    fits = [int(t) for t in sorted(threads) if cpus and 2 <= t <= cpus]
    return fits[-1] if fits else None


def oversubscribed(summary: pd.DataFrame, cpus: int | None) -> list[int]:
    """Thread counts above the CPU count (the convoy regime); the largest count if there are none."""
    threads = sorted(summary["threads"].unique())
    above = [t for t in threads if cpus and t > cpus]
    return above or threads[-1:]


def _at(summary: pd.DataFrame, kind: str, threads: int, col: str) -> float:
    row = summary[(summary["kind"] == kind) & (summary["threads"] == threads)]
    return float(row[col].iloc[0]) if len(row) else NAN


def native_numbers(g: LatchRecording | None) -> dict[str, Any]:
    keys: dict[str, Any] = {}
    s = native_summary(g) if g is not None and g.is_native else None
    threads = sorted(s["threads"].unique()) if s is not None else []
    tmax = threads[-1] if threads else NAN
    params = g.recording.parameters if g is not None else {}
    keys["m_cpus"] = g.logical_cpus if g is not None and g.logical_cpus else NAN
    keys["m_threads_max"] = int(tmax) if threads else NAN
    keys["m_threads_list"] = ", ".join(map(str, threads)) if threads else "none"
    duration_ms = params.get("duration_ms", params.get("duration_s", NAN) * 1000)  # older runs: duration_ms
    keys["m_duration_ms"] = duration_ms if s is not None else NAN
    keys["m_repetitions"] = params.get("repetitions", NAN) if s is not None else NAN
    keys["m_record_bytes"] = params.get("record_bytes", NAN) if s is not None else NAN
    keys["m_fair_after_us"] = params.get("fair_after_us", NAN) if s is not None else NAN
    keys["m_spin_us"] = params.get("spin_us", NAN) if s is not None else NAN
    tmin = threads[0] if threads else NAN
    for kind in KINDS:
        get = (lambda t, c: _at(s, kind, t, c)) if s is not None else (lambda t, c: NAN)
        keys[f"m_{kind}_rate_1"] = get(tmin, "records_per_s") / 1e6
        keys[f"m_{kind}_rate_max"] = get(tmax, "records_per_s") / 1e6
        keys[f"m_{kind}_waits_per_record_max"] = get(tmax, "waits_per_record")
        keys[f"m_{kind}_spins_per_record_max"] = get(tmax, "spins_per_record")
        keys[f"m_{kind}_cs_per_record_max"] = get(tmax, "cs_per_record")
        keys[f"m_{kind}_vcs_per_record_max"] = get(tmax, "voluntary_cs_per_record")
        keys[f"m_{kind}_p99_us_max"] = get(tmax, "wait_p99_ns") / 1e3
        keys[f"m_{kind}_max_ms_max"] = get(tmax, "wait_max_ns") / 1e6
        keys[f"m_{kind}_jain_max"] = get(tmax, "jain_index")
        keys[f"m_{kind}_min_share_max"] = get(tmax, "min_share")
    keys["m_fair_collapse_x"] = keys["m_fair_rate_1"] / keys["m_fair_rate_max"]
    keys["m_unfair_vs_fair_max_x"] = keys["m_unfair_rate_max"] / keys["m_fair_rate_max"]
    keys["m_stp_vs_fair_max_x"] = keys["m_spin_then_park_rate_max"] / keys["m_fair_rate_max"]
    keys["m_eventual_vs_fair_max_x"] = keys["m_eventual_rate_max"] / keys["m_fair_rate_max"]
    # The convoy arithmetic on this machine: per-record time alone, and what a fair hand-off adds to it.
    keys["m_record_ns_1"] = 1e3 / keys["m_fair_rate_1"]
    keys["m_fair_record_us_max"] = 1.0 / keys["m_fair_rate_max"]
    keys["m_handoff_us"] = keys["m_fair_record_us_max"] - keys["m_record_ns_1"] / 1e3
    keys["m_handoff_x_work"] = keys["m_handoff_us"] * 1e3 / keys["m_record_ns_1"]
    if s is not None:
        fair = s[s["kind"] == "fair"].set_index("threads")["records_per_s"]
        half = [t for t in fair.index if fair[t] < fair.iloc[0] / 2]
        keys["m_fair_half_threads"] = int(half[0]) if half else NAN
    else:
        keys["m_fair_half_threads"] = NAN
    keys["m_lone_max_ms"] = lone_max_ms(s) if s is not None else NAN
    keys.update(ratio_numbers(g if s is not None else None))
    keys.update(native_sentences(s, keys, g.logical_cpus if g is not None else None))
    return keys


def ratio_numbers(g: LatchRecording | None) -> dict[str, Any]:
    """The spinning lock's throughput over the fair lock's, with spreads, inside and beyond the CPU count."""
    if g is None:
        return {"m_within_threads": NAN, "m_stp_vs_fair_within_text": "not measured",
                "m_stp_vs_fair_max_text": "not measured", "m_ratio_sentence": ""}
    r = throughput_ratios(g)
    r = r[r["kind"] == SQL_UNFAIR_ANALOGUE].set_index("threads")
    t_in, t_max = within_cpus(r.index, g.logical_cpus), int(r.index.max())
    inside = r.loc[t_in, "text"] if t_in is not None else "not measured (no thread count from 2 to the CPU count)"
    over = r[r["oversubscribed"]]
    sentence = ""
    if t_in is not None and len(over):
        sentence = (f"Where the ratio comes from matters. At {t_in} threads on {g.logical_cpus} CPUs, no more threads "
                    f"than CPUs as in the article, the spinning lock did {inside} the fair lock's work. Above the CPU "
                    f"count ({', '.join(map(str, over.index))} threads) the ratio was {over['text'].iloc[0]} to "
                    f"{over['text'].iloc[-1]}: there every fair hand-off also waits for the scheduler to run the "
                    "woken thread, so the oversubscribed machine, not the lock alone, makes the larger numbers. The "
                    "table below gives the ratio at every thread count.")
    return {"m_within_threads": t_in if t_in is not None else NAN, "m_stp_vs_fair_within_text": inside,
            "m_stp_vs_fair_max_text": r.loc[t_max, "text"], "m_ratio_sentence": sentence}


def lone_max_ms(summary: pd.DataFrame) -> float:
    """The longest 'wait' of a lone thread (any kind): it never waits for the lock, so this is preemption noise."""
    one = summary[summary["threads"] == 1]
    return float(one["wait_max_ns"].max()) / 1e6 if len(one) else NAN


def _ms(v: float) -> str:
    return f"{v:.1f} ms" if v >= 1 else f"{v:.2f} ms"


def native_sentences(s: pd.DataFrame | None, k: dict[str, Any], cpus: int | None) -> dict[str, str]:
    """Sentences whose direction depends on the recording, so the prose stays true for any re-recording."""
    none = "(This recording holds no native sweep.)"
    if s is None:
        return {"m_tail_sentence": none, "m_share_sentence": "", "m_eventual_sentence": "", "m_conclusion_sentence": none}
    t = k["m_threads_max"]
    fair_max = k["m_fair_max_ms_max"]
    worse = [label for kind, label in (("unfair", "plain unfair"), ("spin_then_park", "spinning"),
                                       ("eventual", "eventually fair")) if k[f"m_{kind}_max_ms_max"] > fair_max]
    if worse:
        names = worse[0] if len(worse) == 1 else ", ".join(worse[:-1]) + " and " + worse[-1]
        tail = (f"At {t} threads the longest wait of the {names} lock{'s' if len(worse) > 1 else ''} "
                "exceeded the fair lock's. That is the price of unfairness: a thread that keeps losing the race, or "
                "that is descheduled while it waits, can wait longer than it would in a queue.")
    else:
        tail = (f"At {t} threads no barging lock's longest wait exceeded the fair lock's, so this recording shows no "
                "price of unfairness in the worst case.")
    if not np.isnan(k["m_lone_max_ms"]):
        tail += (f" For scale: a lone thread, which never waits for anyone, once took {_ms(k['m_lone_max_ms'])} from "
                 "asking for the lock to holding it. That much is the operating system preempting it, not the lock.")
    f_share, u_share = k["m_fair_min_share_max"], k["m_spin_then_park_min_share_max"]
    share = (f"The share of records won by the least lucky thread {'points the same way' if u_share < f_share else 'does not'}: "
             f"at {t} threads it was {f_share:.0%} of the average under the fair lock and {u_share:.0%} under the "
             "spinning one.")
    bound_ms = k["m_fair_after_us"] / 1000 if isinstance(k["m_fair_after_us"], (int, float)) else NAN
    e_max = k["m_eventual_max_ms_max"]
    if np.isnan(bound_ms) or np.isnan(e_max) or bound_ms <= 0:
        eventual = ""
    elif e_max > 2 * bound_ms:
        eventual = (f"At {t} threads its longest wait was {_ms(e_max)}, {e_max / bound_ms:,.0f} times its bound of "
                    f"{bound_ms * 1000:.0f} µs; the rest was time when the waiter, or the thread holding the lock, was waiting "
                    "for a CPU.")
    else:
        eventual = f"At {t} threads its longest wait, {_ms(e_max)}, stayed within twice its bound of {bound_ms * 1000:.0f} µs."
    over = oversubscribed(s, cpus)
    ratios = [_at(s, SQL_UNFAIR_ANALOGUE, n, "records_per_s") / _at(s, "fair", n, "records_per_s") for n in over]
    u_max = _at(s, SQL_UNFAIR_ANALOGUE, t, "wait_max_ns") / 1e6
    t_in = k.get("m_within_threads", NAN)
    if isinstance(t_in, (int, np.integer)) or (isinstance(t_in, float) and not np.isnan(t_in)):
        # the article's regime first (no more threads than CPUs), then what oversubscription adds
        speed = (f"barging with a spin gave {k['m_stp_vs_fair_within_text']} the fair lock's throughput at "
                 f"{int(t_in)} threads, within the CPU count as in the article")
        if over and min(ratios) > 1:
            speed += (f"; the larger ratios at {', '.join(map(str, over))} threads (in the table of ratios above) "
                      "measure the oversubscribed scheduler as much as the lock")
        elif over:
            speed += (f"; above the CPU count ({', '.join(map(str, over))} threads) it was not always more "
                      f"({min(ratios):,.2f}× to {max(ratios):,.2f}×, ratios of medians)")
    elif ratios:
        speed = (f"barging with a spin gave {min(ratios):,.1f}× to {max(ratios):,.1f}× the fair lock's throughput at "
                 f"{', '.join(map(str, over))} threads, all above the CPU count"
                 + ("" if min(ratios) > 1 else ", not always more"))
    else:
        speed = "no thread count compares the two locks"
    bound = ("the fair queue kept the longest wait shorter" if fair_max < u_max else
             "the fair queue did not keep the longest wait shorter")
    conclusion = (f"On this machine {speed}, and {bound} ({_ms(fair_max)} against {_ms(u_max)} at {t} threads).")
    return {"m_tail_sentence": tail, "m_share_sentence": share, "m_eventual_sentence": eventual,
            "m_conclusion_sentence": conclusion}


def published_numbers(p: LatchRecording) -> dict[str, Any]:
    m = sql_metrics(p).set_index(["metric", "variant"])["value"]

    def v(metric, variant):
        return float(m.get((metric, variant), NAN))

    rows = int(p.runs["operations"].max())
    keys: dict[str, Any] = {
        "pub_rows": rows, "pub_maxdop": int(p.runs["sessions"].max()),
        "pub_logical_cpus": p.recording.host.get("logical_cpus"), "pub_cores": p.recording.host.get("cores"),
        "pub_version": f"{p.recording.engine['version']} {p.recording.engine.get('build') or ''}".strip(),
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


def key_numbers(shown) -> dict[str, Any]:
    """Every number the prose glues."""
    published, measured = shown.published, shown.measured
    nums = published_numbers(published)
    nums.update(native_numbers(measured if measured.is_native else None))
    nums["m_label"] = measured.label
    return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in nums.items()}


def measured_note(measured: LatchRecording) -> str:
    """What kind of recording the 'measured here' section shows, in words built from it."""
    if measured.is_native:
        cpus = measured.logical_cpus
        s = native_summary(measured)
        over = oversubscribed(s, cpus)
        text = (f"*This recording is a native sweep on {cpus} logical CPUs. At thread counts above {cpus} "
                f"({', '.join(map(str, over))}) there are more threads wanting the lock than CPUs to run them, so a "
                "woken waiter must wait for a CPU as well as for the lock.")
        at = [t for t in s["threads"].unique() if cpus and 2 <= t <= cpus]
        if at and cpus and over[0] > cpus:
            w_at, w_over = _at(s, "fair", max(at), "waits_per_record"), _at(s, "fair", over[0], "waits_per_record")
            text += (f" Under the fair lock {w_at:.0%} of acquisitions waited at {max(at)} threads and {w_over:.0%} "
                     f"at {over[0]}")
            text += (": here a full convoy, where nearly every acquisition waits, needed more threads than CPUs."
                     if w_at < 0.9 <= w_over else ".")
        return text + "*"
    return ("*This recording is a SQL Server run; it holds no native sweep, so the native figures below are empty "
            "and the native numbers read `nan`. Its DMV deltas appear in the comparison with the article above and "
            "in the verdicts.*")


def runs_table(g: LatchRecording) -> pd.DataFrame:
    if g.is_native:
        s = native_summary(g)
        return s.assign(**{"records/s (M)": s["records_per_s"] / 1e6, "p99 wait (µs)": s["wait_p99_ns"] / 1e3,
                           "max wait (ms)": s["wait_max_ns"] / 1e6})[
            ["setting", "threads", "records/s (M)", "waits_per_record", "spins_per_record", "cs_per_record",
             "p99 wait (µs)", "max wait (ms)", "jain_index"]].round(4).set_index(["setting", "threads"])
    return g.runs


__all__ = ["ratio_table", "throughput_ratios", "convoy", "sql_metrics", "sql_table", "native_summary", "key_numbers",
           "measured_note", "oversubscribed", "runs_table", "lone_max_ms", "native_sentences"]
