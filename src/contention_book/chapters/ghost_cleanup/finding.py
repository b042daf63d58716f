"""The chapter's opening and its paragraphs that depend on the variants a recording holds.

The opening ("In short") gives the claim, what tested it, the verdicts in Findings' words and what a DBA should
take away, built from the verdict rows and the key numbers so it never disagrees with them.  The paragraphs (what
the idle holders pinned, what the two controls did) are built from the recording, so a recording without a variant
says so instead of printing "nan"; every number is the one the tables and verdicts use."""
from __future__ import annotations

import re

import numpy as np

from .claims import CLAIMS
from .spec import LABELS
from .tables import HELD, NO_PAIR, UNHELD, UNPINNED, VACUUM_CONTROL, measured_numbers, pins_table, set_aside

VERDICT_LABELS = {"slower": "time with a REPEATABLE READ holder", "unpinned": "time with a READ COMMITTED holder",
                  "steeper": "growth per update", "pile_up": "versions pinned", "grows": "table size",
                  "unheld_ghosts": "per-update growth, nothing held ÷ VACUUM", "tf7006": "SQL Server 2022's early cleanup",
                  "version_store": "2022's version store"}


def in_short(shown, verdicts, numbers) -> str:
    """The admonition's MyST text: the finding with the one number that carries it (in bold), the action, then every
    verdict beside its own number (at most about 190 words).  What was tested is said inside the finding."""
    from ..shared.in_short import verdict_list

    rows = verdicts.set_index("claim")
    where = rows["tested_on"].dropna()
    where = next((w for w in where if w), "this recording")
    n = numbers
    held = n.get("m_held_x_text", "").split(" (")[0]
    article = f"the article's SQL Server 2019: at least {n['pub15_rcsi_open_txn_vs_rcsi']:.1f}× with an open RCSI " \
              "transaction"
    found = (f"an idle transaction holding a snapshot makes every update of a hot row step over the versions it pins: "
             f"on a {where}, an idle REPEATABLE READ holder (SNAPSHOT's analogue) made {n['m_updates']:,} key updates "
             f"of one row take **{held}** as long ({article}). An idle READ COMMITTED holder pinned nothing, as an "
             "RCSI one pins no ghosts on SQL Server 2022"
             if held and held != "not measured" else
             f"the recording holds no held and unheld pair to compare ({article})")
    pile = rows["measured"].get(CLAIMS["pile_up"], "")
    m = re.match(r"([\d,]+) versions not removable at the end, ([\d,]+) after cleanup", str(pile))
    numbers_ = {CLAIMS["pile_up"]: f"{m.group(1)} at the end, {m.group(2)} after cleanup" if m else ""}
    unpinned = str(rows["measured"].get(CLAIMS["unpinned"], ""))
    if unpinned.startswith(NO_PAIR):
        numbers_[CLAIMS["unpinned"]] = ("no pair of runs free of autovacuum" if set_aside(shown.measured) else
                                        "no pair of runs")
    listed = verdict_list(verdicts, {CLAIMS[k]: v for k, v in VERDICT_LABELS.items()}, numbers_)
    return (
        "```{admonition} In short\n:class: tip\n"
        f"**Found:** {found}.\n\n"
        "**For a DBA:** find idle transactions that hold a snapshot, end them, and set a timeout "
        "(PostgreSQL: `idle_in_transaction_session_timeout`).\n\n"
        f"**Verdicts** (ratios: held ÷ nothing held): {listed}\n```"
    )


def _reps(n: int) -> str:
    return f"{n} repetition{'s' if n != 1 else ''}"


def _n(x: float, what: str) -> str:
    return f"{x:,.0f} {what}{'s' if round(x) != 1 else ''}"


def _has(n: dict, *keys: str) -> bool:
    return all(not (isinstance(n.get(k), float) and np.isnan(n[k])) for k in keys)


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
            f"; by the end of the loop that xmin was {_n(r['xmin_age_end'], 'transaction')} old")
        out.append(f"The idle REPEATABLE READ transaction showed a `backend_xmin` in {r['xmin_held']} of its "
                   f"{_reps(int(r['repetitions']))} and a `backend_xid` in {r['xid_held']}{age}.")
    if rc in pins.index:
        r = pins.loc[rc]
        out.append(f"The idle READ COMMITTED transaction showed a `backend_xmin` in {r['xmin_held']} of its "
                   f"{_reps(int(r['repetitions']))} and a `backend_xid` in {r['xid_held']}: it pinned nothing.")
    else:
        out.append("This recording has no run with an idle READ COMMITTED transaction, so it cannot show what such "
                   "a transaction pins.")
    if pins.empty:
        out.insert(0, "This recording did not read what its holder pinned.")
    return " ".join(out)


def controls_text(g) -> str:
    """The timings of the idle READ COMMITTED holder and of the VACUUM control, against nothing held."""
    if g.engine != "postgres":
        return ""
    n = measured_numbers(g)
    runs = set(g.runs["variant"])
    base = UNHELD["postgres"] in runs
    out = [autovacuum_text(g)] if autovacuum_text(g) else []
    if UNPINNED["postgres"] in runs:
        if not base:
            vs = ""
        elif n["m_rc_pairs"] == 0:
            vs = (". No repetition is left in which autovacuum reached neither that run nor the one with nothing held"
                  if set_aside(g, UNPINNED["postgres"], UNHELD["postgres"]) else
                  ". No repetition holds both that run and the one with nothing held")
            vs += f" ({n['m_base_s_text']}), so no paired ratio can be given: the comparison is inconclusive"
        else:
            vs = f", {n['m_rc_x_text']} the time with nothing held (paired repetition by repetition)"
        out.append(f"With the idle READ COMMITTED transaction the loop took {n['m_rc_s_text']}{vs}.")
    else:
        out.append("This recording has no run with an idle READ COMMITTED transaction.")
    if VACUUM_CONTROL["postgres"] in runs:
        vs = f", {n['m_vacuum_x_text']} the time with nothing held" if base else ""
        grew = (f", and the time per update grew {n['m_vacuum_growth_text']} over the run instead of "
                f"{n['m_base_growth_text']}" if base and _has(n, "m_vacuum_growth", "m_base_growth") else "")
        out.append(f"With `VACUUM` after every chunk (its time included) it took {n['m_vacuum_s_text']}{vs}{grew}.")
    else:
        out.append("This recording has no run with `VACUUM` after every chunk, the control that removes dead index "
                   "entries as the loop goes.")
    return " ".join(out)


def autovacuum_text(g) -> str:
    """Which runs autovacuum reached mid-loop (recordings.vacuumed_during_run), why that is known, and how many runs
    of each setting remain; empty when none was set aside."""
    hit = g.tables.get("runs_vacuumed")
    if hit is None or hit.empty:
        return ""
    kept = g.runs.groupby("variant")["repetition"].nunique()
    parts, left = [], []
    for variant, part in hit.groupby("variant", sort=False):
        reps = sorted(int(r) + 1 for r in part["repetition"])
        words = ", ".join(map(str, reps[:-1])) + (" and " if len(reps) > 1 else "") + str(reps[-1])
        parts.append(f"{LABELS.get(variant, variant)}, repetition{'s' if len(reps) > 1 else ''} {words}")
        remain = int(kept.get(variant, 0))
        left.append(f"{remain} of {remain + len(reps)} ({LABELS.get(variant, variant)})")
    counted = "autovacuum_during_run" in (g.by_repetition("relation") if g.relation_stats is not None else {})
    how = ("the table's autovacuum count rose during the loop" if counted else
           "these runs ended with freed line pointers, deleted index pages or fewer line pointers in use than row "
           "versions written, which only VACUUM does")
    return (f"Autovacuum, on for this recording, reached the test table mid-loop in "
            f"{_n(len(hit), 'run')} ({'; '.join(parts)}): {how}. They enter no time, ratio, growth or size on "
            f"this page; {' and '.join(left)} remain.")


def measured_text(g) -> str:
    """The opening of "Measured here": the recording, the held and unheld timings, the cost model's count."""
    n = measured_numbers(g)
    runs = set(g.runs["variant"])
    held, base = HELD[g.engine], UNHELD[g.engine]
    times = "once" if n["m_repetitions"] == 1 else f"{n['m_repetitions']} times"
    text = (f"The recording shown here is **{n['m_engine']}**: {_n(n['m_updates'], 'update')} per setting, each "
            f"setting run {times}, with the settings interleaved. ")
    if held in runs and base in runs:
        text += (f"The held setting (*{n['m_held_label']}*) took {n['m_held_s_text']}, against {n['m_base_s_text']} "
                 f"for *{n['m_base_label']}*. Paired repetition by repetition, the held run took {n['m_held_x_text']} "
                 "as long. ")
    else:
        missing = " and ".join(f"*{LABELS[v]}*" for v in (held, base) if v not in runs)
        text += f"It has no run with {missing}, so it cannot set the held run beside the unheld one. "
    text += (f"If nothing can be removed, the cost model predicts {n['m_ghost_visits']:,} dead versions stepped over "
             "in all.")
    return text


def growth_text(g) -> str:
    """The cost model's test: how time per update grew with and without the held horizon."""
    n = measured_numbers(g)
    if not _has(n, "m_held_growth", "m_base_growth"):
        return ("This recording cannot test the cost model: it needs per-chunk timings (at least three chunks) of "
                f"both *{LABELS[HELD[g.engine]]}* and *{LABELS[UNHELD[g.engine]]}*.")
    # The growth is each repetition's last tenth over its own first tenth, then the median over repetitions: not the
    # ratio of the two medians printed beside it, and the sentence says which.
    return (f"The figure below tests the model, chunk by timed chunk. With the horizon held, the time per update rose "
            f"from a median of {n['m_held_first_us']:,.1f} µs in the first tenth of the chunks to "
            f"{n['m_held_last_us']:,.1f} µs in the last; the growth, taken in each repetition (its last tenth over its "
            f"first), had a median of {n['m_held_growth_text']}, and a straight line fits it with a median R² of "
            f"{n['m_held_r2']:.2f}. With nothing held the medians were {n['m_base_first_us']:,.1f} and "
            f"{n['m_base_last_us']:,.1f} µs, and the growth, taken the same way, {n['m_base_growth_text']}. That "
            "control grows too, so the test is whether holding the horizon makes the growth steeper: per repetition "
            f"the held run's growth was {n['m_growth_ratio_text']} the control's.")


def storage_text(g) -> str:
    """Dead tuples and pages with the horizon held, at the end and after cleanup."""
    n = measured_numbers(g)
    if not _has(n, "m_held_after_run_dead", "m_held_after_cleanup_dead"):
        return f"This recording has no storage statistics for *{LABELS[HELD[g.engine]]}* at the end and after cleanup."
    if g.engine != "postgres":
        return (f"With the transaction open, the run ended with {_n(n['m_held_after_run_dead'], 'ghost')} in "
                f"{_n(n['m_held_after_run_pages'], 'page')}; after the ghost cleanup task had run, "
                f"{n['m_held_after_cleanup_dead']:,.0f} remained, in {_n(n['m_held_after_cleanup_pages'], 'page')}.")
    text = (f"With the horizon held, the run ended with {_n(n['m_held_after_run_dead'], 'dead tuple')} still stored, "
            f"in {_n(n['m_held_after_run_pages'], 'page')} of heap and index. Once the holding transaction ended and "
            f"`VACUUM` ran, {n['m_held_after_cleanup_dead']:,.0f} remained, in "
            f"{_n(n['m_held_after_cleanup_pages'], 'page')}: `VACUUM` makes the space reusable but gives pages back "
            "only when they are empty and at the end of the file.")
    if _has(n, "m_base_after_run_pages"):
        text += (f" With nothing held the run ended in {_n(n['m_base_after_run_pages'], 'page')}, not far fewer: "
                 "there the heap fills up with dead line pointers instead of dead tuples, and the index holds as many "
                 "entries.")
    return text
