"""Verdict rows as data: what the article claimed, what was measured, the rule, the verdict.

Each chapter's ``claims.py`` returns a list of :class:`Claim`; :func:`table`
turns it into the frame a page shows.  The rule is written out so a reader
can check the verdict against the numbers beside it.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Iterable

import pandas as pd

VERDICTS = ("agrees", "differs", "inconclusive", "not testable here")


@dataclass(frozen=True)
class Claim:
    claim: str        # the article's claim, in the book's words
    published: str    # what the article reported, or "not printed in the article"
    measured: str     # what the recording shown here says
    rule: str         # how the verdict is decided from the numbers
    verdict: str      # one of VERDICTS, possibly followed by a short qualifier after ":"
    recording: str = ""  # the recording that tests it

    def __post_init__(self) -> None:
        head = self.verdict.split(":")[0].strip()
        if head not in VERDICTS:
            raise ValueError(f"claim {self.claim!r}: verdict {self.verdict!r}, expected one of {VERDICTS}")


def table(claims: Iterable[Claim]) -> pd.DataFrame:
    rows = [asdict(c) for c in claims]
    return pd.DataFrame(rows, columns=["claim", "published", "recording", "measured", "rule", "verdict"])
