"""perftools: sampled CPU stacks from WPA, xperf and Linux perf, one model.

Two of the book's source documents argue from sampled stacks ("BackOff is
23.89 % of sampled CPU, 1.43 % after the change"; "invert the call stack to
find who calls the spinlock").  This package reads the exports those
arguments come from, plus Linux ``perf script`` and folded stacks, into
one :class:`Profile`, and answers the same questions on it.

    import contention_book.perftools as pt
    p = pt.load("CPU_Usage_(Sampled)_Randomascii_Export.csv")   # format sniffed
    pt.top_functions(p.filter(process="sqlservr.exe"), 20)
    pt.callers(p, "sqlmin.dll!LogAppendContext::BackOff", depth=4)
    pt.diff(pt.load("before.csv"), pt.load("after.csv"), by="function")
    pt.flame_figure(p).savefig("flame.png")

Command line: ``perftools --help``.
"""

from __future__ import annotations

import importlib

#: name -> (submodule, attribute): imported on first use, so that
#: ``perftools --help`` and ``--version`` answer without loading pandas.
_LAZY = {
    "callees": ("analysis", "callees"), "callers": ("analysis", "callers"), "diff": ("analysis", "diff"),
    "inclusive_weights": ("analysis", "inclusive_weights"), "top_functions": ("analysis", "top_functions"),
    "top_modules": ("analysis", "top_modules"),
    "FormatError": ("errors", "FormatError"),
    "build_tree": ("flame", "build_tree"), "flame_figure": ("flame", "flame_figure"), "write_svg": ("flame", "write_svg"),
    "load": ("importers", "load"),
    "to_folded": ("importers.folded", "dumps"), "write_folded": ("importers.folded", "write"),
    "Profile": ("model", "Profile"), "ProfileBuilder": ("builder", "ProfileBuilder"),
    "profile_from_records": ("builder", "profile_from_records"),
    "frame_name": ("frames", "frame_name"), "split_frame_name": ("frames", "split_frame_name"),
    "to_speedscope": ("export", "to_speedscope"), "write_speedscope": ("export", "write_speedscope"),
    "to_pprof": ("export", "to_pprof"), "write_pprof": ("export", "write_pprof"),
}

# ``sniff`` is both a submodule and a function: bind the function now (the
# module is light), so that importing the submodule later cannot shadow it.
from .sniff import FORMATS, sniff  # noqa: E402

__all__ = sorted(_LAZY) + ["FORMATS", "sniff"]


def __getattr__(name: str):
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
