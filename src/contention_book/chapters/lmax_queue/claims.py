"""The article's and the LMAX paper's claims against the recordings shown: rows of data, each with its rule.

Measured verdicts come from ratios paired by repetition (variants ran
interleaved) and :func:`shared.claims.above`; a claim about two measured
quantities agrees only when both of its rules agree.
"""
from __future__ import annotations

import math

import pandas as pd

from ..shared.claims import Claim, above, rule_above, table
from ..shared.spread import ratio_spread, spread
from .spec import SPINLOCKS_FIRST
from .tables import finding, key_numbers

LEAD, FALSE_SHARING, ATOMIC, HOT, DURABILITY, CEILING, V2 = 1.5, 1.5, 5.0, 0.9, 1.2, 10.0, 1.5
KNEE_MIN_CPUS = 8  # with fewer logical CPUs "half of them" is one or two sessions: no knee to find
C = {
    "ring_1p": "A pre-allocated ring beats a locked queue in process (1 producer, 1 consumer)",
    "ring_np": "The ring keeps its lead with several producers",
    "false_sharing": "Counters in one cache line slow each other down although nothing is shared (false sharing)",
    "atomic": "A contended atomic costs far more than a private increment",
    "no_growth": "A ring of fixed slots updated in place does not grow; an insert/delete queue leaves dead rows",
    "delayed": "Taking durability off the commit path helps the ring (delayed durability)",
    "non_durable": "A non-durable table helps the ring beyond that (SCHEMA_ONLY; here UNLOGGED)",
    "v1_knee": "v1 (interpreted loop) stops scaling at about half the logical CPUs",
    "v2": "v2 (slot taken inside the native push) nearly doubles v1",
    "v3": "v3 (whole loop native) pushes 200,000 msgs/s on one thread",
    "spinlock": "Latch-free is not spinlock-free: the last bottleneck is CMED_HASH_SET (metadata cache)",
    "ceiling": "Every database queue stays far below the in-process ceiling",
}
RULES = {
    C["ring_1p"]: rule_above(LEAD, "the native ring's rate over the locked queue's at 1 producer"),
    C["ring_np"]: rule_above(LEAD, "the native ring's rate over the locked queue's at the most producers"),
    C["false_sharing"]: rule_above(FALSE_SHARING, "adjacent counters' ns per increment over padded ones'"),
    C["atomic"]: rule_above(ATOMIC, "a shared atomic increment's ns over a private one's"),
    C["no_growth"]: (f"agrees when, at the most sessions, the ring's HOT share lies above {HOT:g} and the naive "
                     "queue's dead tuples over the ring's (at least 1) lie above 1, both as intervals over "
                     f"repetitions; differs when either lies on the other side; otherwise inconclusive"),
    C["delayed"]: rule_above(DURABILITY, "the ring's push rate with asynchronous commits over the same ring's "
                                         "with commits that wait for the WAL flush, at the most sessions,"),
    C["non_durable"]: rule_above(DURABILITY, "the UNLOGGED ring's push rate over the logged ring's, both with "
                                             "asynchronous commits, at the most sessions,"),
    C["v1_knee"]: (f"SQL Server recordings whose sessions reach the logical CPUs, with at least {KNEE_MIN_CPUS}: "
                   "agrees when v1's median rate peaks at between a quarter and three quarters of the logical "
                   "CPUs and, in at least 3 repetitions, the most sessions run stay below 1.05 x that peak; "
                   "differs otherwise; not testable on fewer CPUs or a shorter sweep"),
    C["v2"]: rule_above(V2, "v2's best rate over v1's (SQL Server recordings only)"),
    C["v3"]: "not decided here: one-thread rates depend on the reader's CPU",
    C["spinlock"]: "agrees when v2's most-spun spinlock at the most sessions is one the article names; differs "
                   "when it is another",
    C["ceiling"]: rule_above(CEILING, "each native ring repetition's rate at 1 producer over the database's best "
                                      "median delivered rate (messages its consumers took off)"),
}
DATABASE_CLAIMS = {C[k] for k in ("no_growth", "delayed", "non_durable", "v1_knee", "v2", "v3", "spinlock",
                                  "ceiling")}


def both(*verdicts: str) -> str:
    """A claim made of several tests: differs if any differs, agrees if all agree, else the first doubt."""
    heads = [v.split(":")[0] for v in verdicts]
    if "differs" in heads:
        return "differs"
    if all(h == "agrees" for h in heads):
        return "agrees"
    return next(v for v in verdicts if not v.startswith("agrees"))


def _at_most_sessions(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["sessions"] == frame["sessions"].max()] if len(frame) else frame


def growth_verdict(db) -> tuple[str, str]:
    """The ring's HOT share and the naive queue's dead tuples over the ring's, per repetition at the most
    sessions: (what was measured, verdict)."""
    rel = db.by_repetition("relation")
    if rel is None or rel.empty:
        return "no table statistics in this recording", "not testable here: no table statistics"
    rel = rel.assign(repetition=rel["repetition"] if "repetition" in rel else 0)
    rel = _at_most_sessions(rel)
    upd = rel["n_tup_upd"].astype(float)
    rel = rel.assign(hot_share=(rel["n_tup_hot_upd"].astype(float) / upd).where(upd > 0))
    ring = rel[rel["variant"] == "ring"].set_index("repetition")
    naive = rel[rel["variant"] == "naive"].set_index("repetition")
    if ring.empty or naive.empty:
        return "needs the ring and the naive queue", "not testable here: a design is missing"
    hot = spread(ring["hot_share"])
    dead = spread((naive["dead_tuples"] / ring["dead_tuples"].clip(lower=1)).dropna())
    text = (f"ring: HOT share {hot.text('.1%')}, at most {ring['table_bytes'].max() / 2**20:.1f} MB; naive queue: "
            f"{spread(naive['dead_tuples']).text(',.0f')} dead tuples, {dead.text(',.0f', '×')} the ring's")
    return text, both(above(hot, HOT), above(dead, 1.0))


def knee_verdict(db) -> tuple[str, str]:
    """Where v1 stops scaling, against the article's 'about half the logical CPUs' (measured text, verdict)."""
    cpus = int(db.recording.host.get("logical_cpus") or 0) if db.recording.host else 0
    v1 = db.runs[db.runs["variant"] == "imoltp_v1"]
    if v1.empty:
        return "v1 not in this recording", "not testable here: v1 not run"
    most = int(v1["sessions"].max())
    if cpus < KNEE_MIN_CPUS or most < cpus:
        return (f"sessions up to {most} on {cpus or 'unknown'} logical CPUs",
                f"not testable here: needs {KNEE_MIN_CPUS}+ CPUs and sessions up to their number")
    medians = v1.groupby("sessions")["throughput"].median()
    peak_n, peak = int(medians.idxmax()), float(medians.max())
    last = v1[v1["sessions"] == most].set_index("repetition")["throughput"] / peak
    flat = spread(last)
    where = peak_n / cpus
    text = (f"v1's median rate peaks at {peak_n} sessions ({where:.0%} of {cpus} logical CPUs); at {most} "
            f"sessions {flat.text('.2f', '×')} that peak")
    if flat.n < 3:
        return text, f"inconclusive: {flat.n} repetitions, the rule needs 3"
    return text, "agrees" if 0.25 <= where <= 0.75 and flat.high < 1.05 else "differs"


def verdicts(shown) -> pd.DataFrame:
    """The article's and the paper's claims against the recordings shown, each with its rule."""
    native, db = shown.native, shown.db
    n = key_numbers(shown)
    rows = []

    def add(key: str, published: str, measured: str, verdict: str) -> None:
        claim = C[key]
        rows.append(Claim(claim=claim, published=published, recording=db.id if claim in DATABASE_CLAIMS
                          else native.id, measured=measured, rule=RULES[claim], verdict=verdict))

    nat = native.runs
    maxp = int(nat["sessions"].max())
    s = ratio_spread(nat, "throughput", "ring", "locked", where={"sessions": 1})
    add("ring_1p", f"Disruptor {n['lmax_1p1c_x']:.1f}x ArrayBlockingQueue",
        f"ring {s.text('.1f', '×')} the mutex + condvar queue ({n['nat_label']})", above(s, LEAD))
    s = ratio_spread(nat, "throughput", "ring", "locked", where={"sessions": maxp})
    add("ring_np", f"3 producers: {n['lmax_3p1c_x']:.1f}x",
        f"{maxp} producers on {n['nat_cpus']} CPUs: {s.text('.1f', '×')}", above(s, LEAD))
    fs = native.false_sharing
    s = ratio_spread(fs, "ns_per_increment", "adjacent", "padded", variant="layout")
    add("false_sharing", "the paper pads cursors to 64-byte lines for this reason",
        f"adjacent {n['fs_adjacent_ns']:.2f} ns vs padded {n['fs_padded_ns']:.2f} ns per increment "
        f"({s.text('.1f', '×')})", above(s, FALSE_SHARING))
    s = ratio_spread(fs, "ns_per_increment", "shared_atomic", "single", variant="layout")
    add("atomic", f"{n['lmax_inc_single_ns']:.1f} ns alone vs {n['lmax_inc_cas2_ns']:.0f} ns for 2 threads with CAS",
        f"{n['fs_single_ns']:.2f} ns alone vs {n['fs_shared_atomic_ns']:.1f} ns shared ({s.text(',.0f', '×')})",
        above(s, ATOMIC))
    if db.engine == "postgres":
        runs, most = db.runs, int(db.runs["sessions"].max())
        measured, verdict = growth_verdict(db)
        add("no_growth", "naive INSERT + DELETE ... OUTPUT queue: a last-page problem storm", measured, verdict)
        s = ratio_spread(runs, "throughput", "ring", "ring_durable", where={"sessions": most})
        add("delayed", "WRITELOG was the first bottleneck; delayed durability removed it",
            f"asynchronous commits {s.text('.2f', '×')} the ring whose commits wait, at {most} producers"
            if s.n else "this recording has no ring_durable run", above(s, DURABILITY) if s.n else
            "not testable here: no ring with synchronous commits in this recording")
        s = ratio_spread(runs, "throughput", "ring_unlogged", "ring", where={"sessions": most})
        add("non_durable", "not printed in the article (its non-durable variants are part of the In-Memory OLTP "
                           "sequence)", f"UNLOGGED {s.text('.2f', '×')} the logged ring at {most} producers, both "
            "with asynchronous commits", above(s, DURABILITY))
    sql = db.engine == "sqlserver"
    knee = f"{n['pub_knee_threads']:.0f} threads of {n['pub_logical_cpus']} logical CPUs"
    add("v1_knee", f"knee at {knee}", *(knee_verdict(db) if sql else
                                        ("needs a SQL Server recording with many cores",
                                         "not testable here: needs SQL Server")))
    said = finding(shown.adkin, "speedup", "imoltp_v2")
    v2_published = said["statement"] if said is not None else "not printed in the article"
    if sql:
        best = db.runs.groupby(["variant", "repetition"], as_index=False)["throughput"].max()
        s = ratio_spread(best, "throughput", "imoltp_v2", "imoltp_v1")
        add("v2", v2_published, f"v2's best {s.text('.2f', '×')} v1's", above(s, V2))
    else:
        add("v2", v2_published, "needs a SQL Server recording", "not testable here: needs SQL Server")
    add("v3", f"{n['pub_v3_msgs']:,.0f} msgs/s", "needs a SQL Server recording" if not sql else
        f"{n['db_imoltp_v3_1']:,.0f} msgs/s", "not testable here: one-thread rates depend on the CPU")
    spin, spin_verdict = "needs a SQL Server recording with spinlock deltas", "not testable here: needs SQL Server"
    if sql and db.spinlocks is not None:
        s = db.spinlocks[db.spinlocks["variant"] == "imoltp_v2"]
        if len(s):
            top = _at_most_sessions(s).sort_values("spins", ascending=False).iloc[0]
            spin = f"most spins in v2: {top['name']}"
            spin_verdict = "agrees" if top["name"] in SPINLOCKS_FIRST else "differs"
    add("spinlock", "CMED_HASH_SET, after LOGCACHE_ACCESS", spin, spin_verdict)
    ring_1p = nat.loc[(nat["variant"] == "ring") & (nat["sessions"] == 1), "throughput"]
    best = n["db_best_delivered"]
    s = spread(ring_1p / best) if best and not math.isnan(best) else spread([])
    add("ceiling", f"Disruptor {n['lmax_1p1c_disruptor']:,.0f}/s vs v3 {n['pub_v3_msgs']:,.0f}/s "
                   f"({n['pub_ceiling_x']:.0f}x)",
        f"native ring {n['nat_ring_1p']:,.0f}/s vs the best database design, {n['db_best_delivered_design']}, "
        f"{best:,.0f}/s delivered at {n['db_best_delivered_n']:.0f} sessions ({s.text(',.0f', '×')})",
        above(s, CEILING))
    return table(rows)

