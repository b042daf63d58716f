"""One importer module per export format, all producing a Profile.

Like speedscope's ``src/import/*.ts``: each module reads one format,
documents the reference it follows, and knows nothing of the others.
:func:`load` picks the importer by name or by sniffing the file.
"""

from __future__ import annotations

from importlib import import_module

from ..source import gzip_errors_named

__all__ = ["load", "IMPORTERS", "folded", "perf_script", "wpa_csv", "wpa_tree", "xperf_dumper"]

#: format -> its module here; imported on first use (the readers bring pyarrow, which the C cores do not need)
IMPORTERS = {name: name for name in ("wpa_csv", "wpa_tree", "xperf_dumper", "perf_script", "folded")}


def __getattr__(name: str):
    if name in IMPORTERS:
        return import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@gzip_errors_named
def load(path, format: str | None = None, **options):
    """Read ``path`` into a :class:`~perftools.model.Profile`.

    ``format``: one of ``wpa_csv``, ``wpa_tree``, ``xperf_dumper``,
    ``perf_script``, ``folded`` (or an alias such as ``perf``); sniffed from
    the file when omitted.  ``options`` go to the importer (e.g.
    ``process_root=True`` for folded, ``weight="period"`` for perf).
    Raises :class:`~perftools.errors.FormatError` for malformed input.
    """
    from ..sniff import canonical_format, sniff

    fmt = canonical_format(format) if format else sniff(path)
    return import_module(f"{__name__}.{IMPORTERS[fmt]}").load(path, **options)
