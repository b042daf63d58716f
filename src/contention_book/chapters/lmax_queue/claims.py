"""The article's and the LMAX paper's claims against the recordings shown: rows of data, each with its rule.

Measured directions come from ratios paired by repetition (variants ran
interleaved) and :func:`ratio_above`, whose rule :func:`rule_above` words: an
interval that contains 1 is inconclusive, and only one wholly at or below 1
differs; :func:`shared.claims.judge` adds the size half.  No size here is compared: the sources ran Java on a
dedicated server and SQL Server on 40 logical CPUs, this book C models and a
PostgreSQL analogue on a small machine, so every row says why not.

One regime decides: threads no more than the logical CPUs, as the sources
ran.  Database points count producers and consumers (one each per session),
the native ring its producers and its one consumer.  Points beyond that are
shown on the page, labelled oversubscribed, and decide nothing.
"""
from __future__ import annotations

import math
import re
from types import SimpleNamespace

import pandas as pd

from ..shared.claims import Claim, Size, above, both, judge, missing_point, rule_above, table, tested_on
from ..shared.spread import ratio_spread, spread
from .spec import SPINLOCKS_FIRST
from .tables import ONE_COUNTER, ONE_THREAD_ATOMIC, PER_COUNTER, counter_costs, finding, key_numbers, regime_sessions
from ..shared.memo import per_view

def near(s, fmt: str, *thresholds: float, unit: str = "×") -> str:
    """``s.text(fmt, unit)`` with as many more decimals (up to three more) as it takes for no end of the interval,
    nor the median, to print as a threshold it is not: 1.51 is shown as 1.51, not 1.5, beside a threshold of 1.5,
    so a pass does not look as if it touched the threshold."""
    m = re.fullmatch(r"(,?)\.(\d+)f", fmt)
    if not m or not s.n:
        return s.text(fmt, unit)
    comma, digits = m.group(1), int(m.group(2))
    for extra in range(4):
        f = f"{comma}.{digits + extra}f"
        if all(f"{v:{f}}" != f"{t:{f}}" or v == t for v in (s.median, s.low, s.high) for t in thresholds):
            return s.text(f, unit)
    return s.text(f, unit)


def ratio_above(s, threshold: float) -> str:
    """The direction of a claim that a ratio of two variants exceeds ``threshold``: the book's shared rule
    (:func:`shared.claims.above`), in which an interval that contains 1 is inconclusive, not *differs*."""
    return above(s, threshold)


LEAD, FALSE_SHARING, ATOMIC, HOT, DURABILITY, CEILING, V2 = 1.5, 1.5, 5.0, 0.9, 1.2, 10.0, 1.5
KNEE_MIN_CPUS = 8  # with fewer logical CPUs "half of them" is one or two sessions: no knee to find
C = {
    "ring_1p": "A pre-allocated ring beats a locked queue in process (1 producer, 1 consumer)",
    "ring_np": "The ring keeps its lead with several producers",
    "false_sharing": "Counters in one cache line slow each other down although nothing is shared (false sharing)",
    "atomic": "A contended atomic add costs far more than the same atomic add on one thread",
    "no_growth": ("A ring of fixed slots updated in place does not grow; an insert/delete queue leaves dead rows "
                  "(the book's own check: the article has none)"),
    "delayed": "Taking durability off the commit path helps the ring (delayed durability)",
    "non_durable": "A non-durable table helps the ring beyond that (SCHEMA_ONLY; here UNLOGGED)",
    "v1_knee": "v1 (interpreted loop) falls away from linear scaling at 23 threads",
    "v2": "v2 (slot taken inside the native push) nearly doubles v1",
    "v3": "v3 (whole loop native, one transaction) pushes 200,000 msgs/s on one thread",
    "spinlock": "Latch-free is not spinlock-free: the article suspects CMED_HASH_SET (metadata cache) last",
    "ceiling": "Every database queue stays far below the in-process ceiling",
}
RULES = {
    C["ring_1p"]: rule_above(LEAD, "ring / locked queue rate, 1 producer"),
    C["ring_np"]: rule_above(LEAD, "ring / locked rate, most producers that fit"),
    C["false_sharing"]: rule_above(FALSE_SHARING, "adjacent / padded ns per increment"),
    C["atomic"]: rule_above(ATOMIC, "two threads' atomic / one thread's atomic, ns per counter increment"),
    C["no_growth"]: (f"holds when the ring's HOT share lies above {HOT:g} and the naive queue's dead rows at the end, "
                     "in the repetitions no autovacuum reached, above 0, over repetitions; differs when either lies "
                     "on the other side"),
    C["delayed"]: rule_above(DURABILITY, "delivered rate, async / sync commits, within the CPUs"),
    C["non_durable"]: rule_above(DURABILITY, "delivered rate, UNLOGGED / logged, within the CPUs"),
    C["v1_knee"]: (f"SQL Server, {KNEE_MIN_CPUS}+ logical CPUs swept: holds when v1's median rate peaks at a "
                   "quarter to three quarters of them and stays below 1.05× that peak beyond"),
    C["v2"]: rule_above(V2, "v2's best rate / v1's (SQL Server only)"),
    C["v3"]: "not decided here: one-thread rates depend on the reader's CPU",
    C["spinlock"]: "holds when v2's most-spun spinlock at the most sessions is one the article names; differs "
                   "when it is another",
    C["ceiling"]: rule_above(CEILING, "native ring / best database delivered rate, within the CPUs"),
}
DATABASE_CLAIMS = {C[k] for k in ("no_growth", "delayed", "non_durable", "v1_knee", "v2", "v3", "spinlock",
                                  "ceiling")}
NOT_SAME_PLATFORM = {
    "native": "a C model on this machine against the paper's Java on its own dedicated server",
    "postgres": "a PostgreSQL analogue on this machine; the article ran In-Memory OLTP on {cpus} logical CPUs",
    "sqlserver": "the article printed no number for this",
}


def where(view) -> str:
    """tested_on() with the recording's logical CPU count (host block, or the native programs' own count)."""
    host = view.recording.host or {}
    cpus = host.get("logical_cpus")
    if view.engine == "native" and "cpus" in view.runs and len(view.runs):
        cpus = int(view.runs["cpus"].iloc[0])
    return tested_on(SimpleNamespace(engine=view.engine, logical_cpus=cpus, recording=view.recording))


def growth_verdict(db, n: int | None) -> tuple[str, str]:
    """The ring's HOT share and the naive queue's dead rows at the end (repetitions no autovacuum reached), per
    repetition at ``n`` sessions, with the rows it deleted (``n_tup_del``) and its size, which holds the unread
    backlog too: (what was measured, direction)."""
    rel = db.by_repetition("relation")
    if rel is None or rel.empty:
        return "no table statistics in this recording", missing_point("no table statistics")
    if n is None:
        return "no point within the CPUs", missing_point("a point whose sessions fit the logical CPUs")
    rel = rel.assign(repetition=rel["repetition"] if "repetition" in rel else 0)
    rel = rel[rel["sessions"] == n]
    if "relation" not in rel:
        rel = rel.assign(relation=rel["variant"].map(lambda v: "lmax_ring" if v.startswith("ring") else "lmax_queue"))
    # the ring's HOT share is its slots'; its dead tuples and size count its two cursor rows as well
    cols = [c for c in ("dead_tuples", "table_bytes", "n_tup_del", "autovacuum_count", "live_tuples") if c in rel]
    per_rep = rel.groupby(["variant", "repetition"], as_index=False)[cols].sum()
    main = rel[rel["relation"].isin(("lmax_ring", "lmax_queue"))]
    upd = main["n_tup_upd"].astype(float)
    main = main.assign(hot_share=(main["n_tup_hot_upd"].astype(float) / upd).where(upd > 0))
    ring = main[main["variant"] == "ring"].set_index("repetition")[["hot_share"]].join(
        per_rep[per_rep["variant"] == "ring"].set_index("repetition")[cols])
    naive = per_rep[per_rep["variant"] == "naive"].set_index("repetition")
    if ring.empty or naive.empty:
        missing = " and ".join(v for v, f in (("the ring", ring), ("the naive queue", naive)) if f.empty)
        return f"needs {missing} at {n} session{'s' if n != 1 else ''}", missing_point(
            f"{missing} at {n} session{'s' if n != 1 else ''}")
    hot = spread(ring["hot_share"])
    # judged on the dead rows the queue table held at the end, in the repetitions no autovacuum reached (one
    # that did cleared them): not on its size, which counts the unread backlog (live rows) as well, and not per
    # live row, where the ring's ten thousand preallocated slots weigh on the other side
    vacuumed = naive["autovacuum_count"] > 0 if "autovacuum_count" in naive else pd.Series(False, index=naive.index)
    dead = spread(naive.loc[~vacuumed, "dead_tuples"].astype(float))
    deleted = (f"deleted {spread(naive['n_tup_del']).text(',.0f')} rows, each a dead row until vacuum; "
               if "n_tup_del" in naive else "")
    live = (f"; its {spread(naive['live_tuples'].astype(float)).text(',.0f')} live rows, the unread backlog, are "
            "in its size too" if "live_tuples" in naive else "")
    text = (f"at {n} session{'s' if n != 1 else ''}: ring HOT share {hot.text('.1%')}, at most "
            f"{ring['table_bytes'].max() / 2**20:.1f} MB with its cursors; naive queue {deleted}"
            f"{dead.text(',.0f')} dead rows at the end in the {int((~vacuumed).sum())} of {len(naive)} repetitions "
            f"no autovacuum reached; table and indexes {spread(naive['table_bytes'] / 2**20).text(',.1f')} MB{live}")
    return text, both(above(hot, HOT), above(dead, 0.5))  # fewer than one dead row: none


def knee_verdict(db) -> tuple[str, str]:
    """Where v1 stops scaling, against the article's knee (23 threads on 40 logical CPUs, 20 cores, where it says
    v1 does not scale well beyond half the logical processors): measured text, direction."""
    cpus = int(db.recording.host.get("logical_cpus") or 0) if db.recording.host else 0
    v1 = db.runs[db.runs["variant"] == "imoltp_v1"]
    if v1.empty:
        return "v1 not in this recording", missing_point("v1 (imoltp_v1) at any session count")
    most = int(v1["sessions"].max())
    if cpus < KNEE_MIN_CPUS or most < cpus:
        return (f"sessions up to {most} on {cpus or 'unknown'} logical CPUs",
                f"not testable here: needs {KNEE_MIN_CPUS}+ CPUs and sessions up to their number")
    medians = v1.groupby("sessions")["throughput"].median()
    peak_n, peak = int(medians.idxmax()), float(medians.max())
    last = v1[v1["sessions"] == most].set_index("repetition")["throughput"] / peak
    flat = spread(last)
    at = peak_n / cpus
    text = (f"v1's median rate peaks at {peak_n} sessions ({at:.0%} of {cpus} logical CPUs); at {most} "
            f"sessions {flat.text('.2f', '×')} that peak")
    if flat.n < 3:
        return text, f"inconclusive: {flat.n} repetitions, the rule needs 3"
    return text, "agrees" if 0.25 <= at <= 0.75 and flat.high < 1.05 else "differs"


def _sessions(n: int) -> str:
    return f"{n} session{'s' if n != 1 else ''}"


def split_verdict_text(shown) -> str:
    """One sentence for the main page under the claims table, when the ring's 1-producer repetitions split into a
    slow and a fast group (:func:`tables.split_sentence`, told on the details page): row 1's interval counts the
    slow repetitions, and whether the verdict's threshold is still cleared with them in.  "" without a split."""
    from .tables import SPLIT

    nat = shown.native.runs
    part = nat[(nat["variant"] == "ring") & (nat["sessions"] == 1)]
    s = ratio_spread(nat, "throughput", "ring", "locked", where={"sessions": 1})
    if len(part) < 3 or not s.n:
        return ""
    rate = part["throughput"].astype(float)
    if rate.min() * SPLIT > rate.max():
        return ""
    slow = int((rate < rate.max() / SPLIT).sum())
    shown_s = near(s, ".1f", LEAD)
    low = shown_s[shown_s.index("(") + 1:shown_s.index("–")]
    if s.low > LEAD:
        end = (f"its low end, {low}, still lies above the rule's {LEAD:g}, so the verdict stands with those "
               "repetitions counted, not by leaving them out.")
    else:
        end = f"its low end, {low}, does not clear the rule's {LEAD:g}, and the verdict says so."
    return (f"Row 1's interval, {shown_s}, includes the {slow} of {len(part)} repetitions of the ring whose hand-off "
            f"between the CPUs ran slow (the details page points to where the host placed the vCPUs); {end}")


@per_view
def verdicts(shown) -> pd.DataFrame:
    """The article's and the paper's claims against the recordings shown, each with its rule."""
    native, db = shown.native, shown.db
    n = key_numbers(shown)
    rows = []
    on = {"native": where(native), "db": where(db)}

    def add(key: str, published: str, measured: str, direction: str, why: str = "", on_what: str = "") -> None:
        claim = C[key]
        view = "db" if claim in DATABASE_CLAIMS else "native"
        size = Size.not_comparable(why or NOT_SAME_PLATFORM.get((db if view == "db" else native).engine,
                                                                "the platforms differ").format(
            cpus=n["pub_logical_cpus"]))
        verdict, size_text = judge(direction, size)
        needs_sql = "needs SQL Server" in verdict
        rows.append(Claim(claim=claim, published=published, recording=(db if view == "db" else native).id,
                          tested_on="not run: needs SQL Server" if needs_sql else on_what or on[view], measured=measured, size=size_text, rule=RULES[claim],
                          verdict=verdict))

    nat = native.runs
    s = ratio_spread(nat, "throughput", "ring", "locked", where={"sessions": 1})
    add("ring_1p", f"Disruptor {n['lmax_1p1c_x']:.1f}× ArrayBlockingQueue",
        f"ring {near(s, '.1f', LEAD)} the mutex + condition-variable queue" if s.n else "no point at 1 producer",
        ratio_above(s, LEAD) if s.n else missing_point("the ring and the locked queue at 1 producer"),
        why="a C ring against a C mutex queue; the paper timed Java's Disruptor and ArrayBlockingQueue on its "
            "own server")
    fit = n["nat_regime_p"]
    if n["nat_cpus"] and not math.isnan(n["nat_cpus"]) and fit < 2:
        ring_np = (f"on {n['nat_cpus']} CPUs only 1 producer fits beside the consumer",
                   "not testable here: several producers and a consumer need 3+ logical CPUs")
    else:
        s = ratio_spread(nat, "throughput", "ring", "locked", where={"sessions": fit})
        ring_np = (f"{fit} producers: {near(s, '.1f', LEAD)}", ratio_above(s, LEAD) if s.n else
                   missing_point(f"the ring and the locked queue at {fit} producers"))
    add("ring_np", f"3 producers: {n['lmax_3p1c_x']:.1f}×", *ring_np)
    fs = counter_costs(native)  # ns per increment of one counter, the shared one's over both threads' increments
    s = ratio_spread(fs, PER_COUNTER, "adjacent", "padded", variant="layout")
    add("false_sharing", "the paper pads cursors to 64-byte lines for this reason, and prints no ratio",
        f"adjacent {n['fs_adjacent_ns']:.2f} ns vs padded {n['fs_padded_ns']:.2f} ns per increment "
        f"({near(s, '.1f', FALSE_SHARING)})", ratio_above(s, FALSE_SHARING), why="the paper printed no false-sharing figure")
    s = ratio_spread(fs, PER_COUNTER, ONE_COUNTER, ONE_THREAD_ATOMIC, variant="layout")
    published = (f"500M increments with CAS: {n['lmax_inc_cas1_ms']:,.0f} ms on one thread vs "
                 f"{n['lmax_inc_cas2_ms']:,.0f} ms on two ({n['lmax_inc_cas1_ns']:.1f} vs {n['lmax_inc_cas2_ns']:.0f} "
                 f"ns per increment of the counter, {n['lmax_inc_cas_x']:.1f}×)")
    if s.n:
        atomic = (f"atomic add: {n['fs_single_atomic_ns']:.2f} ns on one thread vs {n['fs_shared_atomic_ns']:.1f} ns "
                  f"shared by 2 threads, per increment of the counter ({near(s, '.1f', ATOMIC)})",
                  ratio_above(s, ATOMIC))
    else:
        atomic = ("no one-thread atomic run in this recording (recordings before it compared a plain increment)",
                  missing_point("the one-thread atomic (layout single_atomic) beside the shared one"))
    add("atomic", published, *atomic,
        why="nanoseconds of the paper's CPU against this machine's; an atomic add, not a CAS loop" + card_words(native))
    reg = n["db_regime_n"]
    reg = None if reg is None or (isinstance(reg, float) and math.isnan(reg)) else int(reg)
    if db.engine == "postgres":
        runs = db.runs
        measured, direction = growth_verdict(db, reg)
        add("no_growth", "not in the article: it built no insert-and-delete table (its legacy-engine ring of slots "
            "hit PAGELATCH_SH on neighbouring slots, not growth)", measured, direction,
            why="the article printed no table sizes or ghost counts")
        for key, fast, slow, published, words in (
                ("delayed", "ring", "ring_durable", "WRITELOG was the first bottleneck; delayed durability removed it",
                 "asynchronous commits {s} the ring whose commits wait for the WAL flush"),
                ("non_durable", "ring_unlogged", "ring", "not printed in the article (its non-durable variants are "
                 "part of the In-Memory OLTP sequence)", "UNLOGGED {s} the logged ring, both asynchronous")):
            if reg is None:
                add(key, published, "no point whose sessions fit the logical CPUs",
                    missing_point("a point whose producers and consumers fit the logical CPUs"))
                continue
            s = ratio_spread(runs, "dequeue_per_s", fast, slow, where={"sessions": reg})
            add(key, published, (words.format(s=near(s, '.2f', DURABILITY)) + f", delivered, at {_sessions(reg)}") if s.n
                else f"needs {fast} and {slow} at {_sessions(reg)}",
                ratio_above(s, DURABILITY) if s.n else missing_point(f"{fast} and {slow} at {_sessions(reg)}"),
                why="the article printed no rate with and without delayed durability" if key == "delayed" else
                "the article printed no rate for a non-durable table")
    sql = db.engine == "sqlserver"
    knee = (f"{n['pub_knee_threads']:.0f} threads, on {n['pub_logical_cpus']} logical CPUs ({n['pub_cores']} cores, "
            "hyper-threaded)")
    add("v1_knee", f"falls away from the perfect-scaling line at {knee}", *(knee_verdict(db) if sql else
                                        ("needs a SQL Server recording with many cores",
                                         "not testable here: needs SQL Server")),
        why="the knee is where this server's sessions stop scaling; no size to compare")
    said = finding(shown.adkin, "speedup", "imoltp_v2")
    v2_published = said["statement"] if said is not None else "not printed in the article"
    if sql:
        best = db.runs.groupby(["variant", "repetition"], as_index=False)["throughput"].max()
        s = ratio_spread(best, "throughput", "imoltp_v2", "imoltp_v1")
        add("v2", v2_published, f"v2's best {near(s, '.2f', V2)} v1's" if s.n else "needs v1 and v2",
            ratio_above(s, V2) if s.n else missing_point("v1 and v2 (imoltp_v1, imoltp_v2) in the same repetitions"),
            why="the article printed 'nearly doubles' from a graph, not a number")
    else:
        add("v2", v2_published, "needs a SQL Server recording", "not testable here: needs SQL Server")
    add("v3", f"{n['pub_v3_msgs']:,.0f} msgs/s", "needs a SQL Server recording" if not sql else
        f"{n['db_imoltp_v3_1']:,.0f} msgs/s", "not testable here: one-thread rates depend on the CPU",
        on_what="" if sql else "not run: needs SQL Server")
    spin, spin_verdict = "needs a SQL Server recording with spinlock deltas", "not testable here: needs SQL Server"
    if sql and db.spinlocks is not None:
        part = db.spinlocks[db.spinlocks["variant"] == "imoltp_v2"]
        if len(part):
            top = part[part["sessions"] == part["sessions"].max()].sort_values("spins", ascending=False).iloc[0]
            spin = f"most spins in v2: {top['name']}"
            spin_verdict = "agrees" if top["name"] in SPINLOCKS_FIRST else "differs"
    add("spinlock", "LOGCACHE_ACCESS first; then a frame that 'looks like it may well be' CMED_HASH_SET", spin,
        spin_verdict, why="the article's spinlock counts are screenshots without printed values")
    ring_1p = nat.loc[(nat["variant"] == "ring") & (nat["sessions"] == 1), "throughput"]
    best = n["db_best_delivered"]
    s = spread(ring_1p / best) if best and not math.isnan(best) else spread([])
    add("ceiling", f"Disruptor {n['lmax_1p1c_disruptor']:,.0f}/s delivered vs v3 {n['pub_v3_msgs']:,.0f}/s pushed "
                   "with no consumer",
        f"native ring {n['nat_ring_1p']:,.0f}/s vs {n['db_best_delivered_design']}, "
        f"{best:,.0f}/s, both delivered, at {_sessions(int(n['db_best_delivered_n']))} ({near(s, ',.0f', CEILING)}; "
        "not paired: each C repetition over the database design's median, since the two recordings did not run "
        "interleaved)"
        if s.n else "no database design delivered within the CPUs",
        ratio_above(s, CEILING) if s.n else missing_point("a database design's delivered rate within the CPUs"),
        why="the article's ratio sets delivered messages against pushes alone, on other machines",
        on_what=f"{on['native']} and {on['db']}")
    return table(rows)


def card_words(native) -> str:
    """The machine card's private and contended atomic beside the chapter's, the contended one counted the same way
    (wall time over both threads' increments); with its start and end when the placement moved between them.  ""
    without a card."""
    from contention_book.harness import machine_card

    from ..shared.capacity import card_of

    card, _ = card_of(native)
    pooled = machine_card.cost(card, "atomic_contended") if card is not None else None
    if pooled is None:
        return ""
    phases = {k: card.get("phases", {}).get(k, {}).get("costs", {}).get("atomic_contended") for k in ("start", "end")}
    private = machine_card.cost(card, "atomic_private")
    text = (f"; the machine card's atomic took {private.median:.2f} ns alone and {pooled.median:.2f} ns contended"
            if private is not None else f"; the machine card's contended atomic took {pooled.median:.2f} ns")
    if all(phases.values()) and machine_card.placement_moved(card):
        text += (f" ({phases['start']['median']:.2f} ns at its start, {phases['end']['median']:.2f} at its end: "
                 "the placement moved)")
    return text
