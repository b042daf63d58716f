"""Defect 1 of issue 24: the SQL Server run lock survives the database options that need exclusive access.

READ_COMMITTED_SNAPSHOT and ACCELERATED_DATABASE_RECOVERY need "no other open connection in the database"
(ALTER DATABASE SET options page; ADR management page).  The simulator enforces that: WITH ROLLBACK IMMEDIATE
kills every other session in the database (and the application locks it holds); without it the statement
waits and fails with Msg 1222 at its lock timeout.  The run lock is therefore held in master.
"""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from sqlserver_sim import fake_pyodbc
from sqlserver_sim import run as R
from sqlserver_sim import server as S

SLOW_CHUNK = r"^SET NOCOUNT, XACT_ABORT ON; DECLARE @todo"


def _connect(state, database="master"):
    conn = fake_pyodbc.connect(R.connection_string(state, extra=f"Database={database};"), autocommit=True)
    conn.cursor().execute("SET LOCK_TIMEOUT 500")
    return conn


def _lab(state, name="lab"):
    with S._locked(state) as st:
        st["databases"][name] = S._db(st["next_db_id"])
        st["next_db_id"] += 1


def test_rollback_immediate_kills_every_other_session_in_the_database_and_its_application_lock(tmp_path):
    state = S.create(tmp_path / "state.json", version="2022")
    _lab(state)
    parked, guard = _connect(state, "lab"), _connect(state)
    parked.cursor().execute("SET NOCOUNT ON; DECLARE @r int; EXEC @r = sp_getapplock @Resource = ?, "
                            "@LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = 0; SELECT @r", "x")
    assert S.load(state)["applocks"]
    guard.cursor().execute("ALTER DATABASE [lab] SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE")
    after = S.load(state)
    assert after["databases"]["lab"]["rcsi"] and not after["applocks"]
    with pytest.raises(fake_pyodbc.OperationalError, match="Communication link failure"):
        parked.cursor().execute("SELECT DB_ID(?)", "lab")


def test_without_a_termination_clause_the_change_waits_out_the_lock_timeout(tmp_path):
    state = S.create(tmp_path / "state.json", version="2022")
    _lab(state)
    parked, guard = _connect(state, "lab"), _connect(state)
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"Lock request time out period exceeded\. \(1222\)"):
        guard.cursor().execute("ALTER DATABASE [lab] SET ACCELERATED_DATABASE_RECOVERY = OFF")
    parked.close()
    guard.cursor().execute("ALTER DATABASE [lab] SET ACCELERATED_DATABASE_RECOVERY = OFF")  # alone now: allowed


def test_a_lock_in_master_survives_the_lab_database_changing_its_options(tmp_path):
    from contention_book.harness import ownership
    from contention_book.harness.targets import resolve_target

    state = S.create(tmp_path / "state.json", version="2022")
    _lab(state)
    import os

    os.environ[R.TARGET_VAR] = R.connection_string(state)
    saved = sys.modules.get("pyodbc")
    sys.modules["pyodbc"] = fake_pyodbc
    try:
        target = resolve_target(R.TARGET_VAR, "sqlserver")
        with ownership.database_lock(target, "lab", log=lambda *_: None):
            guard = _connect(state)
            guard.cursor().execute("ALTER DATABASE [lab] SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE")
            guard.cursor().execute("ALTER DATABASE [lab] SET ACCELERATED_DATABASE_RECOVERY = OFF")
            assert list(S.load(state)["applocks"]) == ["master|contention_book_run:lab"]
            with pytest.raises(ownership.RunBusy, match=r"in use by another contention-book run \(pid \d+ on "):
                with ownership.database_lock(target, "lab", log=lambda *_: None):
                    pass
    finally:
        if saved is not None:
            sys.modules["pyodbc"] = saved
        else:
            sys.modules.pop("pyodbc", None)
    assert not S.load(state).get("killed")


def test_two_ghost_cleanup_runs_at_once_the_second_is_refused_for_the_whole_first(tmp_path, monkeypatch):
    """Every attempt while the first run lives is refused, through all four variants' RCSI and ADR changes.

    The second runs take their local locks elsewhere, as a run from another machine would: here it is the
    lock in the server that must refuse them (on one machine the chapter's local lock refuses them first)."""
    params = {"variants": "read_committed,rcsi,rcsi_open_txn,rcsi_open_txn_tf7006"}
    state = S.create(tmp_path / "state.json", version="2022",
                     faults=[{"match": SLOW_CHUNK, "nth": 0, "kind": "slow", "seconds": 0.1}])
    cmd = [sys.executable, "-m", "contention_book.run", *R.argv("ghost-cleanup", tmp_path / "first", params,
                                                                  allow=True)]
    first = subprocess.Popen(cmd, env=R.subprocess_env(state), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    attempts, rcsi_changes_seen = 0, set()
    monkeypatch.setenv("CONTENTION_BOOK_LOCK_DIR", str(tmp_path / "another-machine"))
    try:
        deadline = time.monotonic() + 60
        while not S.load(state)["applocks"]:
            assert first.poll() is None, first.stdout.read()
            assert time.monotonic() < deadline, "the first run never took its lock"
            time.sleep(0.02)
        while first.poll() is None:
            rc, out, _ = R.run_in_process("ghost-cleanup", state, tmp_path / f"second{attempts}", params,
                                          allow=True)
            if first.poll() is not None and rc != 2:
                break  # the first run ended while this attempt ran: it may rightly have got the lock
            assert rc == 2 and "in use by another contention-book run" in out, out
            assert not (tmp_path / f"second{attempts}").exists()
            attempts += 1
            rcsi_changes_seen.add(S.load(state)["databases"].get("contention_lab", {}).get("rcsi"))
        first_out, _ = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, first_out
    assert first_out.count("READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE") >= 3, first_out
    # refused both while RCSI was on and while it was off (None: sampled before the first run set the option)
    assert attempts >= 5 and {True, False} <= rcsi_changes_seen, (attempts, rcsi_changes_seen)
    assert not S.load(state).get("killed"), "a session was in the lab database when its options changed"
