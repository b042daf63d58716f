"""Interning frames and stacks while an importer streams its input.

Split from :mod:`perftools.model` so that a pass that only needs the
interned stacks (``perftools collapse`` of a perf capture) does not import
pandas; :meth:`ProfileBuilder.build` imports it when a Profile is wanted.
"""

from __future__ import annotations

from array import array
from typing import Sequence

import numpy as np

__all__ = ["ProfileBuilder", "NO_STACK", "frame_name", "normalise_process", "split_frame_name"]

#: Function name of the single frame given to samples that had no stack
#: (WPA prints ``n/a``); keeps exclusive weights summing to 100 %.
NO_STACK = "n/a"


def frame_name(module: str, function: str) -> str:
    """``module!function`` as WPA writes it, or just ``function`` without a module."""
    return f"{module}!{function}" if module else function


def normalise_process(text: str) -> str:
    """``"xperf.exe ( 288)"`` -> ``"xperf.exe (288)"``, WPA's spelling."""
    t = text.strip()
    if t.endswith(")"):
        i = t.rfind("(")
        if i >= 0:
            pid = t[i + 1 : -1].strip()
            if pid.isdigit():
                return f"{t[:i].rstrip()} ({int(pid)})"
    return t


def split_frame_name(text: str) -> tuple[str, str]:
    """Inverse of :func:`frame_name`: split at the first ``!`` after a module."""
    i = text.find("!")
    if i > 0:
        return text[:i], text[i + 1 :]
    return "", text


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

    def build(
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
        """Assemble a Profile from per-sample columns (arrays or lists)."""
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
