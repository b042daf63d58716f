"""The chapter's opening ("In short") and the verdict words it quotes: from the very rows the claims table and the
Findings page show, so the opening cannot disagree with them (tables <- claims <- finding)."""
from __future__ import annotations

import re

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


IN_SHORT_LABELS = {"ceiling": "C ring ÷ best database design", "ring_1p": "C ring ÷ locked queue",
                   "ring_np": "several producers", "false_sharing": "false sharing",
                   "atomic": "contended ÷ private atomic", "no_growth": "queue table's dead tuples",
                   "delayed": "asynchronous ÷ flushed commits", "non_durable": "UNLOGGED ÷ logged ring",
                   "v1_knee": "v1's knee", "v2": "v2", "v3": "v3's rate", "spinlock": "spinlocks"}


def in_short(rows: pd.DataFrame, shown) -> str:
    """The opening: the finding, the number that carries it, the action, then every verdict beside its number."""
    from ..shared.in_short import Markdown, number, verdict_list

    m = rows.set_index("claim")["measured"] if len(rows) else pd.Series(dtype=str)
    ceiling = number(m.get(C["ceiling"], ""))
    numbers = {}
    grow = re.search(r"naive queue ([\d,]+) .*?dead tuples, ([^ (]+)", str(m.get(C["no_growth"], "")))
    numbers[C["no_growth"]] = f"{grow.group(1)}, {grow.group(2)} the ring's" if grow else ""
    found = (f"the C ring delivered {ceiling} (unpaired) as many messages a second as the best database design, "
             "which pays "
             "a transaction per message. The ring table's lead over the queue table is not like for like (the "
             "queue table's producer outran its consumer several times over)" if ceiling
             else "this recording cannot set the in-process ring beside a database design")
    return Markdown(
        "**The article:** a queue rebuilt in SQL Server as a ring of pre-created slots on In-Memory OLTP leaves a "
        "queue table's latches and locks behind; spinlocks then limit it. **Found here,** with no SQL Server, on a "
        f"{where(shown.native)} and a {where(shown.db)}: {found}. **For a DBA:** check that the consumers keep up, "
        f"then what they wait on. **Verdicts:** "
        f"{verdict_list(rows, {C[k]: v for k, v in IN_SHORT_LABELS.items()}, numbers)}")
