"""The verdicts an "In short" box lists: each claim's short name, the one number that decides it, its verdict.

Why a module: every chapter opens with the same shape (the finding, its number, the action, then every verdict
beside its own number), and the number must be the one the verdict table prints, never retyped.  The number is
read from the row's ``measured`` text: the first median with its interval, "8.2× (8.0×–8.4×)" (the book's one
interval convention, stated on the Findings page).  Claims that could not be tested are named (or counted) together
at the end, without a number: what was measured without the condition a claim needs tests nothing, and a ratio beside it
reads as a result (the claims table says what was measured and why it decides nothing).
"""
from __future__ import annotations

import re
from typing import Mapping

import pandas as pd

from .claims import head

_MEDIAN = re.compile(r"[^\s(]+ \((?:(?:range |95% interval )?[^()–]*–[^()]*|the same in all \d+ runs)\)")
UNTESTED = ("not testable here", "not testable with this recording")


def number(measured: str) -> str:
    """The first median and its interval in a verdict row's measured text ("growth 8.2× (8.0×–8.4×) slower"
    -> "8.2× (8.0×–8.4×)"), or "" when it has none."""
    m = _MEDIAN.search(str(measured))
    if not m:
        return ""
    median, _, inside = m.group(0).partition(" (")
    if inside.startswith("the same in all"):  # spread.Spread.text when every run printed alike
        return median
    ends = inside.rstrip(")").removeprefix("range ").removeprefix("95% interval ").split(",")[0].split("–")
    bare = [re.sub(r"[^\d./]", "", e) for e in (median, *ends)]
    return median if len(set(bare)) == 1 else m.group(0)  # 6.2× (6.2–6.2) is just 6.2×


def verdict_list(rows: pd.DataFrame, labels: Mapping[str, str], numbers: Mapping[str, str] | None = None,
                 name_untested: bool = True) -> str:
    """"label, number: *verdict*; ..." for every row in ``labels`` (claim -> short name, in that order), then
    "not testable here: a, b" for the rest.  ``numbers`` overrides the number read from a row (claim -> text;
    "" for none).  A claim in ``labels`` that the rows lack is named as not testable with this recording.
    ``name_untested=False`` counts the untested instead of naming them ("*Not testable here*: 7 claims; the claims
    table says why"): where most claims went untested, their names would fill the box, and the table holds them."""
    by_claim = {str(r["claim"]): r for _, r in rows.iterrows()}
    numbers = numbers or {}
    judged, untested = [], {}
    for claim, label in labels.items():
        row = by_claim.get(claim)
        word = head(row["verdict"]) if row is not None else "not testable with this recording"
        n = numbers.get(claim, number(row["measured"])) if row is not None else ""
        if word in UNTESTED:  # named with the others at the end, without a number
            untested.setdefault(word, []).append(label)
            continue
        judged.append(f"{label}{', ' + n if n else ''}: *{word}*")
    parts = ["; ".join(judged)] if judged else []
    if name_untested:
        parts += [f"*{word[:1].upper() + word[1:]}*: {', '.join(names)}" for word, names in untested.items()]
    else:
        more = " more" if judged else ""
        parts += [f"*{word[:1].upper() + word[1:]}*: {len(names)}{more} claim{'s' if len(names) != 1 else ''}"
                  for word, names in untested.items()]
        if untested:
            parts[-1] += "; the claims table says why"
    return ". ".join(parts) + "." if parts else ""


class Markdown(str):
    """An "In short" text: plain text that offers itself as Markdown, so ``{glue:md}`` pastes it as prose (with
    its italic verdict words) where ``{glue:text}`` would show the asterisks."""

    def _repr_markdown_(self) -> str:
        return str(self)
