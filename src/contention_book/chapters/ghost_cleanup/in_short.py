"""The chapter's opening finding ("In short"): the claim, what tested it, the verdicts in Findings' words, and
what a DBA should take away, built from the verdict rows and the key numbers so it never disagrees with them."""
from __future__ import annotations

import re

from .claims import CLAIMS


LABELS = {"slower": "time with a REPEATABLE READ holder", "unpinned": "time with a READ COMMITTED holder",
          "steeper": "growth per update", "pile_up": "versions pinned", "grows": "table size",
          "unheld_ghosts": "slowdown with nothing held (÷ VACUUM)", "tf7006": "SQL Server 2022's early cleanup",
          "version_store": "2022's version store"}


def in_short(shown, verdicts, numbers) -> str:
    """The admonition's MyST text: the finding, the number that carries it, the action, then every verdict beside
    its own number (at most about 190 words)."""
    from ..shared.in_short import verdict_list

    rows = verdicts.set_index("claim")
    where = rows["tested_on"].dropna()
    where = next((w for w in where if w), "this recording")
    n = numbers
    held = n.get("m_held_x_text", "").split(" (")[0]
    found = (f"an idle REPEATABLE READ transaction (SNAPSHOT's analogue) made the same loop take {held} as long, "
             "and an idle READ COMMITTED one (the article's RCSI holder) pinned nothing, as SQL Server 2022 does"
             if held else "the recording holds no held and unheld pair to compare")
    pile = rows["measured"].get(CLAIMS["pile_up"], "")
    m = re.match(r"([\d,]+) versions not removable at the end, ([\d,]+) after cleanup", str(pile))
    numbers_ = {CLAIMS["pile_up"]: f"{m.group(1)} at the end, {m.group(2)} after cleanup" if m else ""}
    listed = verdict_list(verdicts, {CLAIMS[k]: v for k, v in LABELS.items()}, numbers_)
    return (
        "```{admonition} In short\n:class: tip\n"
        "**The article:** under RCSI a key update leaves a *version ghost* that later scans must step over. "
        "On SQL Server 2019 an idle RCSI transaction kept every one of them, and the loop ran at least "
        f"{n['pub15_rcsi_open_txn_vs_rcsi']:.1f}× slower; SQL Server 2022 cleans them early, while SNAPSHOT "
        "isolation still pins them.\n\n"
        f"**Found here,** on a {where}: {found}.\n\n"
        "**For a DBA:** find idle transactions that hold a snapshot, end them, and set a timeout "
        "(PostgreSQL: `idle_in_transaction_session_timeout`).\n\n"
        f"**Verdicts** (ratios: held ÷ nothing held): {listed}\n```"
    )
