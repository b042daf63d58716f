"""harness.driver: a statement the server refuses ends the run at once; other errors are counted as before."""
from __future__ import annotations

import time

import pytest

from contention_book.harness.driver import SessionsFailed, run_sessions


class _Conn:
    def cursor(self):
        return None

    def close(self):
        pass


class _OdbcError(Exception):
    """As pyodbc raises a SQL Server error: (SQLSTATE, message ending in the native number)."""


def _refusing(number: int, sqlstate: str):
    def op(_cur, session, index):
        if session == 1 and index >= 0:  # one session's statement is refused; the other's calls succeed
            raise _OdbcError(sqlstate, f"[Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Invalid column name "
                                       f"'pushed_on'. ({number}) (SQLExecDirectW)")
    return op


def test_a_refused_statement_stops_every_session_and_the_run_says_why():
    started = time.monotonic()
    with pytest.raises(SessionsFailed, match=r"refused a statement \(207: statement refused\).*pushed_on"):
        run_sessions(_Conn, _refusing(207, "42S22"), sessions=2, duration_s=30, progress=False)
    assert time.monotonic() - started < 10  # the 30 s window was not waited out


def test_a_lock_timeout_is_counted_not_fatal():
    result = run_sessions(_Conn, _refusing(1222, "HY000"), sessions=2, operations_per_session=50, progress=False)
    assert result.errors_by_code == {"1222": 50} and result.operations == 50
