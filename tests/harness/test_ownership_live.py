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
