"""Guess an export's format from its first lines.

Each importer says whether a head of lines ``looks_like`` its format
(xperf's ``BeginHeader`` block, a CSV header with a ``Stack`` column, a
tree's ``[Root]`` and ``|- `` guides, perf's ``comm pid time: event:``
headers, folded's ``a;b;c 42``); this module only asks them in order of
precedence.  Only the head of the file is read; callers who know better
pass ``format=`` and skip this.  The five tells live here, and each
importer re-exports its own, so that sniffing loads neither pyarrow nor
numpy (``perftools collapse`` of a perf capture needs neither).
"""

from __future__ import annotations

import re

from .csv_columns import find_columns, header_rows, stack_cells
from .errors import FormatError
from .source import display_name, gzip_errors_named, read_head

__all__ = ["sniff", "FORMATS", "ALIASES", "canonical_format"]

FORMATS = ("wpa_csv", "wpa_tree", "xperf_dumper", "perf_script", "folded")
ALIASES = {
    "csv": "wpa_csv", "wpa": "wpa_csv", "wpaexporter": "wpa_csv",
    "tree": "wpa_tree", "wpa-tree": "wpa_tree",
    "xperf": "xperf_dumper", "dumper": "xperf_dumper",
    "perf": "perf_script", "perf-script": "perf_script",
    "collapsed": "folded", "flamegraph": "folded",
}
# In order of precedence: each format's tell is checked only where the ones before found nothing.
# A WPA tree is a CSV with a Stack column too, so it goes before the plain CSV.
PRECEDENCE = ("xperf_dumper", "wpa_tree", "wpa_csv", "perf_script", "folded")


#: perf script's sample header; the same pattern runs in RE2 (pyarrow) and Python ``re``.  An event is
#: never a number alone: ``comm 1 5.5:`` has no event (its time is not one).
PERF_HEADER_PATTERN = (
    r"^\s*(?P<comm>\S.*?)\s+(?P<pid>\d+)(?:/(?P<tid>\d+))?\s+"
    r"(?:\[(?P<cpu>\d+)\]\s+)?(?:(?P<time>\d+\.\d+):\s*)?"
    r"(?:(?P<period>\d+)\s+)?(?P<event>[^\s:\d.]\S*?|[\d.]+[^\s:\d.]\S*?):(?:\s+(?P<tail>.*))?$"
)
_PERF_HEADER = re.compile(PERF_HEADER_PATTERN)
_FOLDED = re.compile(r"^\S.* \d+(\.\d+)?$")
_DUMPER_EVENT = re.compile(r"^(SampledProfile|Stack),\s*\d+\s*,")


def looks_like_xperf_dumper(lines: list[str]) -> bool:
    """xperf's ``BeginHeader`` block, or SampledProfile/Stack event lines."""
    stripped = [ln.strip() for ln in lines[:200]]
    return "BeginHeader" in stripped or any(_DUMPER_EVENT.match(s) for s in stripped)


def looks_like_wpa_tree(lines: list[str]) -> bool:
    """A CSV with a Stack column whose cells are a copied tree: a ``[Root]`` row or ``|- `` guides."""
    return any(c.strip() == "[Root]" or "|- " in c for c in stack_cells(header_rows(lines)))


def looks_like_wpa_csv(lines: list[str]) -> bool:
    """A CSV header with a Stack column (a WPA tree, whose cells carry guides, is sniffed before this)."""
    return "stack" in find_columns(header_rows(lines)[0]) if lines else False


def looks_like_perf_script(lines: list[str]) -> bool:
    """The first line that is not a ``#`` comment is a sample header ``comm pid [time:] event:``."""
    body = [ln for ln in lines if not ln.startswith("#")]
    return bool(body) and bool(_PERF_HEADER.match(body[0]))


def looks_like_folded(lines: list[str]) -> bool:
    """Every one of the first 20 lines (``#`` comments aside) is ``frame;frame;... COUNT``."""
    body = [ln for ln in lines if not ln.startswith("#")]
    return bool(body) and all(_FOLDED.match(ln.rstrip()) for ln in body[:20])


LOOKS_LIKE = {"xperf_dumper": looks_like_xperf_dumper, "wpa_tree": looks_like_wpa_tree,
              "wpa_csv": looks_like_wpa_csv, "perf_script": looks_like_perf_script, "folded": looks_like_folded}


def canonical_format(name: str) -> str:
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(name.strip().lower(), ALIASES.get(key, key))
    if key not in FORMATS:
        raise ValueError(f"unknown format {name!r}; expected one of {', '.join(FORMATS)}")
    return key


@gzip_errors_named
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
    for fmt in PRECEDENCE:
        if LOOKS_LIKE[fmt](content):
            return fmt
    first = content[0]
    raise FormatError(
        name, 1,
        "a WPA CSV or tree with a 'Stack' column, xperf dumper text, perf script output or folded stacks "
        "(or name the format with format=/--format)",
        first,
    )
