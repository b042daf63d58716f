"""The sources' claims against the measured recording: rows of data, each with its rule."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..shared.claims import Claim, table
from .tables import measured_numbers, read_cost_table

RULES = {
    "Concurrent inserts with an ever-increasing key queue on the last page's latch":
        "agrees when the hot-latch share at the most sessions exceeds the share at the fewest and 2%; not testable "
        "when the sessions were idle over half the time with under 2% on the latch (client-bound)",
    "The waited-for page is the last page of the clustered index":
        "agrees when over a fifth of index-page pins are on a rightmost leaf, and over 5 x the non-sequential "
        "key's share",
    "Hash partitioning raises the insert rate":
        "agrees when the hash-partitioned rate at the most sessions exceeds 1.05 x the sequential key's",
    "With hash partitioning the page-latch waits go away":
        "agrees when the hot-latch share at least halves; not testable when the sequential key had 2% or less",
    "Without partition elimination a point lookup must search every partition":
        "agrees when the lookup without elimination reads more (buffers, or partitions touched)",
    "A non-sequential key avoids the hot page but pays in page splits":
        "agrees when the non-sequential key's leaf density is lower",
    "OPTIMIZE_FOR_SEQUENTIAL_KEY keeps throughput up under a convoy (SQL Server 2019+)":
        "agrees when the optimized variant's rate exceeds the plain sequential key's (SQL Server 2019+ only)",
}


def verdicts(shown) -> pd.DataFrame:
    """The article's claims against the measured recording, each with its rule."""
    measured = shown.measured
    n = measured_numbers(measured)
    cpus = measured.cpus
    few = f" (on {cpus} logical CPUs)" if cpus else ""
    hot = "LWLock:BufferContent" if measured.engine == "postgres" else "PAGELATCH_EX"
    rows = []

    def verdict(claim, published_dir, measured_dir, agree):
        rows.append(Claim(claim=claim, published=published_dir, recording=measured.id, measured=measured_dir,
                          rule=RULES[claim],
                          verdict="not testable here" if agree is None else ("agrees" if agree else "differs")))

    def ok(x):
        return x is not None and not (isinstance(x, float) and np.isnan(x))

    s1, sn = n["m_sequential_hot_share_one"], n["m_sequential_hot_share"]
    idle = n["m_sequential_idle_share"]
    # sessions that spend most of their time idle, waiting for their client, were not inserting concurrently
    client_bound = ok(idle) and idle > 0.5 and ok(sn) and sn <= 0.02
    verdict("Concurrent inserts with an ever-increasing key queue on the last page's latch",
            "waits dominated by PAGELATCH_EX/UP, tens of ms each, at 64-128 cores",
            (f"{hot}: {s1:.0%} of samples at {n['m_nmin']} session(s), {sn:.0%} at {n['m_nmax']}"
             + (f"; the sessions were idle, waiting for their client, in {idle:.0%} of samples, so they hardly "
                "inserted at the same time" if client_bound else "")) if ok(sn)
            else "no wait samples in this recording",
            None if client_bound else (bool(sn > s1 and sn > 0.02) if ok(sn) and ok(s1) else None))
    lp, lr = n["m_sequential_last_page_share"], n["m_random_key_last_page_share"]
    lr = 0.0 if not ok(lr) and ok(n["m_random_key_tp_max"]) else lr
    leaves = n["m_sequential_leaf_pages"]
    verdict("The waited-for page is the last page of the clustered index",
            "resource_description resolves to the clustered primary key of the insert table",
            (f"{lp:.0%} of the pins on index pages were on a rightmost leaf (of {leaves:,.0f} leaves)"
             + (f"; {lr:.0%} with the non-sequential key" if ok(lr) else "")) if ok(lp)
            else "no page-level samples in this recording",
            # by chance a pin would hit the rightmost leaf about once per leaf page; a fifth is far above that
            bool(lp > 0.2 and (not ok(lr) or lp > 5 * lr)) if ok(lp) else None)
    hx = n["m_hash_partitioned_vs_seq"]
    verdict("Hash partitioning raises the insert rate",
            "+15% (customer); 17K -> 26K SQL tx/s (32-core lab); +300% and 36 -> 249 business tx/s (whitepaper)",
            f"{hx:.2f}x the sequential key at {n['m_nmax']} sessions{few}" if ok(hx) else "variant not run",
            bool(hx > 1.05) if ok(hx) else None)
    hs = n["m_hash_partitioned_hot_share"]
    # "go away": at least halved; with (almost) no waits on the sequential key there is nothing to remove
    verdict("With hash partitioning the page-latch waits go away",
            "PAGELATCH waits on the hot index gone; average page latch wait 36 ms -> 0.6 ms",
            (f"{hot}: {sn:.0%} -> {hs:.0%} of samples at {n['m_nmax']} sessions"
             + ("; the sequential key had almost none to remove" if sn <= 0.02 else "")) if ok(hs) and ok(sn)
            else "variant not run", (None if sn <= 0.02 else bool(hs < sn / 2)) if ok(hs) and ok(sn) else None)
    a, b = n["m_hash_point_reads"], n["m_hash_point_noprune_reads"]
    if measured.engine == "postgres":
        verdict("Without partition elimination a point lookup must search every partition",
                "SELECT by ID alone touches all partitions; add HashID = ID % 4 to get elimination",
                f"{b:.0f} vs {a:.0f} buffers ({n['m_hash_point_noprune_parts']:.0f} partitions vs 1); PostgreSQL "
                "hashes the key itself, so WHERE id = ... prunes without an extra predicate" if ok(a) and ok(b)
                else "read cost not in this recording", bool(b > a) if ok(a) and ok(b) else None)
    else:
        rc = read_cost_table(measured)
        by = rc.set_index("query") if len(rc) else None
        if by is not None and {"point lookup by ID", "point lookup by ID + hash predicate"} <= set(by.index):
            x, y = by.loc["point lookup by ID"], by.loc["point lookup by ID + hash predicate"]
            verdict("Without partition elimination a point lookup must search every partition",
                    "SELECT by ID alone touches all partitions; add HashID = ID % 4 to get elimination",
                    f"{x['partitions_touched']:.0f} partitions / {x['logical_reads']:.0f} reads by ID alone; "
                    f"{y['partitions_touched']:.0f} / {y['logical_reads']:.0f} with the hash predicate",
                    bool(x["partitions_touched"] > y["partitions_touched"]))
    rd, sd = n["m_random_key_avg_leaf_density"], n["m_sequential_avg_leaf_density"]
    verdict("A non-sequential key avoids the hot page but pays in page splits",
            "whitepaper: GUID keys bring more page splits and lower page density",
            f"leaf density {rd:.0f}% vs {sd:.0f}% for the sequential key; "
            f"{n['m_random_key_rows_per_leaf']:.0f} vs {n['m_sequential_rows_per_leaf']:.0f} rows per leaf page"
            if ok(rd) and ok(sd) else "variant not run", bool(rd < sd) if ok(rd) and ok(sd) else None)
    ox = n["m_sequential_optimized_vs_seq"]
    verdict("OPTIMIZE_FOR_SEQUENTIAL_KEY keeps throughput up under a convoy (SQL Server 2019+)",
            "throttles requests for the last page; does not remove the latch (Microsoft, 2019)",
            f"{ox:.2f}x the plain sequential key" if ok(ox) else
            ("PostgreSQL has no such option" if measured.engine == "postgres" else "variant not in this recording"),
            bool(ox > 1.0) if ok(ox) else None)
    return table(rows)
