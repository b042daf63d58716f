"""What every PostgreSQL chapter's fresh live recording must carry about its load: interval rows, HDR histograms."""
from contention_book.harness.latency import LatencyHistogram


def assert_load_tables(view, points: int) -> None:
    """``points`` (variant x sessions x repetition) rows of load_points, each with a histogram that decodes to its
    own operations; interval rows that add up to them."""
    lp = view.by_repetition("load_points")
    iv = view.by_repetition("intervals")
    assert lp is not None and iv is not None, "a fresh live run must write load_points and intervals"
    assert len(lp) == points
    for _, row in lp.iterrows():
        h = LatencyHistogram.decode(row["histogram"])
        assert h.total == row["operations"] > 0
        assert abs(h.percentile_ms(99) - row["p99_ms"]) <= 0.01 * row["p99_ms"] + 1e-6
    keys = ["variant", "sessions", "repetition"]
    per_point = iv.groupby(keys)["operations"].sum()
    assert (per_point == lp.set_index(keys)["operations"].reindex(per_point.index)).all()
    assert (iv["interval_s"] > 0).all() and (iv["interval_s"] <= 1.0 + 1e-9).all()
