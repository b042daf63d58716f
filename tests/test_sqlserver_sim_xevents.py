"""wait_source=xevents on the SQL Server path, against the simulator: opt-in, recorded, and never left behind."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pandas as pd

from sqlserver_sim import run as R
from sqlserver_sim import server as S

CHAPTER = "logcache-spinlock"
XE = {"wait_source": "xevents", "variants": "default"}


def test_an_xevents_run_records_the_waits_and_leaves_no_event_session(tmp_path):
    state = S.create(tmp_path / "state.json", version="2022")
    before = S.load(state)
    rc, out, _ = R.run_in_process(CHAPTER, state, tmp_path / "rec", XE, allow=True)
    assert rc == 0, out
    after = S.load(state)
    assert after.get("xe_sessions") == {} and S.lasting_changes(after, before) == {}, out
    assert "CREATE EVENT SESSION [contention_book_waits_" in out and "DROP EVENT SESSION" in out
    table = pd.read_csv(tmp_path / "rec" / "samples" / "xevent_waits.csv")
    assert set(table["sessions"]) == {1, 2}
    assert (table.loc[table["wait"] == "WRITELOG", "waits"] > 0).all()
    assert "observer cost" in out


def test_xevents_without_the_opt_in_is_refused_at_once(tmp_path):
    state = S.create(tmp_path / "state.json", version="2022")
    rc, out, seconds = R.run_in_process(CHAPTER, state, tmp_path / "rec", XE, allow=False)
    assert rc == 2 and seconds < 5, out
    assert "wait_source=xevents" in out and "--allow-server-changes" in out and "nothing was changed" in out
    assert S.load(state).get("xe_sessions", {}) == {}
    assert not (tmp_path / "rec").exists()


def test_a_fault_mid_run_leaves_no_event_session(tmp_path):
    state = S.create(tmp_path / "state.json", version="2022",
                     faults=[{"match": r"^SELECT CAST\(t\.target_data", "nth": 1, "kind": "drop"}])
    rc, out, _ = R.run_in_process(CHAPTER, state, tmp_path / "rec", XE, allow=True)
    after = S.load(state)
    assert any("target_data" in str(e["fault"].get("match")) for e in after["log"]), "the fault never fired"
    assert rc == 1, out
    assert after.get("xe_sessions") == {}, out


def test_sigint_mid_run_leaves_no_event_session(tmp_path):
    state = S.create(tmp_path / "state.json", version="2022",
                     faults=[{"match": r"^EXEC dbo\.usp_logcache_insert", "nth": 0, "kind": "slow", "seconds": 0.2}])
    params = {**XE, "duration_s": "5", "rows_per_session": "100000"}
    cmd = [sys.executable, "-m", "contention_book.run", *R.argv(CHAPTER, tmp_path / "rec", params, allow=True)]
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
