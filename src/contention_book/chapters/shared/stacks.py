"""The CPU-stacks section every chapter with stacks shows, built from shared pieces.

A recording's stacks are ``stacks/<variant>.folded.gz`` (perf on Linux, or a
Windows export converted when the recording was made).  A notebook's
``stacks`` parameter adds captures from anywhere: one path, or
``label:path,label:path`` (``=`` works too) in any format perftools reads:
a wpaexporter CPU Usage (Sampled) CSV with a Stack column, a WPA tree copied
as text, xperf dumper text, ``perf script`` output, or folded stacks.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd


class StacksError(ValueError):
    pass


@dataclass
class StackSection:
    """Prose, tables and figures for a page, plus any numbers a chapter wants from them."""

    text: str = ""
    tables: list[pd.DataFrame] = field(default_factory=list)
    figures: list[Any] = field(default_factory=list)
    numbers: dict[str, Any] = field(default_factory=dict)


def _split(item: str) -> tuple[str, str]:
    """'label:path' or 'label=path' -> (label, path); a bare path (also C:\\x.csv) -> ('', path)."""
    for sep in ("=", ":"):
        label, found, path = item.partition(sep)
        if found and not (sep == ":" and len(label) == 1 and path[:1] in ("\\", "/")):
            return label.strip(), path.strip()
    return "", item


def parse_spec(spec: str) -> dict[str, Path]:
    """'a.csv' -> {'a': Path}; 'x:a.csv,y:b.txt' -> {'x': ..., 'y': ...}; files must exist."""
    out: dict[str, Path] = {}
    for item in [s.strip() for s in str(spec or "").split(",") if s.strip()]:
        label, path = _split(item)
        p = Path(path).expanduser()
        label = label.strip() or p.name.split(".")[0]
        if not p.is_file():
            raise StacksError(f"stacks: {p} is not a file; expected a path, or label:path pairs separated by commas "
                              "(a WPA CSV export, WPA tree text, xperf dumper text, perf script output or folded stacks)")
        if label in out:
            raise StacksError(f"stacks: label {label!r} given twice")
        out[label] = p
    return out


def load_profiles(paths: Mapping[str, Path]) -> dict[str, Any]:
    """Each capture as a perftools Profile; a recording's own folded stacks keep the process as the root."""
    from contention_book import perftools

    out = {}
    for label, path in paths.items():
        try:
            out[label] = (perftools.load(path, process_root=True) if str(path).endswith(".folded.gz")
                          else perftools.load(path))
        except perftools.FormatError as exc:
            raise StacksError(f"stacks {label}: {exc}") from None
    return out


def ingest(spec: str, writer) -> dict[str, Path]:
    """Store each capture in ``spec`` as folded stacks inside the recording being written."""
    from contention_book import perftools

    paths = parse_spec(spec)
    for label, prof in load_profiles(paths).items():
        perftools.write_folded(prof, writer.file_path(f"stacks/{label}.folded.gz"))
    return paths


def absent_text(view) -> str:
    """Why a recording has no stacks, from its notes, in one sentence."""
    why = [n for n in view.notes if n.startswith("stacks")]
    return ("*This recording holds no CPU stacks*"
            + (f": {'; '.join(why)}." if why else " (it was not made with perf sampling)."))


def share_of(profile, needles: Sequence[str]) -> float:
    """% of sampled weight whose stack holds a frame whose function contains one of ``needles``."""
    names = np.array([str(n) for n in profile.frame_names()], dtype=object)
    hit = np.array([any(nd in n for nd in needles) for n in names], dtype=bool)
    if not hit.any():
        return 0.0
    per_stack = np.bincount(profile.entry_stack(), weights=hit[profile.stack_frames].astype(float),
                            minlength=profile.n_stacks) > 0
    w = profile.stack_weights()
    total = float(w.sum())
    return float(w[per_stack].sum() / total * 100) if total else float("nan")


def top_table(profile, capture: str, top: int = 10, digits: int = 1) -> pd.DataFrame:
    """The functions with the largest exclusive share, indexed by capture and function."""
    from contention_book import perftools

    t = perftools.top_functions(profile, n=top)
    return pd.DataFrame({"capture": capture, "function": t["function"],
                         "exclusive %": t["exclusive_pct"].round(digits),
                         "inclusive %": t["inclusive_pct"].round(digits)}).set_index(["capture", "function"])


def diff_table(before, after, before_label: str, after_label: str, top: int = 10, digits: int = 1) -> pd.DataFrame:
    """Change in each function's share between two captures, largest first."""
    from contention_book import perftools

    d = perftools.diff(before, after, by="function").head(top)
    return pd.DataFrame({"function": d["name"], f"% {before_label}": d["pct_a"].round(digits),
                         f"% {after_label}": d["pct_b"].round(digits),
                         "change (points)": d["change_pp"].round(digits)}).set_index("function")


def flame(profile, title: str, min_fraction: float | None = None):
    """A CPU flame graph for a page (static SVG, :class:`perftools.flame.FlameSvg`), the book's width and colours."""
    from contention_book.perftools.flame import flame_svg

    from .style import FLAME_WIDTH_PX, module_colour

    kw = {} if min_fraction is None else {"min_fraction": min_fraction}
    return flame_svg(profile, title=title, width=FLAME_WIDTH_PX, colour_of=module_colour, **kw)


def hottest(profiles: Mapping[str, Any], label: Callable[[str], str]) -> str:
    """'*setting*: `fn` (N% of samples exclusive)' for each capture, joined by '; '."""
    from contention_book import perftools

    parts = []
    for variant, prof in profiles.items():
        top1 = perftools.top_functions(prof, n=1).iloc[0]
        parts.append(f"*{label(variant)}*: `{top1['function']}` ({top1['exclusive_pct']:.0f}% of samples exclusive)")
    return "; ".join(parts)
