"""Top functions and modules by exclusive and inclusive weight, and their change between two captures, in
numpy alone.

Why a second implementation beside :mod:`.analysis`: ``perftools summary`` prints these two tables and
nothing else, and importing pandas for them cost as long as reading a 200 MB export.  The numbers are
:func:`.analysis.top_functions` and :func:`.analysis.top_modules`' own (same sums in the same order,
same sort), which tests/perftools/test_perftools_tops.py checks on every fixture; analysis stays the
notebooks' DataFrame interface.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Row", "Change", "top_functions", "top_modules", "diff"]


@dataclass(frozen=True)
class Row:
    name: str
    exclusive: float
    exclusive_pct: float
    inclusive: float
    inclusive_pct: float


def _pct(x: np.ndarray, total: float) -> np.ndarray:
    return x * (100.0 / total) if total else x * 0.0


def _stack_weights(a) -> np.ndarray:
    return np.bincount(a.stack_id, weights=a.weight, minlength=a.n_stacks)


def _exclusive(a, keys: np.ndarray, n_keys: int, sw: np.ndarray) -> np.ndarray:
    """Weight of each key at the leaf of the stacks (stacks with no frame aside)."""
    nonempty = np.flatnonzero(np.diff(a.stack_offsets) > 0)
    leaves = a.stack_frames[a.stack_offsets[1:][nonempty] - 1]
    return np.bincount(keys[leaves], weights=sw[nonempty], minlength=n_keys)


def _inclusive(a, keys_per_entry: np.ndarray, n_keys: int, sw: np.ndarray) -> np.ndarray:
    """Weight of each key over the stacks it appears in, once per stack (recursion counted once)."""
    entry_stack = np.repeat(np.arange(a.n_stacks, dtype=np.int64), np.diff(a.stack_offsets))
    keys = keys_per_entry.astype(np.int64)
    pair = entry_stack * (int(keys.max()) + 1 if len(keys) else 1) + keys
    order = np.argsort(pair, kind="stable")
    sp = pair[order]
    first = np.ones(len(pair), dtype=bool)
    first[order[1:]] = sp[1:] != sp[:-1]
    return np.bincount(keys[first], weights=sw[entry_stack[first]], minlength=n_keys)


def _rows(names, excl, incl, total, sort: str, n: int | None) -> list[Row]:
    if sort not in ("exclusive", "inclusive"):
        raise ValueError("sort must be 'exclusive' or 'inclusive'")
    keep = np.flatnonzero((excl > 0) | (incl > 0))
    first, second = (excl, incl) if sort == "exclusive" else (incl, excl)
    order = keep[np.lexsort((-second[keep], -first[keep]))]  # stable: ties keep the id order, as pandas does
    if n is not None:
        order = order[:n]
    ep, ip = _pct(excl, total), _pct(incl, total)
    return [Row(names[i], float(excl[i]), float(ep[i]), float(incl[i]), float(ip[i])) for i in order.tolist()]


def top_functions(a, n: int | None = None, *, sort: str = "exclusive") -> list[Row]:
    """Rows ``module!function`` of a :class:`~.builder.SampleArrays`, largest first."""
    sw = _stack_weights(a)
    n_frames = len(a.frames)
    ids = np.arange(n_frames)
    excl = _exclusive(a, ids, n_frames, sw)
    incl = _inclusive(a, a.stack_frames, n_frames, sw)
    return _rows(a.frame_names(), excl, incl, a.total_weight, sort, n)


def top_modules(a, n: int | None = None, *, sort: str = "exclusive") -> list[Row]:
    """Rows per module (``(no module)`` for frames without one), largest first."""
    sw = _stack_weights(a)
    index: dict[str, int] = {}
    codes = np.fromiter((index.setdefault(m, len(index)) for m, _ in a.frames), dtype=np.int64, count=len(a.frames))
    modules = [m if m else "(no module)" for m in index]
    excl = _exclusive(a, codes, len(modules), sw)
    incl = _inclusive(a, codes[a.stack_frames], len(modules), sw)
    return _rows(modules, excl, incl, a.total_weight, sort, n)


@dataclass(frozen=True)
class Change:
    name: str
    pct_a: float
    pct_b: float
    change_pp: float
    weight_a: float
    weight_b: float


def diff(a, b, *, by: str = "function", measure: str = "exclusive", n: int | None = None) -> list[Change]:
    """Percentage-point change per function (or module) from ``a`` to ``b``, largest ``|change|`` first (then
    by name): :func:`.analysis.diff`'s rows, for the command line."""
    if by not in ("function", "module"):
        raise ValueError("by must be 'function' or 'module'")
    if measure not in ("exclusive", "inclusive"):
        raise ValueError("measure must be 'exclusive' or 'inclusive'")
    table = top_functions if by == "function" else top_modules

    def side(p) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for r in table(p):
            w, pct = (r.exclusive, r.exclusive_pct) if measure == "exclusive" else (r.inclusive, r.inclusive_pct)
            acc = out.setdefault(r.name, [0.0, 0.0])
            acc[0] += w
            acc[1] += pct
        return out

    sa, sb = side(a), side(b)
    rows = []
    for name in sorted(set(sa) | set(sb)):
        wa, pa_ = sa.get(name, (0.0, 0.0))
        wb, pb_ = sb.get(name, (0.0, 0.0))
        if wa != 0 or wb != 0:
            rows.append(Change(name, pa_, pb_, pb_ - pa_, wa, wb))
    rows.sort(key=lambda r: -abs(r.change_pp))  # stable: names stay in order within a tie
    return rows[:n] if n is not None else rows
