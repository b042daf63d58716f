"""The spread of repeated measurements: a median with a 95% interval, and ratios between paired variants.

Why a module of our own: the book needs one rule, stated once, for every
table, figure and verdict.  With five or more repetitions the interval is a
percentile bootstrap of the median (seeded, so a page rebuilds the same
numbers); with fewer it is the range of what was measured (min to max),
because a bootstrap of two or three values says nothing the values do not.
numpy does the resampling; scipy.stats.bootstrap would be the library
choice, but the book does not otherwise need scipy.

Ratios between variants are paired by repetition: variants run interleaved
(A B C, A B C, ...), so repetition k of A and of B ran side by side on the
same machine state, and the ratio of the pair cancels most of the drift.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

CONFIDENCE = 0.95
BOOTSTRAP_FROM = 5       # fewer repetitions than this: the interval is min-max
RESAMPLES = 4000
SEED = 20261124


@dataclass(frozen=True)
class Spread:
    """A median with its interval; ``method`` says how the interval was made."""

    median: float
    low: float
    high: float
    n: int
    method: str  # "bootstrap 95%", "min-max", "one run" or "none"

    def lies_above(self, threshold: float) -> bool:
        return self.n > 0 and self.low > threshold

    def lies_below(self, threshold: float) -> bool:
        return self.n > 0 and self.high < threshold

    def text(self, fmt: str = ",.1f", unit: str = "") -> str:
        """'12.3× (11.0–13.5)': the number a page prints, with its spread, in the book's one convention (stated
        once, on the Findings page: ``harness.book_pages.INTERVALS``): the median over repetitions, then its 95% bootstrap
        interval in brackets; with fewer than :data:`BOOTSTRAP_FROM` repetitions the brackets say "range" and how
        many runs, since they hold the lowest and highest measured.  When every run printed the same (the interval's
        ends round alike), it says so instead of repeating the number twice.

        ``fmt="fraction"`` writes a small ratio as a reader says it, ``1/22,000`` rather than
        ``4.5e-05`` (two significant digits in the denominator; 0.1 and above as plain numbers); ``fmt="sig"``
        writes two significant digits and never an exponent (``0.025``, ``15``, ``1,900``)."""
        if self.n == 0:
            return "not measured"
        bare = {"fraction": _fraction, "sig": _sig}.get(fmt) or (lambda v: f"{v:{fmt}}")
        if unit == "×" and fmt != "fraction":  # a ratio's bound is never rounded onto "no effect" (0.98 is not 1.0)
            plain, one = bare, bare(1.0)
            bare = (lambda v: f"{v:.2f}" if v != 1 and plain(v) == one else plain(v))
        first = bare(self.median) + ("" if fmt == "fraction" else unit)  # the unit once, after the median
        if self.n == 1:
            return f"{first} (one run)"
        if bare(self.low) == bare(self.high):  # "1.16× (1.16–1.16)" reads as a typo: the runs agreed to the digit shown
            return f"{first} (the same in all {self.n} runs)"
        if self.method.startswith("bootstrap"):
            return f"{first} ({bare(self.low)}–{bare(self.high)})"
        return f"{first} (range {bare(self.low)}–{bare(self.high)}, {self.n} runs)"


def _sig(v: float) -> str:
    return f"{float(f'{v:.2g}'):,g}"


def _fraction(v: float) -> str:
    if 0 < v < 0.1:
        return f"1/{float(f'{1 / v:.2g}'):,.0f}"
    return f"{v:.2g}"


@lru_cache(maxsize=None)
def _draws(n: int) -> np.ndarray:
    """The bootstrap's resampled positions for ``n`` values, drawn once per ``n``: they depend on the seed and
    ``n`` alone, and a page asks for hundreds of intervals (the draws were most of a chapter's arithmetic)."""
    draws = np.random.default_rng(SEED).integers(0, n, size=(RESAMPLES, n))
    draws.flags.writeable = False
    return draws


def spread(values: Iterable[float]) -> Spread:
    """Median and 95% interval of repeated measurements; NaN values are dropped."""
    x = np.asarray([v for v in values if v is not None], dtype=float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return Spread(np.nan, np.nan, np.nan, 0, "none")
    med = float(np.median(x))
    if n == 1:
        return Spread(med, med, med, 1, "one run")
    if n < BOOTSTRAP_FROM:
        return Spread(med, float(x.min()), float(x.max()), n, "min-max")
    drawn = np.sort(x[_draws(n)], axis=1)  # the same resamples as rng.choice(x, (RESAMPLES, n)) with rng seeded
    medians = drawn[:, n // 2] if n % 2 else (drawn[:, n // 2 - 1] + drawn[:, n // 2]) / 2  # np.median's values
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(medians, [tail, 100 - tail])
    return Spread(med, float(low), float(high), n, "bootstrap 95%")


def summarize(frame: pd.DataFrame, by: Sequence[str], value: str) -> pd.DataFrame:
    """Per group: median, low, high, n and the interval's method, for one column over repetitions."""
    rows = []
    for key, part in frame.groupby(list(by), sort=True):
        key = key if isinstance(key, tuple) else (key,)
        s = spread(pd.to_numeric(part[value], errors="coerce"))
        rows.append({**dict(zip(by, key)), "median": s.median, "low": s.low, "high": s.high, "n": s.n,
                     "interval": s.method})
    return pd.DataFrame(rows, columns=[*by, "median", "low", "high", "n", "interval"])


def paired_ratios(frame: pd.DataFrame, value: str, numerator: str, denominator: str,
                  where: dict | None = None, variant: str = "variant", pair: str = "repetition",
                  difference: bool = False) -> pd.Series:
    """value(numerator) / value(denominator), one ratio per repetition both variants ran in.

    ``where`` narrows the rows first (for example ``{"sessions": 8}``).  A
    frame without the ``pair`` column is one repetition.  ``difference``
    subtracts instead, for a quantity the baseline may not have at all (spins
    of a lock that never spins).
    """
    part = frame
    for col, want in (where or {}).items():
        part = part[part[col] == want]
    if pair not in part.columns:
        part = part.assign(**{pair: 0})
    # pivot_table(index=pair, columns=variant, values=value, aggfunc="median"), without its all-NaN columns,
    # at a quarter of its cost (a chapter asks for dozens of ratios)
    wide = part.groupby([pair, variant])[value].median().unstack(variant).dropna(axis=1, how="all")
    if numerator not in wide.columns or denominator not in wide.columns:
        return pd.Series(dtype=float)
    out = wide[numerator] - wide[denominator] if difference else wide[numerator] / wide[denominator]
    return out.dropna()


def ratio_spread(frame: pd.DataFrame, value: str, numerator: str, denominator: str,
                 where: dict | None = None, **kw) -> Spread:
    """The spread of :func:`paired_ratios`."""
    return spread(paired_ratios(frame, value, numerator, denominator, where, **kw))
