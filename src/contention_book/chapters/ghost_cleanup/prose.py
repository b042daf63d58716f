"""Paragraphs whose sentences depend on which variants a recording holds: what the idle holders pinned, and what
the two controls did.  Built from the recording, so a recording without a variant says so instead of printing
"nan"; every number is the one the tables and verdicts use."""
from __future__ import annotations

import numpy as np

from .spec import LABELS
from .tables import HELD, UNPINNED, VACUUM_CONTROL, measured_numbers, pins_table


def _reps(n: int) -> str:
    return f"{n} repetition{'s' if n != 1 else ''}"


def pins_text(g) -> str:
    """What each idle holder showed in ``pg_stat_activity`` (PostgreSQL recordings)."""
    if g.engine != "postgres":
        return ""
    pins = pins_table(g)
    out = []
    rr, rc = LABELS[HELD["postgres"]], LABELS[UNPINNED["postgres"]]
    if rr in pins.index:
        r = pins.loc[rr]
        age = "" if np.isnan(r["xmin_age_end"]) else (
            f"; by the end of the loop that xmin was {r['xmin_age_end']:,.0f} transactions old")
        out.append(f"The idle REPEATABLE READ transaction showed a `backend_xmin` in {r['xmin_held']} of its "
                   f"{_reps(int(r['repetitions']))} and a `backend_xid` in {r['xid_held']}{age}.")
    if rc in pins.index:
        r = pins.loc[rc]
        out.append(f"The idle READ COMMITTED transaction showed a `backend_xmin` in {r['xmin_held']} of its "
                   f"{_reps(int(r['repetitions']))} and a `backend_xid` in {r['xid_held']}: it pinned nothing.")
    else:
        out.append("This recording has no idle READ COMMITTED run (it was made before that variant existed), so it "
                   "cannot show what such a transaction pins.")
    if pins.empty:
        out.insert(0, "This recording did not read what its holder pinned.")
    return " ".join(out)


def controls_text(g) -> str:
    """The timings of the idle READ COMMITTED holder and of the VACUUM control, against nothing held."""
    if g.engine != "postgres":
        return ""
    n = measured_numbers(g)
    runs = set(g.runs["variant"])
    out = []
    if UNPINNED["postgres"] in runs:
        out.append(f"With the idle READ COMMITTED transaction the loop took {n['m_rc_s_text']}, "
                   f"{n['m_rc_x_text']} the time with nothing held, paired repetition by repetition.")
    else:
        out.append("This recording has no run with an idle READ COMMITTED transaction.")
    if VACUUM_CONTROL["postgres"] in runs:
        out.append(f"With `VACUUM` after every chunk (its time included) it took {n['m_vacuum_s_text']}, "
                   f"{n['m_vacuum_x_text']} the time with nothing held, and the time per update grew "
                   f"{n['m_vacuum_growth_text']} over the run instead of {n['m_base_growth_text']}.")
    else:
        out.append("This recording has no run with `VACUUM` after every chunk, the control that removes dead index "
                   "entries as the loop goes.")
    return " ".join(out)
