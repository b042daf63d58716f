"""Delta math of SQL Server's statistics DMVs and counter-type arithmetic, on recorded-shape rows."""
import pandas as pd
import pytest

from contention_book.harness import sqlserver_dmv as dmv
from contention_book.harness.guard import ServerChangeNotAllowed, StateGuard
from tsql_parse import assert_parses


def waits(rows):
    return pd.DataFrame(rows, columns=["name", "waits", "wait_time_ms", "max_wait_time_ms", "signal_wait_time_ms"])


def test_wait_delta_subtracts_and_says_how_it_treats_maxima():
    before = waits([("LATCH_EX", 10, 100, 50, 5), ("WRITELOG", 5, 10, 3, 1), ("IDLE", 1, 1, 1, 0)])
    after = waits([("LATCH_EX", 30, 400, 90, 25), ("WRITELOG", 7, 12, 3, 1), ("IDLE", 1, 1, 1, 0),
                   ("NEW_ONE", 2, 4, 3, 0)])
    d = dmv.delta(before, after, "wait").set_index("name")
    assert d.loc["LATCH_EX", "waits"] == 20 and d.loc["LATCH_EX", "wait_time_ms"] == 300
    assert d.loc["LATCH_EX", "max_wait_time_ms"] == 90 and d.loc["LATCH_EX", "max_wait_time_ms_bound"] == "exact"
    assert d.loc["WRITELOG", "max_wait_time_ms_bound"] == "at most"  # the max did not move: only a bound
    assert d.loc["NEW_ONE", "waits"] == 2  # absent before: counted from zero
    assert "IDLE" not in d.index  # nothing happened in the window
    assert list(d.index[:1]) == ["LATCH_EX"]


def test_a_counter_cleared_during_the_window_counts_from_zero():
    before = waits([("LATCH_EX", 1000, 5000, 900, 5)])
    after = waits([("LATCH_EX", 40, 200, 30, 2)])  # someone ran DBCC SQLPERF CLEAR meanwhile
    d = dmv.delta(before, after, "wait").set_index("name")
    assert d.loc["LATCH_EX", "waits"] == 40 and d.loc["LATCH_EX", "max_wait_time_ms_bound"] == "exact"


def test_spinlock_delta_recomputes_spins_per_collision_and_orders_named_first():
    cols = ["name", "collisions", "spins", "spins_per_collision", "sleep_time", "backoffs"]
    before = pd.DataFrame([("LOGCACHE_ACCESS", 10, 1000, 100, 0, 1), ("XDESMGR", 0, 0, 0, 0, 0),
                           ("SOS_CACHESTORE", 5, 50, 10, 0, 0)], columns=cols)
    after = before.assign(collisions=[110, 10, 505], spins=[51000, 900, 5050], backoffs=[41, 2, 0])
    d = dmv.delta(before, after, "spinlock")
    assert d.set_index("name").loc["LOGCACHE_ACCESS", "spins_per_collision"] == 500
    ordered = dmv.first(d, ["XDESMGR", "LOGCACHE_ACCESS", "ABSENT"])
    assert list(ordered["name"][:3]) == ["XDESMGR", "LOGCACHE_ACCESS", "ABSENT"]
    assert ordered.set_index("name").loc["ABSENT", "spins"] == 0


def test_counters_interpreted_by_type():
    cols = ["object_name", "counter_name", "instance_name", "cntr_value", "cntr_type"]
    before = pd.DataFrame([
        ("SQLServer:Latches", "Latch Waits/sec", "", 1000, dmv.PERF_COUNTER_BULK_COUNT),
        ("SQLServer:Latches", "Average Latch Wait Time (ms)", "", 5000, dmv.PERF_AVERAGE_BULK),
        ("SQLServer:Latches", "Average Latch Wait Time Base", "", 1000, dmv.PERF_LARGE_RAW_BASE),
        ("SQLServer:Resource Pool Stats", "CPU usage %", "default", 30, dmv.PERF_LARGE_RAW_FRACTION),
        ("SQLServer:Resource Pool Stats", "CPU usage % base", "default", 100, dmv.PERF_LARGE_RAW_BASE),
        ("SQLServer:General Statistics", "User Connections", "", 12, dmv.PERF_COUNTER_LARGE_RAWCOUNT),
    ], columns=cols)
    after = before.assign(cntr_value=[3000, 9000, 1500, 60, 100, 14])
    got = dmv.interpret(before, after, 2.0).set_index("counter")
    assert got.loc["Latch Waits/sec", "value"] == 1000 and got.loc["Latch Waits/sec", "unit"] == "per second"
    assert got.loc["Average Latch Wait Time (ms)", "value"] == 8  # 4000 ms over 500 waits
    assert got.loc["User Connections", "value"] == 14
    assert got.loc["CPU usage %", "value"] == 0.6  # its base is spelt "CPU usage % base": matched in any case
    assert "Average Latch Wait Time Base" not in got.index
    with pytest.raises(ValueError, match="positive duration"):
        dmv.interpret(before, after, 0)


def test_counter_query_asks_for_bases_and_parses():
    sql, params = dmv.perf_counters_query([("Latches", "Average Latch Wait Time (ms)"), ("Databases", "Log Bytes Flushed/sec")])
    assert params[:3] == ["%:Latches", "Average Latch Wait Time (ms)", "Average Latch Wait Time Base"]
    assert_parses(sql.replace("?", "N'x'"), "counter query")
    for q in (dmv.WAIT_STATS, dmv.LATCH_STATS, dmv.SPINLOCK_STATS):
        assert_parses(q, "dmv query")


class FakeConn:
    def __init__(self, rows):
        self.rows, self.executed = rows, []

    def cursor(self):
        return self

    def execute(self, sql, *a):
        self.executed.append(sql)
        return self

    @property
    def description(self):
        return [("TraceFlag",), ("Status",), ("Global",), ("Session",)] if self.rows else None

    def fetchall(self):
        return self.rows


def test_clearing_is_a_server_change_that_needs_opt_in():
    change = dmv.clear_change(["wait"])
    assert change.apply(None) == ["DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)"] and change.restore(None) == []
    with pytest.raises(ServerChangeNotAllowed, match="cannot be restored"):
        with StateGuard(lambda db: FakeConn([]), [change], log=lambda *_: None):
            pass


def test_trace_flag_restored_only_if_it_was_off():
    tf = dmv.trace_flag_change(3933)
    assert tf.read(FakeConn([])) is False
    assert tf.apply(False) == ["DBCC TRACEON(3933, -1)"] and tf.restore(False) == ["DBCC TRACEOFF(3933, -1)"]
    assert tf.read(FakeConn([(3933, 1, 1, 0)])) is True
    assert tf.apply(True) == [] and tf.restore(True) == []


def test_counter_sampler_series_interprets_each_interval():
    cols = ["object_name", "counter_name", "instance_name", "cntr_value", "cntr_type"]

    class Reads:
        """A fake connection whose counter doubles at every read."""
        def __init__(self):
            self.n = 0
            self.description = [(c,) for c in cols]

        def cursor(self):
            return self

        def execute(self, sql, *params):
            self.n += 1
            return self

        def fetchall(self):
            return [("SQLServer:Latches", "Latch Waits/sec", "", 100 * self.n, dmv.PERF_COUNTER_BULK_COUNT)]

        def close(self):
            pass

    sampler = dmv.CounterSampler(Reads, [("Latches", "Latch Waits/sec")], every_s=0.05)
    with sampler:
        import time
        time.sleep(0.3)
    series = sampler.series()
    assert sampler.error is None and len(series) >= 3
    assert (series["value"] > 1000).all()  # 100 more per ~0.05 s: about 2,000 per second
    assert series["t_s"].is_monotonic_increasing
