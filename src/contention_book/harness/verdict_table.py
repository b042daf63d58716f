"""Verdict rows as a table a skimmer can read in one pass: where each claim was tested, whether its size was
compared, the verdict, and the rule that decides it as a numbered note under the table.

A rule runs to 35 to 60 words; as a column it made every row eight lines tall.  Here no cell holds more than
:data:`MAX_CELL_WORDS` words: the rule, and any other text longer than that, becomes a note the cell links
to, and rows that share a rule share its note.  Rows saved before a column existed (an older chapter's
``verdicts.json``) show "—" there, with a note saying so.
"""
from __future__ import annotations

import html
import re
from typing import Iterable, Sequence

import pandas as pd

MAX_CELL_WORDS = 40
CLAUSE_WORDS = 8  # a long cell's text before its first colon stands alone only if it says this much
MISSING = "—"
LABELS = {"chapter": "chapter", "claim": "claim", "published": "published", "recording": "recording",
          "tested_on": "tested on", "measured": "measured", "size": "size compared", "verdict": "verdict"}
# What the verdict words mean, for the top of the Findings page (chapters link to the glossary instead).
VOCABULARY = (
    ("reproduced", "the direction holds and the measured size lies within a stated factor of the published one, "
                   "on a platform where the two sizes can be set side by side."),
    ("direction reproduced", "the direction holds, but the sizes cannot be compared (a C model or a PostgreSQL "
                             "analogue against SQL Server, 2 CPUs against a large server), or the measured effect "
                             "is larger than the published one by more than the stated factor; the row says which."),
    ("direction reproduced, weaker", "the measurement moves the article's way (its interval lies on the "
                                     "article's side of no effect), but stops short of the claim's threshold, or "
                                     "falls short of the published size by more than the stated factor."),
    ("differs", "the measurement points the other way: its interval lies wholly on the other side of no "
                "effect (for a share or a difference, which has no such point, on the other side of the claim's "
                "threshold)."),
    ("inconclusive", "the interval over repetitions straddles the threshold, or too few repetitions ran."),
    ("not testable here", "this platform, or what it can measure, cannot answer the claim (it needs SQL Server, "
                          "or more CPUs than the recording's machine has, or it measures something else); the row "
                          "says why, and may say that a rule's threshold was met yet not applied, as when "
                          "PostgreSQL's buffer pins meet a rule written for page-latch waits."),
    ("not testable with this recording", "the recording shown lacks the point that decides the claim; the row "
                                         "names the point."),
)


RULES_SPLIT = "<!-- rules: on the details page -->"  # verdict_table_html(rules_page=...) puts the rules after it


def breakable(escaped: str) -> str:
    """Escaped text whose long identifiers may wrap after ``_`` or ``::`` only (LATCH_SPIN_STATS,
    LogAppendContext::BackOff): the page's CSS forbids breaks inside words."""
    return re.sub(r"(?<=[A-Za-z0-9])(_|::)(?=[A-Za-z0-9])", r"\1<wbr>", escaped)


def words(text: object) -> int:
    return len(str(text).split())


def head(verdict: object) -> str:
    return str(verdict).split(":")[0].strip()


def short(text: str, limit: int = MAX_CELL_WORDS) -> str:
    """A long cell's first part (its whole text goes to a note): up to its first colon if that is a clause,
    else its longest run of whole clauses (ending at a semicolon or comma) that fits, so a cell never stops
    mid-clause; only a clause longer than the cell is cut at a word."""
    first = re.split(r":\s", text, maxsplit=1)[0].strip()  # not the colon of a name (LWLock:BufferContent)
    if first != text.strip() and CLAUSE_WORDS <= words(first) <= limit - 5:  # a clause, not a label ("at 1 session")
        return first
    kept = " ".join(text.split()[: limit - 8])
    for mark in (";", ","):
        at = kept.rfind(mark)
        if at > 0 and words(kept[:at]) >= (limit - 8) // 2:
            return kept[:at] + " …"
    return kept + " …"


class Notes:
    """Numbered notes under one table, shared by identical texts.  ``page``: the page the notes are on, when it is
    not the table's (a chapter's rules are on its details page)."""

    def __init__(self, prefix: str, page: str = ""):
        self.prefix, self.page = prefix, page
        self.texts: list[str] = []

    def ref(self, text: str, label: str = "note") -> str:
        if text not in self.texts:
            self.texts.append(text)
        n = self.texts.index(text) + 1
        return f' <a class="note-ref" href="{self.page}#{self.prefix}-{n}">[{label}&nbsp;{n}]</a>'

    def html(self) -> str:
        if not self.texts:
            return ""
        items = "".join(f'<li id="{self.prefix}-{n}">{html.escape(t)}</li>' for n, t in enumerate(self.texts, 1))
        return f'<ol class="table-notes">{items}</ol>'


def _is_missing(value: object) -> bool:
    try:
        return value is None or bool(pd.isna(value)) or str(value).strip() == ""
    except (TypeError, ValueError):
        return False


def verdict_table_html(rows: pd.DataFrame, *, caption: str, prefix: str,
                       columns: Sequence[str] = ("claim", "published", "tested_on", "measured", "size", "verdict"),
                       raw: Iterable[str] = (), missing_reason: str = "not given by this row",
                       as_notes: Sequence[str] = (), shared: Sequence[str] = (), rules_page: str = "") -> str:
    """The verdict rows as an HTML table with a caption; rules and over-long cells as numbered notes below.

    ``raw`` names columns that already hold HTML (the Findings page's chapter links); every other cell is
    escaped.  A column the rows do not have, or a row without a value, shows "—" and a note says why."""
    raw = set(raw)
    notes = Notes(f"{prefix}-note")
    rules = Notes(f"{prefix}-rule", rules_page) if rules_page else notes
    said_once = []  # a ``shared`` column with one value in every row is said once, under the table
    for col in shared:
        if col in columns and col in rows.columns and len(rows) and rows[col].nunique(dropna=False) == 1 \
                and not _is_missing(rows[col].iloc[0]):
            value = rows[col].iloc[0]
            said_once.append(f"{html.escape(LABELS.get(col, col))}: "
                             + (str(value) if col in raw else html.escape(str(value))))
            columns = tuple(c for c in columns if c != col)
    columns = tuple(c for c in columns if c not in as_notes)
    any_missing = False
    body = []
    for _, r in rows.iterrows():
        cells = []
        for col in columns:
            value = r.get(col) if col in rows.columns else None
            if _is_missing(value) and col != "verdict":
                any_missing = True
                cells.append(f"<td>{MISSING}</td>")
                continue
            if col in raw:
                cells.append(f"<td>{value}</td>")
                continue
            text = MISSING if _is_missing(value) else str(value)
            cell = breakable(html.escape(text))
            if col == "verdict":  # the verdict word alone; what qualifies it goes to a note
                why = text.split(":", 1)[1].strip() if ":" in text else ""
                cell = (f'<span class="verdict verdict-{re.sub(r"[^a-z]+", "-", head(text).lower())}">'
                        f'{html.escape(head(text))}</span>' + (notes.ref(why, "why") if why else ""))
                for col_note in as_notes:  # e.g. the size column: one note per distinct text, cited by each row
                    value_note = r.get(col_note) if col_note in rows.columns else None
                    if not _is_missing(value_note):
                        cell += notes.ref(f"{LABELS.get(col_note, col_note)}: {value_note}", col_note.split("_")[0])
                rule = r.get("rule") if "rule" in rows.columns else None
                if not _is_missing(rule):
                    cell += rules.ref(str(rule), "rule")
            elif words(text) > MAX_CELL_WORDS:
                cell = breakable(html.escape(short(text))) + notes.ref(text)
            cells.append(f"<td>{cell}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    head_row = "".join(f'<th class="col-{c}">{html.escape(LABELS.get(c, c))}</th>' for c in columns)
    table = (f'<table class="book-table text-table verdict-table" id="{prefix}">'
             f"<caption>{html.escape(caption)}</caption><thead><tr>{head_row}</tr></thead>"
             f"<tbody>{''.join(body)}</tbody></table>")
    said = []
    if said_once:
        said.append(f'<p class="table-note">Every row: {"; ".join(said_once)}.</p>')
    if any_missing:
        why = f"{MISSING} means {missing_reason}."
        said.append(f'<p class="table-note">{html.escape(why)}</p>')
    lead = '<p class="table-note">Rules and longer texts, numbered as the table cites them:</p>' if notes.texts else ""
    out = f'<div class="table-wrap">{table}</div>{"".join(said)}{lead}{notes.html()}'
    if rules is not notes:
        out += RULES_SPLIT + ('<p class="table-note">The rule behind each verdict of the chapter\'s claims table, '
                              'numbered as the table cites them:</p>' + rules.html() if rules.texts else "")
    return out


def vocabulary_html() -> str:
    items = "".join(f"<dt>{html.escape(w)}</dt><dd>{html.escape(d)}</dd>" for w, d in VOCABULARY)
    return f'<dl class="verdict-vocabulary">{items}</dl>'


def totals(verdicts: Iterable[object]) -> list[tuple[str, int]]:
    """How many rows carry each verdict word, every word of the vocabulary listed (0 included), then any
    word outside it (an older chapter's "agrees") after them."""
    counts: dict[str, int] = {w: 0 for w, _ in VOCABULARY}
    for v in verdicts:
        if _is_missing(v):
            continue
        counts[head(v)] = counts.get(head(v), 0) + 1
    return list(counts.items())
