"""One client's tail latency over another's, from interleaved runs: the pooled percentile, and its spread.

On a small shared machine a p99 over a few seconds (some 30,000 calls) is set
by a handful of scheduler stalls, and one pair of runs' p99 ratio swings by
three times from pair to pair whichever client is faster.  Pooling every run's
calls gives the percentile a longer run would show under the same
interference (the runs are interleaved, so the interference falls on both
clients alike).  Its spread comes from resampling whole pairs of runs (a
paired percentile bootstrap), since calls within one run are not independent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: log-spaced bins for the bootstrap's percentiles: 0.1% wide (HDR's precision here), 1 µs to 100 s
_EDGES = np.geomspace(1e3, 1e11, int(np.log(1e8) / np.log(1.001)) + 1)


@dataclass(frozen=True)
class TailRatio:
    """``ratio`` of the pooled ``q``-th percentiles (a over b), its bootstrap interval, and what it was taken on."""

    ratio: float
    low: float
    high: float
    q: float
    confidence: float
    pairs: int
    calls_a: int
    calls_b: int

    def text(self) -> str:
        return (f"{self.ratio:.2f} ({self.confidence:.0%} interval {self.low:.2f}-{self.high:.2f}, "
                f"{self.pairs} pairs of runs)")


def _checked(runs: Sequence[np.ndarray], name: str) -> list[np.ndarray]:
    out = [np.asarray(r, dtype=np.float64).ravel() for r in runs]
    if not out or any(r.size == 0 for r in out):
        raise ValueError(f"tail_ratio: every run of {name} needs at least one latency (got sizes "
                         f"{[r.size for r in out]})")
    return out


def pooled_ratio(a_runs: Sequence[np.ndarray], b_runs: Sequence[np.ndarray], q: float = 99.0,
                 confidence: float = 0.90, resamples: int = 2000, seed: int = 0) -> TailRatio:
    """The ``q``-th percentile of every call of ``a_runs`` pooled, over the same of ``b_runs``.

    ``a_runs[i]`` and ``b_runs[i]`` are the latencies (ns) of the i-th pair of interleaved runs.  The
    interval resamples pairs with replacement (both clients' runs of a pair together) and reads each resample's
    percentiles off 0.1%-wide bins; the point estimate is exact.
    """
    a, b = _checked(a_runs, "a"), _checked(b_runs, "b")
    if len(a) != len(b):
        raise ValueError(f"tail_ratio: runs must come in pairs (got {len(a)} and {len(b)})")
    ratio = float(np.percentile(np.concatenate(a), q) / np.percentile(np.concatenate(b), q))
    counts_a = np.stack([np.bincount(np.searchsorted(_EDGES, r), minlength=_EDGES.size + 1) for r in a])
    counts_b = np.stack([np.bincount(np.searchsorted(_EDGES, r), minlength=_EDGES.size + 1) for r in b])
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(a), size=(resamples, len(a)))
    weights = np.stack([np.bincount(p, minlength=len(a)) for p in picks]).astype(np.float64)
    ratios = np.concatenate([_binned_percentile(w @ counts_a, q) / _binned_percentile(w @ counts_b, q)
                             for w in np.array_split(weights, max(1, resamples // 200))])  # 200 rows: ~30 MB at a time
    tail = (1 - confidence) / 2
    low, high = np.quantile(ratios, [tail, 1 - tail])
    return TailRatio(ratio, float(low), float(high), q, confidence, len(a),
                     sum(r.size for r in a), sum(r.size for r in b))


def _binned_percentile(counts: np.ndarray, q: float) -> np.ndarray:
    """Per row of bin counts, the geometric middle of the bin holding the q-th percentile."""
    cum = np.cumsum(counts, axis=1)
    idx = np.argmax(cum >= cum[:, -1:] * (q / 100.0), axis=1)
    lo = _EDGES[np.clip(idx - 1, 0, _EDGES.size - 1)]
    hi = _EDGES[np.clip(idx, 0, _EDGES.size - 1)]
    return np.sqrt(lo * hi)
