"""The chapter's finding in words, glued into its "In short" opening: built from the verdict rows, so the
opening says what the Findings page says."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..shared.claims import head
from .claims import C, verdicts
from .tables import Prose
from .tables import key_numbers as table_numbers

VERDICT_KEYS = {key: claim for key, claim in C.items()}


def _verdict_words(rows) -> dict[str, str]:
    by_claim = rows.set_index("claim")["verdict"]
    return {f"v_{key}": head(by_claim.get(claim, "not testable with this recording")) for key, claim in C.items()}


def in_short(n: dict[str, Any], engine: str) -> str:
    """At most about 150 words: the claim, what it was tested on, the verdicts, what a DBA should take."""
    where = n["v_tested_on"]
    sqlcat = n.get("sqlcat_gain_pct", float("nan"))
    gain = f"{sqlcat:.0f}%" if isinstance(sqlcat, float) and np.isfinite(sqlcat) else "a published margin"
    how = ("the same B-tree mechanism under PostgreSQL's buffer content lock, not SQL Server" if engine == "postgres"
           else "the article's own tables and waits")
    lesson = ("on few cores the queue is short and the fixes cost more than they save"
              if n["v_hash_rate"] == "differs" else "spreading the inserts pays only where the queue is long")
    ratio = f" ({n['q_hash_vs_seq']} the sequential key)" if n["q_hash_vs_seq"] != "not measured" else ""
    return (
        "The article: when a clustered key only grows, concurrent inserts queue for the exclusive latch on the "
        f"index's last page (PAGELATCH_EX), and hash partitioning the table raised a customer's insert rate by {gain} "
        f"and removed those waits. Tested here on: {where}, {how}, at {n['m_nd_text']}. Results: the queue at "
        f"the last page, {n['v_queue']}; the waited-for page is the rightmost leaf, {n['v_last_page']}; hash "
        f"partitioning raises the rate, {n['v_hash_rate']}{ratio}; a lookup "
        f"without partition elimination searches every partition, {n['v_elimination']}. For a DBA: confirm the "
        f"page first (the queries at the end); {lesson}; try OPTIMIZE_FOR_SEQUENTIAL_KEY before hash "
        "partitioning, which makes every lookup by key alone search all partitions."
    )


def key_numbers(shown) -> dict[str, Any]:
    """Every number and verdict word the page glues: the tables' numbers, each claim's verdict word
    (``v_<claim key>``), where the claims were tested, and the "In short" text."""
    n = table_numbers(shown)
    rows = verdicts(shown)
    n.update(_verdict_words(rows))
    n["v_tested_on"] = str(rows["tested_on"].iloc[0]) if len(rows) else "no recording"
    n["lpi_in_short"] = in_short(n, shown.measured.engine)
    # the pieces the notebook's "In short" glues between its own words (so only the findings stand out)
    engine = shown.measured.engine
    n["lpi_how"] = Prose("the same B-tree mechanism under PostgreSQL's buffer content lock, not SQL Server"
                    if engine == "postgres" else "the article's own tables and waits")
    n["lpi_lesson"] = Prose("on few cores the queue is short and the fixes cost more than they save"
                       if n["v_hash_rate"] == "differs" else "spreading the inserts pays only where the queue is long")
    n["v_hash_rate_text"] = n["v_hash_rate"] + (f" ({n['q_hash_vs_seq']} the sequential key's rate)"
                                                 if n["q_hash_vs_seq"] != "not measured" else "")
    return n
