"""wait_source=xevents on the SQL Server path, against the simulator: opt-in, recorded, and never left behind."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from sqlserver_sim import run as R
from sqlserver_sim import server as S

XE = {"wait_source": "xevents"}
CHAPTERS = {"logcache-spinlock": ({"variants": "default"}, "WRITELOG", r"^EXEC dbo\.usp_logcache_insert"),
            "last-page-insert": ({"variants": "sequential"}, "PAGELATCH_EX", r"^INSERT"),
            "lmax-queue": ({"variants": "disk_naive"}, "PAGELATCH_EX", r"^EXEC dbo\.")}


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_an_xevents_run_records_the_waits_and_leaves_no_event_session(chapter, tmp_path):
    params, wait, slow = CHAPTERS[chapter]
    XEP = {**XE, **params}
    state = S.create(tmp_path / "state.json", version="2022")
    before = S.load(state)
    rc, out, _ = R.run_in_process(chapter, state, tmp_path / "rec", XEP, allow=True)
    assert rc == 0, out
    after = S.load(state)
    assert after.get("xe_sessions") == {} and S.lasting_changes(after, before) == {}, out
    assert "CREATE EVENT SESSION [contention_book_waits_" in out and "DROP EVENT SESSION" in out
    table = pd.read_csv(tmp_path / "rec" / "samples" / "xevent_waits.csv")
    assert set(table["sessions"]) == {1, 2}
    assert (table.loc[table["wait"] == wait, "waits"] > 0).all()
    assert "observer cost" in out


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_xevents_without_the_opt_in_is_refused_at_once(chapter, tmp_path):
    params, wait, slow = CHAPTERS[chapter]
    XEP = {**XE, **params}
    state = S.create(tmp_path / "state.json", version="2022")
    rc, out, seconds = R.run_in_process(chapter, state, tmp_path / "rec", XEP, allow=False)
    assert rc == 2 and seconds < 5, out
    assert "wait_source=xevents" in out and "--allow-server-changes" in out and "nothing was changed" in out
    assert S.load(state).get("xe_sessions", {}) == {}
    assert not (tmp_path / "rec").exists()


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_a_fault_mid_run_leaves_no_event_session(chapter, tmp_path):
    params, wait, slow = CHAPTERS[chapter]
    XEP = {**XE, **params}
    state = S.create(tmp_path / "state.json", version="2022",
                     faults=[{"match": r"^SELECT CAST\(t\.target_data", "nth": 1, "kind": "drop"}])
    rc, out, _ = R.run_in_process(chapter, state, tmp_path / "rec", XEP, allow=True)
    after = S.load(state)
    assert any("target_data" in str(e["fault"].get("match")) for e in after["log"]), "the fault never fired"
    assert rc == 1, out
    assert after.get("xe_sessions") == {}, out


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_sigint_mid_run_leaves_no_event_session(chapter, tmp_path):
    params, wait, slow = CHAPTERS[chapter]
    XEP = {**XE, **params}
    state = S.create(tmp_path / "state.json", version="2022",
                     faults=[{"match": slow, "nth": 0, "kind": "slow", "seconds": 0.2}])
    params = {**XEP, "duration_s": "5", **({"messages_per_session": "1000"} if chapter == "lmax-queue"
                                           else {"rows_per_session": "100000"})}
    cmd = [sys.executable, "-m", "contention_book.run", *R.argv(chapter, tmp_path / "rec", params, allow=True)]
    proc = subprocess.Popen(cmd, env=R.subprocess_env(state), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while not S.load(state).get("xe_sessions"):
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the run never created its event session"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signal.SIGINT, out
    assert S.load(state).get("xe_sessions") == {}, out
    assert "[guard] restored:" in out


@pytest.mark.parametrize("version", ["2019", "2022"])
def test_a_login_without_the_event_session_permission_is_refused_with_the_grant(version, tmp_path):
    """ALTER ANY EVENT SESSION is the one permission the CREATE, ALTER and DROP EVENT SESSION pages all name."""
    state = S.create(tmp_path / "state.json", version=version, login="documented")
    rc, out, seconds = R.run_in_process("logcache-spinlock", state, tmp_path / "rec",
                                        {**XE, "variants": "default"}, allow=True)
    assert rc == 2 and seconds < 5, out
    assert "GRANT ALTER ANY EVENT SESSION TO [reader]" in out and "nothing was changed" in out, out
    granted = S.create(tmp_path / "granted.json", version=version,
                       login=["VIEW SERVER STATE", "CREATE ANY DATABASE", "ALTER ANY EVENT SESSION"])
    rc, out, _ = R.run_in_process("logcache-spinlock", granted, tmp_path / "rec2", {**XE, "variants": "default"},
                                  allow=True)
    assert rc == 0, out
    assert S.load(granted).get("xe_sessions") == {}


def test_on_2022_create_any_event_session_alone_is_refused_before_it_could_leave_a_session_behind(tmp_path):
    """Issue 24, defect 2: CREATE ANY EVENT SESSION lets a 2022 login create the session, but starting it (ALTER
    EVENT SESSION) and dropping it need ALTER ANY EVENT SESSION (or DROP ANY EVENT SESSION): the simulator
    answers each statement by its own page, and the preflight refuses such a login at once."""
    only_create = ["VIEW SERVER STATE", "CREATE ANY DATABASE", "CREATE ANY EVENT SESSION"]
    state = S.create(tmp_path / "state.json", version="2022", login=only_create)
    from sqlserver_sim import fake_pyodbc
    from contention_book.harness import sqlserver_xevents as xe

    conn = fake_pyodbc.connect(R.connection_string(state), autocommit=True)
    name = xe.session_name(4242)
    create, start = xe.create_statements(name, [55])
    conn.cursor().execute(create)
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(15247\)"):
        conn.cursor().execute(start)
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(15247\)"):
        conn.cursor().execute(xe.drop_statements(name)[0])
    assert list(S.load(state)["xe_sessions"]) == [name]  # what the old preflight let a run leave behind
    conn.close()

    fresh = S.create(tmp_path / "fresh.json", version="2022", login=only_create)
    rc, out, seconds = R.run_in_process("logcache-spinlock", fresh, tmp_path / "rec", {**XE, "variants": "default"},
                                        allow=True)
    assert rc == 2 and seconds < 5, out
    assert "GRANT ALTER ANY EVENT SESSION TO [reader]" in out
    assert S.load(fresh).get("xe_sessions", {}) == {}
    with_drop = S.create(tmp_path / "drop.json", version="2022", login=[*only_create, "DROP ANY EVENT SESSION"])
    conn = fake_pyodbc.connect(R.connection_string(with_drop), autocommit=True)
    conn.cursor().execute(create)
    conn.cursor().execute(xe.drop_statements(name)[0])  # the 2022 grant the DROP page names
    assert S.load(with_drop)["xe_sessions"] == {}
    conn.close()


def test_a_ring_that_dropped_its_oldest_events_is_reported_cut_short(tmp_path):
    """Issue 24, defect 4: the ring keeps max_events_limit events (1,000 unless set); the harness now sets it,
    reads totalEventsProcessed (the attribute the target writes) and says when the ring held fewer."""
    from sqlserver_sim import fake_pyodbc
    from contention_book.harness import sqlserver_xevents as xe

    state = S.create(tmp_path / "state.json", version="2022")
    conn = fake_pyodbc.connect(R.connection_string(state), autocommit=True)
    name = xe.session_name(4243)
    create, start = xe.create_statements(name, [55], max_events=10)
    for sql in (create, start):
        conn.cursor().execute(sql)
    with S._locked(state) as st:
        for _ in range(25):
            S.xe_record(st, 55, "WRITELOG", 2.0, 1.0)
    sampler = xe.XEventWaitSampler(lambda: fake_pyodbc.connect(R.connection_string(state), autocommit=True), name)
    sampler.start().stop()
    summary = sampler.summary({"variant": "v", "sessions": 1})
    assert len(sampler.frame()) == 10 and (summary["events_processed"] == 25).all()
    assert "holds 10 of the 25 completed waits" in sampler.error
    assert "max_events_limit = (1000000)" in xe.create_statements(name, [55])[0]
    conn.close()
