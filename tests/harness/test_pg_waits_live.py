"""The wait-event sampler against the test PostgreSQL: it sees a lock wait it was shown."""
import threading
import time

import pandas as pd
import pytest

from contention_book.harness import pg_waits

pytestmark = pytest.mark.live


def test_sampler_sees_a_lock_wait_and_keeps_its_rate(pg_target):
    setup = pg_target.connect("contention_test")
    setup.execute("DROP TABLE IF EXISTS waits_probe; CREATE TABLE waits_probe (id int PRIMARY KEY, v int)")
    setup.execute("INSERT INTO waits_probe VALUES (1, 0)")
    holder = pg_target.connect("contention_test", autocommit=False)
    holder.execute("UPDATE waits_probe SET v = v + 1 WHERE id = 1")  # holds the row lock

    def blocked():
        c = pg_target.connect("contention_test")
        c.execute("SET application_name = 'blocked'; UPDATE waits_probe SET v = v + 1 WHERE id = 1")
        c.close()

    t = threading.Thread(target=blocked)
    with pg_waits.WaitSampler(lambda: pg_target.connect("contention_test"), "contention_test", hz=20) as sampler:
        t.start()
        time.sleep(1.0)
        holder.commit()
        t.join(timeout=10)
    holder.close()
    frame = sampler.frame()
    assert sampler.error is None
    assert 12 <= sampler.achieved_hz <= 21
    assert ((frame["wait_event_type"] == "Lock") & (frame["wait_event"] == "transactionid")).sum() >= 10
    shares = pg_waits.shares(frame)
    share = dict(zip(shares["wait"], shares["share"]))
    assert share["Lock:transactionid"] > 0.3  # the blocked session, for most of the second
    assert share["Client:ClientRead"] > 0.3  # the holder: idle in transaction


def test_in_server_sampler_sees_the_same_lock_wait_and_costs_little(pg_target):
    """pg_wait_sampling (preloaded by the embedded cluster where installed): the same wait, no polling client."""
    setup = pg_target.connect("contention_test")
    if pg_waits.in_server_available(setup):
        pytest.skip(f"pg_wait_sampling not usable here: {pg_waits.in_server_available(setup)}")
    setup.execute("DROP TABLE IF EXISTS waits_probe2; CREATE TABLE waits_probe2 (id int PRIMARY KEY, v int)")
    setup.execute("INSERT INTO waits_probe2 VALUES (1, 0)")
    holder = pg_target.connect("contention_test", autocommit=False)
    holder.execute("UPDATE waits_probe2 SET v = v + 1 WHERE id = 1")
    pids = []

    def blocked():
        c = pg_target.connect("contention_test")
        pids.append(c.execute("SELECT pg_backend_pid()").fetchone()[0])
        c.execute("UPDATE waits_probe2 SET v = v + 1 WHERE id = 1")
        c.close()

    connect = lambda: pg_target.connect("contention_test")  # noqa: E731
    sampler = pg_waits.sampler(connect, "contention_test", source="auto")
    assert isinstance(sampler, pg_waits.InServerWaitSampler)
    t = threading.Thread(target=blocked)
    with sampler:
        t.start()
        time.sleep(1.0)
        holder.commit()
        t.join(timeout=10)
    holder.close()
    frame = sampler.frame()
    assert sampler.error is None and sampler.achieved_hz > 50  # 100 Hz by default
    mine = frame[frame["pid"].isin(pids)]
    lock = mine[(mine["wait_event_type"] == "Lock") & (mine["wait_event"] == "transactionid")]["samples"].sum()
    assert lock >= 60  # most of the second at 10 ms a sample
    assert 0 <= sampler.cpu_per_s < 0.2
    shares = pg_waits.client_bound(frame, pids)
    assert shares["server_share"] > 0.8  # it waited on a lock in the server, not for its client


def test_polling_sampler_counts_its_own_cpu(pg_target):
    with pg_waits.WaitSampler(lambda: pg_target.connect("contention_test"), "contention_test", hz=20) as sampler:
        time.sleep(0.5)
    assert sampler.cpu_per_s > 0 and sampler.server_measured


def test_wal_delta_counts_records(pg_target):
    cur = pg_target.connect("contention_test").cursor()
    before = pg_waits.wal_snapshot(cur)
    writer = pg_target.connect("contention_test")  # a backend flushes its WAL counters when it exits
    writer.execute("CREATE TABLE IF NOT EXISTS wal_probe (v int); INSERT INTO wal_probe SELECT generate_series(1, 100)")
    writer.close()
    time.sleep(0.2)
    after = pg_waits.wal_snapshot(cur)
    d = pg_waits.delta(before, after)
    assert d["wal_records"] >= 100 and d["wal_bytes"] > 0


def test_labels_and_rate_limits():
    frame = pd.DataFrame([(0.0, 1, "client backend", "active", "", "", 1),
                          (0.0, 2, "client backend", "active", "LWLock", "WALInsert", 1),
                          (0.0, 3, "client backend", "idle", "Client", "ClientRead", 1),
                          (0.0, 4, "client backend", "idle", "", "", 1)], columns=pg_waits.COLUMNS)
    frame.loc[5] = (0.0, 5, "client backend", "idle in transaction", "Client", "ClientRead", 1)
    assert list(pg_waits.label(frame)) == ["CPU", "LWLock:WALInsert", "idle", "idle", "Client:ClientRead"]
    assert pg_waits.delta({"a": 5.0}, {"a": 2.0}) == {"a": 2.0}  # reset: the after value
    with pytest.raises(ValueError, match="hz=0"):
        pg_waits.WaitSampler(lambda: None, "x", hz=0)


def test_client_bound_counts_clientread_not_the_idle_state():
    """Idle with no wait event is a backend finishing its statement on CPU: server time, not the client's."""
    f = pd.DataFrame([(0.0, 1, "client backend", "idle", "Client", "ClientRead", 3),
                      (0.0, 1, "client backend", "idle", "", "", 1),
                      (0.0, 1, "client backend", "active", "LWLock", "WALInsert", 4),
                      (0.0, 2, "walwriter", "", "Activity", "WalWriterMain", 9)], columns=pg_waits.COLUMNS)
    assert pg_waits.client_bound(f) == {"server_share": 0.625, "client_share": 0.375, "backoff_share": 0.0}
    assert pg_waits.client_bound(f, pids=[2])["client_share"] != pg_waits.client_bound(f, pids=[2])["client_share"]


def test_in_server_frame_counts_a_backend_that_never_waited_when_named_alive():
    """pg_wait_sampling 1.1.4 keeps no row for a backend it never saw waiting; one the caller names as connected
    through the window was on CPU at every tick (the checkpointer's waits give the ticks)."""
    s = pg_waits.InServerWaitSampler(lambda: None, "x")
    s._types = {7: "checkpointer", 8: "client backend", 9: "client backend"}
    s._before = {(7, "Activity", "CheckpointerMain"): 100, (8, "Client", "ClientRead"): 5}
    s._after = {(7, "Activity", "CheckpointerMain"): 150, (8, "Client", "ClientRead"): 15}
    assert 9 not in set(s.frame()["pid"])  # unnamed: nothing says it was there
    f = s.frame(alive={9})
    assert s.ticks == 50
    assert pg_waits.client_bound(f, {9}) == {"server_share": 1.0, "client_share": 0.0, "backoff_share": 0.0}
    assert pg_waits.client_bound(f, {8}) == {"server_share": 0.8, "client_share": 0.2, "backoff_share": 0.0}


def test_client_bound_keeps_a_loops_own_back_off_apart_from_server_work():
    """A consumer's pg_sleep after an empty pop is neither the client's time nor the engine's work."""
    f = pd.DataFrame([(0.0, 1, "client backend", "active", "Timeout", "PgSleep", 2),
                      (0.0, 1, "client backend", "active", "", "", 5),
                      (0.0, 1, "client backend", "idle", "Client", "ClientRead", 1)], columns=pg_waits.COLUMNS)
    assert pg_waits.client_bound(f) == {"server_share": 0.625, "client_share": 0.125, "backoff_share": 0.25}
