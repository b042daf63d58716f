"""The one model every importer produces and every analysis reads.

Sampled-stack exports repeat the same few thousand stacks hundreds of
thousands of times, so the model stores each distinct thing once:

* ``frames``: a DataFrame of interned ``(module, function)`` pairs; a frame
  id is its row number.
* stacks: interned tuples of frame ids, root first, leaf last, stored as an
  offsets + values layout (``stack_offsets``, ``stack_frames``: stack ``i``
  is ``stack_frames[stack_offsets[i]:stack_offsets[i+1]]``) so analyses run
  as numpy array operations over distinct stacks, not over samples.
* ``samples``: one row per sample (or per pre-aggregated row of an export)
  with ``stack_id``, ``weight``, ``process``, ``thread``, ``time`` (seconds,
  NaN when the format has none) and ``cpu`` (nullable).

This mirrors speedscope's and pprof's profile models (interned frames and
stacks, weighted samples); filters return a new Profile that shares frames
and stacks and keeps only the selected samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from .frames import NO_STACK, frame_name, normalise_process, split_frame_name

__all__ = [
    "Profile",
    "frame_name",
    "split_frame_name",
    "normalise_process",
    "NO_STACK",
]


SAMPLE_COLUMNS = ("stack_id", "weight", "process", "thread", "time", "cpu")


def _nullable_int(values, n, dtype):
    """Pandas nullable integers from None, a float array with NaN, ints or a list."""
    np_dtype = np.dtype(dtype.lower())
    if values is None:
        return pd.arrays.IntegerArray(np.zeros(n, dtype=np_dtype), np.ones(n, dtype=bool))
    if isinstance(values, pd.api.extensions.ExtensionArray):
        return values.astype(dtype)
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        mask = np.isnan(arr)
        with np.errstate(invalid="ignore"):
            ints = arr.astype(np_dtype)  # NaN becomes garbage, hidden by the mask
        ints[mask] = 0
        return pd.arrays.IntegerArray(ints, mask)
    if arr.dtype.kind in "iu":
        return pd.arrays.IntegerArray(arr.astype(np_dtype, copy=False), np.zeros(len(arr), dtype=bool))
    return pd.array(list(values), dtype=dtype)


def make_samples(n, stack_id, weight=None, process=None, thread=None, time=None, cpu=None) -> pd.DataFrame:
    """The samples DataFrame with the model's column types."""
    if weight is None:
        weight = np.ones(n)
    if process is None:
        process = pd.Categorical([""] * n)
    elif not isinstance(process, pd.Categorical):
        process = pd.Categorical(process)
    if time is None:
        time = np.full(n, np.nan)
    return pd.DataFrame(
        {
            "stack_id": np.asarray(stack_id, dtype=np.int32),
            "weight": np.asarray(weight, dtype=np.float64),
            "process": process,
            "thread": _nullable_int(thread, n, "Int64"),
            "time": np.asarray(time, dtype=np.float64),
            "cpu": _nullable_int(cpu, n, "Int32"),
        },
        copy=False,  # the importer's arrays are ours to keep
    )


@dataclass(frozen=True, eq=False)
class Profile:
    """Weighted stack samples; see the module docstring for the layout."""

    frames: pd.DataFrame
    stack_offsets: np.ndarray
    stack_frames: np.ndarray
    samples: pd.DataFrame
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if list(self.frames.columns[:2]) != ["module", "function"]:
            raise ValueError("frames must have columns module, function")
        if len(self.stack_offsets) < 1 or self.stack_offsets[0] != 0:
            raise ValueError("stack_offsets must start at 0")
        if self.stack_offsets[-1] != len(self.stack_frames):
            raise ValueError("stack_offsets must end at len(stack_frames)")
        if len(self.stack_frames) and (
            self.stack_frames.min() < 0 or self.stack_frames.max() >= len(self.frames)
        ):
            raise ValueError("stack_frames refer to unknown frames")
        missing = set(SAMPLE_COLUMNS) - set(self.samples.columns)
        if missing:
            raise ValueError(f"samples lack columns {sorted(missing)}")
        sid = self.samples["stack_id"].to_numpy()
        if len(sid) and (sid.min() < 0 or sid.max() >= self.n_stacks):
            raise ValueError("samples refer to unknown stacks")
        object.__setattr__(self, "_cache", {})

    # ----- basic views -----------------------------------------------------
    @property
    def n_stacks(self) -> int:
        return len(self.stack_offsets) - 1

    def stack(self, i: int) -> tuple[int, ...]:
        a, b = self.stack_offsets[i], self.stack_offsets[i + 1]
        return tuple(int(x) for x in self.stack_frames[a:b])

    @property
    def stacks(self) -> list[tuple[int, ...]]:
        """All stacks as tuples of frame ids, root first."""
        vals = self.stack_frames.tolist()
        off = self.stack_offsets.tolist()
        return [tuple(vals[off[i] : off[i + 1]]) for i in range(self.n_stacks)]

    @property
    def total_weight(self) -> float:
        return float(self.samples["weight"].sum())

    def frame_names(self) -> np.ndarray:
        """``module!function`` for every frame id (object array, cached)."""
        c = self._cache
        if "names" not in c:
            mods = self.frames["module"].tolist()
            funcs = self.frames["function"].tolist()
            c["names"] = np.array([frame_name(m, f) for m, f in zip(mods, funcs)], dtype=object)
        return c["names"]

    def stack_names(self, i: int) -> list[str]:
        names = self.frame_names()
        return [names[f] for f in self.stack(i)]

    def stack_lengths(self) -> np.ndarray:
        return np.diff(self.stack_offsets)

    def entry_stack(self) -> np.ndarray:
        """For each position in ``stack_frames``, the stack it belongs to."""
        c = self._cache
        if "entry_stack" not in c:
            c["entry_stack"] = np.repeat(
                np.arange(self.n_stacks, dtype=np.int64), self.stack_lengths()
            )
        return c["entry_stack"]

    def entry_depth(self) -> np.ndarray:
        """For each position in ``stack_frames``, its depth (root = 0)."""
        c = self._cache
        if "entry_depth" not in c:
            c["entry_depth"] = (
                np.arange(len(self.stack_frames), dtype=np.int64)
                - self.stack_offsets[:-1][self.entry_stack()]
            )
        return c["entry_depth"]

    def _first_in_stack(self, keys: np.ndarray) -> np.ndarray:
        """True for entries whose key did not occur earlier in the same stack."""
        pair = self.entry_stack() * (int(keys.max()) + 1 if len(keys) else 1) + keys
        order = np.argsort(pair, kind="stable")
        sp = pair[order]
        first = np.ones(len(pair), dtype=bool)
        first[order[1:]] = sp[1:] != sp[:-1]
        return first

    def entry_first_frame(self) -> np.ndarray:
        """Per entry: first occurrence of that frame in its stack (recursion)."""
        c = self._cache
        if "first_frame" not in c:
            c["first_frame"] = self._first_in_stack(self.stack_frames.astype(np.int64))
        return c["first_frame"]

    def entry_first_module(self) -> np.ndarray:
        """Per entry: first occurrence of that frame's module in its stack."""
        c = self._cache
        if "first_module" not in c:
            c["first_module"] = self._first_in_stack(self.module_codes()[0][self.stack_frames])
        return c["first_module"]

    def stack_weights(self) -> np.ndarray:
        """Total sample weight of each stack (float64, length n_stacks)."""
        return np.bincount(
            self.samples["stack_id"].to_numpy(),
            weights=self.samples["weight"].to_numpy(),
            minlength=self.n_stacks,
        )

    def module_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, modules)``: module index of each frame, module names."""
        c = self._cache
        if "modules" not in c:
            codes, uniques = pd.factorize(self.frames["module"], sort=False)
            c["modules"] = (np.asarray(codes, dtype=np.int64), np.asarray(uniques, dtype=object))
        return c["modules"]

    # ----- frame lookup ----------------------------------------------------
    def find_frames(self, query: str) -> np.ndarray:
        """Frame ids matching ``query``: ``module!function`` exactly, else a
        function name exactly, else either case-insensitively."""
        names = self.frame_names()
        funcs = self.frames["function"].to_numpy(dtype=object)
        for candidates in ((names == query) | (funcs == query),):
            hits = np.flatnonzero(candidates)
            if len(hits):
                return hits
        q = query.lower()
        low_names = np.array([n.lower() for n in names], dtype=object)
        low_funcs = np.array([f.lower() for f in funcs], dtype=object)
        return np.flatnonzero((low_names == q) | (low_funcs == q))

    def stacks_containing(self, frame_ids) -> np.ndarray:
        """Boolean per stack: does it contain any of ``frame_ids``?"""
        hit = np.isin(self.stack_frames, np.asarray(frame_ids))
        out = np.zeros(self.n_stacks, dtype=bool)
        out[np.unique(self.entry_stack()[hit])] = True
        return out

    # ----- filtering -------------------------------------------------------
    def with_samples(self, mask) -> "Profile":
        """A Profile sharing frames and stacks, keeping samples where ``mask``."""
        s = self.samples[np.asarray(mask, dtype=bool)].reset_index(drop=True)
        if isinstance(s["process"].dtype, pd.CategoricalDtype):
            s["process"] = s["process"].cat.remove_unused_categories()
        p = Profile(self.frames, self.stack_offsets, self.stack_frames, s, dict(self.meta))
        p._cache.update({k: v for k, v in self._cache.items()})
        return p

    def processes(self) -> list[str]:
        return sorted(str(p) for p in self.samples["process"].unique())

    def filter(
        self,
        process=None,
        thread=None,
        start: float | None = None,
        end: float | None = None,
        module=None,
        function=None,
    ) -> "Profile":
        """New Profile with the samples that match every given criterion.

        ``process``: name (``sqlservr.exe``), ``name (pid)`` or pid, or a list;
        ``thread``: id(s); ``start``/``end``: seconds, inclusive; ``module`` /
        ``function``: keep samples whose stack contains such a frame (WPA's
        "filter to" on a module or function).  Percentages computed on the
        result are of the filtered total, as in WPA.
        """
        s = self.samples
        mask = np.ones(len(s), dtype=bool)
        if process is not None:
            wanted = {str(p).strip() for p in _as_list(process)}
            cats = s["process"].astype(str)
            uniq = pd.unique(cats)
            keep = set()
            for u in uniq:
                name, _, pid = u.rpartition(" (")
                pid = pid[:-1] if pid.endswith(")") else ""
                if u in wanted or (name and name in wanted) or (pid and pid in wanted):
                    keep.add(u)
            mask &= cats.isin(keep).to_numpy()
        if thread is not None:
            ids = [int(t) for t in _as_list(thread)]
            mask &= s["thread"].isin(ids).fillna(False).to_numpy(dtype=bool)
        if start is not None or end is not None:
            t = s["time"].to_numpy()
            if len(t) and np.isnan(t).all():
                raise ValueError("this profile has no timestamps to filter on")
            if start is not None:
                mask &= t >= float(start)
            if end is not None:
                mask &= t <= float(end)
        if module is not None:
            mods = {m.lower() for m in _as_list(module)}
            fr = np.flatnonzero(self.frames["module"].str.lower().isin(mods).to_numpy())
            mask &= self.stacks_containing(fr)[s["stack_id"].to_numpy()]
        if function is not None:
            fr = np.concatenate([self.find_frames(f) for f in _as_list(function)] + [np.array([], dtype=np.int64)])
            mask &= self.stacks_containing(fr)[s["stack_id"].to_numpy()]
        return self.with_samples(mask)

    def __repr__(self) -> str:
        src = self.meta.get("source", "")
        return (
            f"Profile({len(self.samples)} samples, {self.n_stacks} stacks, "
            f"{len(self.frames)} frames, total weight {self.total_weight:g}"
            + (f", from {src}" if src else "")
            + ")"
        )


def _as_list(x) -> list:
    if isinstance(x, (list, tuple, set, frozenset, np.ndarray, pd.Series)):
        return list(x)
    return [x]
