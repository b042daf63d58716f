"""The sources' claims against the measured recording: rows of data, each with its rule.

Each measured quantity is computed on every repetition on its own (ratios
inside one repetition, where the variants ran side by side) and decided by
its interval over repetitions (:mod:`shared.claims`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..shared.claims import Claim, above, below, rule_above, rule_below, table
from ..shared.spread import spread
from .tables import measured_numbers, read_cost_table

C = {
    "queue": "Concurrent inserts with an ever-increasing key queue on the last page's latch",
    "last_page": "The waited-for page is the last page of the clustered index",
    "hash_rate": "Hash partitioning raises the insert rate",
    "hash_waits": "With hash partitioning the page-latch waits go away",
    "elimination": "Without partition elimination a point lookup must search every partition",
    "splits": "A non-sequential key avoids the hot page but pays in page splits",
    "optimized": "OPTIMIZE_FOR_SEQUENTIAL_KEY keeps throughput up under a convoy (SQL Server 2019+)",
}
RULES = {
    C["queue"]: ("agrees when, as intervals over repetitions, the hot latch's share of samples at the most sessions "
                 "lies above 2% and above its share at the fewest (their difference above 0); differs when either "
                 "lies below; not testable when the sessions were idle over half the time with under 2% on the "
                 "latch (client-bound)"),
    C["last_page"]: ("agrees when the share of index-page pins on a rightmost leaf lies above 0.2 and above 5 x the "
                     "non-sequential key's share (difference above 0), as intervals over repetitions"),
    C["hash_rate"]: rule_above(1.05, "the hash-partitioned rate over the sequential key's at the most sessions"),
    C["hash_waits"]: rule_below(0.5, "the hash-partitioned hot-latch share over the sequential key's") +
                     "; not testable when the sequential key had 2% or less",
    C["elimination"]: rule_above(1.0, "buffers read by the lookup without elimination over those with it"),
    C["splits"]: rule_below(1.0, "the non-sequential key's leaf density over the sequential key's"),
    C["optimized"]: rule_above(1.0, "the optimized variant's rate over the plain sequential key's (SQL Server "
                                    "2019+ only)"),
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
        parts.append(f"{lab.loc['sequential', 'throughput']:,.0f} -> {lab.loc['hash_partitioned', 'throughput']:,.0f} "
                     f"{lab.loc['sequential', 'unit']} (32-core lab)")
    example, pos = runs("published-latch-whitepaper", "last-page"), runs("published-latch-whitepaper", "point-of-sale")
    if example is not None:
        parts.append(f"+{(example.loc['hash_partitioned', 'relative'] - 1):.0%} (whitepaper example)")
    if pos is not None:
        parts.append(f"{pos.loc['sequential', 'throughput']:,.0f} -> {pos.loc['hash_partitioned', 'throughput']:,.0f} "
                     f"{pos.loc['sequential', 'unit']} (whitepaper, point of sale)")
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


def both(*verdicts: str) -> str:
    """A claim made of several tests: differs if any differs, agrees if all agree, else the first doubt."""
    heads = [v.split(":")[0] for v in verdicts]
    if "differs" in heads:
        return "differs"
    if all(h == "agrees" for h in heads):
        return "agrees"
    return next(v for v in verdicts if not v.startswith("agrees"))


def verdicts(shown) -> pd.DataFrame:
    """The article's claims against the measured recording, each with its rule."""
    measured = shown.measured
    n = measured_numbers(measured)
    per = [measured_numbers(v) for v in measured.repetition_views().values()]
    cpus = measured.cpus
    few = f" (on {cpus} logical CPUs)" if cpus else ""
    hot = "LWLock:BufferContent" if measured.engine == "postgres" else "PAGELATCH_EX"
    pub = _published(shown.published)
    rows = []

    def each(key_or_fn) -> "object":
        return spread([key_or_fn(x) if callable(key_or_fn) else x[key_or_fn] for x in per])

    def add(key, published, measured_text, verdict):
        rows.append(Claim(claim=C[key], published=published, recording=measured.id, measured=measured_text,
                          rule=RULES[C[key]], verdict=verdict))

    def ok(x):
        return x is not None and not (isinstance(x, float) and np.isnan(x))

    sn, s1, idle = each("m_sequential_hot_share"), each("m_sequential_hot_share_one"), \
        each("m_sequential_idle_share")
    rise = each(lambda x: x["m_sequential_hot_share"] - x["m_sequential_hot_share_one"])
    # sessions that spend most of their time idle, waiting for their client, were not inserting concurrently
    client_bound = idle.n and idle.median > 0.5 and sn.median <= 0.02
    add("queue", pub.get("queue", "not printed in the sources"),
        (f"{hot}: {s1.text('.1%')} of samples at {n['m_nmin']} session(s), {sn.text('.1%')} at {n['m_nmax']}"
         + (f"; the sessions were idle, waiting for their client, in {idle.median:.0%} of samples, so they hardly "
            "inserted at the same time" if client_bound else "")) if sn.n else "no wait samples in this recording",
        "not testable here: the sessions were client-bound" if client_bound else both(above(sn, 0.02),
                                                                                      above(rise, 0.0)))
    lp, lr = each("m_sequential_last_page_share"), each("m_random_key_last_page_share")
    lr_or_0 = [0.0 if not ok(x["m_random_key_last_page_share"]) and ok(x["m_random_key_tp_max"])
               else x["m_random_key_last_page_share"] for x in per]
    margin = spread([x["m_sequential_last_page_share"] - 5 * r for x, r in zip(per, lr_or_0)])
    add("last_page", "resource_description resolves to the clustered primary key of the insert table",
        (f"{lp.text('.0%')} of the pins on index pages were on a rightmost leaf (of "
         f"{n['m_sequential_leaf_pages']:,.0f} leaves)" + (f"; {lr.text('.0%')} with the non-sequential key"
                                                            if lr.n else "")) if lp.n
        else "no page-level samples in this recording",
        # by chance a pin would hit the rightmost leaf about once per leaf page; a fifth is far above that
        both(above(lp, 0.2), above(margin, 0.0)) if lp.n else "not testable here: no page-level samples")
    hx = each("m_hash_partitioned_vs_seq")
    add("hash_rate", pub.get("hash_rate", "not printed in the sources"),
        f"{hx.text('.2f', '×')} the sequential key at {n['m_nmax']} sessions{few}" if hx.n else "variant not run",
        above(hx, 1.05) if hx.n else "not testable here: variant not run")
    hs = each(lambda x: x["m_hash_partitioned_hot_share"] / x["m_sequential_hot_share"]
              if x["m_sequential_hot_share"] else np.nan)
    gone = "not testable here: the sequential key had 2% or less of samples on the latch" \
        if sn.n and sn.median <= 0.02 else (below(hs, 0.5) if hs.n else "not testable here: variant not run")
    add("hash_waits", pub.get("hash_waits", "not printed in the sources"),
        f"{hot}: {sn.text('.1%')} -> {each('m_hash_partitioned_hot_share').text('.1%')} of samples at "
        f"{n['m_nmax']} sessions" if sn.n else "variant not run", gone)
    if measured.engine == "postgres":
        a, b = each("m_hash_point_reads"), each("m_hash_point_noprune_reads")
        r = each(lambda x: x["m_hash_point_noprune_reads"] / x["m_hash_point_reads"])
        add("elimination", "SELECT by ID alone touches all partitions; add HashID = ID % 4 to get elimination",
            f"{b.text(',.0f')} vs {a.text(',.0f')} buffers ({n['m_hash_point_noprune_parts']:.0f} partitions vs 1); "
            "PostgreSQL hashes the key itself, so WHERE id = ... prunes without an extra predicate" if r.n
            else "read cost not in this recording", above(r, 1.0) if r.n else "not testable here: not recorded")
    else:
        def reads(view, query, col):
            rc = read_cost_table(view)
            hit = rc[rc["query"] == query]
            return float(hit[col].iloc[0]) if len(hit) else np.nan

        views = list(measured.repetition_views().values())
        r = spread([reads(v, "point lookup by ID", "partitions_touched")
                    / reads(v, "point lookup by ID + hash predicate", "partitions_touched") for v in views])
        add("elimination", "SELECT by ID alone touches all partitions; add HashID = ID % 4 to get elimination",
            f"partitions touched by ID alone over with the hash predicate: {r.text('.1f', '×')}" if r.n
            else "read cost not in this recording", above(r, 1.0) if r.n else "not testable here: not recorded")
    d = each(lambda x: x["m_random_key_avg_leaf_density"] / x["m_sequential_avg_leaf_density"])
    add("splits", "whitepaper: GUID keys bring more page splits and lower page density",
        f"leaf density {n['m_random_key_avg_leaf_density']:.0f}% vs {n['m_sequential_avg_leaf_density']:.0f}% for "
        f"the sequential key ({d.text('.2f', '×')}); {n['m_random_key_rows_per_leaf']:.0f} vs "
        f"{n['m_sequential_rows_per_leaf']:.0f} rows per leaf page" if d.n else "variant not run",
        below(d, 1.0) if d.n else "not testable here: variant not run")
    ox = each("m_sequential_optimized_vs_seq")
    add("optimized", "throttles requests for the last page; does not remove the latch (Microsoft, 2019)",
        f"{ox.text('.2f', '×')} the plain sequential key" if ox.n else
        ("PostgreSQL has no such option" if measured.engine == "postgres" else "variant not in this recording"),
        above(ox, 1.0) if ox.n else "not testable here: " + ("PostgreSQL has no such option"
                                                              if measured.engine == "postgres" else "not run"))
    return table(rows)
