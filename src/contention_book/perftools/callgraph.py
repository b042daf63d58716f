"""Who calls a function, and what it calls, as an indented tree, without pandas: ``perftools callers``.

The same rows as :func:`.analysis.callers` and :func:`.analysis.callees` (the notebooks' DataFrame
interface), computed on :class:`~.builder.SampleArrays` so the command line need not import pandas;
tests/perftools/test_perftools_tops.py checks that both give the same rows.  Each sample counts once: at
the innermost occurrence of the function on its stack for callers, the outermost for callees.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

import numpy as np

__all__ = ["TreeRow", "callers", "callees", "find_frames"]


@dataclass(frozen=True)
class TreeRow:
    depth: int
    frame: str
    path: str
    weight: float
    pct: float
    pct_of_function: float


def find_frames(a, query: str) -> np.ndarray:
    """Frame ids matching ``query``: ``module!function`` exactly, else a function name exactly, else
    either case-insensitively (as :meth:`.model.Profile.find_frames`)."""
    names = np.array(a.frame_names(), dtype=object)
    funcs = np.array([f for _, f in a.frames], dtype=object)
    hits = np.flatnonzero((names == query) | (funcs == query))
    if len(hits):
        return hits
    q = query.lower()
    return np.flatnonzero((np.array([n.lower() for n in names], dtype=object) == q) |
                          (np.array([f.lower() for f in funcs], dtype=object) == q))


def _targets(a, function: str) -> np.ndarray:
    ids = find_frames(a, function)
    if not len(ids):
        names = list(dict.fromkeys(a.frame_names() + [f for _, f in a.frames]))
        q = function.lower()
        close = [n for n in names if q in n.lower()][:5] or difflib.get_close_matches(function, names, n=5, cutoff=0.6)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise KeyError(f"no frame named {function!r} in the profile{hint}")
    return ids


def _chains(a, function: str, direction: str, depth: int):
    if depth < 1:
        raise ValueError("depth must be at least 1")
    targets = _targets(a, function)
    sw = np.bincount(a.stack_id, weights=a.weight, minlength=a.n_stacks)
    entry_stack = np.repeat(np.arange(a.n_stacks, dtype=np.int64), np.diff(a.stack_offsets))
    return (targets, *chains_through(targets, sw, entry_stack, a.stack_frames, a.stack_offsets, direction, depth))


def chains_through(targets, stack_weights, entry_stack, frames, offsets, direction: str, depth: int):
    """(chains of frame ids, their weights, the function's inclusive weight) for the stacks through ``targets``:
    callers above the innermost occurrence, or callees below the outermost one (so each stack counts once).
    Shared by the numpy path here and the pandas one in :mod:`analysis`."""
    hit = np.isin(frames, targets)
    es = entry_stack[hit]
    pos = np.flatnonzero(hit)
    chains, weights = [], []
    if len(pos):
        if direction == "callers":  # innermost occurrence: its real caller
            last = np.r_[es[1:] != es[:-1], True]
            stacks, at = es[last], pos[last]
        else:  # outermost occurrence: all time below it, once
            first = np.r_[True, es[1:] != es[:-1]]
            stacks, at = es[first], pos[first]
        for s, i in zip(stacks.tolist(), at.tolist()):
            w = stack_weights[s]
            if w == 0:
                continue
            if direction == "callers":
                lo = max(int(offsets[s]), i - depth)
                chain = tuple(frames[lo:i][::-1].tolist())
            else:
                hi = min(int(offsets[s + 1]), i + 1 + depth)
                chain = tuple(frames[i + 1 : hi].tolist())
            chains.append(chain)
            weights.append(w)
    return chains, weights, float(sum(weights))


def _pct(x: float, total: float) -> float:
    return x * (100.0 / total) if total else x * 0.0


def _tree(a, label: str, chains, weights, fn_weight: float, end_label: str, sep: str) -> list[TreeRow]:
    names = a.frame_names()
    total = a.total_weight
    agg: dict[tuple, float] = {}
    for chain, w in zip(chains, weights):
        if not chain:
            chain = (-1,)
        for k in range(1, len(chain) + 1):
            agg[chain[:k]] = agg.get(chain[:k], 0.0) + w
    kids: dict[tuple, list[tuple]] = {}
    for path in agg:
        kids.setdefault(path[:-1], []).append(path)
    rows = [TreeRow(0, label, label, fn_weight, _pct(fn_weight, total), _pct(fn_weight, fn_weight))]

    def walk(prefix):
        for path in sorted(kids.get(prefix, []), key=lambda q: (-agg[q], q)):
            text = [end_label if f < 0 else names[f] for f in path]
            w = agg[path]
            rows.append(TreeRow(len(path), text[-1], sep.join([label] + text), w, _pct(w, total), _pct(w, fn_weight)))
            walk(path)

    walk(())
    return rows


def _label(a, targets, query: str) -> str:
    return a.frame_names()[int(targets[0])] if len(targets) == 1 else query


def callers(a, function: str, depth: int = 3) -> list[TreeRow]:
    """Who calls ``function``, ``depth`` levels up, in tree order (``(root)``: the stack starts there)."""
    targets, chains, weights, fw = _chains(a, function, "callers", depth)
    return _tree(a, _label(a, targets, function), chains, weights, fw, "(root)", " <- ")


def callees(a, function: str, depth: int = 3) -> list[TreeRow]:
    """What ``function`` calls, ``depth`` levels down (``(self)``: the function itself was running)."""
    targets, chains, weights, fw = _chains(a, function, "callees", depth)
    return _tree(a, _label(a, targets, function), chains, weights, fw, "(self)", " -> ")
