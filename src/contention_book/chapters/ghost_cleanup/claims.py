"""The article's claims against the measured recording: rows of data, each with its rule.

Every measured verdict is a ratio paired by repetition: :func:`shared.claims.above` / ``below`` give its
direction, :func:`shared.claims.judge` the final word with the size (never compared for the PostgreSQL
analogue: a heap and its index are not SQL Server's clustered B-tree).  On PostgreSQL the idle READ COMMITTED
holder stands for the article's open RCSI transaction, the idle REPEATABLE READ holder for SNAPSHOT isolation.
"""
from __future__ import annotations

import pandas as pd

from ..shared.claims import Claim, Size, above, below, judge, missing_point, rule_above, rule_below, table, tested_on
from ..shared.spread import ratio_spread, spread
from .spec import LABELS
from .tables import (HELD, NO_PAIR, UNHELD, UNPINNED, VACUUM_CONTROL, _timed_runs, growth_by_repetition, growth_ratio,
                     set_aside, storage_by_repetition, storage_long)
from ..shared.memo import per_view

SLOWER, SAME, STEEPER, PILE_UP, GROWS, GHOSTS = 1.2, 1.2, 1.5, 10.0, 1.2, 1.5
CLAIMS = {
    "slower": "An open transaction whose snapshot pins versions makes the same updates slower",
    "unpinned": "An open RCSI transaction no longer slows the loop (SQL Server 2022)",
    "steeper": "Time per update grows with the versions that cannot be removed (quadratic total)",
    "pile_up": "Versions pile up while the transaction is open and go once it ends",
    "grows": "The table grows while versions are pinned",
    "unheld_ghosts": "With nothing held, the ghosts each update leaves still slow the next ones",
    "tf7006": "SQL Server 2022 cleans version ghosts at statement level under an open RCSI transaction",
    "version_store": "Version store records still live until the open RCSI transaction ends (2022 too)",
}
RULES = {
    CLAIMS["slower"]: rule_above(SLOWER, "held over unheld elapsed time"),
    # its own quantity: the idle RCSI (READ COMMITTED) holder, which pins nothing on 2022, over nothing held
    CLAIMS["unpinned"]: rule_below(SAME, "the elapsed time with an idle RCSI transaction open over that with "
                                         "nothing held"),
    CLAIMS["steeper"]: rule_above(STEEPER, "held over unheld per-update time growth"),
    # judged on counts: the versions not removable at the end against those left after cleanup, none counted as
    # one (so a ratio to zero is never taken); the same threshold as :func:`above` with PILE_UP
    CLAIMS["pile_up"]: (f"Holds when the versions not removable at the end outnumber those left after cleanup more "
                        f"than {PILE_UP:g} to 1 across the repetitions (none left counts as one, so all versions "
                        f"pinned at the end and none after cleanup holds); weaker between 1 and {PILE_UP:g} to 1; "
                        "differs when no more remain at the end than after cleanup; inconclusive when the "
                        f"repetitions span 1 or {PILE_UP:g} to 1."),
    CLAIMS["grows"]: rule_above(GROWS, "held over unheld final pages"),
    CLAIMS["unheld_ghosts"]: rule_above(GHOSTS, "unheld over VACUUM-control time growth"),
    CLAIMS["tf7006"]: rule_above(1.0, "TF 7006 over plain run time"),
    CLAIMS["version_store"]: "needs the version store's size on SQL Server 2022 while the transaction is open",
}
POSTGRES_SIZE = Size.not_comparable("a PostgreSQL heap and index against SQL Server's clustered B-tree")


def _published(published) -> dict[str, str]:
    """The published column, from the published recordings (what the article printed, and only that)."""
    out = {k: "not printed in the article" for k in CLAIMS}
    by_version = {g.recording.engine["version"].split(".")[0]: g for g in published}
    old = by_version.get("15")
    if old is not None:
        el = _timed_runs(old).set_index("variant")["elapsed_s"]
        if {"rcsi", "rcsi_open_txn"} <= set(el.index):
            out["slower"] = (f"2019, open RCSI transaction: over {el['rcsi_open_txn']:.0f} s vs {el['rcsi']:.0f} s "
                             f"(at least {el['rcsi_open_txn'] / el['rcsi']:.1f}×)")
        if {"rcsi", "read_committed"} <= set(el.index):
            out["unheld_ghosts"] = (f"2019: RCSI {el['rcsi']:.0f} s vs {el['read_committed']:.0f} s under locking "
                                    f"read committed ({el['rcsi'] / el['read_committed']:.0f}×)")
        out["steeper"] = "the k-th update skips k−1 version ghosts (the article's model; no per-update timings)"
        st = storage_long(old).set_index(["variant", "phase"])
        if ("rcsi_open_txn", "after_run") in st.index:
            end = st.loc[("rcsi_open_txn", "after_run")]
            after = (f"{int(st.loc[('rcsi_open_txn', 'after_cleanup'), 'not_removed']):,} after cleanup"
                     if ("rcsi_open_txn", "after_cleanup") in st.index
                     else "after the commit: all removed within seconds (stated; no DMV output printed)")
            out["pile_up"] = f"2019: {int(end['not_removed']):,} ghost versions at the end; {after}"
            rcsi = st.loc[("rcsi", "after_run"), "pages"] if ("rcsi", "after_run") in st.index else float("nan")
            out["grows"] = (f"2019: {int(end['pages']):,} pages across all {int(end['levels'])} levels at the end, "
                            f"against {rcsi:,.0f} under RCSI alone")
    new = by_version.get("16")
    if new is not None:
        el = _timed_runs(new).set_index("variant")["elapsed_s"]
        if {"rcsi", "rcsi_open_txn"} <= set(el.index):
            out["unpinned"] = (f"2022: {el['rcsi_open_txn']:.0f} s with the open transaction vs {el['rcsi']:.0f} s "
                               f"without ({el['rcsi_open_txn'] / el['rcsi']:.2f}×)")
            before = (f" vs over {_timed_runs(old).set_index('variant').loc['rcsi_open_txn', 'elapsed_s']:.0f} s on "
                      "2019" if old is not None and "rcsi_open_txn" in set(old.runs["variant"]) else "")
            out["tf7006"] = (f"2022: {el['rcsi_open_txn']:.0f} s with the open transaction{before}; TF 7006 turns the "
                             "change off (no time printed with it)")
        out["version_store"] = "stated, with Microsoft's documentation quoted; no measurement printed"
    return out


def _grows_size(g, published) -> Size:
    """The table-growth row's note on PostgreSQL: why its ratio is far below the article's, from the recordings
    (heap and index pages per variant at the end, medians over repetitions; the article's pages under RCSI with and
    without the open transaction on 2019)."""
    from .tables import line_pointer_numbers

    lp = line_pointer_numbers(g)
    keys = ("base_heap_pages", "held_heap_pages", "base_index_pages", "held_index_pages")
    if any(lp.get(k) != lp.get(k) for k in keys):
        return POSTGRES_SIZE
    article = ""
    old = {p.recording.engine["version"].split(".")[0]: p for p in published}.get("15")
    if old is not None:
        st = storage_long(old).set_index(["variant", "phase"])
        if {("rcsi_open_txn", "after_run"), ("rcsi", "after_run")} <= set(st.index):
            a, b = st.loc[("rcsi_open_txn", "after_run"), "pages"], st.loc[("rcsi", "after_run"), "pages"]
            article = (f"the article's {a / b:.1f}× ({a:,.0f} / {b:,.0f} pages) counts the clustered index, which "
                       "holds the version ghosts; ")
    heap = (f"{lp['base_heap_pages']:,.0f} → {lp['held_heap_pages']:,.0f} pages "
            f"({lp['held_heap_pages'] / lp['base_heap_pages']:.2f}×)")
    if lp["held_index_pages"] == lp["base_index_pages"]:
        here = (f"here only the heap grew, {heap}, and the index, at {lp['held_index_pages']:,.0f} pages in both runs, "
                "dilutes that in the ratio")
    else:
        here = (f"here the index went from {lp['base_index_pages']:,.0f} to {lp['held_index_pages']:,.0f} pages and "
                f"the heap {heap}")
    return Size.not_comparable(f"{POSTGRES_SIZE.why}; {article}{here}")


class _Rows:
    """Collects the verdict rows of one recording."""

    def __init__(self, g, pub):
        self.g, self.pub, self.rows = g, pub, []
        self.where = tested_on(g)

    def add(self, key: str, measured: str, direction: str, size: Size | None = None) -> None:
        size = size or (POSTGRES_SIZE if self.g.engine == "postgres"
                        else Size.not_comparable("the article printed one run per setting"))
        verdict, size_text = judge(direction, size)
        self.rows.append(Claim(claim=CLAIMS[key], published=self.pub[key], recording=self.g.id,
                               tested_on=self.where, measured=measured, size=size_text, rule=RULES[CLAIMS[key]],
                               verdict=verdict))

    def missing(self, key: str, what: str) -> None:
        self.rows.append(Claim(claim=CLAIMS[key], published=self.pub[key], recording=self.g.id,
                               tested_on=self.where, measured=f"no {what} in this recording",
                               size="", rule=RULES[CLAIMS[key]], verdict=missing_point(what)))

    def not_here(self, key: str, measured: str, why: str) -> None:
        self.rows.append(Claim(claim=CLAIMS[key], published=self.pub[key], recording=self.g.id,
                               tested_on=self.where, measured=measured, size="", rule=RULES[CLAIMS[key]],
                               verdict=f"not testable here: {why}"))


def _has(runs: pd.DataFrame, *variants: str) -> bool:
    return set(variants) <= set(runs["variant"])


@per_view
def verdicts(shown) -> pd.DataFrame:
    """The article's claims, what it printed, what this recording shows with its spread, the rule, the verdict."""
    g = shown.measured
    out = _Rows(g, _published(shown.published))
    runs = _timed_runs(g)
    base, held, unpinned = UNHELD[g.engine], HELD[g.engine], UNPINNED.get(g.engine)
    major = int(str(g.recording.engine.get("version", "0")).split(".")[0] or 0) if g.engine == "sqlserver" else 0

    def pair(a: str, b: str) -> str:
        return f"{LABELS[a]} vs {LABELS[b]}"

    if g.engine == "sqlserver" and major >= 16:
        out.not_here("slower", "on SQL Server 2022 the open RCSI transaction no longer pins ghosts, and no SQL Server "
                     "variant holds a SNAPSHOT transaction", "needs SQL Server 2019, or a SNAPSHOT holder")
    elif _has(runs, held, base):
        s = ratio_spread(runs, "elapsed_s", held, base)
        analogue = ("; the SNAPSHOT analogue, since an open READ COMMITTED transaction pins nothing on PostgreSQL"
                    if g.engine == "postgres" else "")
        out.add("slower", f"{s.text('.1f', '×')} slower ({pair(held, base)}{analogue})", above(s, SLOWER))
    else:
        out.missing("slower", f"run with {LABELS.get(held, held)} and one with {LABELS[base]}")

    if g.engine == "postgres":
        # PostgreSQL's READ COMMITTED never pinned versions: it has no 2019 behaviour for a change to undo
        seen = ""
        if _has(runs, unpinned, base):
            s = ratio_spread(runs, "elapsed_s", unpinned, base)
            why = (" in which autovacuum reached neither run" if set_aside(g, unpinned, base) else
                   " with both runs")  # runs set aside only where the recording set some aside
            seen = (f"{s.text('.2f', '×')} the time ({pair(unpinned, base)}): " if s.n else
                    f"{NO_PAIR}{why} ({pair(unpinned, base)}), so no ratio: ")
        out.not_here("unpinned", seen + "PostgreSQL's READ COMMITTED never pinned versions, so it shows 2022's "
                     "behaviour but cannot show the change from 2019", "needs SQL Server 2019 and 2022")
    elif unpinned is None or (g.engine == "sqlserver" and major < 16):
        out.not_here("unpinned", "needs a SQL Server 2022 recording with and without the open transaction",
                     "needs SQL Server 2022")
    elif _has(runs, unpinned, base):
        s = ratio_spread(runs, "elapsed_s", unpinned, base)
        out.add("unpinned", f"{s.text('.2f', '×')} the time ({pair(unpinned, base)})", below(s, SAME))
    else:
        out.missing("unpinned", f"run with {LABELS[unpinned]}")

    if g.curve is None:
        out.missing("steeper", "per-chunk timings")
    elif _has(g.curve, held, base):
        s = growth_ratio(g.curve, held, base)
        out.add("steeper", f"growth {s.text('.1f', '×')} the unheld run's", above(s, STEEPER))
    else:
        out.missing("steeper", f"per-chunk timings of {LABELS.get(held, held)}")

    st = storage_by_repetition(g)
    wide = st.pivot_table(index=["repetition", "variant"], columns="phase", values=["not_removed", "pages"])
    if ("not_removed", "after_cleanup") in wide.columns and held in wide.index.get_level_values("variant"):
        h = wide.xs(held, level="variant")
        piled = h[("not_removed", "after_run")] / h[("not_removed", "after_cleanup")].clip(lower=1)
        s = spread(piled)

        end, after = h[("not_removed", "after_run")].dropna(), h[("not_removed", "after_cleanup")].dropna()
        if len(end) and end.nunique() == 1 and after.nunique() == 1:
            # counts every repetition saw alike are two numbers, and a ratio to zero says nothing they do not
            text = (f"{end.iloc[0]:,.0f} versions not removable at the end, {after.iloc[0]:,.0f} after cleanup, "
                    f"in each of {len(end)} repetitions")
        else:
            text = (f"{spread(end).text(',.0f')} not removable at the end, {spread(after).text(',.0f')} after "
                    "cleanup" + ("" if (after <= 0).any() else f"; ratio {s.text(',.0f', '×')}"))
        out.add("pile_up", text, above(s, PILE_UP))
    else:
        out.missing("pile_up", "storage statistics after cleanup")

    frame = st[st["phase"] == "after_run"]
    if _has(frame, held, base):
        s = ratio_spread(frame, "pages", held, base)
        out.add("grows", f"{s.text('.2f', '×')} the unheld run's pages at the end", above(s, GROWS),
                _grows_size(g, shown.published) if g.engine == "postgres" else None)
    else:
        out.missing("grows", f"storage statistics of {LABELS.get(held, held)} and {LABELS[base]}")

    control = VACUUM_CONTROL.get(g.engine)
    if g.engine == "sqlserver":
        if _has(runs, "rcsi", "read_committed"):
            s = ratio_spread(runs, "elapsed_s", "rcsi", "read_committed")
            out.add("unheld_ghosts", f"RCSI {s.text('.1f', '×')} the time of locking read committed",
                    above(s, GHOSTS))
        else:
            out.missing("unheld_ghosts", "run under RCSI and one under locking read committed")
    elif g.curve is not None and _has(g.curve, base, control):
        per = growth_by_repetition(g.curve)
        s = ratio_spread(per, "growth", base, control)
        out.add("unheld_ghosts", f"time per update grew {s.text('.1f', '×')} as much with nothing held as with "
                                 "VACUUM after every chunk", above(s, GHOSTS))
    else:
        out.missing("unheld_ghosts", f"run with {LABELS[control]}")

    if g.engine != "sqlserver" or major < 16:
        out.not_here("tf7006", "measured only on a SQL Server 2022 recording", "needs SQL Server 2022")
    elif _has(runs, "rcsi_open_txn_tf7006", "rcsi_open_txn"):
        s = ratio_spread(runs, "elapsed_s", "rcsi_open_txn_tf7006", "rcsi_open_txn")
        out.add("tf7006", f"TF 7006 run {s.text('.2f', '×')} the run without it", above(s, 1.0))
    else:
        out.missing("tf7006", "run with trace flag 7006")
    out.not_here("version_store", "PostgreSQL keeps old versions in the table itself; no version store"
                 if g.engine == "postgres" else "the version store's size is not read while the transaction is open",
                 "needs SQL Server 2022's version store size during the open transaction")
    return table(out.rows)
