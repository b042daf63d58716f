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


# -- verdicts from repeated measurements --------------------------------------------------------------------

MIN_REPETITIONS = 3  # fewer paired repetitions than this and no verdict is drawn


def rule_above(threshold: float, what: str = "the ratio") -> str:
    """The words of :func:`above`'s rule, for a Claim's ``rule``."""
    return (f"agrees when the interval over repetitions of {what} lies above {threshold:g}; differs when it lies "
            f"below; inconclusive when it straddles {threshold:g} or fewer than {MIN_REPETITIONS} repetitions ran")


def rule_below(threshold: float, what: str = "the ratio") -> str:
    """The words of :func:`below`'s rule."""
    return (f"agrees when the interval over repetitions of {what} lies below {threshold:g}; differs when it lies "
            f"above; inconclusive when it straddles {threshold:g} or fewer than {MIN_REPETITIONS} repetitions ran")


def _decide(s, inside: bool, outside: bool, threshold: float) -> str:
    if s.n == 0:
        return "not testable here: nothing measured"
    if s.n < MIN_REPETITIONS:
        return f"inconclusive: {s.n} repetition{'s' if s.n != 1 else ''}, the rule needs {MIN_REPETITIONS}"
    if inside:
        return "agrees"
    if outside:
        return "differs"
    return f"inconclusive: the interval {s.low:.3g}–{s.high:.3g} straddles {threshold:g}"


def above(s, threshold: float) -> str:
    """The verdict of a claim that a quantity exceeds ``threshold``, from its :class:`spread.Spread`."""
    return _decide(s, s.lies_above(threshold), s.lies_below(threshold), threshold)


def below(s, threshold: float) -> str:
    """The verdict of a claim that a quantity stays under ``threshold``."""
    return _decide(s, s.lies_below(threshold), s.lies_above(threshold), threshold)
