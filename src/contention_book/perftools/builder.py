"""Interning frames and stacks while an importer streams its input.

Split from :mod:`perftools.model` so that a pass that only needs the
interned stacks does not import pandas: :meth:`ProfileBuilder.build` imports
it when a Profile is wanted, and inside :func:`arrays_only` (the command
line's summary and collapse) it hands back :class:`SampleArrays` instead,
the same columns as numpy arrays, so no importer needs a second entry point.
"""

from __future__ import annotations

import contextlib
import contextvars
from array import array
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

__all__ = ["ProfileBuilder", "SampleArrays", "arrays_only", "profile_from_records", "NO_STACK", "frame_name", "normalise_process",
           "split_frame_name"]

_ARRAYS_ONLY = contextvars.ContextVar("perftools_arrays_only", default=False)


@contextlib.contextmanager
def arrays_only():
    """While active, :meth:`ProfileBuilder.build` returns :class:`SampleArrays`, not a pandas Profile."""
    token = _ARRAYS_ONLY.set(True)
    try:
        yield
    finally:
        _ARRAYS_ONLY.reset(token)

from .frames import NO_STACK, frame_name, normalise_process, split_frame_name  # noqa: F401 (re-exported)


class ProfileBuilder:
    """Interns frames and stacks while an importer streams its input."""

    def __init__(self) -> None:
        self._frame_ids: dict[tuple[str, str], int] = {}
        self.frames: list[tuple[str, str]] = []
        self._stack_ids: dict[tuple[int, ...], int] = {}
        self._offsets = array("q", [0])
        self._values = array("i")

    def frame(self, module: str, function: str) -> int:
        key = (module, function)
        fid = self._frame_ids.get(key)
        if fid is None:
            fid = self._frame_ids[key] = len(self.frames)
            self.frames.append(key)
        return fid

    def frame_from_name(self, text: str) -> int:
        return self.frame(*split_frame_name(text))

    def stack(self, frame_ids: Sequence[int]) -> int:
        """Id of the stack ``frame_ids`` (root first)."""
        key = tuple(frame_ids)
        sid = self._stack_ids.get(key)
        if sid is None:
            sid = self._stack_ids[key] = len(self._offsets) - 1
            self._values.extend(key)
            self._offsets.append(len(self._values))
        return sid

    def add_stacks(self, lengths: np.ndarray, frame_ids: np.ndarray) -> np.ndarray:
        """Append many stacks at once (no de-duplication); returns their ids.

        For importers that already know their stacks are distinct (one per
        distinct stack string); analyses do not need stacks to be unique."""
        first = self.n_stacks
        ends = np.cumsum(lengths, dtype=np.int64) + len(self._values)
        self._values.frombytes(np.ascontiguousarray(frame_ids, dtype=np.int32).tobytes())
        self._offsets.frombytes(ends.tobytes())
        return np.arange(first, first + len(lengths), dtype=np.int32)

    @property
    def n_stacks(self) -> int:
        return len(self._offsets) - 1

    def build(self, stack_id, weight=None, *, process=None, thread=None, time=None, cpu=None,
              meta: dict | None = None):
        """Assemble a Profile from per-sample columns (arrays or lists); :class:`SampleArrays` inside
        :func:`arrays_only`.  ``process``: names per sample, a pandas Categorical, or ``(codes, names)``."""
        if _ARRAYS_ONLY.get():
            return self.arrays(stack_id, weight, process=process, thread=thread, time=time, cpu=cpu, meta=meta)
        if isinstance(process, tuple):
            import pandas as pd

            codes, names = process
            process = pd.Categorical.from_codes(np.asarray(codes), categories=pd.Index(list(names)).astype(str))
        return self._profile(stack_id, weight, process=process, thread=thread, time=time, cpu=cpu, meta=meta)

    def arrays(self, stack_id, weight=None, *, process=None, thread=None, time=None, cpu=None,
               meta: dict | None = None) -> "SampleArrays":
        """The same columns as :meth:`build` takes, as numpy arrays (no pandas)."""
        stack_id = np.asarray(stack_id, dtype=np.int32)
        n = len(stack_id)
        weight = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64)
        if process is None:
            codes, names = np.zeros(n, dtype=np.int32), [""]
        elif isinstance(process, tuple):
            codes, names = np.asarray(process[0], dtype=np.int32), [str(x) for x in process[1]]
        elif hasattr(process, "categories"):  # a Categorical
            codes, names = np.asarray(process.codes, dtype=np.int32), [str(x) for x in process.categories]
        else:
            uniq, inv = np.unique(np.asarray([str(x) for x in process], dtype=object), return_inverse=True)
            codes, names = inv.astype(np.int32), list(uniq)
        if thread is None:
            tid, known = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
        else:
            t = np.asarray(thread)
            if t.dtype.kind == "f":
                known = ~np.isnan(t)
                tid = np.where(known, t, 0).astype(np.int64)
            elif t.dtype.kind in "iu":
                tid, known = t.astype(np.int64), np.ones(n, dtype=bool)
            else:  # a nullable extension array or a list with None
                known = np.array([x is not None and x == x for x in t], dtype=bool)
                tid = np.array([int(x) if k else 0 for x, k in zip(t, known)], dtype=np.int64)
        return SampleArrays(
            frames=list(self.frames),
            stack_offsets=np.frombuffer(self._offsets, dtype=np.int64).copy(),
            stack_frames=np.frombuffer(self._values, dtype=np.int32).copy(),
            stack_id=stack_id, weight=weight, process_codes=codes, process_names=names,
            thread=tid, thread_known=known,
            time=np.full(n, np.nan) if time is None else np.asarray(time, dtype=np.float64),
            meta=meta or {},
        )

    def _profile(
        self,
        stack_id,
        weight=None,
        *,
        process=None,
        thread=None,
        time=None,
        cpu=None,
        meta: dict | None = None,
    ) -> "Profile":
        import pandas as pd

        from .model import Profile, make_samples

        stack_id = np.asarray(stack_id, dtype=np.int32)
        n = len(stack_id)
        frames = pd.DataFrame(self.frames, columns=["module", "function"])
        if not len(frames):
            frames = pd.DataFrame({"module": pd.Series([], dtype=str), "function": pd.Series([], dtype=str)})
        samples = make_samples(n, stack_id, weight, process, thread, time, cpu)
        return Profile(
            frames,
            np.frombuffer(self._offsets, dtype=np.int64).copy(),
            np.frombuffer(self._values, dtype=np.int32).copy(),
            samples,
            meta or {},
        )


@dataclass
class SampleArrays:
    """A parsed profile as plain numpy arrays: what the command line's summary and collapse need,
    without pandas (whose import alone costs as much as reading a 200 MB export)."""

    frames: list  # (module, function) per frame id
    stack_offsets: np.ndarray
    stack_frames: np.ndarray
    stack_id: np.ndarray
    weight: np.ndarray
    process_codes: np.ndarray
    process_names: list
    thread: np.ndarray
    thread_known: np.ndarray
    time: np.ndarray
    meta: dict = field(default_factory=dict)

    @property
    def n_samples(self) -> int:
        return len(self.stack_id)

    @property
    def n_stacks(self) -> int:
        return len(self.stack_offsets) - 1

    @property
    def total_weight(self) -> float:
        return float(self.weight.sum())

    def frame_names(self) -> list[str]:
        return [frame_name(m, f) for m, f in self.frames]

    def stacks_containing(self, frame_ids) -> np.ndarray:
        """Boolean per stack: does it contain any of ``frame_ids``?"""
        hit = np.isin(self.stack_frames, np.asarray(frame_ids, dtype=np.int64))
        owner = np.repeat(np.arange(self.n_stacks), np.diff(self.stack_offsets))
        out = np.zeros(self.n_stacks, dtype=bool)
        out[owner[hit]] = True
        return out

    def filter(self, process=None, thread=None, start=None, end=None, module=None) -> "SampleArrays":
        """The samples that match every criterion, as :meth:`perftools.model.Profile.filter` keeps them."""
        mask = np.ones(self.n_samples, dtype=bool)
        if process is not None:
            wanted = {str(p).strip() for p in _as_list(process)}
            keep = np.zeros(len(self.process_names), dtype=bool)
            for i, u in enumerate(self.process_names):
                name, _, pid = u.rpartition(" (")
                pid = pid[:-1] if pid.endswith(")") else ""
                keep[i] = u in wanted or bool(name and name in wanted) or bool(pid and pid in wanted)
            mask &= keep[self.process_codes]
        if thread is not None:
            mask &= self.thread_known & np.isin(self.thread, [int(t) for t in _as_list(thread)])
        if start is not None or end is not None:
            if len(self.time) and np.isnan(self.time).all():
                raise ValueError("this profile has no timestamps to filter on")
            if start is not None:
                mask &= self.time >= float(start)
            if end is not None:
                mask &= self.time <= float(end)
        if module is not None:
            mods = {m.lower() for m in _as_list(module)}
            ids = [i for i, (m, _) in enumerate(self.frames) if m.lower() in mods]
            mask &= self.stacks_containing(ids)[self.stack_id]
        return SampleArrays(self.frames, self.stack_offsets, self.stack_frames, self.stack_id[mask],
                            self.weight[mask], self.process_codes[mask], self.process_names, self.thread[mask],
                            self.thread_known[mask], self.time[mask], dict(self.meta))


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple, set, frozenset, np.ndarray)) else [x]


def profile_from_records(records: Iterable, meta: dict | None = None):
    """A Profile from ``(frames, weight[, process[, thread[, time[, cpu]]]])`` records, ``frames`` being
    ``module!function`` strings root first: handy for tests and for small synthetic profiles."""
    import pandas as pd

    from .model import SAMPLE_COLUMNS

    b = ProfileBuilder()
    cols: dict[str, list] = {k: [] for k in SAMPLE_COLUMNS}
    for rec in records:
        rec = tuple(rec) + (None,) * (6 - len(rec))
        names, weight, process, thread, time, cpu = rec
        cols["stack_id"].append(b.stack([b.frame_from_name(f) for f in names]))
        cols["weight"].append(1.0 if weight is None else float(weight))
        cols["process"].append("" if process is None else str(process))
        cols["thread"].append(thread)
        cols["time"].append(np.nan if time is None else float(time))
        cols["cpu"].append(cpu)
    return b.build(cols["stack_id"], cols["weight"], process=cols["process"],
                   thread=pd.array(cols["thread"], dtype="Int64"), time=cols["time"],
                   cpu=pd.array(cols["cpu"], dtype="Int32"), meta=meta)
