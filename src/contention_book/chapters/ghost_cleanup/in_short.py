"""The chapter's opening finding ("In short"): the claim, what tested it, the verdicts in Findings' words, and
what a DBA should take away, built from the verdict rows and the key numbers so it never disagrees with them."""
from __future__ import annotations

from ..shared.claims import head
from .claims import CLAIMS


def in_short(shown, verdicts, numbers) -> str:
    """The admonition's MyST text (at most about 150 words)."""
    rows = verdicts.set_index("claim")
    word = {key: head(rows.loc[text, "verdict"]) for key, text in CLAIMS.items() if text in rows.index}
    where = rows["tested_on"].dropna()
    where = next((w for w in where if w), "this recording")
    n = numbers
    held = (f" take {n['m_held_x_text'].split(' (')[0]} as long" if n.get("m_held_x_text") else " slower")
    rc = (f" ({n['m_rc_x_text'].split(' (')[0]} the time)" if n.get("m_rc_x_text", "not recorded") != "not recorded"
          else "")
    def said(key: str, holds: str, neutral: str) -> str:
        verdict = word.get(key, "not tested")
        return f"{holds if verdict in ('reproduced', 'direction reproduced') else neutral}: *{verdict}*."

    found = " ".join([
        said("slower", f"the REPEATABLE READ holder made the loop{held}", "The REPEATABLE READ holder (SNAPSHOT's analogue)"),
        said("unpinned", f"The READ COMMITTED holder pinned nothing{rc}, as on 2022",
             "The READ COMMITTED holder (the article's RCSI one)"),
        said("unheld_ghosts", "With nothing held, dead index entries still slowed each update",
             "Whether dead index entries slow each update with nothing held"),
        f"SQL Server 2022's own behaviour: *{word.get('tf7006', 'not tested')}*.",
    ])
    found = found[0].upper() + found[1:]
    return (
        "```{admonition} In short\n:class: tip\n"
        "**The article:** under RCSI a key update leaves a *version ghost* that later scans must step over. "
        "On SQL Server 2019 an idle RCSI transaction kept every one of them, and the loop ran at least "
        f"{n['pub15_rcsi_open_txn_vs_rcsi']:.1f}× slower; SQL Server 2022 cleans them early, while SNAPSHOT "
        "isolation still pins them.\n\n"
        f"**Tested here** on a {where}, not on SQL Server: an idle READ COMMITTED transaction (the article's RCSI "
        "one) and an idle REPEATABLE READ transaction (SNAPSHOT's analogue).\n\n"
        f"**Found:** {found}\n\n"
        "**Take away:** find idle transactions that hold a snapshot, end them, and set a timeout.\n```"
    )
