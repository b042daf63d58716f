"""Latency histograms: HDR histograms (the ``hdrhistogram`` package), encoded for recordings.

An HDR histogram keeps every value to 3 significant digits from 1 µs to an
hour in a fixed, mergeable structure, and its standard compressed encoding
is a short base64 string.  A recording stores one per point, so any
percentile can be read later, not only the few a run chose to print.
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np
from hdrh.histogram import HdrHistogram

LOWEST_NS = 1_000            # 1 µs: the clock and the driver do not resolve less
HIGHEST_NS = 3_600 * 10**9   # an hour
DIGITS = 3                   # 0.1% relative precision


class LatencyHistogram:
    """Nanosecond latencies; ``record``/``merge``/``percentile_ms``/``summary`` and ``encode``/``decode``."""

    def __init__(self, hdr: HdrHistogram | None = None) -> None:
        self.hdr = hdr if hdr is not None else HdrHistogram(LOWEST_NS, HIGHEST_NS, DIGITS)
        self._max = 0  # the exact maximum where it was seen (HDR keeps it to its precision only)

    @property
    def total(self) -> int:
        return int(self.hdr.get_total_count())

    @property
    def max_ns(self) -> int:
        if not self.total:
            return 0
        return self._max or int(self.hdr.get_max_value())

    def record(self, ns: int, count: int = 1) -> None:
        ns = min(max(int(ns), LOWEST_NS), HIGHEST_NS)
        self.hdr.record_value(ns, count)
        if ns > self._max:
            self._max = ns

    def record_many(self, ns: Iterable[int] | np.ndarray) -> "LatencyHistogram":
        """Record a whole array at once: distinct values (at HDR precision they are few) with their counts."""
        values = np.clip(np.asarray(ns, dtype=np.int64), LOWEST_NS, HIGHEST_NS)
        if values.size:
            self._max = max(self._max, int(values.max()))
            # round to 3 significant digits first: HDR keeps no more, and there are far fewer distinct values
            scale = 10.0 ** np.maximum(np.floor(np.log10(values)) - DIGITS, 0)
            values = (np.floor(values / scale) * scale).astype(np.int64)
            uniq, counts = np.unique(values, return_counts=True)
            for v, c in zip(uniq.tolist(), counts.tolist()):
                self.hdr.record_value(v, c)
        return self

    def merge(self, other: "LatencyHistogram") -> "LatencyHistogram":
        if other.total:
            self.hdr.add(other.hdr)
            self._max = max(self._max, other.max_ns)
        return self

    def percentile_ms(self, q: float) -> float:
        """The q-th percentile in ms (the highest value equivalent to it at HDR precision)."""
        if not self.total:
            return float("nan")
        return min(self.hdr.get_value_at_percentile(q), self.max_ns) / 1e6

    def summary(self) -> dict[str, float]:
        return {
            "p50_ms": self.percentile_ms(50),
            "p95_ms": self.percentile_ms(95),
            "p99_ms": self.percentile_ms(99),
            "max_ms": self.max_ns / 1e6 if self.total else float("nan"),
        }

    def encode(self) -> str:
        """The HdrHistogram compressed encoding (base64 text), empty for an empty histogram."""
        return self.hdr.encode().decode("ascii") if self.total else ""

    @classmethod
    def decode(cls, text: str | float | None) -> "LatencyHistogram":
        """A histogram from :meth:`encode`'s text; an empty or missing cell gives an empty histogram."""
        if text is None or (isinstance(text, float) and math.isnan(text)) or not str(text).strip():
            return cls()
        try:
            hdr = HdrHistogram.decode(str(text).strip().encode("ascii"))
        except Exception as exc:  # noqa: BLE001 - the library raises several kinds
            raise ValueError(f"not an encoded HDR histogram ({type(exc).__name__}: {exc})") from None
        out = cls()
        out.hdr.add(hdr)
        return out
