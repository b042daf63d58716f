"""Guess an export's format from its first lines.

Each format has a tell that the others lack: xperf's ``BeginHeader`` block,
a CSV header with a ``Stack`` column (a tree when its cells hold ``[Root]``
or ``|- `` guides, else wpaexporter's ``/`` stacks), perf's ``comm pid
time: event:`` headers, folded's ``a;b;c 42``.  Only the head of the file is
read; callers who know better pass ``format=`` and skip this.
"""

from __future__ import annotations

import csv
import io
import re

from .errors import FormatError
from .importers.perf_script import HEADER_PATTERN
from .importers.wpa_csv import find_columns, sniff_delimiter
from .source import display_name, read_head

__all__ = ["sniff", "FORMATS", "ALIASES", "canonical_format"]

FORMATS = ("wpa_csv", "wpa_tree", "xperf_dumper", "perf_script", "folded")
ALIASES = {
    "csv": "wpa_csv", "wpa": "wpa_csv", "wpaexporter": "wpa_csv",
    "tree": "wpa_tree", "wpa-tree": "wpa_tree",
    "xperf": "xperf_dumper", "dumper": "xperf_dumper",
    "perf": "perf_script", "perf-script": "perf_script",
    "collapsed": "folded", "flamegraph": "folded",
}
_PERF_HEADER = re.compile(HEADER_PATTERN)
_DUMPER_EVENT = re.compile(r"^(SampledProfile|Stack),\s*\d+\s*,")
_FOLDED = re.compile(r"^\S.* \d+(\.\d+)?$")


def canonical_format(name: str) -> str:
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(name.strip().lower(), ALIASES.get(key, key))
    if key not in FORMATS:
        raise ValueError(f"unknown format {name!r}; expected one of {', '.join(FORMATS)}")
    return key


def sniff(path) -> str:
    """Name of the format of ``path`` (one of :data:`FORMATS`)."""
    name = display_name(path)
    head = read_head(path)
    lines = [ln for ln in head.split("\n")]
    if len(head) >= 65536 and len(lines) > 1:
        lines = lines[:-1]  # last line may be cut
    content = [ln for ln in lines if ln.strip()]
    if not content:
        raise FormatError(name, 1, "a stack export (the file is empty)", "an empty file")
    stripped = [ln.strip() for ln in content[:200]]
    if "BeginHeader" in stripped or any(_DUMPER_EVENT.match(s) for s in stripped):
        return "xperf_dumper"
    first = content[0]
    delim = sniff_delimiter(first)
    rows = list(csv.reader(io.StringIO("\n".join(content[:500])), delimiter=delim))
    cols = find_columns(rows[0]) if rows else {}
    if "stack" in cols:
        si = cols["stack"][0]
        cells = [r[si] for r in rows[1:] if len(r) > si]
        if any(c.strip() == "[Root]" or "|- " in c for c in cells):
            return "wpa_tree"
        return "wpa_csv"
    body = [ln for ln in content if not ln.startswith("#")]
    if body and _PERF_HEADER.match(body[0]):
        return "perf_script"
    if body and all(_FOLDED.match(ln.rstrip()) for ln in body[:20]):
        return "folded"
    raise FormatError(
        name, 1,
        "a WPA CSV or tree with a 'Stack' column, xperf dumper text, perf script output or folded stacks "
        "(or name the format with format=/--format)",
        first,
    )
