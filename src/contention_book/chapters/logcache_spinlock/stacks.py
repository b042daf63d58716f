"""Stack samples: the BackOff share, who calls the backoff, and what changed between variants.

A recording's stacks are ``stacks/<variant>.folded.gz`` (perf on Linux, or a
Windows export converted when the recording was made).  The notebook's
``stacks`` parameter adds captures from anywhere: one path, or
``label:path,label:path`` (e.g. ``default:base.csv,no_logwriter_core:opt.csv``; ``=`` works too)
in any format perftools reads: a wpaexporter CPU Usage (Sampled) CSV with a
Stack column, a WPA tree copied as text, xperf dumper text, ``perf script``
output, or folded stacks.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .common import BACKOFF_FUNCTIONS, BASELINE, LABELS, RELIEVED



class StacksError(ValueError):
    pass


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
    from contention_book import perftools

    out = {}
    for label, path in paths.items():
        try:
            out[label] = perftools.load(path, process_root=True) if str(path).endswith(".folded.gz") \
                else perftools.load(path)
        except perftools.FormatError as exc:
            raise StacksError(f"stacks {label}: {exc}") from None
    return out


def ingest(spec: str, writer) -> dict[str, Path]:
    """Convert each capture in ``spec`` to folded stacks inside the recording being written."""
    from contention_book import perftools

    paths = parse_spec(spec)
    for label, prof in load_profiles(paths).items():
        perftools.write_folded(prof, writer.file_path(f"stacks/{label}.folded.gz"))
    return paths


def share_of(profile, needles) -> float:
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


def engine_of(profile) -> str:
    names = " ".join(map(str, profile.frame_names()[:5000]))
    return "sqlserver" if ("sqlmin" in names or "sqllang" in names or "sqlservr" in names) else "postgres"


def role(label: str) -> str | None:
    if label in BASELINE.values():
        return "baseline"
    if label in RELIEVED.values():
        return "relieved"
    return None


def section(groups: Mapping[str, Mapping[str, Any]], top: int = 10) -> dict[str, Any]:
    """``groups``: {recording label: {variant: Profile}} -> text, tables, figures, shares."""
    from contention_book import perftools

    out: dict[str, Any] = {"text": "", "tables": [], "figures": [], "shares": pd.DataFrame(
        columns=["recording", "variant", "role", "what", "pct"])}
    if not groups:
        out["text"] = ("*No stack samples are shown: the recordings hold none, and no `stacks` export was given.*")
        return out
    share_rows, texts = [], []
    for rid, profiles in groups.items():
        for variant, prof in profiles.items():
            eng = engine_of(prof)
            needles = BACKOFF_FUNCTIONS[eng]
            pct = share_of(prof, needles)
            share_rows.append({"recording": rid, "variant": variant, "role": role(variant),
                               "what": " / ".join(needles[:2]) + (" …" if len(needles) > 2 else ""), "pct": pct})
            t = perftools.top_functions(prof, n=top)
            out["tables"].append(pd.DataFrame({
                "capture": f"{rid}: {LABELS.get(variant, variant)}", "function": t["function"],
                "exclusive %": t["exclusive_pct"].round(2), "inclusive %": t["inclusive_pct"].round(2),
            }).set_index(["capture", "function"]))
            found = [n for n in needles if len(prof.find_frames(n))]
            if found:
                biggest = max(found, key=lambda n: share_of(prof, (n,)))
                c = perftools.callers(prof, biggest, depth=3)
                out["tables"].append(c.head(12).assign(capture=f"{rid}: {variant}")[
                    ["capture", "depth", "path", "pct"]].rename(columns={"pct": "% of samples"}).round(2)
                    .set_index(["capture", "depth"]))
                texts.append(f"*{rid}, {LABELS.get(variant, variant)}*: stacks holding a spin-wait frame "
                             f"({', '.join(found)}) are {pct:.2f}% of samples; the callers table follows "
                             f"`{biggest}` up three frames")
            else:
                texts.append(f"*{rid}, {LABELS.get(variant, variant)}*: no spin-wait frame "
                             f"({', '.join(needles)}) in the samples")
            out["figures"].append(perftools.flame_figure(prof, title=f"{rid}: {LABELS.get(variant, variant)}",
                                                         min_fraction=0.01))
        base = [v for v in profiles if role(v) == "baseline"]
        rel = [v for v in profiles if role(v) == "relieved"]
        if base and rel:
            d = perftools.diff(profiles[base[0]], profiles[rel[0]], by="function", n=top)
            out["tables"].append(pd.DataFrame({
                "capture": f"{rid}: {base[0]} -> {rel[0]}", "function": d["name"], "% before": d["pct_a"].round(2),
                "% after": d["pct_b"].round(2), "change (points)": d["change_pp"].round(2)}).set_index(
                ["capture", "function"]))
    out["shares"] = pd.DataFrame(share_rows)
    out["text"] = "; ".join(texts) + "."
    return out
