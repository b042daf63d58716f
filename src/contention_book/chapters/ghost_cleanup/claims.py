"""The article's claims against the measured recording: rows of data, each with its rule.

Every measured verdict is a ratio paired by repetition, decided by
:func:`shared.claims.above` on its interval; the published column is built
from the published recordings, or says the article did not print it.
"""
from __future__ import annotations

import pandas as pd

from ..shared.claims import Claim, above, rule_above, table
from ..shared.spread import ratio_spread, spread
from .spec import LABELS
from .tables import HELD, UNHELD, _timed_runs, growth_ratio, storage_by_repetition, storage_long

SLOWER, STEEPER, PILE_UP, GROWS = 1.2, 1.5, 10.0, 1.2
CLAIMS = {
    "slower": "An open snapshot transaction makes the same updates slower",
    "steeper": "Time per update grows with the versions that cannot be removed (quadratic total)",
    "pile_up": "Versions pile up while the transaction is open and go once it ends",
    "grows": "The table grows while versions are pinned",
    "tf7006": "SQL Server 2022 cleans version ghosts at statement level under an open RCSI transaction",
}
RULES = {
    CLAIMS["slower"]: rule_above(SLOWER, "the held run's elapsed time over its unheld twin's"),
    CLAIMS["steeper"]: rule_above(STEEPER, "the held run's growth in time per update (last tenth over first) "
                                           "divided by the unheld twin's growth"),
    CLAIMS["pile_up"]: rule_above(PILE_UP, "versions not removable at the end over those left after cleanup "
                                           "(at least 1)"),
    CLAIMS["grows"]: rule_above(GROWS, "the held run's pages at the end over the unheld twin's"),
    CLAIMS["tf7006"]: "agrees when the run with TF 7006 takes longer than the run without it "
                      "(SQL Server recordings with both variants only)",
}


def _published(published) -> dict[str, str]:
    """The published column, from the published recordings (what the article printed, and only that)."""
    out = {k: "not printed in the article" for k in CLAIMS}
    by_version = {g.recording.engine["version"].split(".")[0]: g for g in published}
    old = by_version.get("15")
    if old is not None:
        el = _timed_runs(old).set_index("variant")["elapsed_s"]
        if {"rcsi", "rcsi_open_txn"} <= set(el.index):
            out["slower"] = (f"2019: over {el['rcsi_open_txn']:.0f} s vs {el['rcsi']:.0f} s under RCSI "
                             f"(at least {el['rcsi_open_txn'] / el['rcsi']:.1f}×)")
        out["steeper"] = "the k-th update skips k−1 version ghosts (the article's model; no per-update timings)"
        st = storage_long(old).set_index(["variant", "phase"])
        if ("rcsi_open_txn", "after_run") in st.index:
            end = st.loc[("rcsi_open_txn", "after_run")]
            after = (f"{int(st.loc[('rcsi_open_txn', 'after_cleanup'), 'not_removed']):,} after cleanup"
                     if ("rcsi_open_txn", "after_cleanup") in st.index
                     else "after the commit: not printed in the article")
            out["pile_up"] = f"2019: {int(end['not_removed']):,} ghost versions at the end; {after}"
            rcsi = st.loc[("rcsi", "after_run"), "pages"] if ("rcsi", "after_run") in st.index else float("nan")
            out["grows"] = (f"2019: {int(end['pages']):,} pages in {int(end['levels'])} levels at the end, "
                            f"against {rcsi:,.0f} under RCSI alone")
    new = by_version.get("16")
    if new is not None:
        el = _timed_runs(new).set_index("variant")["elapsed_s"]
        if {"rcsi_open_txn"} <= set(el.index):
            out["tf7006"] = (f"2022: {el['rcsi_open_txn']:.0f} s with the open transaction vs over 4 min on 2019; "
                             "TF 7006 turns the change off (no time printed with it)")
    return out


def verdicts(shown) -> pd.DataFrame:
    """The article's claims, what it printed, what this recording shows with its spread, the rule, the verdict."""
    g = shown.measured
    pub = _published(shown.published)
    runs = _timed_runs(g)
    base, held = UNHELD[g.engine], HELD[g.engine]
    rows = []

    def add(key: str, measured: str, verdict: str) -> None:
        rows.append(Claim(claim=CLAIMS[key], published=pub[key], recording=g.id, measured=measured,
                          rule=RULES[CLAIMS[key]], verdict=verdict))

    pair = f"{LABELS[held]} vs {LABELS[base]}"
    s = ratio_spread(runs, "elapsed_s", held, base)
    add("slower", f"{s.text('.1f', '×')} slower ({pair})", above(s, SLOWER))
    if g.curve is not None:
        s = growth_ratio(g.curve, held, base)
        add("steeper", f"growth {s.text('.1f', '×')} the unheld run's", above(s, STEEPER))
    else:
        add("steeper", "this recording has no per-chunk timings", "not testable here: no per-chunk timings")
    st = storage_by_repetition(g)
    wide = st.pivot_table(index=["repetition", "variant"], columns="phase", values=["not_removed", "pages"])
    if ("not_removed", "after_cleanup") in wide.columns and held in wide.index.get_level_values("variant"):
        h = wide.xs(held, level="variant")
        piled = h[("not_removed", "after_run")] / h[("not_removed", "after_cleanup")].clip(lower=1)
        s = spread(piled)
        add("pile_up", f"{spread(h[('not_removed', 'after_run')]).text(',.0f')} not removable at the end, "
                       f"{spread(h[('not_removed', 'after_cleanup')]).text(',.0f')} after cleanup; ratio "
                       f"{s.text(',.0f', '×')}", above(s, PILE_UP))
    else:
        add("pile_up", "no storage statistics after cleanup in this recording", "not testable here: not recorded")
    frame = st[st["phase"] == "after_run"]
    s = ratio_spread(frame, "pages", held, base)
    add("grows", f"{s.text('.2f', '×')} the unheld run's pages at the end", above(s, GROWS))
    if g.engine != "sqlserver":
        add("tf7006", "measured only on a SQL Server 2022 recording", "not testable here: needs SQL Server 2022")
    else:
        s = ratio_spread(runs, "elapsed_s", "rcsi_open_txn_tf7006", "rcsi_open_txn")
        add("tf7006", f"TF 7006 run {s.text('.2f', '×')} the run without it", above(s, 1.0))
    return table(rows)
