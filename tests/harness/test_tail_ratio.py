"""The pooled p99 ratio bench-driver judges its open-loop goal on: exact point, an interval that moves."""
import numpy as np
import pytest

from contention_book.harness.tail_ratio import pooled_ratio


def _runs(rng, scale, n=6, calls=20_000):
    return [rng.lognormal(np.log(200_000), 0.6, calls) * scale for _ in range(n)]


def test_the_same_distribution_is_near_one_and_a_slower_one_is_not():
    rng = np.random.default_rng(1)
    base = _runs(rng, 1.0)
    same = pooled_ratio(_runs(rng, 1.0), base)
    slower = pooled_ratio(_runs(rng, 1.5), base)
    assert 0.95 < same.ratio < 1.05 and same.low < 1.0 < same.high
    assert 1.45 < slower.ratio < 1.55 and slower.low > 1.2  # a 1.2 goal would be missed, and the rule can say so
    assert same.pairs == 6 and same.calls_a == 6 * 20_000


def test_the_point_is_exact_and_the_interval_brackets_it():
    rng = np.random.default_rng(2)
    a, b = _runs(rng, 1.1, n=4), _runs(rng, 1.0, n=4)
    r = pooled_ratio(a, b, resamples=500)
    assert r.ratio == pytest.approx(np.percentile(np.concatenate(a), 99) / np.percentile(np.concatenate(b), 99))
    assert r.low <= r.ratio <= r.high


def test_one_stalled_run_widens_the_interval_rather_than_deciding_alone():
    rng = np.random.default_rng(3)
    a, b = _runs(rng, 1.0, n=8), _runs(rng, 1.0, n=8)
    a[0][:1000] = 50e6  # 5% of one run at 50 ms: a stall on a shared machine
    calm = pooled_ratio(_runs(rng, 1.0, n=8), b)
    stalled = pooled_ratio(a, b)
    assert stalled.high - stalled.low > 3 * (calm.high - calm.low)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="in pairs"):
        pooled_ratio([np.ones(3) * 1e5], [np.ones(3) * 1e5, np.ones(3) * 1e5])
    with pytest.raises(ValueError, match="at least one latency"):
        pooled_ratio([np.ones(3) * 1e5], [np.array([])])
