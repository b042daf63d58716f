"""The sources' claims against the measured recording: rows of data, each with its rule.

Each measured quantity is computed on every repetition on its own (ratios
inside one repetition, where the variants ran side by side) and decided by
its interval over repetitions (:mod:`shared.claims`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..shared.claims import Claim, Size, both, above, below, head, judge, missing_point, table, tested_on
from ..shared.spread import Spread, spread
from .tables import (QUOTED, RIGHT_EDGE_HOPS, cores_text, deciding, hot_wait, leaf_wait, measured_numbers,
                     per_repetition, pin_index_counts, pins_per_repetition, published_numbers, q_text, quoted,
                     sessions_label, share_words)
from ..shared.memo import per_view

C = {
    "queue": "Concurrent inserts with an ever-increasing key queue on the last page's latch",
    "last_page": "The waited-for page is the last page of the clustered index",
    "hash_rate": "Hash partitioning raises the insert rate",
    "hash_waits": "With hash partitioning the page-latch waits go away",
    "elimination": "Without partition elimination a point lookup must search every partition",
    "splits": "A non-sequential key avoids the hot page but pays in page splits",
    "optimized": "OPTIMIZE_FOR_SEQUENTIAL_KEY keeps throughput up under a convoy (SQL Server 2019+)",
}
AT = "at the most sessions no higher than the CPUs"
# the 32-core lab's gain is the one published case with a stated core count and a rate
LAB_FACTOR, LAB_MIN_CPUS = 2.0, 16
# the smallest gain the sources print (the customer case's +15%): if the whole queue on the sequential key's latch
# were removed, the rate could rise at most 1/(1 − its share of samples); below this the claim has no room to show
SMALLEST_GAIN = 1.15
RULES = {
    C["queue"]: (f"{AT}, the hot latch's share (of samples; SQL Server: of time) lies above 2%, above the "
                 "non-sequential key's at the same point (where it ran) and above its "
                 "1-session share, as intervals over repetitions; not testable when client-bound"),
    C["last_page"]: (f"{AT}, the share of index-page samples on the last page (PostgreSQL: pins within "
                     f"{RIGHT_EDGE_HOPS} leaves of the right edge) lies above 0.2 and above 5× the non-sequential "
                     "key's (where it ran), as intervals over repetitions; on PostgreSQL the row says whether the "
                     "rule is met but does not apply it, because buffer pins are not waits"),
    C["hash_rate"]: (f"{AT}, the hash-partitioned over the sequential rate lies above 1.05; size compared within "
                     f"{LAB_FACTOR:g}× of the 32-core lab's gain on SQL Server with {LAB_MIN_CPUS}+ CPUs; not "
                     "testable when removing the sequential key's whole queue at its last leaf could not reach the "
                     f"sources' smallest gain (1/(1 − share) below {SMALLEST_GAIN:g}×, the share being the hot "
                     "latch's less the non-sequential key's where it ran, since that key shares everything but the "
                     "leaf); that check comes first and overrides the 1.05 threshold"),
    C["hash_waits"]: (f"{AT}, the hash-partitioned over the sequential hot-latch share lies below 0.5; weaker "
                      "between 0.5 and 1; differs at 1 or more; not testable when the sequential key had 2% or less"),
    C["elimination"]: ("pages read (SQL Server: partitions touched) by a lookup without elimination over with it lies "
                       "above 1; on SQL Server the size is compared too: the ratio lies within 1.5× of the partition count "
                       "(a lookup with elimination touches one partition, so the ratio is the partitions touched "
                       "without it)"),
    C["splits"]: "the non-sequential key's leaf density over the sequential key's lies below 1",
    C["optimized"]: f"{AT}, the optimized variant's rate over the plain sequential key's lies above 1",
}


def _published(published) -> dict[str, str]:
    """The published column's numbers, read from the published recordings (never typed here)."""
    out = {}
    by_id = {g.id: g for g in published}

    def runs(rid, case):
        g = by_id.get(rid)
        if g is None or g.runs is None:
            return None
        r = g.runs[g.runs["case"].astype(str).str.startswith(case)].set_index("variant")
        return r if {"sequential", "hash_partitioned"} <= set(r.index) else None

    parts = []
    customer, lab = runs("published-sqlcat-2009", "customer"), runs("published-sqlcat-2009", "32-core lab (")
    if customer is not None:
        parts.append(f"+{(customer.loc['hash_partitioned', 'relative'] - 1):.0%} (customer)")
        out["queue"] = customer.loc["sequential", "note"].removeprefix("before: ")
    if lab is not None:
        out["_lab_gain"] = float(lab.loc["hash_partitioned", "relative"])
        parts.append(f"{lab.loc['sequential', 'throughput']:,.0f} -> {lab.loc['hash_partitioned', 'throughput']:,.0f} "
                     f"{lab.loc['sequential', 'unit']} (32-core lab; Kejser, in a comment under the article)")
    example, pos = runs("published-latch-whitepaper", "last-page"), runs("published-latch-whitepaper", "point-of-sale")
    if example is not None:
        parts.append(f"{example.loc['hash_partitioned', 'relative']:.1f}× (whitepaper example: '300%', read as "
                     "after ÷ before like its own '690%' for 36 -> 249)")
    if pos is not None:
        parts.append(f"{pos.loc['sequential', 'throughput']:,.0f} -> {pos.loc['hash_partitioned', 'throughput']:,.0f} "
                     f"{pos.loc['sequential', 'unit']}, {pos.loc['hash_partitioned', 'relative']:.1f}× (whitepaper, "
                     "point of sale)")
    if parts:
        out["hash_rate"] = "; ".join(parts)
    wp = by_id.get("published-latch-whitepaper")
    if wp is not None and wp.before_after is not None:
        ba = wp.before_after.set_index("measurement")
        if "Average Page Latch Wait Time" in ba.index:
            w = ba.loc["Average Page Latch Wait Time"]
            out["hash_waits"] = (f"average page latch wait {float(w['before']):g} -> {float(w['after']):g} "
                                 f"{w['unit']} (whitepaper, point of sale)")
    return out


def _pin_rule_words(direction: str) -> str:
    """What rule 2 would give on PostgreSQL's pins, in words: 'rule met', 'rule not met' or why it cannot say."""
    word = head(direction)
    if word == "agrees":
        return "rule met"
    if word == "differs":
        return "rule not met"
    return f"rule undecided ({direction})"


@per_view
def verdicts(shown) -> pd.DataFrame:
    """The articles' claims against the measured recording, each decided at one regime (:func:`deciding`), with
    where it was tested and whether its size could be compared."""
    g = shown.measured
    per = per_repetition(g)
    q = quoted(g, per)
    n = measured_numbers(g)
    nd = deciding(g)
    where = tested_on(g)
    cpus = g.cpus
    pg = g.engine == "postgres"
    hot = hot_wait(g)
    pub = _published(shown.published)
    span_of_sources = cores_text(published_numbers(shown.published))
    analogue = (f"the sources measured SQL Server on {span_of_sources}; here: {where}"
                if pg or (cpus or 0) < LAB_MIN_CPUS else "")
    rows = []

    def add(key, published, measured_text, direction, size: Size | None = None):
        size = size or Size.not_comparable(analogue or "the sources print no comparable figure")
        if direction.split(":")[0] in ("agrees", "weaker", "differs"):
            verdict, size_text = judge(direction, size)
        else:  # an inconclusive row still says whether its size could have been compared; an untested one not
            verdict, size_text = direction, (size.outcome()[1] if direction.startswith("inconclusive") else "")
        rows.append(Claim(claim=C[key], published=published, recording=g.id, tested_on=where,
                          measured=measured_text, size=size_text, rule=RULES[C[key]], verdict=verdict))

    def s(name: str) -> Spread:
        return q[name]

    def t(name: str) -> str:
        return q_text(q, name)

    at = sessions_label(g, nd) if nd is not None else ""
    # the claims about concurrent inserts need a point with at least 2 sessions and no more than the CPUs
    span = f"2 to {cpus}" if cpus and cpus > 2 else ("2" if cpus == 2 else "2 or more")
    no_regime = (missing_point(f"no point with {span} sessions (concurrent, not oversubscribed)")
                 if nd is None or nd < 2 else "")

    def missing(what: str) -> str:
        return no_regime or missing_point(f"{what} at {at}")

    def concurrent(direction: str) -> str:
        return no_regime or direction

    # 1. the queue at the latch
    sn, s1, idle, rise = s("seq_hot"), s("seq_hot_one"), s("seq_idle"), s("seq_hot_rise")
    over = s("seq_over_random")  # against the non-sequential control, which shares the heap's end and the sequence
    client_bound = bool(idle.n and idle.median > 0.5 and sn.n and sn.median <= 0.02)
    if sn.n and s1.n:
        text = (f"{hot}: {t('seq_hot_one')} {share_words(g)} at 1 session, {t('seq_hot')} at {at}"
                + (f", against {t('random_hot')} with the non-sequential key (which shares the heap's end and "
                   f"the sequence, not the index's last leaf): an estimated {t('seq_over_random')} on the leaf, the "
                   "difference taken repetition by repetition" if over.n else "") +
                (f"; sessions idle, waiting for their client, in {q_text(q, 'seq_idle', False)} of samples"
                 if client_bound else ""))
        direction = concurrent("not testable here: the sessions were client-bound" if client_bound
                               else both(above(sn, 0.02), above(rise, 0.0), *([above(over, 0.0)] if over.n else [])))
    else:
        text, direction = "no wait samples at the deciding point", missing("wait samples of the sequential key")
    add("queue", pub.get("queue", "not printed in the sources"), text, direction,
        Size.not_comparable(f"the sources give wait times in ms on {span_of_sources}, not shares of samples"
                            + (f"; here: {where}" if analogue else "")))

    # 2. which page
    lp, lr = s("seq_last_page"), s("random_last_page")
    lr_or_0 = [0.0 if not np.isfinite(QUOTED["random_last_page"][0](x)) and np.isfinite(x["m_random_key_tp"])
               else QUOTED["random_last_page"][0](x) for x in per]
    margin = spread([QUOTED["seq_last_page"][0](x) - 5 * r for x, r in zip(per, lr_or_0)])
    what = "every inserter's pins on index pages" if pg else "page-latch waiting-task samples"
    # by chance a pin would hit the rightmost leaf about once per leaf page; a fifth is far above that
    page_rule = ((both(above(lp, 0.2), above(margin, 0.0)) if margin.n else above(lp, 0.2)) if lp.n
                 else missing_point(f"page-level samples of the sequential key at {at or 'any point within the CPUs'}"))
    add("last_page", "resource_description resolves to the clustered primary key of the insert table",
        (f"{t('seq_last_page')} of {what} at {at} "
         + (f"within {RIGHT_EDGE_HOPS} leaves of the right edge" if pg else "on the last page of an index")
         + (f" (of {n['m_sequential_leaf_pages']:,.0f} leaves; "
            f"{pins_per_repetition(pin_index_counts(g, 'sequential', nd))})"
            if pg and np.isfinite(n["m_sequential_leaf_pages"]) and pin_index_counts(g, "sequential", nd) else "")
         + (f"; {t('random_last_page')} with the non-sequential key" if lr.n else ""))
        if lp.n else f"no page-level samples at {at or 'the deciding point'}",
        # PostgreSQL names no buffer a waiter waits for: the pins say where inserters work, not where they wait, so
        # the row says what the rule would give and does not apply it
        (f"not testable here: {_pin_rule_words(page_rule)}, not applied because buffer pins are not waits: "
         "PostgreSQL does not say which buffer a BufferContent waiter waits for; the pins show where every "
         "inserter works, waiting or not" if pg else page_rule),
        Size.not_comparable("the article names the page; it prints no share of samples"))

    # 3. and 4. hash partitioning: rate and waits
    hx = s("hash_vs_seq")
    seq_page = s("hash_sequence")
    # the queue hash partitioning could shorten: the leaf's share (the latch's less the control's, which shares the
    # heap's end and the sequence), the same estimate the queue row and the opening quote
    leaf, leaf_words = leaf_wait(g, q)
    why = ""
    if hx.n and leaf.n:  # where and how much: how long the queue was that hash partitioning could shorten
        why = (f"; on {cpus} CPUs sessions waited on {leaf_words}, a "
               "short queue to spread, while routing rows to partitions costs CPU")
        if pg and seq_page.n and seq_page.median > 0:
            why += (f"; every design still takes the identity's one sequence page "
                    f"({q_text(q, 'hash_sequence', False)} of the hash-partitioned design's pins)")
    over = (f"; {t('hash_vs_seq_max')} at {sessions_label(g, n['m_nmax'])}, not deciding"
            if nd is not None and n["m_nmax"] > nd and s("hash_vs_seq_max").n else "")
    lab = pub.get("_lab_gain")
    size = (Size.compare(lab, hx, LAB_FACTOR) if not pg and lab and (cpus or 0) >= LAB_MIN_CPUS
            else Size.not_comparable(analogue or f"fewer than {LAB_MIN_CPUS} CPUs, where the whitepaper says this "
                                                 "contention is seldom seen"))
    room = 1 / (1 - max(leaf.median, 0.0)) if leaf.n and leaf.median < 1 else float("inf")
    if hx.n and room < SMALLEST_GAIN and not no_regime:  # the precondition, a long queue to shorten, is absent
        by_threshold = head(concurrent(above(hx, 1.05)))
        rate_direction = (f"not testable here: on {cpus} CPUs at most {room:.2f}× was possible (sessions waited on "
                          f"{leaf_words}; removing "
                          f"all of it could raise the rate at most that much), below the sources' smallest gain "
                          f"({SMALLEST_GAIN:g}×). This overrides the 1.05 threshold, by which the interval "
                          f"({hx.low:.2f}–{hx.high:.2f}) alone would read '{by_threshold}'")
    else:
        rate_direction = (concurrent(above(hx, 1.05)) if hx.n
                          else missing("the hash-partitioned and sequential designs"))
    add("hash_rate", pub.get("hash_rate", "not printed in the sources"),
        f"{t('hash_vs_seq')} the sequential key's rate at {at}{why}{over}" if hx.n else "variant not run",
        rate_direction, size)
    hs = s("hash_hot_ratio")
    if no_regime:
        direction = no_regime
    elif sn.n and sn.median <= 0.02:
        direction = (f"not testable here: the sequential key had {q_text(q, 'seq_hot', False)} {share_words(g)} on "
                     "the latch")
    else:
        direction = concurrent(below(hs, 0.5)) if hs.n else missing("wait samples of the hash-partitioned design")
    add("hash_waits", pub.get("hash_waits", "not printed in the sources"),
        (f"{hot}: {q_text(q, 'seq_hot', False)} -> {q_text(q, 'hash_hot', False)} {share_words(g)} at {at} "
         f"({t('hash_hot_ratio')})" + (f"; the hash-partitioned design's waits include the shared sequence page"
                                        if pg else "")) if sn.n and s("hash_hot").n else "variant not run",
        direction, Size.not_comparable("the whitepaper gives the average wait per latch wait in ms; the "
                                       "recording gives shares of samples"))

    # 5. partition elimination (no sessions involved: read after the inserts)
    published = "SELECT by ID alone touches all partitions; add HashID = ID % 4 to get elimination"
    if pg:
        r = s("noprune_ratio")
        add("elimination", published,
            (f"{q_text(q, 'noprune_reads')} vs {q_text(q, 'point_reads')} buffers "
             f"({n['m_hash_point_noprune_parts']:.0f} partitions vs 1), ratio {t('noprune_ratio')}; PostgreSQL prunes "
             "WHERE id = ... by itself, so pruning was switched off to imitate SQL Server") if r.n
            else "read cost not in this recording",
            above(r, 1.0) if r.n else missing_point("the read-cost queries on the hash-partitioned design"),
            Size.not_comparable("PostgreSQL with pruning switched off imitates SQL Server's plan; it is not it"))
    else:
        r = s("sqlserver_parts_ratio")
        parts = n["m_partitions"] or float("nan")
        add("elimination", published,
            f"partitions touched by ID alone over with the hash predicate: {t('sqlserver_parts_ratio')}" if r.n
            else "read cost not in this recording",
            above(r, 1.0) if r.n else missing_point("the read-cost queries on the hash-partitioned design"),
            Size.compare(parts, r, 1.5) if r.n and parts == parts
            else Size.not_comparable("the recording does not say how many partitions it made"))

    # 6. page splits (after the inserts)
    d = s("density_ratio")
    add("splits", "whitepaper: GUID keys bring more page splits and lower page density",
        f"leaf density {n['m_random_key_avg_leaf_density']:.0f}% vs {n['m_sequential_avg_leaf_density']:.0f}% for "
        f"the sequential key ({t('density_ratio')}); {q_text(q, 'random_rows_per_leaf', False)} vs "
        f"{q_text(q, 'seq_rows_per_leaf', False)} rows per leaf page" if d.n else "variant not run",
        below(d, 1.0) if d.n else missing_point("index statistics of the non-sequential and sequential designs"),
        Size.not_comparable("the whitepaper prints no density"))

    # 7. OPTIMIZE_FOR_SEQUENTIAL_KEY (SQL Server 2019+)
    ox = s("opt_vs_seq")
    if pg:
        add("optimized", "throttles requests for the last page; does not remove the latch (Lahoud 2019, SQL "
                         "Server Blog)", "PostgreSQL has no such option", "not testable here: PostgreSQL has no such "
                                                                             "option")
    else:
        add("optimized", "throttles requests for the last page; does not remove the latch (Lahoud 2019, SQL "
                         "Server Blog)",
            f"{t('opt_vs_seq')} the plain sequential key's rate at {at}" if ox.n else "variant not in this recording",
            concurrent(above(ox, 1.0)) if ox.n else missing("the optimized and plain sequential designs"),
            Size.not_comparable("Microsoft prints no figure for the option's gain"))
    return table(rows)
