"""Guess an export's format from its first lines.

Each importer says whether a head of lines ``looks_like`` its format
(xperf's ``BeginHeader`` block, a CSV header with a ``Stack`` column, a
tree's ``[Root]`` and ``|- `` guides, perf's ``comm pid time: event:``
headers, folded's ``a;b;c 42``); this module only asks them in order of
precedence.  Only the head of the file is read; callers who know better
pass ``format=`` and skip this.
"""

from __future__ import annotations

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
    from importlib import import_module

    for fmt in PRECEDENCE:
        if import_module(f"{__package__}.importers.{fmt}").looks_like(content):
            return fmt
    first = content[0]
    raise FormatError(
        name, 1,
        "a WPA CSV or tree with a 'Stack' column, xperf dumper text, perf script output or folded stacks "
        "(or name the format with format=/--format)",
        first,
    )
