"""The article's and the LMAX paper's claims against the recordings shown: rows of data, each with its rule."""
from __future__ import annotations

import math

import pandas as pd

from ..shared.claims import Claim, table
from .spec import SPINLOCKS_FIRST
from .tables import key_numbers

RULES = {
    "A pre-allocated ring beats a locked queue in process (1 producer, 1 consumer)":
        "agrees when the native ring's rate exceeds 1.5 x the locked queue's at 1 producer",
    "The ring keeps its lead with several producers":
        "agrees when the native ring's rate exceeds 1.5 x the locked queue's at the most producers",
    "Counters in one cache line slow each other down although nothing is shared (false sharing)":
        "agrees when adjacent counters cost over 1.5 x padded ones per increment",
    "A contended atomic costs far more than a private increment":
        "agrees when a shared atomic increment costs over 5 x a private one",
    "A ring of fixed slots updated in place does not grow; an insert/delete queue leaves dead rows":
        "agrees when at least 90% of ring updates are HOT and the naive queue's dead tuples exceed the ring's",
    "Taking durability off the commit path helps the ring (delayed durability / non-durable tables)":
        "agrees when the UNLOGGED ring's best rate exceeds 1.2 x the logged ring's; not testable at 1 push per call",
    "v1 (interpreted loop) stops scaling at about half the logical CPUs":
        "not decided here: the knee needs a SQL Server recording with many cores",
    "v2 (slot taken inside the native push) nearly doubles v1":
        "agrees when v2's best rate exceeds 1.5 x v1's (SQL Server recordings only)",
    "v3 (whole loop native) pushes 200,000 msgs/s on one thread":
        "not decided here: one-thread rates depend on the reader's CPU",
    "Latch-free is not spinlock-free: the last bottleneck is CMED_HASH_SET (metadata cache)":
        "agrees when v2's most-spun spinlock at the most sessions is one the article names",
    "Every database queue stays far below the in-process ceiling":
        "agrees when the native ring's rate exceeds 10 x the best database queue's",
}
DATABASE_CLAIMS = {c for c in RULES if not c.startswith(("A pre-allocated", "The ring keeps", "Counters in one",
                                                          "A contended atomic"))}


def verdicts(shown) -> pd.DataFrame:
    """The article's and the paper's claims against the recordings shown, each with its rule."""
    native, db = shown.native, shown.db
    n = key_numbers(shown)
    rows = []

    def verdict(claim, published, measured, agree):
        where = db.id if claim in DATABASE_CLAIMS else native.id
        rows.append(Claim(claim=claim, published=published, recording=where, measured=measured, rule=RULES[claim],
                          verdict="not testable here" if agree is None else ("agrees" if agree else "differs")))

    def ok(x):
        return x is not None and not (isinstance(x, float) and math.isnan(x))

    verdict("A pre-allocated ring beats a locked queue in process (1 producer, 1 consumer)",
            f"Disruptor {n['lmax_1p1c_x']:.1f}x ArrayBlockingQueue",
            f"ring {n['nat_ring_1p_x']:.1f}x the mutex + condvar queue ({n['nat_label']})",
            bool(n["nat_ring_1p_x"] > 1.5) if ok(n["nat_ring_1p_x"]) else None)
    verdict("The ring keeps its lead with several producers",
            f"3 producers: {n['lmax_3p1c_x']:.1f}x",
            f"{n['nat_maxp']} producers on {n['nat_cpus']} CPUs: {n['nat_ring_maxp_x']:.1f}x",
            bool(n["nat_ring_maxp_x"] > 1.5) if ok(n["nat_ring_maxp_x"]) else None)
    verdict("Counters in one cache line slow each other down although nothing is shared (false sharing)",
            "the paper pads cursors to 64-byte lines for this reason",
            f"adjacent {n['fs_adjacent_ns']:.2f} ns vs padded {n['fs_padded_ns']:.2f} ns per increment "
            f"({n['fs_adjacent_x']:.1f}x)",
            bool(n["fs_adjacent_x"] > 1.5) if ok(n["fs_adjacent_x"]) else None)
    verdict("A contended atomic costs far more than a private increment",
            f"{n['lmax_inc_single_ns']:.1f} ns alone vs {n['lmax_inc_cas2_ns']:.0f} ns for 2 threads with CAS",
            f"{n['fs_single_ns']:.2f} ns alone vs {n['fs_shared_atomic_ns']:.1f} ns shared ({n['fs_shared_x']:.0f}x)",
            bool(n["fs_shared_x"] > 5) if ok(n["fs_shared_x"]) else None)
    if db.engine == "postgres":
        verdict("A ring of fixed slots updated in place does not grow; an insert/delete queue leaves dead rows",
                "naive INSERT + DELETE ... OUTPUT queue: a last-page problem storm",
                f"ring: at most {n['db_ring_mb_max']:.1f} MB, at least {n['db_ring_hot_min']:.1%} of updates HOT; naive "
                f"queue: up to {n['db_naive_dead_max']:,.0f} dead tuples",
                bool(n["db_ring_hot_min"] > 0.9 and n["db_naive_dead_max"] > n["db_ring_dead_max"])
                if ok(n["db_ring_hot_min"]) and ok(n["db_naive_dead_max"]) else None)
        verdict("Taking durability off the commit path helps the ring (delayed durability / non-durable tables)",
                "WRITELOG was the first bottleneck; delayed durability removed it",
                f"UNLOGGED ring {n['db_unlogged_x']:.2f}x the logged one at best (both with synchronous_commit off)"
                + ("; one client round trip per message bounds both rings, so this recording cannot show it"
                   if n["db_pushes_per_call"] == 1 else f"; {n['db_pushes_per_call']} messages per call"),
                None if n["db_pushes_per_call"] == 1 or not ok(n["db_unlogged_x"]) else bool(n["db_unlogged_x"] > 1.2))
    sql = db.engine == "sqlserver"
    knee = f"{n['pub_knee_threads']:.0f} threads of {n['pub_logical_cpus']} logical CPUs"
    verdict("v1 (interpreted loop) stops scaling at about half the logical CPUs", f"knee at {knee}",
            "needs a SQL Server recording with many cores" if not sql else
            f"v1 best {n['db_imoltp_v1_best']:,.0f}/s at {n['db_imoltp_v1_best_n']:.0f} sessions", None)
    verdict("v2 (slot taken inside the native push) nearly doubles v1", "nearly 2x (graph)",
            "needs a SQL Server recording" if not sql else f"{n['db_imoltp_v2_best'] / n['db_imoltp_v1_best']:.2f}x",
            None if not sql or not ok(n["db_imoltp_v1_best"]) else
            bool(n["db_imoltp_v2_best"] / n["db_imoltp_v1_best"] > 1.5))
    verdict("v3 (whole loop native) pushes 200,000 msgs/s on one thread",
            f"{n['pub_v3_msgs']:,.0f} msgs/s", "needs a SQL Server recording" if not sql else
            f"{n['db_imoltp_v3_1']:,.0f} msgs/s", None)
    spin = "needs a SQL Server recording with spinlock deltas"
    spin_agree = None
    if sql and db.spinlocks is not None:
        s = db.spinlocks[db.spinlocks["variant"] == "imoltp_v2"]
        if len(s):
            top = s[s["sessions"] == s["sessions"].max()].sort_values("spins", ascending=False).iloc[0]
            spin, spin_agree = f"most spins in v2: {top['name']}", bool(top["name"] in SPINLOCKS_FIRST)
    verdict("Latch-free is not spinlock-free: the last bottleneck is CMED_HASH_SET (metadata cache)",
            "CMED_HASH_SET, after LOGCACHE_ACCESS", spin, spin_agree)
    verdict("Every database queue stays far below the in-process ceiling",
            f"Disruptor {n['lmax_1p1c_disruptor']:,.0f}/s vs v3 {n['pub_v3_msgs']:,.0f}/s ({n['pub_ceiling_x']:.0f}x)",
            f"native ring {n['nat_ring_1p']:,.0f}/s vs best database queue {n['db_best_any']:,.0f}/s "
            f"({n['ceiling_x']:,.0f}x)", bool(n["ceiling_x"] > 10) if ok(n["ceiling_x"]) else None)
    return table(rows)
