"""Predictions that can be wrong, and USL fits that recover what made the curve."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contention_book.chapters.shared.capacity import Input, Prediction, fit_usl, propagate


def predict(published, kind="value", published_kind="value", cost=(10.0, 9.0, 11.0)):
    inputs = (Input.exact("waits", "W", 1000, "", "article"), Input.interval("cost", "c", *cost, "ms", "measured"))
    s = propagate(lambda v: v["W"] * v["c"] / 1000, inputs)
    return Prediction("ch", "m", "T = W·c", "time", "s", kind, published, f"{published} s", s, inputs,
                      published_kind=published_kind)


def test_propagation_interval_contains_the_median_and_follows_the_inputs():
    p = predict(10.0)
    assert p.predicted.low <= 10.0 <= p.predicted.high
    assert 9.0 <= p.predicted.low and p.predicted.high <= 11.0


def test_a_published_value_inside_is_predicted_and_outside_is_missed():
    assert predict(10.2).verdict == "predicted"
    missed = predict(30.0).verdict
    assert missed.startswith("missed") and "lies above the predicted" in missed and "(3× the prediction)" in missed


def test_contrary_costs_make_a_prediction_miss():
    assert predict(10.0, cost=(1.0, 0.9, 1.1)).verdict.startswith("missed")


def test_bounds():
    assert predict(12.0, kind="at least").verdict == "predicted as a bound"
    assert predict(5.0, kind="at least").verdict.startswith("missed")
    assert predict(5.0, kind="at most").verdict == "predicted as a bound"
    assert predict(50.0, kind="at most").verdict.startswith("missed")


def test_a_published_lower_bound_is_reached_or_missed():
    assert predict(10.5, published_kind="at least").verdict == "predicted"
    assert predict(20.0, published_kind="at least").verdict.startswith("missed")


def test_an_unmeasured_input_gives_no_model():
    inputs = (Input.measured("cost", "c", [], "ms", "measured"),)
    s = propagate(lambda v: v["c"], inputs)
    assert Prediction("ch", "m", "T = c", "t", "s", "value", 1.0, "1 s", s, inputs).verdict.startswith("no model")


@pytest.mark.parametrize("sigma,kappa", [(0.05, 0.002), (0.2, 0.0), (0.0, 0.01)])
def test_usl_fit_recovers_sigma_and_kappa(sigma, kappa):
    rng = np.random.default_rng(1)
    rows = []
    for n in (1, 2, 4, 8, 16, 32):
        for rep in range(5):
            x = 1000 * n / (1 + sigma * (n - 1) + kappa * n * (n - 1)) * rng.normal(1, 0.01)
            rows.append({"n": n, "x": x})
    fit, draws = fit_usl(pd.DataFrame(rows), "n", "x", "synthetic")
    assert fit.sigma.low - 0.02 <= sigma <= fit.sigma.high + 0.02
    assert fit.kappa.low - 0.001 <= kappa <= fit.kappa.high + 0.001
    if kappa > 0:
        assert fit.n_star.median == pytest.approx(np.sqrt((1 - sigma) / kappa), rel=0.25)
    else:
        assert fit.n_star.high == np.inf or fit.n_star.median > 30


def test_usl_refuses_a_short_curve():
    assert fit_usl(pd.DataFrame({"n": [1, 2, 4], "x": [1, 2, 3]}), "n", "x", "s") is None
