"""The questions the source documents ask of sampled stacks.

* Where does the CPU go?  :func:`top_functions` / :func:`top_modules`, by
  exclusive (self: the sample's leaf frame) and inclusive weight (every
  frame on the stack, counted once per stack even when recursive), as a
  percentage of the (filtered) total, the way WPA's Weight and % Weight
  columns read.
* Who calls the spinlock?  :func:`callers` inverts the stacks below a
  function (WPA's inverted stack, the callers half of a butterfly view) and
  aggregates the caller chains to a chosen depth; :func:`callees` is the
  other half.
* What did the change do?  :func:`diff` puts two captures side by side per
  function or module as percentage-point change ("23.89 % -> 1.43 %").

All work is numpy over *distinct* stacks weighted by their samples' total,
so a 600k-sample capture costs what its ~20k stacks cost.
"""

from __future__ import annotations

import difflib

import numpy as np
import pandas as pd

from .model import Profile

__all__ = ["top_functions", "top_modules", "callers", "callees", "diff", "inclusive_weights"]


def _pct(x, total: float):
    return x * (100.0 / total) if total else x * 0.0


def _leaf_frames(p: Profile) -> tuple[np.ndarray, np.ndarray]:
    """(stack ids with at least one frame, their leaf frame ids)."""
    lengths = p.stack_lengths()
    nonempty = np.flatnonzero(lengths > 0)
    return nonempty, p.stack_frames[p.stack_offsets[1:][nonempty] - 1]


def _dedup_sum(p: Profile, keys: np.ndarray, first: np.ndarray, n_keys: int, sw: np.ndarray) -> np.ndarray:
    """Sum stack weights per key, counting each key once per stack."""
    return np.bincount(keys[first], weights=sw[p.entry_stack()[first]], minlength=n_keys)


def inclusive_weights(p: Profile) -> np.ndarray:
    """Inclusive weight of every frame id (recursion counted once per stack)."""
    return _dedup_sum(p, p.stack_frames, p.entry_first_frame(), len(p.frames), p.stack_weights())


def _sorted(df: pd.DataFrame, sort: str, n: int | None) -> pd.DataFrame:
    if sort not in ("exclusive", "inclusive"):
        raise ValueError("sort must be 'exclusive' or 'inclusive'")
    other = "inclusive" if sort == "exclusive" else "exclusive"
    df = df[(df["exclusive"] > 0) | (df["inclusive"] > 0)]
    df = df.sort_values([sort, other], ascending=False, kind="stable")
    if n is not None:
        df = df.head(n)
    return df.reset_index(drop=True)


def top_functions(p: Profile, n: int | None = None, *, sort: str = "exclusive") -> pd.DataFrame:
    """Functions by exclusive and inclusive weight.

    Columns: ``function`` (``module!function``), ``module``, ``exclusive``,
    ``exclusive_pct``, ``inclusive``, ``inclusive_pct``; sorted by ``sort``.
    """
    total = p.total_weight
    sw = p.stack_weights()
    stacks, leaves = _leaf_frames(p)
    excl = np.bincount(leaves, weights=sw[stacks], minlength=len(p.frames))
    incl = inclusive_weights(p)
    df = pd.DataFrame(
        {
            "function": p.frame_names(),
            "module": p.frames["module"].to_numpy(dtype=object),
            "exclusive": excl,
            "exclusive_pct": _pct(excl, total),
            "inclusive": incl,
            "inclusive_pct": _pct(incl, total),
        }
    )
    return _sorted(df, sort, n)


def top_modules(p: Profile, n: int | None = None, *, sort: str = "exclusive") -> pd.DataFrame:
    """Modules by exclusive and inclusive weight (same columns, ``module``)."""
    total = p.total_weight
    sw = p.stack_weights()
    codes, modules = p.module_codes()
    stacks, leaves = _leaf_frames(p)
    excl = np.bincount(codes[leaves], weights=sw[stacks], minlength=len(modules))
    incl = _dedup_sum(p, codes[p.stack_frames], p.entry_first_module(), len(modules), sw)
    df = pd.DataFrame(
        {
            "module": [m if m else "(no module)" for m in modules],
            "exclusive": excl,
            "exclusive_pct": _pct(excl, total),
            "inclusive": incl,
            "inclusive_pct": _pct(incl, total),
        }
    )
    return _sorted(df, sort, n)


def _targets(p: Profile, function: str) -> np.ndarray:
    ids = p.find_frames(function)
    if not len(ids):
        names = list(dict.fromkeys(list(p.frame_names()) + list(p.frames["function"])))
        q = function.lower()
        close = [n for n in names if q in n.lower()][:5] or difflib.get_close_matches(function, names, n=5, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise KeyError(f"no frame named {function!r} in the profile{hint}")
    return ids


def _chains(p: Profile, function: str, direction: str, depth: int):
    """(chains of frame ids, weights, function's inclusive weight)."""
    from .callgraph import chains_through

    if depth < 1:
        raise ValueError("depth must be at least 1")
    targets = _targets(p, function)
    return (targets, *chains_through(targets, p.stack_weights(), p.entry_stack(), p.stack_frames, p.stack_offsets,
                                     direction, depth))


def _tree_rows(p: Profile, label: str, chains, weights, fn_weight: float, end_label: str, sep: str) -> pd.DataFrame:
    """The call tree as a frame: the rows :func:`callgraph._tree` builds (one tree builder for both paths)."""
    from dataclasses import asdict

    from .callgraph import TreeRow, _tree

    rows = _tree(p, label, chains, weights, fn_weight, end_label, sep)
    return pd.DataFrame([asdict(r) for r in rows], columns=list(TreeRow.__dataclass_fields__))


def callers(p: Profile, function: str, depth: int = 3) -> pd.DataFrame:
    """Who calls ``function``: its callers as a tree, ``depth`` levels up.

    ``function`` is ``module!function`` or a bare function name (all
    modules).  Each sample counts once, at the innermost occurrence of the
    function on its stack.  Rows in tree order: ``depth`` (0 = the function
    itself, 1 = direct callers, ...), ``frame``, ``path``
    (``f <- caller <- caller's caller``), ``weight``, ``pct`` (of the
    profile's total) and ``pct_of_function`` (of the function's inclusive
    weight).  ``(root)`` marks samples where the function is the stack's root.
    """
    targets, chains, weights, fw = _chains(p, function, "callers", depth)
    return _tree_rows(p, _label(p, targets, function), chains, weights, fw, "(root)", " <- ")


def callees(p: Profile, function: str, depth: int = 3) -> pd.DataFrame:
    """What ``function`` calls (the other half of the butterfly); ``(self)``
    rows are samples where the function itself was running."""
    targets, chains, weights, fw = _chains(p, function, "callees", depth)
    return _tree_rows(p, _label(p, targets, function), chains, weights, fw, "(self)", " -> ")


def _label(p: Profile, targets, query: str) -> str:
    names = p.frame_names()
    return names[targets[0]] if len(targets) == 1 else query


def diff(a: Profile, b: Profile, *, by: str = "function", measure: str = "exclusive", n: int | None = None) -> pd.DataFrame:
    """Percentage-point change per function (or module) from ``a`` to ``b``.

    Columns: ``name``, ``pct_a``, ``pct_b``, ``change_pp`` (``pct_b - pct_a``),
    ``weight_a``, ``weight_b``; sorted by ``|change_pp|``, largest first.
    Functions are matched across captures by ``module!function``.
    """
    if by not in ("function", "module"):
        raise ValueError("by must be 'function' or 'module'")
    if measure not in ("exclusive", "inclusive"):
        raise ValueError("measure must be 'exclusive' or 'inclusive'")
    table = top_functions if by == "function" else top_modules
    key = "function" if by == "function" else "module"

    def side(p: Profile) -> pd.DataFrame:
        t = table(p)
        return t.groupby(key, sort=False)[[measure, measure + "_pct"]].sum()

    ta, tb = side(a), side(b)
    m = ta.add_suffix("_a").join(tb.add_suffix("_b"), how="outer").fillna(0.0)
    out = pd.DataFrame(
        {
            "name": m.index.astype(str),
            "pct_a": m[measure + "_pct_a"].to_numpy(),
            "pct_b": m[measure + "_pct_b"].to_numpy(),
            "weight_a": m[measure + "_a"].to_numpy(),
            "weight_b": m[measure + "_b"].to_numpy(),
        }
    )
    out = out[(out["weight_a"] != 0) | (out["weight_b"] != 0)]
    out.insert(3, "change_pp", out["pct_b"] - out["pct_a"])
    order = np.lexsort((out["name"].to_numpy(), -out["change_pp"].abs().to_numpy()))
    out = out.iloc[order].reset_index(drop=True)
    return out.head(n) if n is not None else out

