"""Every chapter's capacity model, fed costs that should make it miss, reports missed (and the book's own
inputs give the verdicts the page shows)."""
from __future__ import annotations

from types import SimpleNamespace

import pandas as pd

from contention_book.chapters.shared.capacity import Input


def verdicts(preds):
    return [(p.verdict if hasattr(p, "verdict") else p["verdict"]).split(":")[0] for p in preds]


def test_latch_models_miss_with_contrary_costs():
    from contention_book.chapters.latch_fairness import model, recordings
    shown = SimpleNamespace(published=recordings.load(recordings.PUBLISHED))
    xfer = Input.interval("x", "t_xfer", 20, 19, 21, "ns", "test")
    slow = {"t_wake": Input.interval("w", "t_wake", 100_000, 90_000, 110_000, "ns", "test"), "t_xfer": xfer}
    fast = {"t_wake": Input.interval("w", "t_wake", 3_700, 3_600, 3_800, "ns", "test"), "t_xfer": xfer}
    bound, unfair = model.predictions(shown, costs=slow)
    assert bound.verdict.startswith("missed")       # 271,609 wake-ups of 100 µs cannot fit in 5.5 s
    bound, unfair = model.predictions(shown, costs=fast)
    assert bound.verdict == "predicted as a bound" and unfair.verdict == "predicted"


def test_logcache_bound_misses_unless_backoff_explains_the_gain():
    from contention_book.chapters.logcache_spinlock import model, recordings
    shown = SimpleNamespace(published=recordings.load(recordings.PUBLISHED))
    [book] = model.predictions(shown)
    assert book.verdict.startswith("missed")
    shares = pd.DataFrame({"variant": ["default", "no_logwriter_core"],
                           "function": ["sqlmin.dll!LogAppendContext::BackOff"] * 2, "pct": [60.0, 1.0]})
    [contrary] = model.predictions(shown, shares=shares)
    assert contrary.verdict == "predicted as a bound"


def test_last_page_bound_misses_with_one_partition():
    from contention_book.chapters.last_page_insert import model, recordings
    shown = SimpleNamespace(published=[recordings.load(p) for p in recordings.PUBLISHED])
    assert verdicts(model.predictions(shown))[0] == "predicted as a bound"
    assert verdicts(model.predictions(shown, partitions=1))[0] == "missed"


def _curve(slope_ns):
    rows = []
    for variant, slope in (("baseline", 0.0), ("open_snapshot", slope_ns)):
        for rep in range(3):
            for done in range(1000, 123_456, 10_000):
                rows.append({"variant": variant, "repetition": rep, "updates_done": done,
                             "us_per_update": 15 + slope * done / 1000})
    return pd.DataFrame(rows)


def test_ghost_model_follows_the_per_version_cost():
    from contention_book.chapters.ghost_cleanup import model, recordings
    pubs = [recordings.load(p) for p in recordings.PUBLISHED]

    def shown(slope):
        frame = _curve(slope)
        measured = SimpleNamespace(id="test", by_repetition=lambda key: frame, table=lambda key: frame)
        return SimpleNamespace(published=pubs, measured=measured)

    assert model.predictions(shown(6.0))[0].verdict.startswith("missed")     # 82 s + 48 s < 4 min
    assert model.predictions(shown(30.0))[0].verdict == "predicted"          # 82 s + 229 s > 4 min


def test_lmax_increment_models_follow_the_measured_costs():
    from contention_book.chapters.lmax_queue import model, recordings, spec
    pubs = [recordings.load(p) for p in spec.PUBLISHED]

    def native(private, shared):
        fs = pd.DataFrame({"layout": ["single"] * 3 + ["shared_atomic"] * 3,
                           "ns_per_increment": [private] * 3 + [shared] * 3})
        return SimpleNamespace(table=lambda key: fs, recording=SimpleNamespace(id="test"))

    shown = SimpleNamespace(published=pubs)
    one, two, knee = model.predictions(shown, native=native(0.6, 120.0))
    assert one.verdict == "predicted" and two.verdict == "predicted" and knee.verdict == "predicted"
    one, two, _ = model.predictions(shown, native=native(0.05, 1.0))
    assert one.verdict.startswith("missed") and two.verdict.startswith("missed")
