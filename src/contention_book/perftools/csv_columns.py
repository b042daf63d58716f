"""Finding the columns of a WPA export by their header names, whatever the delimiter or units.

wpaexporter writes the exporting machine's list separator (``,`` or ``;``,
tab from a copied table) and may append units to headers
(``Weight (in view) (ms)``).  Both WPA importers and the sniffer use these
helpers, so a header is read the same way everywhere.
"""
from __future__ import annotations

import csv
import io
import sys

# WPA writes a whole stack into one cell: 3,000 frames of a deep SQL Server
# plan pass the csv module's default 128 KB field limit.  Exports have no
# such limit, so neither do we (the limit is per process; nothing else here
# relies on it).
csv.field_size_limit(sys.maxsize)

from .numbers import split_unit

#: Model field -> accepted header names (lower case, unit removed).
COLUMNS = {
    "stack": ("stack",),
    "weight": ("weight (in view)", "weight"),
    "count": ("count",),
    "process": ("process", "process name"),
    "thread": ("thread id", "threadid", "thread", "tid"),
    "time": ("timestamp", "time"),
    "cpu": ("cpu",),
}
NUMERIC = ("weight", "count", "thread", "time", "cpu")


def sniff_delimiter(header_line: str) -> str:
    """``,`` unless the header splits into more fields on ``;`` or tab."""
    best, n = ",", 0
    for d in (",", ";", "\t"):
        fields = next(csv.reader([header_line], delimiter=d), [])
        if len(fields) > n:
            best, n = d, len(fields)
    return best


def find_columns(names: list[str]) -> dict[str, tuple[int, str, str | None]]:
    """Model field -> (index, header text, unit) for the columns present."""
    found: dict[str, tuple[int, str, str | None]] = {}
    norm = []
    for n in names:
        base, unit = split_unit(n.lstrip("\ufeff"))
        norm.append((base.strip().lower(), unit))
    for field, accepted in COLUMNS.items():
        for want in accepted:
            hits = [i for i, (b, _) in enumerate(norm) if b == want]
            if hits:
                i = hits[0]
                found[field] = (i, names[i], norm[i][1])
                break
    return found


def header_rows(lines: list[str], limit: int = 500) -> list[list[str]]:
    """The first ``limit`` lines as CSV rows, split on the delimiter the first line suggests."""
    delim = sniff_delimiter(lines[0]) if lines else ","
    return list(csv.reader(io.StringIO("\n".join(lines[:limit])), delimiter=delim)) or [[]]


def stack_cells(rows: list[list[str]]) -> list[str]:
    """The Stack column's cells below the header, or none when there is no Stack column."""
    cols = find_columns(rows[0]) if rows else {}
    if "stack" not in cols:
        return []
    si = cols["stack"][0]
    return [r[si] for r in rows[1:] if len(r) > si]
