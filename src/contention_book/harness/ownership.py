"""A live run owns what it works on: one run at a time per cluster, machine or database.

Two runs at once measure each other (and two ghost-cleanup runs deadlock on
each other's DROP TABLE), so a second run is refused at once, with the
first one's pid and start time:

- :func:`local_lock` is an ``flock`` on a file: the embedded cluster's
  ``run.lock`` or the native benchmarks' lock.  The kernel frees it when its
  holder dies, even by SIGKILL, so a killed run never blocks the next one.
- :func:`database_lock` is a session-level lock held on a connection of its
  own and freed when that connection goes, however the run ends.  On
  PostgreSQL it is ``pg_try_advisory_lock`` inside the target database.  On
  SQL Server it is ``sp_getapplock`` with a session owner taken in
  ``master``, with the lab database's name in the resource: ghost-cleanup
  sets READ_COMMITTED_SNAPSHOT and ADR, which need "no other open
  connection in the database" (ALTER DATABASE SET options page,
  https://learn.microsoft.com/sql/t-sql/statements/alter-database-transact-sql-set-options),
  so a session parked in the lab database would be killed by WITH ROLLBACK
  IMMEDIATE (and the promise of one run at a time quietly lapse) or would
  stall the change.  sp_getapplock needs only membership in public
  (https://learn.microsoft.com/sql/relational-databases/system-stored-procedures/sp-getapplock-transact-sql).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
from pathlib import Path
from typing import Iterator

from .targets import Target, TargetError

PG_LOCK_KEY = 0x636F6E74  # 'cont': one lock per database, whatever the chapter
SQLSERVER_RESOURCE = "contention_book_run"  # + ":<database>"; the lock lives in master (see above)
SQLSERVER_LOCK_DATABASE = "master"


def sqlserver_resource(database: str) -> str:
    """The application lock's resource for one lab database (sp_getapplock takes up to 255 characters)."""
    return f"{SQLSERVER_RESOURCE}:{database}"[:255]


class RunBusy(TargetError):
    """Another run holds what this run needs."""


def _stamp(holder: str = "") -> str:
    """'pid N, <holder>, started T': who holds a lock, for the refusal a second run prints."""
    return (f"pid {os.getpid()}, {holder + ', ' if holder else ''}"
            f"started {_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}")


@contextlib.contextmanager
def local_lock(path: Path, what: str, holder: str = "") -> Iterator[None]:
    """Hold an exclusive lock on ``path`` for the block; refuse at once if another process holds it.
    ``holder`` (the chapter and engine, say) is written beside this run's pid and start for that refusal."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+", encoding="utf-8")
    try:
        if os.name == "nt":  # pragma: no cover - Windows
            import msvcrt

            try:
                msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
            except OSError:
                fh.seek(0)
                raise RunBusy(f"{what} is in use by another run ({fh.read().strip() or 'holder unknown'})") from None
        else:
            import fcntl

            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                fh.seek(0)
                holder = fh.read().strip() or "holder unknown"
                raise RunBusy(f"{what} is in use by another run ({holder}); wait for it to end, or stop it "
                              "(Ctrl-C or SIGTERM restores what it changed)") from None
        fh.seek(0)
        fh.truncate()
        fh.write(_stamp(holder) + "\n")
        fh.flush()
        yield
    finally:
        fh.close()  # closing the file releases the lock


@contextlib.contextmanager
def database_lock(target: Target, database: str, log=print) -> Iterator[None]:
    """Hold the run lock of ``database`` on a connection of its own for the block."""
    if target.engine is None:  # the first connection tells which engine it is, and so where the lock lives
        target.connect().close()
    conn = target.connect(SQLSERVER_LOCK_DATABASE if target.engine == "sqlserver" else database)
    try:
        cur = conn.cursor()
        if target.engine == "postgres":
            cur.execute("SELECT set_config('application_name', ?, false)", f"contention-book run, {_stamp()}")
            got = cur.execute("SELECT pg_try_advisory_lock(?)::int", PG_LOCK_KEY).fetchone()[0]
            got = int(got) == 1  # psqlODBC may hand a boolean back as text
            if not got:
                row = cur.execute(
                    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 0 AND l.objid = ? "
                    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                    PG_LOCK_KEY).fetchone()
                holder = row[0] if row and row[0] else "another session"
                raise RunBusy(f"database {database} is in use by another run ({holder}); wait for it to end")
        else:
            cur.execute("SET NOCOUNT ON; DECLARE @r int; EXEC @r = sp_getapplock @Resource = ?, "
                        "@LockMode = 'Exclusive', @LockOwner = 'Session', @LockTimeout = 0; SELECT @r",
                        sqlserver_resource(database))
            result = cur.fetchone()[0]
            if result < 0:
                raise RunBusy(f"database {database} is in use by another contention-book run "
                              f"({_sqlserver_holder(cur, database)}); wait for it to end")
        log(f"[harness] run lock taken on database {database}")
        yield
    finally:
        conn.close()  # the lock belongs to this session: closing it releases the lock


def _like_literal(text: str) -> str:
    """``text`` matched literally by LIKE: its wildcards and brackets in brackets."""
    return "".join(f"[{c}]" if c in "%_[" else c for c in text)


def _sqlserver_holder(cur, database: str) -> str:
    """'pid N on HOST, started T' for the session holding the run lock, read from the DMVs.

    The holder's pid is the client process id its driver sent at login
    (``sys.dm_exec_sessions.host_process_id``) and its start the session's
    ``login_time``: the lock is taken on a connection opened at the run's
    start.  Seeing another session's rows needs VIEW SERVER STATE (2022:
    VIEW SERVER PERFORMANCE STATE); without it the message says so.  An
    APPLICATION lock's resource_description keeps only the first 32
    characters of the name (sp_getapplock page), so the match is on those.
    """
    try:
        row = cur.execute(
            "SELECT TOP (1) s.host_process_id, s.host_name, CONVERT(varchar(19), s.login_time, 126) "
            "FROM sys.dm_tran_locks l JOIN sys.dm_exec_sessions s ON s.session_id = l.request_session_id "
            "WHERE l.resource_type = 'APPLICATION' AND l.request_status = 'GRANT' "
            "AND l.resource_database_id = DB_ID() AND l.resource_description LIKE ?",
            f"%[[]{_like_literal(sqlserver_resource(database)[:32])}]%").fetchone()
    except Exception as exc:  # noqa: BLE001 - the refusal stands; only its detail is missing
        return f"VIEW SERVER STATE would name its pid; reading it failed: {str(exc).splitlines()[0][:160]}"
    if not row:
        return "held by a session this login cannot see; VIEW SERVER STATE shows its pid"
    pid, host, since = row
    return f"pid {pid} on {host.strip() if host else 'an unnamed host'}, started {since}"


def connections_needed(params: dict, per_session: int = 1, extra: int = 6) -> int:
    """Connections a run opens at its peak: its sessions (times what each brings) and its samplers."""
    sessions = max(params.get("sessions") or [1])
    return sessions * per_session + extra


def check_connections(target: Target, needed: int) -> None:
    """Refuse a PostgreSQL run that would fail midway with 'too many clients', and say what to change."""
    if target.engine != "postgres":
        return
    conn = target.connect()
    try:
        cur = conn.cursor()
        limit = int(cur.execute("SHOW max_connections").fetchone()[0])
        reserved = int(cur.execute("SHOW superuser_reserved_connections").fetchone()[0])
        in_use = int(cur.execute("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")
                     .fetchone()[0])
    finally:
        conn.close()
    free = limit - reserved - in_use
    if needed > free:
        raise TargetError(f"this run needs about {needed} connections, but target {target.name!r} allows "
                          f"max_connections={limit} ({reserved} reserved, {in_use} in use): raise max_connections "
                          "(postgresql.conf, then restart) or run fewer sessions")
