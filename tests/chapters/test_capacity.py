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
    reached = predict(10.5, published_kind="at least")
    assert reached.category == "predicted" and "a bound cannot confirm the prediction's size" in reached.verdict
    assert predict(20.0, published_kind="at least").verdict.startswith("missed")
    above = predict(5.0, published_kind="at least")              # 9.2–10.8 s against "over 5 s"
    assert above.verdict.startswith("predicted: the predicted 9.22–10.8 s is above the published lower bound of 5 s")
    below = predict(10.5, published_kind="at most")
    assert below.category == "predicted" and "upper bound of 10.5 s" in below.verdict


def test_a_published_lower_bound_is_compared_as_a_bound_when_every_input_is_published():
    """Review of chapter 3: "the published 240 s is 0.189× the predicted 1,272 s, so the model leaves out
    something" read "over 4 min" as a time.  A prediction above a published lower bound agrees with it, and the
    verdict says how little that says; only a prediction wholly below the bound fails on its source."""
    from contention_book.chapters.shared.capacity import predict as propagated

    def model(published, published_kind):
        inputs = (Input.exact("n", "n", 123_455, "", "published: article"),
                  Input.interval("t0", "t0", 16.2, 12.15, 20.25, "µs", "published: article"),
                  Input.exact("tv", "tv", 1e9 / 6e6, "ns", "published: article"))
        return propagated("ch", "m", "T = n·t0 + tv·n(n−1)/2", "time", "s", "value", published, "over 4 min",
                          lambda v: v["n"] * v["t0"] * 1e-6 + v["tv"] * 1e-9 * v["n"] * (v["n"] - 1) / 2, inputs,
                          published_kind=published_kind)

    over = model(240.0, "at least")
    assert over.category == "published only" and over.category not in SCORED
    assert "fails on its source" not in over.verdict and "0.189" not in over.verdict
    assert over.verdict.startswith("published only: the predicted 1,272 s is above the published lower bound of "
                                   "240 s, so it agrees with it, but a bound cannot confirm the prediction's size; "
                                   "every input is published")
    beyond = model(2_000.0, "at least")                           # "over 2,000 s": 1,272 s cannot be it
    assert beyond.verdict.startswith("published only, the model fails on its source: the published value is over "
                                     "2,000 s, above the predicted 1,272 s (at least 1.57× the prediction)")
    assert "fails on its source" in model(240.0, "value").verdict  # a published time, not a bound, still fails
    under = model(2_000.0, "at most")                             # "under 2,000 s" agrees with 1,272 s
    assert "fails on its source" not in under.verdict and "upper bound of 2,000 s" in under.verdict
    assert "fails on its source: the published value is under 240 s" in model(240.0, "at most").verdict


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
    fit, draws = fit_usl(pd.DataFrame(rows), "n", "x", "synthetic", resamples=100)
    assert fit.sigma.low - 0.02 <= sigma <= fit.sigma.high + 0.02
    assert fit.kappa.low - 0.001 <= kappa <= fit.kappa.high + 0.001
    if kappa > 0:
        assert fit.n_star.median == pytest.approx(np.sqrt((1 - sigma) / kappa), rel=0.25)
    else:
        assert fit.n_star.high == np.inf or fit.n_star.median > 30


def test_the_paired_bootstrap_draws_what_scipys_draws():
    """fit_usl resamples without importing scipy.stats; its distribution is scipy.stats.bootstrap's, value for
    value (the same seed, the same indices), including resamples that fit nothing."""
    import warnings

    from scipy import stats

    from contention_book.chapters.shared.capacity import SEED, _paired_bootstrap

    rng = np.random.default_rng(7)
    nn = np.repeat([1.0, 2, 4, 8], 3)
    xx = nn * 100 * rng.lognormal(0, 0.1, len(nn))

    def stat(ns, xs):
        if len(np.unique(ns)) < 3:
            return np.array([np.nan, np.nan])
        return np.array([np.mean(xs / ns), np.std(xs)])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        theirs = stats.bootstrap((nn, xx), stat, paired=True, vectorized=False, n_resamples=200,
                                 method="percentile", random_state=SEED).bootstrap_distribution.T
    ours = _paired_bootstrap(nn, xx, stat, 200)
    np.testing.assert_array_equal(ours, theirs)


def test_usl_refuses_a_short_curve():
    assert fit_usl(pd.DataFrame({"n": [1, 2, 4], "x": [1, 2, 3]}), "n", "x", "s") is None


# -- honest numbers ------------------------------------------------------------------------------------------

from contention_book.chapters.shared.capacity import (SCORED, gate, precision, range_prediction,  # noqa: E402
                                                      ratio)
from contention_book.chapters.shared.spread import Spread  # noqa: E402


def test_every_ratio_is_computed():
    assert ratio(5.5, 5.63) == "0.977"          # not 0.997
    assert ratio(240, 129.7) == "1.85"
    miss = predict(30.0).verdict
    assert f"({ratio(30.0, 10.0)}× the prediction)" in miss


def test_a_published_value_keeps_its_precision():
    assert precision("5.5") == (5.5, 5.45, 5.55) and precision("2") == (2.0, 1.5, 2.5)
    inputs = (Input.interval("t", "t", 5.63, 5.48, 5.87, "s", "measured: x"),)
    s = Spread(5.63, 5.48, 5.87, 2, "given")
    p = Prediction("ch", "m", "T = t", "time", "s", "value", 5.5, "around 5.5 s", s, inputs, published_low=5.45,
                   published_high=5.55)
    assert p.verdict == "predicted"             # 5.45–5.55 overlaps 5.48–5.87
    far = Prediction("ch", "m", "T = t", "time", "s", "value", 5.0, "around 5.0 s", s, inputs, published_low=4.95,
                     published_high=5.05)
    assert far.verdict.startswith("missed") and f"({ratio(5.0, 5.63)}× the prediction)" in far.verdict


def test_a_median_outside_the_interval_is_never_predicted_even_when_its_spread_reaches_it():
    inputs = (Input.interval("t", "t", 5.63, 5.48, 5.87, "s", "measured: x"),)
    s = Spread(5.63, 5.48, 5.87, 2, "given")
    for value, low, high in ((5.4, 5.3, 5.5), (25.3, 4.0, 40.0), (5.9, 5.8, 6.0)):
        p = Prediction("ch", "m", "T = t", "time", "s", "value", value, f"{value} s", s, inputs, published_low=low,
                       published_high=high)
        assert p.category == "missed" and not p.verdict.startswith("predicted"), p.verdict
        assert "only its spread" in p.verdict and f"({ratio(value, 5.63)}× the prediction)" in p.verdict


def test_a_published_lower_bound_missed_says_at_least():
    p = predict(240.0, published_kind="at least")
    assert p.verdict.startswith("missed: the published value is over 240, above the predicted")
    assert p.verdict.endswith(f"(at least {ratio(240.0, 10.0)}× the prediction)")


def test_an_output_outside_its_domain_is_model_invalid():
    inputs = (Input.interval("t", "t", -3.0, -4.0, -2.0, "s", "measured: x"),)
    p = Prediction("ch", "m", "T = t", "time", "s", "value", 4.5, "4.5 s", Spread(-3.0, -4.0, -2.0, 2, "g"), inputs,
                   domain=(0.0, np.inf, "a negative time"))
    assert p.verdict == "model invalid: the equation gives -3 s, a negative time" and p.category not in SCORED


def test_all_published_inputs_are_published_only_and_a_workload_bound_is_not_scored():
    inputs = (Input.exact("P", "P", 4, "", "published: article"),)
    pub = Prediction("ch", "m", "G ≤ P", "gain", "×", "at most", 1.15, "+15%", Spread(4, 4, 4, 1, "exact"), inputs)
    assert pub.category == "published only" and "95%" not in pub.row()["predicted"]
    inputs = (Input.exact("P", "P", 4, "", "measured: here"),)
    wl = Prediction("ch", "m", "G ≤ P", "gain", "×", "workload bound", 1.15, "+15%", Spread(4, 4, 4, 1, "exact"),
                    inputs)
    assert wl.category == "workload bound" and wl.category not in SCORED


def test_measured_inputs_that_barely_move_a_prediction_leave_it_published_only():
    """A model whose measured inputs move its value by under 1% (each zeroed, or at its interval's ends) rests on
    published numbers: a verdict on it would claim a test of this machine that did not happen, so it is published
    only, not missed; the same model with a measured input that matters is scored."""
    from contention_book.chapters.shared.capacity import measured_share, predict as propagated

    def model(xfer):
        inputs = (Input.exact("T", "T", 5.5, "s", "published: article"),
                  Input.exact("W", "W", 271_609, "", "published: article"),
                  Input.exact("w", "w", 9_740, "ns", "published: article"),
                  Input.interval("x", "x", xfer, xfer * 0.9, xfer * 1.1, "ns", "measured: here"))
        return propagated("ch", "m", "U = T − W·(w − x)", "time", "s", "value", 4.5, "around 4.5 s",
                       lambda v: v["T"] - v["W"] * (v["w"] - v["x"]) * 1e-9, inputs, published_low=4.45,
                       published_high=4.55)

    tiny = model(14.5)                      # 271,609 × 14.5 ns ≈ 0.004 s of 2.86 s
    share, shift = measured_share(tiny)
    assert share < 0.01 and abs(shift - 271_609 * 14.5e-9) < 1e-9   # zeroed, it moves most: by W · x
    assert tiny.category == "published only" and tiny.category not in SCORED
    assert tiny.verdict.startswith("published only, the model fails on its source")
    assert "the measured input (x) moves the prediction by at most" in tiny.verdict
    big = model(6_000)                      # 271,609 × 6 µs ≈ 1.6 s: this machine's number decides it
    assert measured_share(big)[0] > 0.01 and big.category == "predicted"
    # a model without a measured input, or without its equation, is judged as before
    assert measured_share(predict(10.2)) is None and predict(10.2).verdict == "predicted"


def test_an_interval_that_prints_as_one_value_is_left_out():
    """Review of chapter 3: "1,272 s (95% 1,272–1,272)" when every input is published (one with a spread too small to
    show).  The value is printed alone, and the verdict names the one value, not a span of it to itself."""
    from contention_book.chapters.shared.capacity import predict as propagated
    inputs = (Input.exact("n", "n", 123_455, "", "published: article"),
              Input.interval("t0", "t0", 16.2, 12.15, 20.25, "µs", "published: article"),  # ≈ 2 s ± 25%
              Input.exact("tv", "tv", 1e9 / 6e6, "ns", "published: article"))  # 6 million a second
    p = propagated("ch", "m", "T = n·t0 + tv·n(n−1)/2", "time", "s", "value", 240.0, "over 4 min",
                   lambda v: v["n"] * v["t0"] * 1e-6 + v["tv"] * 1e-9 * v["n"] * (v["n"] - 1) / 2, inputs)
    assert p.predicted.high > p.predicted.low                     # a width, but one that does not show
    assert p.row()["predicted"] == "1,272 s (from published numbers alone)"
    assert "1,272–1,272" not in p.verdict and "is 0.189× the predicted 1,272 s" in p.verdict
    assert predict(10.2).row()["predicted"] == "10 s (95% 9.22–10.8)"   # a width that shows is kept


def test_a_range_is_shown_as_a_range():
    inputs = (Input.exact("C", "C", 20, "", "measured: here"), Input.exact("L", "L", 40, "", "measured: here"))
    r = range_prediction("ch", "m", "C ≤ N ≤ L", "knee", "threads", 23, "23", 20, 40, inputs, "")
    assert r.verdict == "predicted as a range" and r.row()["predicted"].startswith("range 20–40 threads")
    assert "95%" not in r.row()["predicted"]
    out = range_prediction("ch", "m", "C ≤ N ≤ L", "knee", "threads", 60, "60", 20, 40, inputs, "")
    assert out.verdict.startswith("missed") and f"({ratio(60, 40)}× the prediction)" in out.verdict


def test_gate_marks_the_article_rows_of_a_model_that_missed_here():
    article = [predict(10.2)]
    assert gate(article, [predict(10.3)])[0].verdict == "predicted"
    [failed] = gate(article, [predict(30.0)])
    assert failed.category == "model failed here" and failed.category not in SCORED


def test_usl_fits_only_levels_within_the_cpus_and_shows_residuals():
    from contention_book.chapters.shared.capacity import usl_residuals
    rows = [{"n": n, "x": 1000 * n / (1 + 0.05 * (n - 1) + 0.002 * n * (n - 1)) * f}
            for n in (1, 2, 4, 8, 16, 32) for f in (0.99, 1.0, 1.01)]
    frame = pd.DataFrame(rows)
    assert fit_usl(frame, "n", "x", "s", cpus=2) is None          # a 2-CPU machine: 2 levels within, no fit
    assert fit_usl(frame, "n", "x", "s", cpus=4) is None          # 3 levels
    fit, draws = fit_usl(frame, "n", "x", "s", cpus=8, resamples=100)
    assert fit.points == 4 and draws.shape[1] == 2
    res = usl_residuals(fit, frame[frame["n"] <= 8], "n", "x")
    assert res.startswith("1: ") and all(abs(float(r.split(": ")[1].rstrip("%"))) < 2 for r in res.split("; "))


def test_a_details_page_defines_the_verdict_words_its_models_use():
    """The models' section says what each verdict word it uses means, not only the Findings page."""
    from contention_book.chapters.shared.capacity import PREDICTION_VERDICTS, VERDICT_MEANING
    from contention_book.chapters.shared.capacity_page import intro

    assert set(VERDICT_MEANING) == set(PREDICTION_VERDICTS)
    inputs = (Input.exact("P", "P", 4, "", "published: article"),)
    pub = Prediction("ch", "m", "G ≤ P", "gain", "×", "at most", 1.15, "+15%", Spread(4, 4, 4, 1, "exact"), inputs)
    text = intro([predict(10.2), pub])
    # a verdict word the glossary defines links to it; one it does not define is set in italics
    assert "*predicted*: the value lies" in text and "{term}`published only`: every input" in text
    assert "*missed*" not in text and "*model invalid*" not in text  # words the section does not use go unsaid
