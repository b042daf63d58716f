"""Verdict rows as data: what the article claimed, what was measured, where, the rule, the verdict.

Each chapter's ``claims.py`` returns a list of :class:`Claim`; :func:`table`
turns it into the frame a page shows.  The rule is written out so a reader
can check the verdict against the numbers beside it.

A verdict is decided in two steps, because an expert asks two questions:

1. *Direction*: does the measured quantity lie on the article's side of a
   threshold?  :func:`above` / :func:`below` answer with a :data:`DIRECTIONS`
   word from the interval over repetitions.
2. *Size*: is the measured size comparable with the published one at all
   (same engine, a comparable machine), and if so, is it within a stated
   factor?  :func:`judge` combines the direction with a :class:`Size`.

Only a claim whose direction holds *and* whose size was compared and
matched is *reproduced*.  A direction that holds where the size cannot be
compared (a C model, a PostgreSQL analogue, 2 CPUs against 40 cores) is
*direction reproduced*, and the row says why the size was not compared.
A ratio that moves the article's way (its interval lies on the article's
side of 1, no effect) but stops short of the claim's threshold is
*direction reproduced, weaker*, and so is one whose size was compared and
found smaller than the published one, outside the stated factor; a larger
one stays *direction reproduced*, and the size column says how far.
*Differs* is kept for a measurement that points the other way.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Iterable

import pandas as pd

WEAKER = "direction reproduced, weaker"
VERDICTS = ("reproduced", "direction reproduced", WEAKER, "differs", "inconclusive", "not testable here",
            "not testable with this recording")
DIRECTIONS = ("agrees", "weaker", "differs", "inconclusive", "not testable here", "not testable with this recording")
COLUMNS = ["claim", "published", "recording", "tested_on", "measured", "size", "rule", "verdict"]


def head(verdict: str) -> str:
    """The verdict word without its qualifier ("differs: size 9.5× the published" -> "differs")."""
    return str(verdict).split(":")[0].strip()


@dataclass(frozen=True)
class Claim:
    claim: str        # the article's claim, in the book's words
    published: str    # what the article reported, or "not printed in the article"
    measured: str     # what the recording shown here says
    rule: str         # how the verdict is decided from the numbers
    verdict: str      # one of VERDICTS, possibly followed by a short qualifier after ":"
    recording: str = ""   # the recording that tests it
    tested_on: str = ""   # where: "SQL Server 15.0 (16 CPUs)", "PostgreSQL 15 analogue (2 CPUs)", "C model (2 CPUs)"
    size: str = ""        # whether the size was compared, and how it came out, or why it was not

    def __post_init__(self) -> None:
        if head(self.verdict) not in VERDICTS:
            raise ValueError(f"claim {self.claim!r}: verdict {self.verdict!r}, expected one of {VERDICTS}")
        if head(self.verdict) in ("reproduced", "direction reproduced", WEAKER, "differs") and not self.tested_on:
            raise ValueError(f"claim {self.claim!r}: a {head(self.verdict)!r} verdict must say what it was tested on")
        if head(self.verdict) in ("reproduced", "direction reproduced") and not self.size:
            raise ValueError(f"claim {self.claim!r}: a {head(self.verdict)!r} verdict must say whether the size "
                             "was compared")


def table(claims: Iterable[Claim]) -> pd.DataFrame:
    rows = [asdict(c) for c in claims]
    return pd.DataFrame(rows, columns=COLUMNS)


# -- where a claim was tested ---------------------------------------------------------------------------------

def tested_on(view) -> str:
    """Where a measured recording ran, in words a skimmer cannot misread as a SQL Server result.

    ``view`` is a :class:`harness.recording.RecordingView` (or anything with
    ``engine``, ``logical_cpus`` and ``recording.engine``)."""
    cpus = getattr(view, "logical_cpus", None)
    on = f" on {int(cpus)} CPU{'s' if int(cpus) != 1 else ''}" if cpus else ""
    engine = getattr(view, "engine", None) or view.recording.engine["name"]
    version = str(view.recording.engine.get("version", "") or "")
    if engine == "native":
        return f"C model{on}"
    if engine == "postgres":
        major = version.split()[0].split(".")[0] if version else ""
        return f"PostgreSQL {major} analogue{on}".replace("  ", " ")
    if engine == "sqlserver":
        return f"SQL Server {version.split()[0] if version else ''}{on}".replace("  ", " ")
    return f"{engine}{on}"


# -- the size half of a verdict -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Size:
    """How the measured size stands against the published one.

    ``Size.not_comparable(why)`` when the platforms differ too much for sizes
    to mean anything side by side; ``Size.compare(published, measured, factor)``
    when they do: the measured interval must lie within ``factor`` times the
    published value, either way.
    """

    comparable: bool
    why: str = ""
    published: float = float("nan")
    measured: object = None   # a spread.Spread
    factor: float = 2.0
    unit: str = "×"

    @classmethod
    def not_comparable(cls, why: str) -> "Size":
        if not why:
            raise ValueError("a size that is not compared must say why")
        return cls(False, why=why)

    @classmethod
    def compare(cls, published: float, measured, factor: float = 2.0, unit: str = "×") -> "Size":
        if not factor > 1:
            raise ValueError(f"size factor {factor!r}: expected a number above 1")
        return cls(True, published=float(published), measured=measured, factor=float(factor), unit=unit)

    def outcome(self) -> tuple[str, str]:
        """("within" | "outside" | "straddles" | "not compared", words for the size column)."""
        if not self.comparable:
            return "not compared", f"not compared: {self.why}"
        s, p, f = self.measured, self.published, self.factor
        if s is None or s.n == 0:
            return "not compared", "not compared: nothing measured"
        lo, hi = p / f, p * f
        shown = f"measured {s.median:.3g}{self.unit} against published {p:.3g}{self.unit}, allowed {lo:.3g}–{hi:.3g}"
        if s.low >= lo and s.high <= hi:
            return "within", f"compared, within {f:g}×: {shown}"
        if s.high < lo or s.low > hi:
            return "outside", f"compared, outside {f:g}×: {shown}"
        return "straddles", f"compared, the interval {s.low:.3g}–{s.high:.3g} straddles the {f:g}× band: {shown}"


def judge(direction: str, size: Size) -> tuple[str, str]:
    """The final verdict and the size column, from a direction word (:func:`above` / :func:`below`) and a
    :class:`Size`.  Returns ``(verdict, size_text)``."""
    word = head(direction)
    if word not in DIRECTIONS:
        raise ValueError(f"direction {direction!r}: expected one of {DIRECTIONS}")
    outcome, text = size.outcome()
    if word == "weaker":  # the direction holds, short of the threshold: no size can match a claim it falls short of
        return WEAKER, text
    if word != "agrees":
        return direction, (text if word == "differs" else "")
    if outcome == "not compared":
        return "direction reproduced", text
    if outcome == "within":
        return "reproduced", text
    if outcome == "outside":
        # the article's direction holds: *differs* is kept for the other direction.  A smaller effect than the
        # published one (a ratio nearer 1, a count nearer 1: |log| smaller) is weaker; a larger one still reproduces
        # the direction, and the size column says how far
        m, p = size.measured.median, size.published
        if m > 0 and p > 0 and abs(math.log(m)) < abs(math.log(p)):
            return f"{WEAKER}: smaller than published, outside the stated factor", text
        return "direction reproduced: larger than published, outside the stated factor", text
    return "inconclusive: the direction holds, the size interval straddles the band", text


def missing_point(what: str) -> str:
    """The verdict of a claim whose deciding point the recording does not have, naming the point."""
    return f"not testable with this recording: {what}"


# -- directions from repeated measurements --------------------------------------------------------------------

MIN_REPETITIONS = 3  # fewer paired repetitions than this and no verdict is drawn
NO_EFFECT = 1.0      # a ratio of 1: the two variants did the same


def _rule(what: str, side: str, other: str, threshold: float, weaker: bool) -> str:
    """Plain sentences, at most about 29 words besides ``what`` (a rule is a footnote; a verdict drawn from
    fewer than :data:`MIN_REPETITIONS` repetitions says so itself)."""
    if weaker:
        low, high = sorted((NO_EFFECT, threshold))
        beyond = "below" if side == "above" else "above"
        return (f"Holds when the interval of {what} lies {side} {threshold:g}; weaker between {low:g} and {high:g}; "
                f"differs when it lies wholly at or {beyond} {NO_EFFECT:g}; inconclusive when it contains "
                f"{NO_EFFECT:g} or {threshold:g}.")
    return (f"The direction holds when the interval over repetitions of {what} lies {side} {threshold:g}, "
            f"differs when it lies {other} {threshold:g}, and is inconclusive when it straddles {threshold:g}.")


def rule_above(threshold: float, what: str = "the ratio", ratio: bool = True) -> str:
    """The words of :func:`above`'s rule, for a Claim's ``rule``."""
    return _rule(what, "above", "below", threshold, ratio and threshold > NO_EFFECT)


def rule_below(threshold: float, what: str = "the ratio", ratio: bool = True) -> str:
    """The words of :func:`below`'s rule."""
    return _rule(what, "below", "above", threshold, ratio and threshold < NO_EFFECT)


def _decide(s, inside: bool, outside: bool, threshold: float, short: bool = False,
            no_effect_inside: bool = False, ratio: bool = False) -> str:
    """``short``: the interval lies beyond the threshold but on the article's side of :data:`NO_EFFECT`.
    ``no_effect_inside``: a ratio's interval beyond the threshold that contains :data:`NO_EFFECT`: neither the
    article's direction nor the other is shown, so it is inconclusive, not *differs* (which is kept for an
    interval wholly on the other side of no effect)."""
    if s.n == 0:
        return "not testable with this recording: nothing measured at the deciding point"
    if s.n < MIN_REPETITIONS:
        return f"inconclusive: {s.n} repetition{'s' if s.n != 1 else ''}, the rule needs {MIN_REPETITIONS}"
    if inside:
        return "agrees"
    if outside and no_effect_inside:
        return f"inconclusive: the interval {s.low:.3g}–{s.high:.3g} straddles {NO_EFFECT:g}"
    if outside:
        return "weaker" if short else "differs"
    both_ = ratio and s.low <= NO_EFFECT <= s.high  # a ratio's interval that also holds no effect says so
    return (f"inconclusive: the interval {s.low:.3g}–{s.high:.3g} straddles "
            + (f"{NO_EFFECT:g} and {threshold:g}" if both_ and threshold > NO_EFFECT else
               f"{threshold:g} and {NO_EFFECT:g}" if both_ else f"{threshold:g}"))


def above(s, threshold: float, ratio: bool = True) -> str:
    """The direction of a claim that a quantity exceeds ``threshold``, from its :class:`spread.Spread`.
    ``ratio``: the quantity is a ratio of two variants, so an interval between 1 and a threshold above 1 moved
    the article's way, weaker than it claims, and one that contains 1 shows no direction (a share or a
    difference has no such point: ``ratio=False``)."""
    ratio = ratio and threshold > NO_EFFECT
    short = ratio and s.lies_above(NO_EFFECT)
    straddles = ratio and not s.lies_above(NO_EFFECT) and not s.lies_below(NO_EFFECT) and s.high > NO_EFFECT
    return _decide(s, s.lies_above(threshold), s.lies_below(threshold), threshold, short, straddles, ratio)


def below(s, threshold: float, ratio: bool = True) -> str:
    """The direction of a claim that a quantity stays under ``threshold`` (``ratio`` as for :func:`above`)."""
    ratio = ratio and threshold < NO_EFFECT
    short = ratio and s.lies_below(NO_EFFECT)
    straddles = ratio and not s.lies_below(NO_EFFECT) and not s.lies_above(NO_EFFECT) and s.low < NO_EFFECT
    return _decide(s, s.lies_below(threshold), s.lies_above(threshold), threshold, short, straddles, ratio)


def both(*directions: str) -> str:
    """A direction made of several tests: differs if any differs, agrees if all agree, else the first doubt."""
    heads = [v.split(":")[0] for v in directions]
    if "differs" in heads:
        return "differs"
    if all(h == "agrees" for h in heads):
        return "agrees"
    return next(v for v in directions if not v.startswith("agrees"))
