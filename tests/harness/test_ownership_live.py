"""Database run locks and the connection check, on the embedded PostgreSQL."""
import pytest

from contention_book.harness.ownership import RunBusy, check_connections, database_lock
from contention_book.harness.targets import TargetError

pytestmark = pytest.mark.live


def test_a_database_is_locked_for_one_run_at_a_time(pg_target):
    with database_lock(pg_target, "contention_test", log=lambda *_: None):
        with pytest.raises(RunBusy, match=r"in use by another run \(contention-book run, pid \d+, started "):
            with database_lock(pg_target, "contention_test", log=lambda *_: None):
                pass
    with database_lock(pg_target, "contention_test", log=lambda *_: None):  # released with its connection
        pass


def test_a_run_needing_more_connections_than_the_server_allows_is_refused(pg_target):
    check_connections(pg_target, 10)
    with pytest.raises(TargetError, match=r"needs about 5000 connections.*max_connections=\d+.*raise max_connections"):
        check_connections(pg_target, 5000)


def test_every_connection_has_a_lock_timeout(pg_target, monkeypatch):
    conn = pg_target.connect("contention_test")
    assert conn.cursor().execute("SHOW lock_timeout").fetchone()[0] == "2min"
    conn.close()
    monkeypatch.setenv("CONTENTION_BOOK_LOCK_TIMEOUT_S", "0.5")
    a, b = pg_target.connect("contention_test", autocommit=False), pg_target.connect("contention_test")
    try:
        a.cursor().execute("CREATE TABLE IF NOT EXISTS lock_probe (x int)")
        a.commit()
        a.cursor().execute("LOCK TABLE lock_probe IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(Exception, match="lock timeout"):
            b.cursor().execute("SELECT * FROM lock_probe")
    finally:
        a.rollback()
        a.cursor().execute("DROP TABLE IF EXISTS lock_probe")
        a.commit()
        a.close()
        b.close()
