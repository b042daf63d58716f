"""The article's claims against the measured recording: rows of data, each with its rule."""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..shared.claims import Claim, table
from .spec import LABELS
from .tables import _tf7006_agrees, _tf7006_direction, curve_growth, elapsed_table, storage_long

RULES = {
    "An open snapshot transaction makes the same updates slower":
        "agrees when the held variant takes more than 1.2 x the elapsed time of its unheld twin",
    "Time per update grows with the versions that cannot be removed (quadratic total)":
        "agrees when the last chunk's time per update is over 2 x the first's and a linear fit has R² > 0.8",
    "Versions pile up while the transaction is open and go once it ends":
        "agrees when versions not removable at the end exceed 10 x those left after cleanup",
    "The table grows while versions are pinned, and cleanup gives the pages back":
        "agrees when pages at the end exceed 1.2 x the unheld run's and cleanup halves them",
    "SQL Server 2022 cleans version ghosts at statement level under an open RCSI transaction":
        "agrees when the TF 7006 run takes longer than the run without it (SQL Server recordings only)",
}


def verdicts(shown) -> pd.DataFrame:
    """The article's claims, the direction it reported, what this recording shows, and the rule."""
    measured = shown.measured
    el = elapsed_table([measured]).set_index("variant")
    growth = curve_growth(measured.curve).set_index("variant") if measured.curve is not None else pd.DataFrame()
    st = storage_long(measured).set_index(["variant", "phase"])
    rows = []

    def verdict(claim: str, published_dir: str, measured_dir: str, agree: bool | None) -> None:
        rows.append(Claim(claim=claim, published=published_dir, recording=measured.id, measured=measured_dir,
                          rule=RULES[claim],
                          verdict="not testable here" if agree is None else ("agrees" if agree else "differs")))

    if measured.engine == "postgres":
        base, held = "baseline", "open_snapshot"
    else:
        base, held = "rcsi", "rcsi_open_txn"
    if base in el.index and held in el.index:
        ratio = el.loc[held, "elapsed_s"] / el.loc[base, "elapsed_s"]
        verdict("An open snapshot transaction makes the same updates slower",
                "2019: over 4 min vs 1 min 22 s", f"{ratio:.1f}x slower ({LABELS[held]} vs {LABELS[base]})",
                bool(ratio > 1.2))
    if held in growth.index:
        g = growth.loc[held]
        verdict("Time per update grows with the versions that cannot be removed (quadratic total)",
                "k-th update skips k-1 ghost versions",
                f"{g['first_us']:.1f} -> {g['last_us']:.1f} µs per update, linear fit R² {g['r2']:.2f}",
                bool(g["growth"] > 2 and g["r2"] > 0.8))
    if (held, "after_run") in st.index and (held, "after_cleanup") in st.index:
        end, clean = st.loc[(held, "after_run")], st.loc[(held, "after_cleanup")]
        verdict("Versions pile up while the transaction is open and go once it ends",
                "123,455 ghost versions at the end; a few seconds after commit, 1",
                f"{int(end['not_removed']):,} not removable at the end; {int(clean['not_removed']):,} after cleanup",
                bool(end["not_removed"] > 10 * max(clean["not_removed"], 1)))
        base_end = st.loc[(base, "after_run")]["pages"] if (base, "after_run") in st.index else np.nan
        verdict("The table grows while versions are pinned, and cleanup gives the pages back",
                "823 leaf pages and 3 levels at the end; 2 pages seconds after the commit",
                f"{int(end['pages'])} pages at the end ({int(base_end)} without the open transaction); "
                f"{int(clean['pages'])} after cleanup",
                bool(end["pages"] > 1.2 * base_end and clean["pages"] < end["pages"] / 2))
    verdict("SQL Server 2022 cleans version ghosts at statement level under an open RCSI transaction",
            "2022: 1 min 32 s vs 4 min+ on 2019; TF 7006 turns it off",
            "measured only on a SQL Server 2022 recording" if measured.engine != "sqlserver"
            else _tf7006_direction(el), None if measured.engine != "sqlserver" else _tf7006_agrees(el))
    return table(rows)
