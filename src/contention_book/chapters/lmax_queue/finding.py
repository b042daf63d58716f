"""The chapter's opening ("In short") and the verdict words it quotes: from the very rows the claims table and the
Findings page show, so the opening cannot disagree with them (tables <- claims <- finding)."""
from __future__ import annotations


import pandas as pd

from .claims import C, where


VERDICT_KEYS = {"ring_1p": "v_ring_1p", "no_growth": "v_no_growth", "delayed": "v_delayed",
                "non_durable": "v_non_durable", "ceiling": "v_ceiling", "ring_np": "v_ring_np"}


def verdict_words(rows: pd.DataFrame, shown=None) -> dict[str, str]:
    """The verdict word of the claims the chapter's opening quotes (glue keys ``v_...``), from the very rows the
    claims table and the Findings page show, so the opening cannot disagree with them; with ``shown``, also
    where each recording ran (``on_native``, ``on_db``), in the claims table's words."""
    out = {} if shown is None else {"on_native": where(shown.native), "on_db": where(shown.db)}
    for key, name in VERDICT_KEYS.items():
        part = rows[rows["claim"] == C[key]]
        out[name] = part["verdict"].iloc[0].split(":")[0] if len(part) else "not in this recording"
    if shown is not None:
        out["lmax_in_short"] = in_short(rows, shown)
    return out


def in_short(rows: pd.DataFrame, shown) -> str:
    """The opening: what was tested, what was found (the numbers the claims table prints), the action, then every
    verdict beside its own number (review: the lead claim's *inconclusive* was in the table only)."""
    from ..shared.in_short import Markdown, number, verdict_list

    m = rows.set_index("claim")["measured"] if len(rows) else pd.Series(dtype=str)
    ceiling, delayed = (number(m.get(C[k], "")) for k in ("ceiling", "delayed"))
    tested = ("**Tested:** whether the LMAX Disruptor's ring of pre-allocated slots beats a locked queue, in a "
              f"{where(shown.native)} and a {where(shown.db)} (no SQL Server was run).")
    found = []  # each number once: the verdicts below carry the ring's own lead over a locked queue
    if ceiling:
        found.append(f"every database design stayed far below an in-process ring (the C ring delivered {ceiling} "
                     "as many messages a second as the best one, which pays a transaction per message)")
    if delayed:
        found.append(f"taking the WAL flush off the commit path raised the ring table's rate {delayed}")
    found_text = ("**Found:** " + "; ".join(found) + "." if found else
                  "**Found:** this recording cannot set the in-process ring beside a database design.")
    action = ("**For a DBA:** check that the consumers keep up, then what they wait on; where each message commits "
              "on its own, the log flush comes before any latch.")
    listed = ""
    if len(rows):
        # every row of the claims table, so the untested are counted as the table has them; a judged claim
        # without a short name keeps its own
        short = {C[k]: v for k, v in VERDICT_LABELS.items()}
        labels = {str(c): short.get(str(c), str(c)) for c in rows["claim"]}
        listed = f" **Verdicts:** {verdict_list(rows, labels, name_untested=False)}"
    return Markdown(f"{tested} {found_text} {action}{listed}")


# the claims the opening names, in the claims table's words made short (the untested are counted, not named)
VERDICT_LABELS = {"ring_1p": "ring over a locked queue, 1 producer", "ring_np": "with several producers",
                  "false_sharing": "false sharing", "atomic": "contended atomic add",
                  "no_growth": "the ring does not grow (the book's own check)",
                  "delayed": "WAL flush off the commit path",
                  "non_durable": "UNLOGGED beyond that", "ceiling": "the in-process ceiling"}
