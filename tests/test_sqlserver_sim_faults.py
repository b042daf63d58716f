"""Faults on the SQL Server path, against the simulator: whatever goes wrong, the server is left as it was.

Injected: a connection lost at the n-th statement, an error when a change is applied, an error when it
is restored (once: the guard's retry restores it; always: the run says which statements to run by hand),
a slow statement; and SIGINT / SIGTERM delivered to the runner process mid-run, with the simulated
server's state read back from its file.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from sqlserver_sim import run as R
from sqlserver_sim import server as S

# (chapter, parameters, the server change the run makes, its apply and restore statements)
CASES = {
    "ghost-cleanup": ({"variants": "rcsi,rcsi_open_txn_tf7006"}, r"^DBCC TRACEON\(7006", r"^DBCC TRACEOFF\(7006"),
    "latch-fairness": ({"variants": "fair,unfair"}, r"^DBCC TRACEON\(3933", r"^DBCC TRACEOFF\(3933"),
    "logcache-spinlock": ({"variants": "default,no_logwriter_core"},
                          r"^ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = \d",
                          r"^ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO"),
    # the harness's own database: delayed durability FORCED for the run, restored after
    "last-page-insert": ({"variants": "sequential,hash_partitioned"},
                         r"^ALTER DATABASE \[\w+\] SET DELAYED_DURABILITY = FORCED",
                         r"^ALTER DATABASE \[\w+\] SET DELAYED_DURABILITY = DISABLED"),
    "lmax-queue": ({"variants": "disk_ring_sequence,imoltp_v2"},
                   r"^ALTER DATABASE \[\w+\] SET DELAYED_DURABILITY = FORCED",
                   r"^ALTER DATABASE \[\w+\] SET DELAYED_DURABILITY = DISABLED"),
}


def forced(st) -> bool:
    """The run's database has its delayed durability forced (the change last-page and LMAX make)."""
    return any(db.get("delayed_durability") == "FORCED" for db in st["databases"].values())


def run(tmp_path, chapter, faults=(), **kw):
    state = S.create(tmp_path / "state.json", version="2022", faults=list(faults), **kw)
    before = S.load(state)
    params, _apply, _restore = CASES[chapter]
    rc, out, _ = R.run_in_process(chapter, state, tmp_path / "rec", params, allow=True)
    after = S.load(state)
    return rc, out, lasting(after, before), after


def lasting(after: dict, before: dict) -> dict:
    """What the run left changed; the run's own database is new to lasting_changes, so its option is read here."""
    out = S.lasting_changes(after, before)
    if forced(after):
        out["the run's database: delayed durability"] = "FORCED"
    return out


@pytest.mark.parametrize("chapter", sorted(CASES))
def test_a_clean_run_changes_and_restores(chapter, tmp_path):
    rc, out, lasting, after = run(tmp_path, chapter)
    assert rc == 0, out
    assert lasting == {}
    assert "[guard] restored:" in out


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
@pytest.mark.parametrize("chapter", sorted(CASES))
def test_a_connection_lost_at_any_step_leaves_nothing_changed(chapter, fraction, tmp_path):
    clean = tmp_path / "clean"
    clean.mkdir()
    _, _, _, after = run(clean, chapter)
    step = max(1, int(after["step"] * fraction))
    rc, out, lasting, after = run(tmp_path, chapter, [{"step": step, "kind": "drop"}])
    assert any(e["fault"].get("step") == step for e in after["log"]), "the fault never fired"
    # lost mid-run: a failure with an incomplete recording (or a sampler's note); lost while the preflight
    # reads the server's facts (it queries each DMV, so it is a larger share of a small run): refused, nothing made
    assert rc in (0, 1) or (rc == 2 and "the preflight could not read the server's facts" in out), out
    assert lasting == {}, out
    assert "RESTORE FAILED" not in out


@pytest.mark.parametrize("chapter", sorted(CASES))
def test_a_change_the_server_refuses_is_not_restored_and_nothing_stays(chapter, tmp_path):
    _params, apply, _restore = CASES[chapter]
    rc, out, lasting, _ = run(tmp_path, chapter, [{"match": apply, "nth": 1, "kind": "error"}])
    assert rc == 1 and "injected failure" in out, out
    assert lasting == {}
    assert "RESTORE FAILED" not in out


@pytest.mark.parametrize("chapter", sorted(CASES))
def test_a_restore_that_fails_once_is_retried(chapter, tmp_path):
    _params, _apply, restore = CASES[chapter]
    rc, out, lasting, after = run(tmp_path, chapter, [{"match": restore, "nth": 1, "kind": "error"}])
    assert any(e["fault"].get("match") == restore for e in after["log"]), "the fault never fired"
    assert rc == 0, out
    assert lasting == {}


@pytest.mark.parametrize("chapter", sorted(CASES))
def test_a_restore_that_always_fails_names_the_statements_to_run_by_hand(chapter, tmp_path):
    _params, _apply, restore = CASES[chapter]
    rc, out, lasting, after = run(tmp_path, chapter, [{"match": restore, "nth": 0, "kind": "error"}])
    assert rc == 1, out
    assert "RESTORE FAILED" in out and "Run by hand" in out
    assert lasting, "the simulator should still show the change the restore could not undo"
    statement = {"ghost-cleanup": "DBCC TRACEOFF(7006, -1)", "latch-fairness": "DBCC TRACEOFF(3933, -1)",
                 "logcache-spinlock": "ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO",
                 "last-page-insert": "SET DELAYED_DURABILITY = DISABLED",
                 "lmax-queue": "SET DELAYED_DURABILITY = DISABLED"}[chapter]
    assert statement in out


def test_a_slow_statement_only_makes_the_run_slower(tmp_path):
    rc, out, lasting, _ = run(tmp_path, "ghost-cleanup",
                              [{"match": r"^SET NOCOUNT, XACT_ABORT ON", "nth": 0, "kind": "slow", "seconds": 0.05}])
    assert rc == 0 and lasting == {}, out


# -- stop signals to the runner process ------------------------------------------------------------------
SIGNAL_CASES = {
    # chapter: (params, slow statement, how to see the server change is in place)
    "ghost-cleanup": ({"variants": "rcsi_open_txn_tf7006", "updates": "3000", "chunk": "100"},
                      r"^SET NOCOUNT, XACT_ABORT ON", lambda st: 7006 in st["trace_flags"]),
    "logcache-spinlock": ({"variants": "no_logwriter_core", "duration_s": "5", "rows_per_session": "100000"},
                          r"^EXEC dbo\.usp_logcache_insert", lambda st: st["affinity"] is not None),
    "last-page-insert": ({"variants": "sequential", "duration_s": "5", "rows_per_session": "100000"},
                         r"^INSERT INTO dbo\.", forced),
    "lmax-queue": ({"variants": "disk_ring_sequence", "duration_s": "5", "messages_per_session": "100000",
                    "queue_size": "1048576"}, r"^EXEC dbo\.usp_", forced),
}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("chapter", sorted(SIGNAL_CASES))
def test_a_stop_signal_mid_run_restores_the_server(chapter, signum, tmp_path):
    params, slow, changed = SIGNAL_CASES[chapter]
    state = S.create(tmp_path / "state.json", version="2022",
                     faults=[{"match": slow, "nth": 0, "kind": "slow", "seconds": 0.2}])
    before = S.load(state)
    cmd = [sys.executable, "-m", "contention_book.run", *R.argv(chapter, tmp_path / "rec", params, allow=True)]
    proc = subprocess.Popen(cmd, env=R.subprocess_env(state), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while not changed(S.load(state)):
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the run never made its server change"
            time.sleep(0.05)
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + signum, out
    assert lasting(S.load(state), before) == {}, out
    assert "[guard] restored:" in out


# -- one run at a time per database --------------------------------------------------------------------------
@pytest.mark.parametrize("login", ["sysadmin", "documented"])
def test_a_second_run_on_the_database_is_refused_at_once_naming_the_first(login, tmp_path, monkeypatch):
    """The second run takes its local locks elsewhere, as a run from another machine would: the lock in the server
    must refuse it (tests/test_live_run_lock.py tries the local lock)."""
    params, slow, changed = SIGNAL_CASES["last-page-insert"]
    state = S.create(tmp_path / "state.json", version="2022", login=login,
                     faults=[{"match": slow, "nth": 0, "kind": "slow", "seconds": 0.2}])
    cmd = [sys.executable, "-m", "contention_book.run", *R.argv("last-page-insert", tmp_path / "first", params)]
    first = subprocess.Popen(cmd, env=R.subprocess_env(state), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    try:
        deadline = time.monotonic() + 60
        while not S.load(state)["applocks"]:
            assert first.poll() is None, first.stdout.read()
            assert time.monotonic() < deadline, "the first run never took its lock"
            time.sleep(0.05)
        monkeypatch.setenv("CONTENTION_BOOK_LOCK_DIR", str(tmp_path / "another-machine"))
        rc, out, seconds = R.run_in_process("last-page-insert", state, tmp_path / "second", params)
        first.send_signal(signal.SIGINT)
        first_out, _ = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    # Refused as soon as it reached the server: before its preflight, before anything was created or changed.  Its
    # time is the simulator's (every statement waits for the state file the first run's sessions keep busy), so
    # it is not timed here; tests/test_live_run_lock.py times the refusal of a second run on one machine.
    assert rc == 2, out
    assert "[preflight]" not in out and "[guard]" not in out and "creating database" not in out, out
    assert "in use by another contention-book run" in out, out
    # both logins hold VIEW SERVER STATE (the documented grants), which shows the holder's session
    assert f"pid {first.pid} on " in out and ", started 20" in out, out
    assert not (tmp_path / "second").exists()
    assert first.returncode == 128 + signal.SIGINT, first_out


def test_without_view_server_state_the_refusal_says_what_would_name_the_holder(tmp_path):
    from contention_book.harness.ownership import _sqlserver_holder

    state = S.create(tmp_path / "state.json", version="2019", login="documented")
    with S._locked(state) as st:
        st["grants"] = [g for g in st["grants"] if g != "VIEW SERVER STATE"]
    from sqlserver_sim import fake_pyodbc
    conn = fake_pyodbc.connect(R.connection_string(state), autocommit=True)
    try:
        text = _sqlserver_holder(conn.cursor(), "contention_lab")
    finally:
        conn.close()
    assert "VIEW SERVER STATE" in text, text


# -- SIGKILL: nothing can restore, so the next run does ----------------------------------------------------
@pytest.mark.parametrize("chapter", sorted(SIGNAL_CASES))
def test_after_sigkill_the_next_run_restores_what_the_killed_one_left(chapter, tmp_path, guard_journal_dir):
    params, slow, changed = SIGNAL_CASES[chapter]
    state = S.create(tmp_path / "state.json", version="2022",
                     faults=[{"match": slow, "nth": 0, "kind": "slow", "seconds": 0.2}])
    before = S.load(state)
    cmd = [sys.executable, "-m", "contention_book.run", *R.argv(chapter, tmp_path / "killed", params, allow=True)]
    proc = subprocess.Popen(cmd, env=R.subprocess_env(state), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 60
        while not changed(S.load(state)):
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the run never made its server change"
            time.sleep(0.05)
        proc.kill()
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert lasting(S.load(state), before), "SIGKILL should leave the change in place"
    assert list(guard_journal_dir.glob("*.json")), "the killed run's journal should be there"
    with S._locked(state) as st:  # the slow statement was only there to catch the run mid-way
        st["faults"] = []
    rc, out, _ = R.run_in_process(chapter, state, tmp_path / "next", allow=True)
    assert rc == 0, out
    assert "a run that was killed (pid " in out and "restoring them first" in out, out
    assert lasting(S.load(state), before) == {}, out
