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

from .analysis import callees, callers, diff, inclusive_weights, top_functions, top_modules
from .errors import FormatError
from .flame import build_tree, flame_figure, write_svg
from .importers import load
from .importers.folded import dumps as to_folded
from .importers.folded import write as write_folded
from .model import Profile, ProfileBuilder, frame_name, split_frame_name
from .sniff import FORMATS, sniff

__all__ = [
    "load",
    "sniff",
    "FORMATS",
    "Profile",
    "ProfileBuilder",
    "FormatError",
    "frame_name",
    "split_frame_name",
    "top_functions",
    "top_modules",
    "inclusive_weights",
    "callers",
    "callees",
    "diff",
    "to_folded",
    "write_folded",
    "flame_figure",
    "write_svg",
    "build_tree",
]
