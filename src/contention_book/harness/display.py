"""Every table the book shows goes through :func:`table_html`, so all of them read alike.

A chapter builds plain data frames with the column names its code finds
convenient (``waits_per_record``, ``jain_index``).  On the page a reader sees
human names with units, numbers with thousands separators and no float
artefacts ("271,609", not "271609.0"), "—" for a missing value with a footnote
saying so, a link to the glossary for every measure this book coined, a
caption, no column that is empty throughout, and a table too wide for the
text column turned on its side or split into parts, not hidden in a scroll box.

:func:`install` makes this the HTML form of every ``DataFrame`` a notebook
displays, so notebooks keep calling ``display(frame)``.
"""
from __future__ import annotations

import html
import math
import numbers
import re
from typing import Any

import numpy as np
import pandas as pd

MISSING = "—"
MISSING_NOTE = "— : not measured, or not applicable to this row."
GLOSSARY_PAGE = "glossary.html"

# Coined or engine-specific measures: a glossary term each (book/glossary.md defines them).
GLOSSARY_TERMS = {
    "Jain fairness index": "Jain fairness index",
    "waits / record": "waits per record",
    "spins / record": "spins per record",
    "context switches / record": "context switches per record",
    "collisions / record": "collisions per record",
    "back-offs / million records": "back-off",
    "spins / collision": "spins per collision",
    "ghost versions": "ghost version",
    "versions": "row version",
    "ghosts": "ghost record",
    "change (points)": "percentage point",
    "exclusive %": "exclusive share",
    "inclusive %": "inclusive share",
    "back-offs": "back-off",
    "collisions": "collision",
    "spins": "spin",
    "verdict": "verdict",
    "rule": "verdict",
}

# Code names as a reader should see them, with their units.
NAMES = {
    "waits_per_record": "waits / record",
    "spins_per_record": "spins / record",
    "cs_per_record": "context switches / record",
    "collisions_per_record": "collisions / record",
    "jain_index": "Jain fairness index",
    "max_wait_time_ms": "longest wait (ms)",
    "wait_time_ms": "wait time (ms)",
    "signal_wait_time_ms": "signal wait (ms)",
    "sleep_time": "sleep time (ms)",
    "spins_per_collision": "spins / collision",
    "backoffs": "back-offs",
    "backoffs_per_million_records": "back-offs / million records",
    "writer_backoffs_per_s": "writer back-offs / s",
    "writer_flushes_per_s": "writer flushes / s",
    "writer_wait_p50_ns": "writer wait, median (ns)",
    "writer_wait_p99_ns": "writer wait, p99 (ns)",
    "worker_cpus": "worker CPUs",
    "writer_cpu": "writer CPU",
    "throughput": "records / s",
    "calls_per_s": "driver calls / s",
    "wal_buffers_full": "WAL buffers full",
    "rcsi": "RCSI",
    "rcsi_open_txn": "RCSI, open transaction",
    "read_committed": "read committed",
    "after_run": "after the run",
    "after_cleanup": "after clean-up",
    "walwriter_alone": "walwriter alone",
    "legacy_bottleneck": "legacy bottleneck",
    "cannot_retry": "cannot retry",
    "elapsed_s": "elapsed (s)",
    "p50_ms": "p50 (ms)",
    "p95_ms": "p95 (ms)",
    "p99_ms": "p99 (ms)",
}

UNIT_SUFFIXES = (("_pct", "%"), ("_ms", "ms"), ("_us", "µs"), ("_ns", "ns"), ("_s", "s"), ("_mb", "MB"),
                 ("_kb", "KB"), ("_bytes", "bytes"))
CODE_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")


def human(name: Any) -> Any:
    """A column or row label as a reader should see it: ``waits_per_record`` -> ``waits / record``.

    Labels that are already prose, SQL Server names in capitals and numbers pass unchanged.
    """
    if not isinstance(name, str):
        return name
    if name in NAMES:
        return NAMES[name]
    if "/" in name and all(part in NAMES or CODE_NAME.match(part) for part in name.split("/")):
        return ", ".join(str(human(part)) for part in name.split("/"))
    if not CODE_NAME.match(name):
        return name
    unit = ""
    for suffix, u in UNIT_SUFFIXES:
        if name.endswith(suffix):
            name, unit = name[: -len(suffix)], u
            break
    words = name.replace("_per_", " / ").replace("_", " ")
    return f"{words} ({unit})" if unit else words


def number_text(value: Any) -> str:
    """A number as a table cell: separators for thousands, no trailing ``.0``, three significant digits
    below 100, written out down to a millionth (``0.0001``, not ``1.00e-04``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value is pd.NaT:
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return f"{int(value):,}"
    if isinstance(value, numbers.Real):
        v = float(value)
        if math.isinf(v):
            return "∞" if v > 0 else "−∞"
        if v == 0:
            return "0"
        if v.is_integer() and abs(v) >= 1:
            return f"{v:,.0f}"
        a = abs(v)
        if a >= 100:
            return f"{v:,.0f}"
        if a >= 0.001:
            return f"{v:.3g}"
        if a >= 1e-6:  # 0.0001, not 1.00e-04: three significant digits, written out
            return f"{v:.{2 - math.floor(math.log10(a))}f}".rstrip("0")
        return f"{v:.2e}"
    return str(value)


def is_missing(value: Any) -> bool:
    try:
        return value is None or bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _header_html(label: Any, glossary: str) -> str:
    numeric = isinstance(label, (numbers.Real, np.bool_)) and not isinstance(label, str)
    text = number_text(label) if numeric else str(human(label))
    term = GLOSSARY_TERMS.get(text)
    body = html.escape(text)
    if term and glossary:
        anchor = "term-" + re.sub(r"[^A-Za-z0-9]+", "-", term).strip("-")
        body = f'<a class="glossary-link" href="{glossary}{GLOSSARY_PAGE}#{anchor}" title="glossary: {html.escape(term)}">{body}</a>'
    return body


MAX_COLUMNS = 9  # columns (index levels included) that fit the text column at 1400 px without scrolling


def _render(df: pd.DataFrame, glossary: str, raw: tuple[str, ...], table_id: str | None, caption: str) -> str:
    """One frame, already cut to fit, as an HTML table with its caption."""
    df = df.copy()
    for col in df.columns:
        keep = col in raw
        df[col] = df[col].map(lambda v, keep=keep: MISSING if is_missing(v) else
                              (str(v) if keep else html.escape(number_text(v))))

    def labels(index: pd.Index) -> pd.Index:
        if isinstance(index, pd.MultiIndex):
            out = index.map(lambda t: tuple(_header_html(x, glossary) if str(x) != "" else "" for x in t))
            return pd.MultiIndex.from_tuples(list(out), names=[human(n) for n in index.names])
        return pd.Index([_header_html(x, glossary) for x in index], name=human(index.name))

    plain_index = isinstance(df.index, pd.RangeIndex)
    wordy = bool(df.size) and bool(df.map(lambda v: len(str(v)) > 40).to_numpy().any())
    df.columns = labels(df.columns)
    if not plain_index:
        df.index = labels(df.index)
    classes = "book-table" + (" text-table" if wordy else "") + (" dense" if df.shape[1] > 7 else "")
    body = df.to_html(escape=False, na_rep=MISSING, border=0, classes=classes, index=not plain_index,
                      table_id=table_id)
    if caption:
        body = re.sub(r"(<table[^>]*>)", lambda m: m.group(1) + f"\n  <caption>{html.escape(caption)}</caption>",
                      body, count=1)
    return body


def _width(df: pd.DataFrame) -> int:
    return df.shape[1] + (0 if isinstance(df.index, pd.RangeIndex) else df.index.nlevels)


ROOM_CHARS = 100  # characters of cell text (widest cell or header word per column, plus padding) the column holds
CELL_CHARS = 14   # a wider cell wraps (text tables: at least 8em), so it counts this much at most


def _chars(values, label) -> int:
    """How many characters wide a column is drawn: its widest cell (wrapping past CELL_CHARS) or its header's
    longest word, plus padding."""
    cells = [len(number_text(v)) for v in values]
    head = max((len(w) for w in str(human(label)).split()), default=1)
    return min(max([head, *cells]), CELL_CHARS) + 3


def _index_chars(df: pd.DataFrame) -> int:
    if isinstance(df.index, pd.RangeIndex):
        return 0
    levels = [df.index.get_level_values(i) for i in range(df.index.nlevels)]
    return sum(_chars(level, name) for level, name in zip(levels, df.index.names))


def _fits(df: pd.DataFrame, max_columns: int) -> bool:
    return _width(df) <= max_columns and \
        _index_chars(df) + sum(_chars(df[c], c) for c in df.columns) <= ROOM_CHARS


def fit_columns(df: pd.DataFrame, max_columns: int = MAX_COLUMNS) -> tuple[list[pd.DataFrame], str]:
    """A frame too wide for the text column, made to fit: transposed when it has few rows (each row becomes a
    column) and that fits, else split into parts of at most ``max_columns`` columns and about
    :data:`ROOM_CHARS` characters, each repeating the rows' labels.  Returns the parts and how it was cut
    ("" when it fit)."""
    if _fits(df, max_columns):
        return [df], ""
    keyed = df
    if isinstance(df.index, pd.RangeIndex):  # the first column names the rows
        keyed = df.set_index(df.columns[0])
    if keyed.index.is_unique and len(keyed) + keyed.index.nlevels <= max_columns:
        flipped = keyed.T
        flipped.index.name = None
        if _fits(flipped, max_columns):
            return [flipped], "transposed"
    room_cols = max(1, max_columns - keyed.index.nlevels)
    room_chars = max(ROOM_CHARS - _index_chars(keyed), CELL_CHARS + 3)
    parts, current, used = [], [], 0
    for col in keyed.columns:
        width = _chars(keyed[col], col)
        if current and (len(current) >= room_cols or used + width > room_chars):
            parts.append(keyed[current])
            current, used = [], 0
        current.append(col)
        used += width
    if current:
        parts.append(keyed[current])
    if len(parts) >= 2 and parts[-1].shape[1] == 1:  # no "part 2 of 2" of one column: share the last two evenly
        cols = [*parts[-2].columns, *parts[-1].columns]
        half = (len(cols) + 1) // 2
        parts[-2:] = [keyed[cols[:half]], keyed[cols[half:]]]
    if len(parts) == 1 and keyed is not df:
        return [df], ""  # one part after all: keep the frame as it was
    return parts, "split"


def table_html(frame: pd.DataFrame, glossary: str = "../", raw: tuple[str, ...] = (), table_id: str | None = None,
               caption: str | None = None, max_columns: int = MAX_COLUMNS) -> str:
    """One data frame as the book shows it (see the module's docstring); columns in ``raw`` hold HTML already.

    ``caption`` (or ``frame.attrs["caption"]``) titles the table.  A column with no value in any row is left
    out (a reader needs no column of blanks).  A table wider than ``max_columns`` is transposed (few rows) or
    split into parts that each fit the text column, never hidden in a scroll box."""
    caption = caption or frame.attrs.get("caption") or ""
    if frame.attrs.get("said_once"):  # what every row shares (load_record.load_summary), said once in the caption
        caption = f"{caption.rstrip()} {frame.attrs['said_once']}".strip()
    df = frame.copy()
    notes = []
    if len(df) and df.shape[1] > 1:
        empty = [c for c in df.columns if df[c].map(is_missing).all()]
        if empty and len(empty) < df.shape[1]:
            df = df.drop(columns=empty)
    missing = bool(df.map(is_missing).to_numpy().any()) if df.size else False
    parts, how = fit_columns(df, max_columns)
    bodies = []
    for i, part in enumerate(parts, 1):
        title = caption
        if how == "split":
            title = f"{caption} (part {i} of {len(parts)})" if caption else f"Part {i} of {len(parts)}"
        tid = table_id if i == 1 or not table_id else f"{table_id}-{i}"
        body = _render(part, glossary, raw, tid, title)
        if how == "transposed":
            body = body.replace("<table", '<table data-transposed="1"', 1)
        bodies.append(body)
    # a transposed table says nothing about it: its former rows head its columns, which reads as it is
    if missing:
        notes.append(MISSING_NOTE)
    note = "".join(f'<p class="table-note">{html.escape(n)}</p>' for n in notes)
    return "".join(f'<div class="table-wrap">{b}</div>' for b in bodies) + note


_numbers = {"next": 1}


def numbered(caption: str) -> str:
    """``caption`` as the page's next table: "Table N. caption" (numbered in the order the page shows them)."""
    n = _numbers["next"]
    _numbers["next"] += 1
    return f"Table {n}. {caption}"


def reset_numbers() -> None:
    _numbers["next"] = 1


def install() -> None:
    """Make :func:`table_html` the HTML form of every DataFrame displayed in this kernel."""
    try:
        from IPython import get_ipython
    except ImportError:  # outside IPython there is nothing to install
        return
    ip = get_ipython()
    if ip is None:
        return
    formatter = ip.display_formatter.formatters["text/html"]
    # a frame displayed with attrs["caption"] is numbered like show_table's (notebook.py); one without has none
    formatter.for_type(pd.DataFrame, lambda df: table_html(df, caption=numbered(df.attrs["caption"])
                                                           if df.attrs.get("caption") else None))
    plain = ip.display_formatter.formatters["text/plain"]
    plain.for_type(pd.DataFrame, lambda df, p, cycle: p.text(df.map(number_text).to_string()))
