"""The guard against the test PostgreSQL: prior state back on every exit path."""
import pytest

from contention_book.harness.guard import Change, RestoreFailed, ServerChangeNotAllowed, StateGuard
from contention_book.harness.targets import TargetError, ensure_own_database

pytestmark = pytest.mark.live
DB = "contention_test"


def db_setting(target, name):
    conn = target.connect(DB)
    try:
        return conn.cursor().execute(f"SELECT current_setting('{name}')").fetchone()[0]
    finally:
        conn.close()


def work_mem_change():
    """A database-scoped change: ALTER DATABASE ... SET work_mem, as new sessions see it."""
    def read(conn):
        row = conn.cursor().execute(
            "SELECT s.setconfig FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase "
            "WHERE d.datname = ? AND s.setrole = 0", DB).fetchone()
        for item in (row[0] if row and row[0] else "").strip("{}").split(","):
            if item.startswith("work_mem="):
                return item.split("=", 1)[1]
        return None

    return Change(
        description=f"work_mem of database {DB}", scope="database", read=read,
        apply=lambda prior: [f"ALTER DATABASE {DB} SET work_mem = '7777kB'"],
        restore=lambda prior: [f"ALTER DATABASE {DB} RESET work_mem" if prior is None
                               else f"ALTER DATABASE {DB} SET work_mem = '{prior}'"],
    )


def server_change():
    """A server-wide change: ALTER SYSTEM + reload."""
    def read(conn):
        return conn.cursor().execute("SELECT current_setting('log_min_duration_statement')").fetchone()[0]

    return Change(
        description="log_min_duration_statement (server-wide)", scope="server", read=read,
        apply=lambda prior: ["ALTER SYSTEM SET log_min_duration_statement = 12345", "SELECT pg_reload_conf()"],
        restore=lambda prior: ["ALTER SYSTEM RESET log_min_duration_statement", "SELECT pg_reload_conf()"],
    )


def connect(target):
    return lambda database: target.connect(database)


def test_applies_and_restores(pg_target):
    prior = db_setting(pg_target, "work_mem")
    lines = []
    with StateGuard(connect(pg_target), [work_mem_change()], log=lines.append):
        assert db_setting(pg_target, "work_mem") == "7777kB"
    assert db_setting(pg_target, "work_mem") == prior
    assert any("apply:   ALTER DATABASE" in line for line in lines)
    assert any("restore: ALTER DATABASE" in line for line in lines)


def test_restores_after_exception(pg_target):
    prior = db_setting(pg_target, "work_mem")
    with pytest.raises(ZeroDivisionError):
        with StateGuard(connect(pg_target), [work_mem_change()], log=lambda *_: None):
            1 / 0
    assert db_setting(pg_target, "work_mem") == prior


def test_restores_after_keyboard_interrupt(pg_target):
    prior = db_setting(pg_target, "work_mem")
    with pytest.raises(KeyboardInterrupt):
        with StateGuard(connect(pg_target), [work_mem_change()], log=lambda *_: None):
            raise KeyboardInterrupt
    assert db_setting(pg_target, "work_mem") == prior


def test_restores_after_lost_connection(pg_target):
    """The workload's connection dies mid-run; the guard restores through a new one."""
    prior = db_setting(pg_target, "work_mem")
    with pytest.raises(Exception):
        with StateGuard(connect(pg_target), [work_mem_change()], log=lambda *_: None):
            victim = pg_target.connect(DB)
            pid = victim.cursor().execute("SELECT pg_backend_pid()").fetchone()[0]
            pg_target.connect(DB).cursor().execute("SELECT pg_terminate_backend(?)", pid)
            victim.cursor().execute("SELECT 1").fetchall()
    assert db_setting(pg_target, "work_mem") == prior


def test_server_change_needs_opt_in(pg_target):
    before = db_setting(pg_target, "log_min_duration_statement")
    with pytest.raises(ServerChangeNotAllowed, match="allow_server_changes=True"):
        with StateGuard(connect(pg_target), [server_change()], log=lambda *_: None):
            pass
    assert db_setting(pg_target, "log_min_duration_statement") == before


def test_server_change_with_opt_in_is_restored(pg_target):
    before = db_setting(pg_target, "log_min_duration_statement")
    with pytest.raises(RuntimeError):
        with StateGuard(connect(pg_target), [server_change()], allow_server_changes=True, log=lambda *_: None):
            assert db_setting(pg_target, "log_min_duration_statement") == "12345ms"
            raise RuntimeError("workload failed")
    assert db_setting(pg_target, "log_min_duration_statement") == before


def test_failed_restore_prints_the_statements(pg_target):
    calls = {"n": 0}

    def flaky(database):
        calls["n"] += 1
        if calls["n"] > 2:  # read and apply work; every restore attempt fails
            raise TargetError("connection refused")
        return pg_target.connect(database)

    lines = []
    with pytest.raises(RestoreFailed) as err:
        with StateGuard(flaky, [work_mem_change()], log=lines.append, retries=2, retry_wait_s=0):
            pass
    assert f"ALTER DATABASE {DB} RESET work_mem" in str(err.value) or "SET work_mem" in str(err.value)
    assert "NOT in its prior state" in lines[-1]
    # put it back for the other tests
    StateGuard(connect(pg_target), [])._run(None, [f"ALTER DATABASE {DB} RESET work_mem"])


def test_plan_changes_nothing(pg_target):
    prior = db_setting(pg_target, "work_mem")
    plan = StateGuard(connect(pg_target), [work_mem_change()]).plan()
    assert plan[0]["apply"] == [f"ALTER DATABASE {DB} SET work_mem = '7777kB'"]
    assert db_setting(pg_target, "work_mem") == prior


def test_refuses_a_database_it_did_not_create(pg_target):
    conn = pg_target.connect()
    conn.cursor().execute("DROP DATABASE IF EXISTS someone_elses")
    conn.cursor().execute("CREATE DATABASE someone_elses")
    conn.close()
    with pytest.raises(TargetError, match="was not created by this harness"):
        ensure_own_database(pg_target, "someone_elses", log=lambda *_: None)
    ensure_own_database(pg_target, "someone_elses", allow_foreign=True, log=lambda *_: None)
