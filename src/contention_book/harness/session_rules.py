"""The rules every session follows, whichever way its sessions run (a thread per session in :mod:`.driver`, or
the event loop in :mod:`.pg_loop`): what an error's class is, which classes are retried or mean a lost connection,
how long a lost session tries to reconnect, and how a call says its session is done or asks for a pause.

A module of its own so that the driver and the event loop share these without importing each other.
"""
from __future__ import annotations

import os
import re
from typing import Any

from .redaction import redact

# Serialization failure and deadlock (PostgreSQL SQLSTATEs), deadlock victim (SQL Server error number).
RETRYABLE = ("40001", "40P01", "1205")
KINDS = {"40001": "serialization failure", "40P01": "deadlock", "1205": "deadlock", "HYT00": "timeout",
         "57014": "query canceled", "23505": "unique violation", "55P03": "lock not available", "1222": "lock timeout",
         "57P01": "connection terminated by the administrator", "57P02": "connection ended by a server crash",
         "57P03": "server not accepting connections", "10054": "connection reset", "10053": "connection aborted",
         "233": "connection closed", "596": "session killed"}
# Classes that mean the session's connection is gone (PostgreSQL SQLSTATEs 57P01-57P03 and class 08, SQL Server
# error numbers): the call failed once, and the session must reconnect before it can call again.
LOST = frozenset({"57P01", "57P02", "57P03", "10054", "10053", "233", "596"})
# Classes that mean the statement itself is refused (no name, no column, bad syntax, no permission): no retry or
# later call can succeed, so a run stops at the first one instead of counting it as load (SQL Server error numbers:
# 102, 156 syntax, 174 argument count, 207 column, 208 object, 209 ambiguous column, 229 and 300 permission, 2812
# procedure, 4104 multi-part name, 4108 and 4112 window functions, 8144 and 8145 procedure arguments; PostgreSQL
# SQLSTATEs of class 42: 42601 syntax, 42703 column, 42P01 table, 42883 function, 42704 object, 42501 privilege).
REFUSED = frozenset({"102", "156", "174", "207", "208", "209", "229", "300", "2812", "4104", "4108", "4112", "8144",
                     "8145", "42601", "42703", "42P01", "42883", "42704", "42501"})
RECONNECT_FIRST_S = 0.05  # reconnects back off: 50 ms, doubling, at most RECONNECT_MAX_S between tries
RECONNECT_MAX_S = 2.0
RECONNECT_BUDGET_ENV = "CONTENTION_BOOK_RECONNECT_BUDGET_S"  # how long a lost session keeps trying to reconnect
RECONNECT_BUDGET_S = 30.0  # then it gives up, so a run whose server stays away ends instead of waiting forever
_SQLSTATE = re.compile(r"^[0-9A-Z]{5}$")
_NATIVE = re.compile(r"\((\d+)\)\s*\(SQL\w+\)")


# The server's own words for why it ended a session, when the driver reports only the closed socket (psqlODBC
# says 08S01 for a FATAL that arrives as the connection closes): the class PostgreSQL gave that message.
FATAL_WORDS = {"terminating connection due to administrator command": "57P01",
               "terminating connection because of crash of another server process": "57P02",
               "the database system is starting up": "57P03", "the database system is shutting down": "57P03"}


def classify(exc: BaseException) -> str:
    """An error's class: the SQL Server error number, else the SQLSTATE, else the exception's type name.

    pyodbc raises ``(sqlstate, message)``; psqlODBC passes the server's
    SQLSTATE through, and SQL Server's drivers end the message with the native
    error number in parentheses, e.g. ``... (1205) (SQLExecDirectW)``.
    """
    args = getattr(exc, "args", ())
    message = " ".join(str(a) for a in args)
    if "SQL Server" in message:
        m = _NATIVE.search(message)
        if m:
            return m.group(1)
    if args and isinstance(args[0], str) and _SQLSTATE.match(args[0]):
        if args[0][:2] == "08":
            for words, code in FATAL_WORDS.items():
                if f"FATAL:  {words}" in message or f"FATAL: {words}" in message:
                    return code
        return args[0]
    return type(exc).__name__


def reconnect_budget_s() -> float:
    """Seconds a session that lost its connection tries to get one back (:data:`RECONNECT_BUDGET_ENV`)."""
    raw = os.environ.get(RECONNECT_BUDGET_ENV, "").strip()
    try:
        value = float(raw) if raw else RECONNECT_BUDGET_S
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(f"{RECONNECT_BUDGET_ENV}={raw!r}: expected a number of seconds, 0 or more")
    return value


def reconnect_given_up(st: "SessionStats", budget_s: float) -> None:
    """Say (always, whatever else was kept) that this session stopped trying to reconnect."""
    st.error_samples.append(f"gave up reconnecting: the server stayed unreachable for {budget_s:g} s "
                            f"({RECONNECT_BUDGET_ENV} sets how long)")


def reconnect_failed(st: "SessionStats", exc: BaseException, conn: Any = None) -> None:
    """Count a failed try to reconnect (not a call, so never an error), keep its words, close what it opened."""
    st.reconnect_failures += 1
    if len(st.error_samples) < 5:
        st.error_samples.append(f"[{classify(exc)}] reconnect failed: {redact(exc)}")
    if conn is not None:
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - a half-opened connection
            pass


def lost_connection(code: str) -> bool:
    """True for an error class that means the connection is gone (see LOST); class 08 is connection exceptions."""
    return code in LOST or (len(code) == 5 and code[:2] == "08")


def kind(code: str) -> str:
    """Words for an error class (``code`` from :func:`classify`)."""
    if code in KINDS:
        return KINDS[code]
    if code in REFUSED:
        return "statement refused"
    if code[:2] == "08" and len(code) == 5:
        return "connection"
    return "other"


def _pause(returned: Any) -> float:
    """The pause a call asked for: a number of seconds it returned (anything else, e.g. a cursor, is none)."""
    return float(returned) if isinstance(returned, (int, float)) and not isinstance(returned, bool) \
        and returned > 0 else 0.0


class SessionDone(Exception):
    """Raised by a call (or by a :class:`Statement`'s ``args``) when its session has no more calls to make: the
    session stops there, and nothing is counted as an error."""
