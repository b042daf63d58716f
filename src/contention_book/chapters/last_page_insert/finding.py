"""The chapter's finding in words, glued into its "In short" opening: built from the verdict rows, so the
opening says what the Findings page says."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..shared.claims import head
from .claims import C, verdicts
from .tables import Prose
from .tables import key_numbers as table_numbers
from ..shared.memo import per_view

VERDICT_KEYS = {key: claim for key, claim in C.items()}


def _verdict_words(rows) -> dict[str, str]:
    by_claim = rows.set_index("claim")["verdict"]
    return {f"v_{key}": head(by_claim.get(claim, "not testable with this recording")) for key, claim in C.items()}


LABELS = {"queue": "queue at the last page (samples)", "last_page": "waited page is the rightmost leaf (pins)",
          "hash_rate": "hash-partitioned rate", "hash_waits": "its buffer-latch samples",
          "elimination": "lookup without elimination (pages)", "splits": "non-sequential key's leaf density",
          "optimized": "OPTIMIZE_FOR_SEQUENTIAL_KEY"}


def in_short(n: dict[str, Any], engine: str, rows=None) -> str:
    """The opening: the finding, the number that carries it, the action, then every verdict beside its number."""
    from ..shared.in_short import Markdown, number, verdict_list

    where = n["v_tested_on"]
    sqlcat = n.get("sqlcat_gain_pct", float("nan"))
    gain = f"{sqlcat:.0f}%" if isinstance(sqlcat, float) and np.isfinite(sqlcat) else "a published margin"
    how = ("the same B-tree mechanism under PostgreSQL's buffer content lock, not SQL Server" if engine == "postgres"
           else "the article's own tables and waits")
    numbers = {C["queue"]: n["q_seq_hot_text"] if n.get("q_seq_hot_text") != "not measured" else ""}
    if rows is not None and len(rows):
        m = rows.set_index("claim")["measured"]
        if C["elimination"] in m.index:
            ratio = str(m[C["elimination"]]).split("ratio ", 1)
            numbers[C["elimination"]] = number(ratio[1]) if len(ratio) == 2 else ""
    hashed = n["q_hash_vs_seq_text"] if n.get("q_hash_vs_seq_text") not in (None, "not measured") else ""
    found = (f"hash partitioning inserted {hashed} the sequential key's rows a second; the queue at the one "
             f"page (`LWLock:BufferContent` in {n['q_seq_hot']} of samples) is too short to repay the routing" if hashed and _short_queue(n)
             else f"hash partitioning inserted {hashed} the sequential key's rows a second" if hashed
             else "the recording holds no hash-partitioned design at the deciding point")
    lesson = ("on few cores the fixes cost more than they save"
              if _short_queue(n) else "spreading the inserts pays only where the queue is long")
    labels = {C[k]: v for k, v in LABELS.items()}
    listed = verdict_list(rows, labels, numbers) if rows is not None else ""
    return Markdown(
        "**The article:** when a clustered key only grows, inserts queue for the exclusive latch on the index's "
        f"last page (`PAGELATCH_EX`); hash partitioning raised a customer's insert rate by {gain} and removed those "
        f"waits. **Found here,** on a {where} at {n['m_nd_text']}: {found}. **For a DBA:** confirm the page first "
        f"(the queries at the end); {lesson}; on SQL Server 2019 and later `OPTIMIZE_FOR_SEQUENTIAL_KEY` is the "
        "cheaper first try (untested here; it can cost throughput where no convoy forms). "
        f"**Verdicts** (ratios: ÷ the sequential key): {listed}")


def _short_queue(n) -> bool:
    """Hash partitioning lost, or the sequential key's queue was too short for it to win (not testable here)."""
    return str(n["v_hash_rate"]).startswith(("differs", "not testable here"))


@per_view
def key_numbers(shown) -> dict[str, Any]:
    """Every number and verdict word the page glues: the tables' numbers, each claim's verdict word
    (``v_<claim key>``), where the claims were tested, and the "In short" text."""
    n = table_numbers(shown)
    rows = verdicts(shown)
    n.update(_verdict_words(rows))
    n["v_tested_on"] = str(rows["tested_on"].iloc[0]) if len(rows) else "no recording"
    n["lpi_in_short"] = in_short(n, shown.measured.engine, rows)
    # the pieces the notebook's "In short" glues between its own words (so only the findings stand out)
    engine = shown.measured.engine
    n["lpi_how"] = Prose("the same B-tree mechanism under PostgreSQL's buffer content lock, not SQL Server"
                    if engine == "postgres" else "the article's own tables and waits")
    n["lpi_lesson"] = Prose("on few cores the queue is short and the fixes cost more than they save"
                       if _short_queue(n) else "spreading the inserts pays only where the queue is long")
    n["v_hash_rate_text"] = n["v_hash_rate"] + (f" ({n['q_hash_vs_seq']} the sequential key's rate)"
                                                 if n["q_hash_vs_seq"] != "not measured" else "")
    return n
