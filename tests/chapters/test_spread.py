"""The spread rule and the verdict rule: what every table and every verdict of the book stands on."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contention_book.chapters.shared.claims import above, below, rule_above
from contention_book.chapters.shared.spread import Spread, paired_ratios, ratio_spread, spread, summarize
from contention_book.harness.schedule import interleaved


def test_fewer_than_five_repetitions_give_the_range():
    s = spread([3.0, 1.0, 2.0])
    assert (s.median, s.low, s.high, s.n, s.method) == (2.0, 1.0, 3.0, 3, "min-max")
    assert "range 1.0–3.0" in s.text() and "3 runs" in s.text()


def test_five_or_more_give_a_seeded_bootstrap_inside_the_range():
    values = [10.0, 11.0, 9.5, 10.2, 30.0, 10.1, 9.9]
    s, again = spread(values), spread(values)
    assert s == again, "a page must rebuild the same interval"
    assert s.method == "bootstrap 95%" and min(values) <= s.low <= s.median <= s.high <= max(values)
    assert s.high < 30.0, "one outlier of seven should not carry the median's interval"


def test_nothing_measured_and_one_run():
    assert spread([]).n == 0 and spread([float("nan")]).method == "none"
    assert spread([4.0]).text() == "4.0 (one run)"


def test_ratios_are_paired_by_repetition():
    frame = pd.DataFrame({"variant": ["a", "b"] * 3, "repetition": [0, 0, 1, 1, 2, 2],
                          "sessions": 1, "throughput": [10, 5, 20, 10, 40, 20]})
    r = paired_ratios(frame, "throughput", "a", "b")
    assert list(r) == [2.0, 2.0, 2.0]  # drift between rounds cancels inside each pair
    assert ratio_spread(frame, "throughput", "b", "a").median == 0.5
    assert paired_ratios(frame, "throughput", "a", "missing").empty


def test_summarize_gives_one_row_per_group():
    frame = pd.DataFrame({"variant": ["a"] * 5 + ["b"] * 2, "v": [1, 2, 3, 4, 5, 7, 9]})
    out = summarize(frame, ["variant"], "v").set_index("variant")
    assert out.loc["a", "n"] == 5 and out.loc["a", "interval"] == "bootstrap 95%"
    assert (out.loc["b", "low"], out.loc["b", "high"]) == (7, 9)


@pytest.mark.parametrize("values, verdict", [
    ([1.5, 1.6, 1.4, 1.55, 1.45], "agrees"),
    ([0.8, 0.9, 0.85, 0.95, 0.7], "differs"),            # the contrary data: the claim is false
    ([0.9, 1.3, 1.0, 1.2, 1.1, 0.95, 1.25], "inconclusive"),  # straddles the threshold
    ([1.5, 1.6], "inconclusive"),                        # too few repetitions to decide
    ([], "not testable with this recording"),          # no deciding point in the recording
])
def test_the_verdict_rule_can_fail(values, verdict):
    assert above(spread(values), 1.1).split(":")[0] == verdict


def test_below_mirrors_above():
    s = spread([0.2, 0.3, 0.25, 0.22, 0.28])
    assert below(s, 1.0) == "agrees" and above(s, 1.0) == "differs"
    assert "lies above 1.1" in rule_above(1.1)


def test_variants_are_interleaved_round_after_round():
    assert list(interleaved(["a", "b", "c"], 2)) == [(0, "a"), (0, "b"), (0, "c"), (1, "a"), (1, "b"), (1, "c")]
    with pytest.raises(ValueError, match="repetitions=0"):
        list(interleaved(["a"], 0))


def test_small_ratios_read_as_fractions():
    s = Spread(4.5e-05, 4e-05, 5.8e-05, 5, "bootstrap 95%")
    assert s.text("fraction") == "1/22,000 (1/25,000–1/17,000)"
    assert Spread(0.45, 0.3, 0.6, 3, "min-max").text("fraction") == "0.45 (range 0.3–0.6, 3 runs)"
    assert Spread(2e-3, 2e-3, 2e-3, 1, "one run").text("fraction") == "1/500 (one run)"


@pytest.mark.parametrize("n", [5, 6, 7, 8, 11, 20, 41])
def test_bootstrap_draws_once_per_count_and_keeps_the_seeded_numbers(n):
    """The resampled positions are drawn once per count of values; the interval must stay exactly the one of a
    fresh rng.choice and np.median with the book's seed (ties, odd and even counts, any order)."""
    from contention_book.chapters.shared.spread import RESAMPLES, SEED

    gen = np.random.default_rng(n)
    for values in (gen.lognormal(size=n), np.round(gen.normal(10, 2, size=n)), gen.permutation(n) * 1e-6):
        medians = np.median(np.random.default_rng(SEED).choice(values, size=(RESAMPLES, n), replace=True), axis=1)
        low, high = np.percentile(medians, [2.5, 97.5])
        s = spread(values)
        assert (s.low, s.high, s.median) == (low, high, np.median(values))


def test_paired_ratios_are_pivot_tables_medians():
    """The ratios are those of pandas' pivot_table of the medians per repetition and variant, NaN and missing
    repetitions included."""
    gen = np.random.default_rng(7)
    frame = pd.DataFrame({"variant": np.repeat(["a", "b", "c"], 24), "repetition": np.tile(np.repeat(range(6), 4), 3),
                          "sessions": np.tile([1, 2, 4, 8], 18), "throughput": gen.lognormal(size=72)})
    frame.loc[gen.choice(72, 9, replace=False), "throughput"] = np.nan
    frame = frame.drop(index=[3, 30, 31])
    frame.loc[frame.variant == "c", "throughput"] = np.nan  # a variant with nothing measured
    for where in ({"sessions": 2}, {"sessions": 8}, None):
        part = frame if where is None else frame[frame.sessions == where["sessions"]]
        wide = part.pivot_table(index="repetition", columns="variant", values="throughput", aggfunc="median")
        expected = (wide["a"] / wide["b"]).dropna()
        got = paired_ratios(frame, "throughput", "a", "b", where)
        assert list(got.index) == list(expected.index) and list(got) == list(expected)
        assert paired_ratios(frame, "throughput", "a", "c", where).empty


def test_a_ratio_bound_is_never_rounded_onto_no_effect():
    """0.981 printed as 1.0 hid that an interval straddles 1 (review of chapter 1's opening)."""
    s = Spread(median=1.2, low=0.981, high=29.1, n=5, method="bootstrap")
    assert s.text(".1f", "×") == "1.2× (0.98–29.1)"
    assert Spread(median=1.0, low=1.0, high=1.3, n=5, method="bootstrap").text(".1f", "×") == "1.0× (1.0–1.3)"
    assert s.text(".1f") == "1.2 (1.0–29.1)"  # not a ratio: printed as asked
