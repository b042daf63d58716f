"""A SQL Server simulator at the pyodbc level, for tests: every statement the harness sends gets an answer.

No SQL Server can run where the book is built, so the SQL Server path is tested against this
simulator.  It is not a database engine: it recognises the harness's own fixed statements (the
handlers below), parses and evaluates every other batch against its state (``tsql.py``,
``evaluate.py``, ``views.py``), and answers the way Microsoft's documentation says SQL Server answers:
result shapes, values, errors and their numbers.  Each
family of answers below cites the page it follows.  Where the code and the documentation disagree,
the documentation wins and the code is fixed, not this file.

Before answering, every batch is judged by documented rule (``rules.py``: natively compiled modules,
ATOMIC blocks, memory-optimized DDL, statements not allowed in a user transaction), and every
statement is checked against the permission its own page names, for the version and the login's grants
(``permissions.py``).  Options that need the database to themselves (READ_COMMITTED_SNAPSHOT, ADR) end
or wait for the other sessions in it (:func:`exclusive_access`).

Before any answer, every system object and column a batch names is resolved against the documented
catalogue (``catalogue.json``, ``query.py``: Msg 208 / 207) and the object's permission is checked (Msg 300);
a batch no answer recognises is parsed with sqlfluff's tsql grammar (Msg 102 on a syntax error).  What makes
each chapter's phenomenon appear is behind the switch :func:`phenomena_on` (docs/sqlserver-simulator.md).

An unknown statement raises :class:`UnknownStatement`, so new SQL cannot slip into the harness
without a test that teaches the simulator its documented answer.  No batch is answered by matching its
own text.

Server state (trace flags, process affinity, databases and their options, In-Memory OLTP memory,
cumulative statistics) lives in a JSON file, so a test can read what a run left behind, also when
the run was a separate process killed by a signal.  Writes are atomic (write + rename) under an
``flock``.

Configuration (:func:`create`): version (``2016sp2``, ``2017``, ``2019``, ``2022``, ``sqldb`` =
Azure SQL Database, ``mi`` = Azure SQL Managed Instance), edition (``express``, ``standard``,
``developer``, ``enterprise``), login (``sysadmin``; ``documented``: only the grants
book/running-live.md documents; or a list: exactly those grants), host platform and CPUs.

Faults (``faults`` in the state): each ``{"match": regex, "nth": k, "kind": ..., "seconds": s}``
fires on the k-th statement matching ``match`` (0: every one).  Kinds: ``drop`` (the connection
is lost: 08S01, every later statement on it fails too), ``error`` (a generic error 50000),
``slow`` (the statement takes ``seconds`` first).  ``{"step": N, "kind": "drop"}`` drops the
connection that sends the N-th statement of the whole server.

Documentation followed (https://learn.microsoft.com/sql/... unless a full address is given):

- SERVERPROPERTY: t-sql/functions/serverproperty-transact-sql (ProductVersion, ProductLevel,
  ProductUpdateLevel, Edition, EngineEdition 2 Standard, 3 Enterprise/Developer, 4 Express,
  5 SQL Database, 8 Managed Instance; IsXTPSupported; InstanceDefaultDataPath)
- @@VERSION: t-sql/functions/version-transact-sql-configuration-functions
- HAS_PERMS_BY_NAME, IS_SRVROLEMEMBER, SUSER_SNAME: t-sql/functions/has-perms-by-name-transact-sql etc.
- sys.dm_os_sys_info: relational-databases/system-dynamic-management-views/sys-dm-os-sys-info-transact-sql
  (cpu_count, hyperthread_ratio, socket_count and cores_per_socket from 2016 SP2/2017, numa_node_count,
  affinity_type_desc AUTO | MANUAL, committed_target_kb)
- sys.dm_os_host_info (2017+): .../sys-dm-os-host-info-transact-sql (host_platform Windows | Linux)
- sys.dm_os_schedulers: .../sys-dm-os-schedulers-transact-sql (status VISIBLE ONLINE / VISIBLE OFFLINE /
  HIDDEN ONLINE / VISIBLE ONLINE (DAC); is_online; scheduler_id >= 1048576 are internal)
- sys.dm_os_nodes: .../sys-dm-os-nodes-transact-sql (node_state_desc, the ONLINE DAC node)
- sys.configurations 'affinity mask' / 'affinity64 mask':
  database-engine/configure-windows/affinity-mask-server-configuration-option (a bit per CPU, 0 = AUTO;
  that ALTER SERVER CONFIGURATION shows its mask there is assumed, see docs/sqlserver-simulator.md)
- ALTER SERVER CONFIGURATION SET PROCESS AFFINITY: t-sql/statements/alter-server-configuration-transact-sql
  (CPU = AUTO | ranges; ALTER SETTINGS permission; Msg 15247 without it)
- DBCC TRACEON / TRACEOFF / TRACESTATUS: t-sql/database-console-commands/dbcc-traceon-transact-sql,
  dbcc-traceoff-transact-sql, dbcc-tracestatus-transact-sql (global flags need sysadmin, Msg 2571
  otherwise; TRACESTATUS columns TraceFlag, Status, Global, Session; any login may read the status)
- Managed Instance: https://learn.microsoft.com/azure/azure-sql/managed-instance/transact-sql-tsql-differences-sql-server
  (a documented short list of global trace flags; SET RECOVERY not supported; files are placed by the service)
- Azure SQL Database: https://learn.microsoft.com/azure/azure-sql/database/transact-sql-tsql-differences-sql-server
  (no DBCC TRACEON, SET RECOVERY or ADD FILE; Msg 40515 for a name in another database; ADR always on)
- sys.dm_os_wait_stats, sys.dm_os_latch_stats, sys.dm_os_spinlock_stats, sys.dm_os_waiting_tasks,
  sys.dm_exec_session_wait_stats, sys.dm_os_performance_counters: .../sys-dm-os-wait-stats-transact-sql etc.
  (columns and units: milliseconds; VIEW SERVER STATE, from 2022 VIEW SERVER PERFORMANCE STATE, Msg 300
  without it; counter types 272696576, 65792, 537003264, 1073874176, 1073939712)
- resource_description of a PAGELATCH wait: <database_id>:<file_id>:<page_id> (sys-dm-os-waiting-tasks page);
  SQL Server 2022 appends the latch in parentheses (quoted in issue 12 from a 2022 instance; the text after
  the page is not documented)
- sys.dm_db_index_physical_stats: .../sys-dm-db-index-physical-stats-transact-sql
- sys.dm_db_page_info (2019+): .../sys-dm-db-page-info-transact-sql
- DBCC SQLPERF(LOGSPACE): t-sql/database-console-commands/dbcc-sqlperf-transact-sql (Database Name,
  Log Size (MB), Log Space Used (%), Status; CLEAR needs ALTER SERVER STATE)
- sp_getapplock: relational-databases/system-stored-procedures/sp-getapplock-transact-sql
  (0 granted, 1 granted after wait, -1 timeout, -2 cancelled, -3 deadlock, -999 parameter error)
- sys.dm_tran_locks: relational-databases/system-dynamic-management-views/sys-dm-tran-locks-transact-sql
  (an APPLICATION lock's resource_description keeps the name's first 32 characters in brackets, as
  the sp_getapplock page says); sys.dm_exec_sessions: .../sys-dm-exec-sessions-transact-sql
  (host_process_id, host_name, login_time)
- In-Memory OLTP: relational-databases/in-memory-oltp/estimate-memory-requirements-for-memory-optimized-tables
  (row header 24 bytes, 8 bytes per index pointer, 8 bytes per hash bucket);
  sql-server/editions-and-components-of-sql-server-2019 (memory-optimized data per database: Express
  352 MB, Standard 32 GB; compute limits: Express lesser of 1 socket or 4 cores, Standard of 4 sockets
  or 24 cores); relational-databases/in-memory-oltp/bind-a-database-with-memory-optimized-tables-to-a-resource-pool
  (share of committed target memory: <= 8 GB 70%, <= 16 GB 75%, <= 32 GB 80%, <= 96 GB 85%, more 90%);
  errors 41823 (quota) and 41805 (resource pool memory), 41337 (no MEMORY_OPTIMIZED_DATA filegroup):
  relational-databases/errors-events/database-engine-events-and-errors
- ODBC Driver 18 (Encrypt defaults to yes; TrustServerCertificate): connect/odbc/... "ODBC Driver 18.0
  for SQL Server Released" and dsn-connection-string-attribute pages.

What could not be pinned down from the documentation is listed in docs/sqlserver-simulator.md;
where this file had to choose, the comment next to the answer says so.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable

from . import permissions as P
from . import query as Q
from . import rules as RULES

REPO = Path(__file__).resolve().parents[2]

# -- profiles --------------------------------------------------------------------------------------
# Builds are real published build numbers of each release line; nothing asserts on them beyond the major.
VERSIONS = {
    "2016sp2": {"ProductVersion": "13.0.5026.0", "ProductLevel": "SP2", "ProductUpdateLevel": None,
                "year": "2016 (SP2)"},
    "2017": {"ProductVersion": "14.0.3456.2", "ProductLevel": "RTM", "ProductUpdateLevel": "CU31", "year": "2017"},
    "2019": {"ProductVersion": "15.0.4410.1", "ProductLevel": "RTM", "ProductUpdateLevel": "CU29", "year": "2019"},
    "2022": {"ProductVersion": "16.0.4135.4", "ProductLevel": "RTM", "ProductUpdateLevel": "CU14", "year": "2022"},
    # Azure reports 12.0.2000.8 whatever engine it runs (SERVERPROPERTY page, "ProductVersion").
    "sqldb": {"ProductVersion": "12.0.2000.8", "ProductLevel": "RTM", "ProductUpdateLevel": None, "year": None},
    "mi": {"ProductVersion": "12.0.2000.8", "ProductLevel": "RTM", "ProductUpdateLevel": None, "year": None},
}
EDITIONS = {  # Edition text and EngineEdition (SERVERPROPERTY page)
    "express": ("Express Edition (64-bit)", 4),
    "standard": ("Standard Edition (64-bit)", 2),
    "developer": ("Developer Edition (64-bit)", 3),
    "enterprise": ("Enterprise Edition: Core-based Licensing (64-bit)", 3),
}
# Compute capacity limits (editions-and-components page): Express the lesser of 1 socket or 4 cores,
# Standard the lesser of 4 sockets or 24 cores.
CORE_LIMIT = {"express": 4, "standard": 24}
XTP_QUOTA_MB = {"express": 352, "standard": 32 * 1024}  # memory-optimized data per database
MI_GLOBAL_TRACE_FLAGS = {460, 2301, 2389, 2390, 2453, 2467, 7471, 8207, 9389, 10316, 11024}
# What book/running-live.md tells a reader to grant a login that is not sysadmin (ALTER SETTINGS only for
# the affinity variant, so it is a separate login in the tests).
DOCUMENTED_GRANTS = ("CREATE ANY DATABASE", "VIEW SERVER STATE")
BENIGN_BACKGROUND = ("SLEEP_TASK", "LAZYWRITER_SLEEP", "XE_TIMER_EVENT", "REQUEST_FOR_DEADLOCK_SEARCH",
                     "SQLTRACE_INCREMENTAL_FLUSH_SLEEP", "DIRTY_PAGE_POLL", "HADR_FILESTREAM_IOMGR_IOCOMPLETION",
                     "CHECKPOINT_QUEUE", "LOGMGR_QUEUE", "SOS_WORK_DISPATCHER")


# Managed Instance T-SQL differences page: a FILENAME in ADD FILE is refused with Msg 41903
# (https://learn.microsoft.com/azure/azure-sql/managed-instance/transact-sql-tsql-differences-sql-server)
MI_FILENAME = "FILENAME option is not allowed in SQL Database Managed Instance."


class SimError(Exception):
    """What the fake pyodbc raises: args are (sqlstate, message) like pyodbc.Error."""


class UnknownStatement(SimError):
    """The harness sent SQL the simulator was never taught: add its documented answer first."""


def sql_error(number: int, message: str, state: str = "42000", severity: int = 16) -> SimError:
    # pyodbc puts the driver's text in args[1]: "[Microsoft][ODBC Driver 18 for SQL Server][SQL Server]<msg> (<n>)"
    return SimError(state, f"[Microsoft][ODBC Driver 18 for SQL Server][SQL Server]{message} ({number}) "
                           f"(SQLExecDirectW)")


# -- state -----------------------------------------------------------------------------------------
def create(path: str | Path, *, version: str = "2022", edition: str = "developer", login: str | list = "sysadmin",
           platform: str = "Windows", cpus: int = 8, threads_per_core: int = 2, memory_gb: int = 16,
           xtp: bool | None = None, affinity: list[int] | None = None, trace_flags: list[int] = (),
           faults: list[dict] = (), phenomena: bool = True) -> Path:
    """Write a fresh server state file; returns its path (``phenomena``: the switch :func:`phenomena_on`)."""
    if version not in VERSIONS:
        raise ValueError(f"version {version!r}: expected one of {sorted(VERSIONS)}")
    if version in ("sqldb", "mi"):
        edition = "azure"
    elif edition not in EDITIONS:
        raise ValueError(f"edition {edition!r}: expected one of {sorted(EDITIONS)}")
    if platform == "Linux" and version in ("2016sp2",):
        raise ValueError("SQL Server runs on Linux from 2017")
    state = {
        "version": version, "edition": edition, "platform": platform,
        "sysadmin": login == "sysadmin", "grants": [] if login == "sysadmin" else list(
            DOCUMENTED_GRANTS if login == "documented" else login),
        "cpus": cpus, "threads_per_core": threads_per_core, "memory_gb": memory_gb,
        "xtp": (version not in ("sqldb", "mi")) if xtp is None else xtp,
        "affinity": affinity, "trace_flags": sorted(trace_flags), "faults": list(faults),
        "step": 0, "match_counts": {},
        "databases": {"master": _db(1, system=True), "tempdb": _db(2, system=True),
                      "model": _db(3, system=True), "msdb": _db(4, system=True)},
        "next_db_id": 5, "next_spid": 51, "sessions": {}, "applocks": {},
        "stats": {"wait": {w: [10, 1000, 50, 10] for w in BENIGN_BACKGROUND}, "latch": {}, "spinlock": {}},
        "log": [], PHENOMENA: bool(phenomena),
    }
    p = Path(path)
    p.write_text(json.dumps(state))
    return p


def _db(db_id: int, system: bool = False) -> dict:
    return {"id": db_id, "system": system, "recovery": "FULL" if not system else "SIMPLE",
            "delayed_durability": "DISABLED", "rcsi": False, "snapshot": "OFF", "adr": False,
            "props": {}, "files": [{"file_id": 1, "type_desc": "ROWS", "name": "data", "physical_name":
                                    "/var/opt/mssql/data/x.mdf", "size_mb": 8},
                                   {"file_id": 2, "type_desc": "LOG", "name": "log",
                                    "physical_name": "/var/opt/mssql/data/x_log.ldf", "size_mb": 8}],
            "filegroups": [], "tables": {}, "xtp_bytes": 0, "objects": []}


def _stored(value):
    """A value the state file keeps as text: a datetime a batch wrote (SYSDATETIME()) as ISO 8601, which the
    evaluator reads back as a date (evaluate._as_datetime)."""
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat(sep=" ")
    raise TypeError(f"the simulator's state cannot keep a {type(value).__name__}")


def load(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


@contextlib.contextmanager
def _locked(path: Path):
    """The state, read and (if changed) written back atomically, under an exclusive flock."""
    with open(str(path) + ".lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            text = path.read_text()
            state = json.loads(text)
            yield state
            after = json.dumps(state, default=_stored)
            if after != text:
                tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
                tmp.write_text(after)
                os.replace(tmp, path)
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def lasting_changes(state: dict, baseline: dict) -> dict[str, Any]:
    """What differs between two states in what a run must restore: flags, affinity, database options."""
    out = {}
    if state["trace_flags"] != baseline["trace_flags"]:
        out["trace_flags"] = (baseline["trace_flags"], state["trace_flags"])
    if state["affinity"] != baseline["affinity"]:
        out["affinity"] = (baseline["affinity"], state["affinity"])
    if state.get("xe_sessions", {}) != baseline.get("xe_sessions", {}):
        out["xe_sessions"] = (sorted(baseline.get("xe_sessions", {})), sorted(state.get("xe_sessions", {})))
    for name, db in state["databases"].items():
        old = baseline["databases"].get(name)
        if old is None:
            continue
        for k in ("recovery", "delayed_durability", "rcsi", "snapshot", "adr"):
            if db[k] != old[k]:
                out[f"{name}.{k}"] = (old[k], db[k])
    return out


# -- facts derived from the state ------------------------------------------------------------------
def major(state: dict) -> int:
    return int(VERSIONS[state["version"]]["ProductVersion"].split(".")[0])


def azure(state: dict) -> str | None:
    return {"sqldb": "sqldb", "mi": "mi"}.get(state["version"])


def server_xtp(state: dict) -> int:
    """SERVERPROPERTY('IsXTPSupported'): on Managed Instance 1 whatever the tier (issue 33, defect 2: General
    Purpose is server 1, database 0); In-Memory OLTP is decided per database, DATABASEPROPERTYEX(DB_NAME(),
    'IsXTPSupported') (https://learn.microsoft.com/sql/t-sql/functions/databasepropertyex-transact-sql)."""
    return 1 if azure(state) == "mi" else int(bool(state["xtp"]))


def engine_edition(state: dict) -> int:
    return {"sqldb": 5, "mi": 8}.get(state["version"]) or EDITIONS[state["edition"]][1]


def licensed_cpus(state: dict) -> list[int]:
    """CPUs the edition may use: the first cores up to the edition's limit (both threads of each core)."""
    limit = CORE_LIMIT.get(state["edition"])
    n = state["cpus"] if limit is None else min(state["cpus"], limit * state["threads_per_core"])
    return list(range(n))


def online_cpus(state: dict) -> list[int]:
    lic = licensed_cpus(state)
    return lic if state["affinity"] is None else [c for c in state["affinity"] if c in lic]


def is_sysadmin(state: dict) -> bool:
    return bool(state["sysadmin"])


def has_perm(state: dict, perm: str) -> bool:
    """sysadmin holds every permission; the hierarchy's implications in permissions.IMPLIED."""
    return P.holds(state, perm, major(state))


def need_view_server_state(state: dict, dmv: str) -> None:
    """Msg 300 unless the login holds the permission ``dmv``'s own page names for this version."""
    P.check_dmv(state, dmv, major(state))


def xtp_limit_bytes(state: dict) -> tuple[int, str]:
    """(bytes, what limits them): the edition's per-database quota, or the default pool's share of memory."""
    committed_gb = state["memory_gb"] * 0.9
    pct = 0.70 if committed_gb <= 8 else 0.75 if committed_gb <= 16 else 0.80 if committed_gb <= 32 \
        else 0.85 if committed_gb <= 96 else 0.90
    pool = int(committed_gb * pct * 2**30)
    if azure(state) == "mi":  # Business Critical: 0.8-1.65 GB a vCore on standard-series (MI resource limits page);
        cap = int(0.8 * state["cpus"] * 2**30)  # the simulator takes the lowest figure (an assumption)
        if cap < pool:
            return cap, "quota"
    quota = XTP_QUOTA_MB.get(state["edition"])
    if quota is not None and quota * 2**20 < pool:
        return quota * 2**20, "quota"
    return pool, "pool"


def xtp_row_bytes(t: dict) -> int:
    """A memory-optimized row's size from its columns: a 24-byte header, 8 bytes a pointer for its one index, and
    each column's fixed size (estimate-memory-requirements-for-memory-optimized-tables)."""
    size = 24 + 8
    for name, col in t.get("columns", {}).items():
        if name.startswith("__"):
            continue
        typ = col["type"]
        m = re.match(r"(\w+)(?:\((\d+)\))?", typ)
        base, n = m.group(1), int(m.group(2) or 1)
        size += {"bigint": 8, "int": 4, "smallint": 2, "tinyint": 1, "bit": 1, "datetime2": 8, "datetime": 8,
                 "float": 8, "char": n, "varchar": n, "nchar": 2 * n, "nvarchar": 2 * n}.get(base, 8)
    return size


# -- the form statements are matched in -----------------------------------------------------------
def _norm(sql: str) -> str:
    """Comments out, whitespace collapsed: the form statements are matched in."""
    sql = re.sub(r"--[^\n]*", "", sql)
    return re.sub(r"\s+", " ", sql).strip()


# -- answers ---------------------------------------------------------------------------------------
Result = tuple[list[str], list[tuple]]  # (columns, rows)


class Session:
    """One connection's session: its spid, current database and what it holds."""

    def __init__(self, spid: int, database: str):
        self.spid, self.database = spid, database
        self.trancount = 0
        self.dead = False
        self.lock_timeout_ms: int | None = None  # SET LOCK_TIMEOUT; None: wait without bound (the default, -1)
        self.temp: dict[str, dict] = {}  # the session's #temporary tables (columns, rows)


def _bump(stats: dict, kind: str, name: str, *values: float) -> None:
    row = stats[kind].setdefault(name, [0] * len(values))
    for i, v in enumerate(values):
        if kind in ("wait", "latch") and i == 2:  # max_wait_time_ms: a maximum, not a sum
            row[i] = max(row[i], v)
        else:
            row[i] += v


PHENOMENA = "phenomena"  # the switch's name in the state (create(..., phenomena=...)); docs/sqlserver-simulator.md


def phenomena_on(state: dict) -> bool:
    """The named switch behind every chapter's phenomenon (latch waits queued or spun, log-cache spinlock
    collisions, ghosts and versions kept by an open snapshot transaction, last-page PAGELATCH waits): on by
    default so a chapter's tables and verdicts have rows; off, the workloads change only the rows and tables
    they write and no contention statistic moves (the catalogue and mutation tests run with it off)."""
    return bool(state.get(PHENOMENA, True))


def _work(state: dict, session: Session, what: str, units: int = 1) -> None:
    """The statistics a unit of workload leaves, by what the articles and the docs say it waits on.

    Simulated, not measured: they exist so every table and verdict of a chapter has rows to read.  Behind the
    switch :data:`PHENOMENA` (:func:`phenomena_on`).
    """
    if not phenomena_on(state):
        return
    st = state["stats"]
    for w in BENIGN_BACKGROUND:
        _bump(st, "wait", w, 1, 500, 500, 5)
    if what == "parallel_insert":
        if 3933 in state["trace_flags"]:  # unfair latch: spins instead of waits (seed 000)
            _bump(st, "spinlock", "LATCH_SPIN_STATS", 3000 * units, 2_000_000 * units, 0, 1)
            _bump(st, "latch", "NESTING_TRANSACTION_FULL", 1 * units, 1 * units, 1)
            _bump(st, "wait", "CXPACKET", 3000 * units, 200 * units, 2, 30)
        else:
            _bump(st, "latch", "NESTING_TRANSACTION_FULL", 2700 * units, 220 * units, 22)
            _bump(st, "wait", "LATCH_EX", 2700 * units, 219 * units, 21, 26)
            _bump(st, "wait", "CXPACKET", 700 * units, 49 * units, 96, 6)
            _bump(st, "spinlock", "X_PACKET_LIST", 33 * units, 566 * units, 0, 0)
    elif what == "singleton_insert":
        _bump(st, "spinlock", "LOGCACHE_ACCESS", 50 * units, 5000 * units, 0, 1)
        _bump(st, "spinlock", "XDESMGR", 10 * units, 900 * units, 0, 0)
        _bump(st, "wait", "WRITELOG", 1 * units, 1 * units, 1, 0)
    elif what == "page_insert":
        _bump(st, "wait", "PAGELATCH_EX", 5 * units, 10 * units, 3, 1)
        _bump(st, "latch", "BUFFER", 1 * units, 1 * units, 1)
    elif what == "ghost_update":
        _bump(st, "wait", "LCK_M_X", 0, 0, 0, 0)
        _bump(st, "wait", "SOS_SCHEDULER_YIELD", 1 * units, 1 * units, 1, 1)
    elif what == "queue_push":
        _bump(st, "spinlock", "CMED_HASH_SET", 5 * units, 300 * units, 0, 0)
        _bump(st, "wait", "PAGELATCH_EX", 1 * units, 1 * units, 1, 0)
        _bump(st, "latch", "METADATA_SEQUENCE_GENERATOR", 1 * units, 1 * units, 1)
    sess = state["sessions"].setdefault(str(session.spid), {"database": session.database, "pid": os.getpid()})
    waits = sess.setdefault("waits", {})
    name = {"parallel_insert": "CXPACKET", "singleton_insert": "WRITELOG", "page_insert": "PAGELATCH_EX",
            "ghost_update": "SOS_SCHEDULER_YIELD", "queue_push": "PAGELATCH_EX"}.get(what, "SOS_SCHEDULER_YIELD")
    row = waits.setdefault(name, [0, 0, 0, 0])
    row[0] += units
    row[1] += 2 * units
    row[2] = max(row[2], 2)
    row[3] += units
    sess["last_wait"] = name
    xe_record(state, session.spid, name, 2.0, 1.0)


def _stats_result(state: dict, kind: str) -> Result:
    """sys.dm_os_wait_stats / latch_stats / spinlock_stats with the harness's column aliases."""
    need_view_server_state(state, {"wait": "sys.dm_os_wait_stats", "latch": "sys.dm_os_latch_stats",
                                   "spinlock": "sys.dm_os_spinlock_stats"}[kind])
    st = state["stats"][kind]
    if kind == "wait":
        return (["name", "waits", "wait_time_ms", "max_wait_time_ms", "signal_wait_time_ms"],
                [(n, v[0], v[1], v[2], v[3]) for n, v in sorted(st.items())])
    if kind == "latch":
        return (["name", "waits", "wait_time_ms", "max_wait_time_ms"],
                [(n, v[0], v[1], v[2]) for n, v in sorted(st.items())])
    return (["name", "collisions", "spins", "spins_per_collision", "sleep_time", "backoffs"],
            [(n, v[0], v[1], (v[1] / v[0]) if v[0] else 0.0, v[2], v[3]) for n, v in sorted(st.items())])


def _db_of(state: dict, name: str) -> dict:
    db = state["databases"].get(name)
    if db is None:
        raise sql_error(911, f"Database '{name}' does not exist. Make sure that the name is entered correctly.",
                        "08004")
    return db


def _cpu_ranges(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        m = re.match(r"^(\d+)(?:\s+TO\s+(\d+))?$", part, re.I)
        if not m:
            raise sql_error(102, f"Incorrect syntax near '{part}'.")
        a, b = int(m.group(1)), int(m.group(2) or m.group(1))
        out.extend(range(a, b + 1))
    return sorted(set(out))


def _mask_config(state: dict) -> list[tuple]:
    """'affinity mask' (CPUs 0-31, a signed int) and 'affinity64 mask' (CPUs 32-63); 0 = AUTO."""
    mask = 0
    for c in state["affinity"] or []:
        mask |= 1 << c
    low, high = mask & 0xFFFFFFFF, (mask >> 32) & 0xFFFFFFFF
    signed = lambda v: v - 2**32 if v >= 2**31 else v  # noqa: E731 - sp_configure shows the int's value
    return [("affinity mask", signed(low)), ("affinity64 mask", signed(high))]


def _schedulers(state: dict) -> list[tuple]:
    """(scheduler_id, cpu_id, parent_node_id, is_online, status) incl. the DAC and a hidden scheduler."""
    online = set(online_cpus(state))
    rows = [(c, c, 0, int(c in online), "VISIBLE ONLINE" if c in online else "VISIBLE OFFLINE")
            for c in range(state["cpus"])]
    rows.append((1048576, 0, 0, 1, "HIDDEN ONLINE"))
    rows.append((1048578, 0, 64, 1, "VISIBLE ONLINE (DAC)"))
    return rows


def _ghost_counters(state: dict) -> Result:
    c = state.setdefault("counters", {"ghost": 0, "locks": 0, "version_kb": 0})
    name = "SQLServer"
    return (["object_name", "counter_name", "instance_name", "cntr_value", "cntr_type"],
            [(f"{name}:Access Methods", "Skipped Ghosted Records/sec", "", c["ghost"], 272696576),
             (f"{name}:Locks", "Lock Requests/sec", "_Total", c["locks"], 272696576),
             (f"{name}:Transactions", "Version Store Size (KB)", "", c["version_kb"], 65792)])


PERF_COUNTERS = {  # counter -> (type, instance names); types from sys.dm_os_performance_counters' page
    "CPU usage %": (537003264, ["default"]), "CPU usage % base": (1073939712, ["default"]),
    "Latch Waits/sec": (272696576, [""]), "Average Latch Wait Time (ms)": (1073874176, [""]),
    "Average Latch Wait Time Base": (1073939712, [""]),
    "Log Bytes Flushed/sec": (272696576, ["_Total", "*db"]), "Log Flushes/sec": (272696576, ["_Total", "*db"]),
    "Log Flush Waits/sec": (272696576, ["_Total", "*db"]), "Log Flush Wait Time": (65792, ["_Total", "*db"]),
    "Transactions/sec": (272696576, ["_Total", "*db"]), "Extents Allocated/sec": (272696576, [""]),
}
PERF_OBJECTS = {"CPU usage %": "Resource Pool Stats", "CPU usage % base": "Resource Pool Stats",
                "Latch Waits/sec": "Latches", "Average Latch Wait Time (ms)": "Latches",
                "Average Latch Wait Time Base": "Latches", "Extents Allocated/sec": "Access Methods"}


def _perf_counters(state: dict, params: tuple) -> Result:
    """sys.dm_os_performance_counters for the harness's (object suffix, name, base name) triples."""
    need_view_server_state(state, "sys.dm_os_performance_counters")
    c = state.setdefault("perf", {})
    rows = []
    known, objects = PERF_COUNTERS, PERF_OBJECTS
    for i in range(0, len(params), 3):
        obj, name, base = params[i][2:], params[i + 1], params[i + 2]
        for counter in (name, base):
            for cname, (ctype, instances) in known.items():
                if cname.lower() != counter.lower() or objects.get(cname, "Databases") != obj:
                    continue
                for inst in instances:
                    insts = [d for d in state["databases"] if not state["databases"][d]["system"]] \
                        if inst == "*db" else [inst]
                    for ii in insts:
                        key = f"{obj}|{cname}|{ii}"
                        c[key] = c.get(key, 0) + 1000
                        rows.append((f"SQLServer:{obj}", cname, ii, c[key], ctype))
    return ["object_name", "counter_name", "instance_name", "cntr_value", "cntr_type"], rows


def _index_stats(state: dict, db: dict, t: dict) -> list[tuple]:
    """(index_level, page_count, avg_page_space_used_in_percent, avg_record_size_in_bytes, record_count,
    ghost_record_count, version_record_count, version_ghost_record_count) per level of a table's index, leaf first.

    The phenomena model (RESEARCH.md, seed 002): a one-row table takes one page of 11-byte records; under
    READ_COMMITTED_SNAPSHOT (with the switch on) each record carries its 14-byte version tag, an update leaves a ghost
    until cleanup, and the versions an open snapshot transaction keeps (``held``) fill the leaf.  A table with more
    rows takes as many 8,096-byte pages as its records need (an estimate; no fill factor, no fragmentation)."""
    rows = t.get("rows", 0)
    versioned = db["rcsi"] and phenomena_on(state)
    held = t.get("held", 0)
    if rows > 1:
        size = 25.0 if versioned else 11.0
        pages = max(1, -(-int(rows * (size + 2)) // 8096))
        leaf = (0, pages, round(100.0 * rows * (size + 2) / (pages * 8096), 4), size, rows, 0, 0, 0)
        return [leaf] if pages == 1 else [leaf, (1, 1, round(100.0 * pages * 13 / 8096, 4), 11.0, pages, 0, 0, 0)]
    if not versioned:
        return [(0, 1, 0.1359, 11.0, rows, 0, 0, 0)]
    if held:
        pages = max(2, held // 150)
        return [(0, pages, 50.0, 25.0, rows, 0, held, held), (1, 1, 66.0, 11.0, pages, 0, 0, 0)]
    return [(0, 2, 0.3089, 25.0, rows, 1, 1, 0), (1, 1, 0.2965, 11.0, 2, 0, 0, 0)]


def check_xtp(state: dict, db: dict, add_bytes: int, transient: int = 0) -> None:
    limit, why = xtp_limit_bytes(state)
    if db["xtp_bytes"] + add_bytes + transient > limit:
        if why == "quota":
            raise sql_error(41823, "Could not perform the operation because the database has reached its quota "
                                   "for in-memory tables. This error may be transient. Please retry the transaction.",
                            "42000", 16)
        raise sql_error(41805, "There is insufficient memory in the resource pool 'default' to run this operation "
                               "on memory-optimized tables.", "42000", 16)
    db["xtp_bytes"] += add_bytes


def _waiting_tasks(state: dict, like: str | None, current_db: str | None) -> list[tuple]:
    """Sessions that did work recently, waiting on what they last waited on (an in-flight snapshot).

    PAGELATCH rows carry <db>:<file>:<page>; SQL Server 2022 appends the latch in parentheses.
    """
    out = []
    for spid, s in state["sessions"].items():
        if not s.get("last_wait"):
            continue
        db = state["databases"].get(s["database"])
        if db is None:
            continue
        if s["last_wait"].startswith("PAGELATCH"):
            page = db.get("last_page", 1000)
            desc = f"{db['id']}:1:{page}"
            if major(state) >= 16:
                desc += f" (LATCH 0x000002A1B3C4D5E8: Class: BUFFER KP: 0 SH: 0 UP: 0 EX: 1 DT: 0 Sublatch: 0 " \
                        f"HasWaiters: 1 Task: 0x000002A1B3C4D000 AnyReleasor: 0)"
        else:
            desc = ""
        if like is not None and not desc.startswith(like.rstrip("%")):
            continue
        out.append((int(spid), s["last_wait"], 3, desc, None, s["database"]))
    return out


# -- the dispatcher --------------------------------------------------------------------------------
def _current(state: dict, s: Session) -> dict:
    return _db_of(state, s.database)


def _alter_database(state: dict, s: Session, name: str, rest: str) -> list[Result]:
    db = _db_of(state, name)
    P.check(state, "ALTER DATABASE", major(state), db, database=name)
    az = azure(state)
    m = re.match(r"^SET RECOVERY (SIMPLE|FULL|BULK_LOGGED)$", rest, re.I)
    if m:
        if az:  # T-SQL differences pages: the recovery model cannot be changed on SQL Database or MI
            raise sql_error(5008, "This ALTER DATABASE statement is not supported. Correct the syntax and execute "
                                  "the statement again.", "42000", 16)
        db["recovery"] = m.group(1).upper()
        return []
    m = re.match(r"^SET DELAYED_DURABILITY = (DISABLED|ALLOWED|FORCED)$", rest, re.I)
    if m:
        db["delayed_durability"] = m.group(1).upper()
        return []
    m = re.match(r"^SET ALLOW_SNAPSHOT_ISOLATION (ON|OFF)$", rest, re.I)
    if m:
        db["snapshot"] = m.group(1).upper()
        return []
    m = re.match(r"^SET READ_COMMITTED_SNAPSHOT (ON|OFF)( WITH ROLLBACK IMMEDIATE)?$", rest, re.I)
    if m:
        exclusive_access(state, s, name, bool(m.group(2)), "READ_COMMITTED_SNAPSHOT")
        db["rcsi"] = m.group(1).upper() == "ON"
        return []
    m = re.match(r"^SET ACCELERATED_DATABASE_RECOVERY = (ON|OFF)( WITH ROLLBACK IMMEDIATE)?$", rest, re.I)
    if m:
        if major(state) < 15 and not az:
            raise sql_error(102, "Incorrect syntax near 'ACCELERATED_DATABASE_RECOVERY'.")
        if az and m.group(1).upper() == "OFF":
            # ADR is always on in SQL Database and Managed Instance and cannot be turned off (ADR management
            # page, https://learn.microsoft.com/sql/relational-databases/accelerated-database-recovery-management);
            # the error number is this simulator's choice (docs/sqlserver-simulator.md)
            raise sql_error(5008, "This ALTER DATABASE statement is not supported. Correct the syntax and execute "
                                  "the statement again.")
        exclusive_access(state, s, name, bool(m.group(2)), "ACCELERATED_DATABASE_RECOVERY")
        db["adr"] = m.group(1).upper() == "ON"
        return []
    m = re.match(r"^MODIFY FILE \(NAME = N'([^']+)', SIZE = (\d+)MB\)$", rest, re.I)
    if m:
        for f in db["files"]:
            if f["name"] == m.group(1):
                f["size_mb"] = int(m.group(2))
                return []
        raise sql_error(5041, f"MODIFY FILE failed. File '{m.group(1)}' does not exist.")
    m = re.match(r"^ADD FILEGROUP \[(\w+)\]( CONTAINS MEMORY_OPTIMIZED_DATA)?$", rest, re.I)
    if m:
        if az == "sqldb":  # SQL Database: no filegroups (T-SQL differences page); the number is this simulator's
            raise sql_error(5008, "This ALTER DATABASE statement is not supported. Correct the syntax and execute "
                                  "the statement again.")
        if m.group(1) not in db["filegroups"]:
            db["filegroups"].append(m.group(1))
            if m.group(2):
                db.setdefault("mo_filegroups", []).append(m.group(1))
        return []
    m = re.match(r"^ADD FILE \(NAME = N'([^']+)', FILENAME = N'([^']+)'(?:, SIZE = (\d+)MB)?(?:, FILEGROWTH = \d+MB)?\)"
                 r"(?: TO FILEGROUP \[(\w+)\])?$", rest, re.I)
    if m:
        if az == "sqldb":
            raise sql_error(40544 if False else 5008, "This ALTER DATABASE statement is not supported. Correct the "
                                                      "syntax and execute the statement again.")
        if az == "mi":  # MI places files itself; a FILENAME is refused (T-SQL differences page)
            raise sql_error(41903, MI_FILENAME)
        if m.group(4) and m.group(4) != "PRIMARY" and m.group(4) not in db["filegroups"]:
            raise sql_error(5035, f"Filegroup '{m.group(4)}' does not exist.")  # error number: a placeholder
        container = m.group(4) in db.get("mo_filegroups", [])  # a memory-optimized filegroup's container
        db["files"].append({"file_id": len(db["files"]) + 1, "type_desc": "FILESTREAM" if container else "ROWS",
                            "name": m.group(1), "physical_name": m.group(2), "size_mb": int(m.group(3) or 0),
                            "filegroup": m.group(4) or "PRIMARY"})
        return []
    raise UnknownStatement(f"ALTER DATABASE [{name}] {rest}")


def exclusive_access(state: dict, s: "Session", name: str, rollback_immediate: bool, option: str) -> None:
    """An option that needs the database to itself: other sessions in it are killed, or the statement waits.

    READ_COMMITTED_SNAPSHOT: "only the connection executing the ALTER DATABASE command is allowed in the
    database. There must be no other open connection in the database until ALTER DATABASE is complete"
    (ALTER DATABASE SET options,
    https://learn.microsoft.com/sql/t-sql/statements/alter-database-transact-sql-set-options).
    ACCELERATED_DATABASE_RECOVERY: "requires an exclusive database lock ... blocked until all active sessions
    are gone"; WITH ROLLBACK IMMEDIATE aborts them (https://learn.microsoft.com/sql/relational-databases/
    accelerated-database-recovery-management).  Killed sessions lose their connection and every lock they hold
    (application locks included); without the termination clause the statement waits, and with a LOCK_TIMEOUT
    fails with Msg 1222 when it runs out (SET LOCK_TIMEOUT page).  That a killed session sees a broken
    connection (08S01) is this simulator's assumption (docs/sqlserver-simulator.md).
    """
    others = [spid for spid, sess in state["sessions"].items()
              if sess.get("database") == name and int(spid) != s.spid and sess.get("pid") and _alive(sess["pid"])]
    if not others:
        return
    if not rollback_immediate:
        if s.lock_timeout_ms is None:
            raise SimError("HYT00", f"simulator: ALTER DATABASE SET {option} would wait without bound for "
                                    f"session(s) {sorted(others)} to leave database {name}")
        if option == "READ_COMMITTED_SNAPSHOT":  # issue 33, defect 5: Msg 5061 (database-engine-events-and-errors)
            raise sql_error(5061, f"ALTER DATABASE failed because a lock could not be placed on database '{name}'. "
                                  "Try again later.", "42000", 16)
        raise sql_error(1222, "Lock request time out period exceeded.", "HY000", 16)  # ADR: placeholder
    for spid in others:
        state["sessions"].pop(spid, None)
        state.setdefault("killed", []).append(int(spid))
        for key in [k for k, v in state["applocks"].items() if v["spid"] == int(spid)]:
            del state["applocks"][key]


def _trace(state: dict, on: bool, flags: list[int], cmd: str) -> list[Result]:
    if azure(state) == "sqldb":
        raise sql_error(40518, f"DBCC command '{cmd}' is not supported in this version of SQL Server.")
    P.check(state, "DBCC TRACEON", major(state), command=cmd)  # sysadmin only (DBCC TRACEON page)
    if azure(state) == "mi" and any(f not in MI_GLOBAL_TRACE_FLAGS for f in flags):
        raise sql_error(2571, f"User 'reader' does not have permission to run DBCC {cmd}.", "42000", 14)
    cur = set(state["trace_flags"])
    cur = cur | set(flags) if on else cur - set(flags)
    state["trace_flags"] = sorted(cur)
    return []


def execute(state: dict, s: Session, sql: str, params: tuple, delegated: bool = False) -> tuple[list[Result], list[str]]:
    """Answer one statement: (result sets, informational messages).  Unknown SQL raises.

    ``delegated``: a statement inside a batch the evaluator runs (ALTER DATABASE, DBCC) is answered by the handlers
    below only."""
    n = _norm(sql)
    msgs: list[str] = []
    U = n.upper()

    # -- session settings
    m = re.match(r"^SET LOCK_TIMEOUT (\d+)$", n)
    if m:
        s.lock_timeout_ms = int(m.group(1))
        return [], msgs
    if s.lock_timeout_ms is None:  # a statement that could wait for a lock without bound: tests read this list
        unbounded = state.setdefault("without_lock_timeout", [])
        if len(unbounded) < 20:
            unbounded.append(n[:120])
    if U in ("SET STATISTICS XML ON", "SET STATISTICS XML OFF", "SET STATISTICS IO ON", "SET STATISTICS IO OFF"):
        return [], msgs
    if n == "IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION":
        s.trancount = 0
        state["sessions"].get(str(s.spid), {})["snapshot_txn"] = False
        db = state["databases"].get(s.database)
        if db and "GhostTest" in db["tables"]:
            db["tables"]["GhostTest"]["held"] = 0
        return [], msgs

    # -- every batch is judged by the documented rules before it is answered (rules.py), and every system object
    # and column it names is resolved against the documented catalogue, with its permission (query.py)
    judge(state, s, n)
    Q.resolve(state, s, n, 16 if azure(state) else major(state), sql_error,
              lambda name: P.check_dmv(state, name, major(state), state["databases"].get(s.database), s.database))

    # -- server identity (targets.server_version, preflight)
    if n.startswith("SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)), "
                    "CAST(SERVERPROPERTY('ProductLevel') AS nvarchar(128)), "
                    "CAST(SERVERPROPERTY('ProductUpdateLevel') AS nvarchar(128)), "
                    "CAST(SERVERPROPERTY('Edition') AS nvarchar(128))"):
        v = VERSIONS[state["version"]]
        edition = "SQL Azure" if azure(state) else EDITIONS[state["edition"]][0]
        cols = ["ProductVersion", "ProductLevel", "ProductUpdateLevel", "Edition"]
        row = [v["ProductVersion"], v["ProductLevel"], v["ProductUpdateLevel"], edition]
        if "EngineEdition" in n:
            cols += ["EngineEdition", "IsXTPSupported", "is_sysadmin", "version"]
            row += [engine_edition(state), server_xtp(state), int(is_sysadmin(state)), version_text(state)]
        return [(cols, [tuple(row)])], msgs
    if n == ("SELECT cpu_count, hyperthread_ratio, socket_count, cores_per_socket, numa_node_count, "
             "physical_memory_kb FROM sys.dm_os_sys_info"):
        need_view_server_state(state, "sys.dm_os_sys_info")
        cores = state["cpus"] // state["threads_per_core"]
        return [(["cpu_count", "hyperthread_ratio", "socket_count", "cores_per_socket", "numa_node_count",
                  "physical_memory_kb"], [(state["cpus"], state["cpus"], 1, cores, 1, state["memory_gb"] * 2**20)])], msgs
    if n == "SELECT COUNT(*) FROM sys.dm_os_nodes WHERE node_state_desc NOT LIKE '%DAC%'":
        need_view_server_state(state, "sys.dm_os_nodes")
        return [([""], [(1,)])], msgs
    if n == "SELECT COUNT(*) FROM sys.dm_os_schedulers WHERE status = N'VISIBLE ONLINE'":
        need_view_server_state(state, "sys.dm_os_schedulers")
        return [([""], [(len(online_cpus(state)),)])], msgs

    # -- the harness's own database (targets.ensure_own_database)
    if n == "SELECT DB_ID(?)":
        db = state["databases"].get(params[0])
        return [([""], [(db["id"] if db else None,)])], msgs
    m = re.match(r"^SELECT CAST\(value AS nvarchar\(400\)\) FROM (\[(\w+)\]\.)?sys\.extended_properties "
                 r"WHERE class = 0 AND name = \?$", n)
    if m:
        if m.group(1) and azure(state) == "sqldb":  # no cross-database names in SQL Database
            raise sql_error(40515, f"Reference to database and/or server name in '{m.group(2)}.sys."
                                   "extended_properties' is not supported in this version of SQL Server.")
        db = _db_of(state, m.group(2) or s.database)
        v = db["props"].get(params[0])
        return [([""], [(v,)] if v is not None else [])], msgs
    m = re.match(r"^CREATE DATABASE \[(\w+)\]$", n)
    if m:
        P.check(state, "CREATE DATABASE", major(state))
        if m.group(1) in state["databases"]:
            raise sql_error(1801, f"Database '{m.group(1)}' already exists. Choose a different database name.")
        db = _db(state["next_db_id"])
        db["owner"] = P.login_name(state)  # the creator owns it (CREATE DATABASE page): every permission inside
        state["next_db_id"] += 1
        if azure(state) == "sqldb":  # SQL Database defaults: RCSI on, ADR on (always)
            db.update(rcsi=True, adr=True)
        if azure(state) == "mi" and state["xtp"]:  # Business Critical: every database gets the XTP filegroup
            db["filegroups"].append("FX")
            db["files"].append({"file_id": len(db["files"]) + 1, "type_desc": "FILESTREAM", "name": "XTP",
                                "physical_name": "", "size_mb": 0})
        state["databases"][m.group(1)] = db
        return [], msgs
    m = re.match(r"^EXEC (\[(\w+)\]\.)?sys\.sp_addextendedproperty @name = \?, @value = \?$", n)
    if m:
        if m.group(1) and azure(state) == "sqldb":
            raise sql_error(40515, f"Reference to database and/or server name in '{m.group(2)}.sys."
                                   "sp_addextendedproperty' is not supported in this version of SQL Server.")
        _db_of(state, m.group(2) or s.database)["props"][params[0]] = params[1]
        return [], msgs

    # -- the run lock (ownership.database_lock; sp_getapplock page: 0 granted, -1 timed out)
    if n == ("SET NOCOUNT ON; DECLARE @r int; EXEC @r = sp_getapplock @Resource = ?, @LockMode = 'Exclusive', "
             "@LockOwner = 'Session', @LockTimeout = 0; SELECT @r"):
        key = f"{s.database}|{params[0]}"  # an application lock belongs to the database it is taken in
        holder = state["applocks"].get(key)
        if holder and holder["spid"] != s.spid and _alive(holder["pid"]) and \
                str(holder["spid"]) in state["sessions"]:
            return [([""], [(-1,)])], msgs
        state["applocks"][key] = {"spid": s.spid, "pid": os.getpid(), "host": socket.gethostname(),
                                  "login_time": _dt.datetime.now().isoformat(timespec="seconds")}
        return [([""], [(0,)])], msgs
    # who holds it: sys.dm_tran_locks (resource_description of an APPLICATION lock is
    # <DbPrincipalId>:[<first 32 characters of the name>]:(<hash>)) joined to sys.dm_exec_sessions
    # (host_process_id: the client's pid sent at login; login_time); both need VIEW SERVER STATE
    # (2022: VIEW SERVER PERFORMANCE STATE) to show another session: dm_tran_locks raises Msg 300 without it
    if n == ("SELECT TOP (1) s.host_process_id, s.host_name, CONVERT(varchar(19), s.login_time, 126) "
             "FROM sys.dm_tran_locks l JOIN sys.dm_exec_sessions s ON s.session_id = l.request_session_id "
             "WHERE l.resource_type = 'APPLICATION' AND l.request_status = 'GRANT' "
             "AND l.resource_database_id = DB_ID() AND l.resource_description LIKE ?"):
        need_view_server_state(state, "sys.dm_tran_locks")
        name = re.fullmatch(r"%\[\[\](.+)\]%", params[0])
        prefix = re.sub(r"\[(.)\]", r"\1", name.group(1)) if name else None  # LIKE's [x] is a literal x
        holder = next((v for k, v in state["applocks"].items()
                       if prefix and k.split("|", 1)[0] == s.database and k.split("|", 1)[1][:32] == prefix), None)
        if not holder or not _alive(holder["pid"]):
            return [(["host_process_id", "host_name", "login_time"], [])], msgs
        return [(["host_process_id", "host_name", "login_time"],
                 [(holder["pid"], holder.get("host", ""), holder.get("login_time", ""))])], msgs

    # -- guarded changes
    m = re.match(r"^ALTER DATABASE \[(\w+)\] (.+)$", n, re.S)
    if m:
        return _alter_database(state, s, m.group(1), m.group(2)), msgs
    m = re.match(r"^DBCC (TRACEON|TRACEOFF)\(([\d, ]+), -1\)$", n)
    if m:
        return _trace(state, m.group(1) == "TRACEON", [int(x) for x in m.group(2).split(",")], m.group(1)), msgs
    if re.match(r"^DBCC SQLPERF ?\(LOGSPACE\) WITH NO_INFOMSGS;?$", n, re.I):
        need_view_server_state(state, "DBCC SQLPERF(LOGSPACE)")  # DBCC SQLPERF page: VIEW SERVER STATE
        return [(["Database Name", "Log Size (MB)", "Log Space Used (%)", "Status"],
                 [(name, float(next(f["size_mb"] for f in d["files"] if f["type_desc"] == "LOG")), 3.5, 0)
                  for name, d in state["databases"].items()])], msgs
    m = re.match(r"^DROP PARTITION (SCHEME|FUNCTION) (\w+)$", n)
    if m:
        names = _current(state, s).setdefault(f"partition_{m.group(1).lower()}s", [])
        if m.group(2) not in names:
            raise sql_error(3701, f"Cannot drop the partition {m.group(1).lower()} '{m.group(2)}', because it does "
                                  "not exist or you do not have permission.")
        names.remove(m.group(2))
        return [], msgs
    m = re.match(r"^DBCC TRACESTATUS\((?:(\d+), )?-1\) WITH NO_INFOMSGS$", n)
    if m:
        if azure(state) == "sqldb":
            raise sql_error(40518, "DBCC command 'TRACESTATUS' is not supported in this version of SQL Server.")
        flags = [int(m.group(1))] if m.group(1) else state["trace_flags"]
        rows = [(f, int(f in state["trace_flags"]), int(f in state["trace_flags"]), 0) for f in flags]
        if not m.group(1):
            rows = [r for r in rows if r[1]]
        return [(["TraceFlag", "Status", "Global", "Session"], rows)], msgs
    m = re.match(r"^ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = (.+)$", n)
    if m:
        if azure(state):
            raise sql_error(40517 if azure(state) == "sqldb" else 5008,
                            "Keyword or statement option 'SERVER CONFIGURATION' is not supported in this version "
                            "of SQL Server.")
        P.check(state, "ALTER SERVER CONFIGURATION", major(state))
        if m.group(1).upper() == "AUTO":
            state["affinity"] = None
        else:
            cpus = _cpu_ranges(m.group(1))
            if any(c >= state["cpus"] for c in cpus):
                raise sql_error(5832, "The affinity mask specified does not match the CPU mask on this system.")
            state["affinity"] = cpus
        return [], msgs
    m = re.match(r"^DBCC SQLPERF\('(sys\.dm_os_\w+_stats)', CLEAR\)$", n)
    if m:
        P.check(state, "DBCC SQLPERF CLEAR", major(state))
        state["stats"][{"sys.dm_os_wait_stats": "wait", "sys.dm_os_latch_stats": "latch",
                        "sys.dm_os_spinlock_stats": "spinlock"}[m.group(1)]] = {}
        return [], msgs

    # -- statistics (harness.sqlserver_dmv)
    for kind, text in (("wait", "SELECT wait_type AS name, waiting_tasks_count AS waits, wait_time_ms, "
                                "max_wait_time_ms, signal_wait_time_ms FROM sys.dm_os_wait_stats"),
                       ("latch", "SELECT latch_class AS name, waiting_requests_count AS waits, wait_time_ms, "
                                 "max_wait_time_ms FROM sys.dm_os_latch_stats"),
                       ("spinlock", "SELECT name, collisions, spins, spins_per_collision, sleep_time, backoffs "
                                    "FROM sys.dm_os_spinlock_stats")):
        if n == text:
            return [_stats_result(state, kind)], msgs
    if n.startswith("SELECT RTRIM(object_name) AS object_name, RTRIM(counter_name) AS counter_name, "
                    "RTRIM(instance_name) AS instance_name, cntr_value, cntr_type FROM sys.dm_os_performance_counters"):
        return [_perf_counters(state, params)], msgs

    # -- per-chapter statements the Python code builds
    m = re.match(r"^SELECT (recovery_model_desc(?:, delayed_durability_desc, is_read_committed_snapshot_on, "
                 r"snapshot_isolation_state_desc(?:, is_accelerated_database_recovery_on)?)?|delayed_durability_desc)"
                 r" FROM sys\.databases WHERE name = \?$", n)
    if m:
        db = state["databases"].get(params[0])
        if db is None:
            return [(["x"], [])], msgs
        if "is_accelerated_database_recovery_on" in n and major(state) < 15 and not azure(state):
            raise sql_error(207, "Invalid column name 'is_accelerated_database_recovery_on'.")
        full = {"recovery_model_desc": db["recovery"], "delayed_durability_desc": db["delayed_durability"],
                "is_read_committed_snapshot_on": int(db["rcsi"]), "snapshot_isolation_state_desc": db["snapshot"],
                "is_accelerated_database_recovery_on": int(db["adr"])}
        cols = [c.strip() for c in m.group(1).split(",")]
        return [(cols, [tuple(full[c] for c in cols)])], msgs
    m = re.match(r"^SELECT MAX\(ID\) / 2 FROM dbo\.(\w+)$", n)
    if m:
        rows = _current(state, s)["tables"].get(m.group(1), {}).get("rows", 0)
        return [([""], [(rows // 2 if rows else None,)])], msgs
    m = re.match(r"^CREATE PARTITION (FUNCTION|SCHEME) (\w+) ", n)
    if m:  # recorded, so sys.partition_functions / sys.partition_schemes list them
        _current(state, s).setdefault(f"partition_{m.group(1).lower()}s", []).append(m.group(2))
        return [], msgs
    m = re.match(r"^CREATE UNIQUE CLUSTERED INDEX (\w+) ON dbo\.(\w+) \(([\w, ]+)\) ON \w+ \(\w+\);?$", n)
    if m:
        found = V.find_table(_current(state, s), m.group(2))
        if found is None:
            raise sql_error(1088, f"Cannot find the object \"dbo.{m.group(2)}\" because it does not exist or you do "
                                  "not have permissions.")
        cols = found[1]["columns"]
        keys = [k.strip().lower() for k in m.group(3).split(",")]
        bad = [k for k in keys if k not in cols]
        if bad:
            raise sql_error(1911, f"Column name '{bad[0]}' does not exist in the target table or view.")
        cols.update(__keys__=keys, __key_name__=m.group(1))
        return [], msgs
    m = re.match(r"^SELECT ID, col1 FROM dbo\.lpi_hash WHERE ID = \?( AND HashID = CAST\(ABS\(\? % (\d+)\) AS "
                 r"tinyint\))?;$", n)
    if m:
        parts = 1 if m.group(1) else 8
        plan = (f'<ShowPlanXML xmlns="http://schemas.microsoft.com/sqlserver/2004/07/showplan"><BatchSequence><Batch>'
                f'<Statements><StmtSimple><QueryPlan><RelOp><RunTimeInformation><RunTimeCountersPerThread Thread="0" '
                f'ActualRows="1" ActualLogicalReads="{2 * parts}"/></RunTimeInformation><IndexScan>'
                f'<RunTimePartitionSummary><PartitionsAccessed PartitionCount="{parts}"/></RunTimePartitionSummary>'
                f'</IndexScan></RelOp></QueryPlan></StmtSimple></Statements></Batch></BatchSequence></ShowPlanXML>')
        msgs.append(f"Table 'lpi_hash'. Scan count {parts}, logical reads {2 * parts}, physical reads 0.")
        return [(["ID", "col1"], [(params[0], "x" * 32)]),
                (["Microsoft SQL Server 2005 XML Showplan"], [(plan,)])], msgs
    extra = harness_statement(state, s, n, params)
    if extra is not None:
        return extra, msgs

    if delegated:
        raise UnknownStatement(f"the simulator was never taught this statement: {n[:300]!r}")
    # -- every other batch is parsed and evaluated against the state (evaluate.py): its objects, columns, filters
    try:
        sets, written = E.run(state, s, sql, params)
    except T.SyntaxProblem:
        bad = Q.syntax_error(sql)
        if bad:  # what a server answers for a batch its grammar rejects
            raise sql_error(102, f"Incorrect syntax ({bad}).") from None
        sets = None
    except T.Unsupported:
        sets = None
    if sets is not None:
        batch_phenomena(state, s, written)
        _record_rules(state, s, n)
        return sets, msgs

    bad = Q.syntax_error(sql)
    if bad:  # what a server answers for a batch its grammar rejects
        raise sql_error(102, f"Incorrect syntax ({bad}).")
    raise UnknownStatement(f"the simulator was never taught this statement: {n[:300]!r}")


def _record_rules(state: dict, s: Session, n: str) -> None:
    """What the rules need to know later: memory-optimized tables and natively compiled procedures created."""
    db = state["databases"].get(s.database)
    if db is not None:
        mo, native = set(db.get("mo_tables", [])), set(db.get("native_procs", []))
        RULES.record(n, mo, native)
        db["mo_tables"], db["native_procs"] = sorted(mo), sorted(native)


def has_memory_optimized_filegroup(db: dict) -> bool:
    return "FX" in db.get("filegroups", []) or bool(db.get("mo_filegroups"))


def _procedure_work(db: dict, proc: str, seen: frozenset = frozenset()) -> str:
    """Which contention a procedure's calls cause, by what its body writes (the body is not run): a queue's pushes
    (rows at an IDENTITY key's end, a memory-optimized table, a SEQUENCE: "queue_push"), or single-row inserts that
    each commit (the log cache: "singleton_insert").  Procedures it calls count too."""
    p = db.get("procedures", {}).get(proc) or {}
    for table in p.get("writes", []):
        t = (V.find_table(db, table) or (None, {}))[1]
        cols = t.get("columns", {})
        keys = cols.get("__keys__") or []
        if t.get("memory_optimized") or (keys and cols.get(keys[0], {}).get("identity")):
            return "queue_push"
    if p.get("sequence") or p.get("native") or any(_procedure_work(db, c, seen | {proc}) == "queue_push"
                                                   for c in p.get("calls", []) if c not in seen):
        return "queue_push"
    return "singleton_insert" if p.get("writes") else "none"


def batch_phenomena(state: dict, s: Session, written: dict) -> None:
    """What a batch's writes cause, by what they wrote (the phenomena model, behind :func:`phenomena_on`):

    - rows added at the end of an IDENTITY-led clustered key all go to the last page (PAGELATCH_EX on it);
    - an UPDATE of a clustered key column moves the row (a delete and an insert): the old record stays as a ghost,
      kept with its version while another session's snapshot transaction needs it (SQL Server 2022 cleans per
      statement unless trace flag 7006, RESEARCH.md seed 002);
    - an UPDATE of a memory-optimized table makes a new version of every row it touches, held until the statement
      ends (the In-Memory OLTP memory estimate's page): the database's quota or the pool must take them.
    """
    db = state["databases"].get(s.database)
    for name, change in written.get("updated", {}).items():
        t = (db or {}).get("tables", {}).get(name)
        if t is None or not change["rows"]:
            continue
        n = change["rows"]
        if t.get("memory_optimized"):
            check_xtp(state, db, 0, transient=n * xtp_row_bytes(t))
        if not change["key"]:
            continue
        t["updates"] = t.get("updates", 0) + n
        holders = any(x.get("snapshot_txn") and x.get("database") == s.database for x in state["sessions"].values())
        if db["rcsi"] and holders and not (major(state) >= 16 and 7006 not in state["trace_flags"]):
            t["held"] = t.get("held", 0) + (n if phenomena_on(state) else 0)
        c = state.setdefault("counters", {"ghost": 0, "locks": 0, "version_kb": 0})
        c["ghost"] += n * (2 if db["rcsi"] and phenomena_on(state) else 0)
        c["locks"] += n * 3
        _work(state, s, "ghost_update", max(1, n // 100))
    for proc, values in written.get("executed", []):
        kind = _procedure_work(db, proc)
        count = values[0] if values and isinstance(values[0], int) else 1
        if kind != "none":
            _work(state, s, kind, max(1, count // 100))
    for name, n in written.get("parallel", {}).items():  # each worker logs into the parent transaction (seed 000)
        _work(state, s, "parallel_insert", 1 + n // 100_000)
    for name, n in written.get("inserted", {}).items():
        t = (db or {}).get("tables", {}).get(name)
        if t is None or not n:
            continue
        cols = t.get("columns", {})
        keys = cols.get("__keys__") or []
        if keys and cols.get(keys[0], {}).get("identity"):
            db["last_page"] = 1000 + t["rows"] // 200
            db["last_page_table"] = name
            _work(state, s, "page_insert", n)


def rule_context(state: dict, s: Session) -> RULES.Context:
    db = state["databases"].get(s.database) or {}
    return RULES.Context(major=16 if azure(state) else major(state), trancount=s.trancount,
                         mo_tables=set(db.get("mo_tables", [])), native_procs=set(db.get("native_procs", [])))


def judge(state: dict, s: Session, n: str) -> None:
    """The first documented rule the batch breaks, raised as the error its page gives (rules.RULES); DDL in a user
    database needs its owner (or CONTROL SERVER): permissions.STATEMENTS["DDL IN DATABASE"]."""
    db = state["databases"].get(s.database)
    # (temporary tables live in tempdb, where every login may create them: CREATE TABLE page)
    ddl = re.search(r"\b(CREATE|ALTER|DROP) (TABLE|PROC|PROCEDURE|SEQUENCE|PARTITION FUNCTION|PARTITION SCHEME|"
                    r"(?:UNIQUE )?(?:CLUSTERED |NONCLUSTERED )?INDEX)\b(?! (?:IF EXISTS )?#)", n, re.I)
    if ddl and db is not None and not db["system"]:
        P.check(state, "DDL IN DATABASE", major(state), db, what=f"CREATE {ddl.group(2).upper()}",
                database=s.database)
    found = RULES.violations(n, rule_context(state, s))
    if found:
        raise sql_error(found[0].rule.error, found[0].message)


def version_text(state: dict) -> str:
    """@@VERSION's first line (version-transact-sql-configuration-functions page)."""
    v = VERSIONS[state["version"]]
    if azure(state):
        return f"Microsoft SQL Azure (RTM) - {v['ProductVersion']}"
    return f"Microsoft SQL Server {v['year']} - {v['ProductVersion']} (X64)"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


# Statements of harness modules added later (preflight, waits): (regex, handler(state, session, match, params)).
HARNESS: list[tuple[re.Pattern, Callable]] = []


def harness_statement(state: dict, s: Session, n: str, params: tuple) -> list[Result] | None:
    for rx, fn in HARNESS:
        m = rx.match(n)
        if m:
            return fn(state, s, m, params)
    return None


# -- the preflight's and the affinity plan's statements --------------------------------------------
def _h(pattern: str):
    def deco(fn):
        HARNESS.append((re.compile("^" + pattern + "$"), fn))
        return fn
    return deco


@_h(re.escape("SELECT SUSER_SNAME()"))
def _suser(state, s, m, params):
    return [([""], [("sa" if is_sysadmin(state) else "reader",)])]


@_h(re.escape("SELECT HAS_PERMS_BY_NAME(NULL, NULL, ?)"))
def _has_perms(state, s, m, params):
    """HAS_PERMS_BY_NAME page: 1 held, 0 not held (NULL for a permission the version does not know)."""
    perm = params[0]
    if perm in ("VIEW SERVER PERFORMANCE STATE", "CREATE ANY EVENT SESSION", "DROP ANY EVENT SESSION") \
            and major(state) < 16 and not azure(state):  # permissions SQL Server 2022 introduced
        return [([""], [(None,)])]
    return [([""], [(int(has_perm(state, perm)),)])]


@_h(r"SELECT TOP \(0\) 1 FROM (sys\.dm_\w+)")
def _dmv_probe(state, s, m, params):
    """The preflight's probe of one DMV: no rows, or the DMV page's permission error (permissions.DMVS)."""
    if m.group(1) not in P.DMVS:
        raise UnknownStatement(f"no permission rule for {m.group(1)}")
    need_view_server_state(state, m.group(1))
    return [([""], [])]


@_h(re.escape("SELECT CAST(SERVERPROPERTY('IsXTPSupported') AS int)"))
def _server_xtp(state, s, m, params):
    return [([""], [(server_xtp(state),)])]


@_h(re.escape("SELECT CAST(DATABASEPROPERTYEX(DB_NAME(), 'IsXTPSupported') AS int)"))
def _database_xtp(state, s, m, params):
    """Per database: Managed Instance General Purpose 0, Business Critical 1 (MI T-SQL differences page)."""
    return [([""], [(int(bool(state["xtp"])),)])]


@_h(re.escape("SELECT CASE WHEN owner_sid = SUSER_SID() THEN 1 ELSE 0 END FROM sys.databases WHERE name = ?"))
def _owned(state, s, m, params):
    """sys.databases.owner_sid against SUSER_SID(): the simulator keeps the owner's login name instead of a SID."""
    db = state["databases"].get(params[0])
    if db is None:
        return [([""], [])]
    return [([""], [(int(db.get("owner") == P.login_name(state)),)])]


@_h(re.escape("SELECT HAS_PERMS_BY_NAME(?, 'DATABASE', 'CONTROL')"))
def _has_db_perms(state, s, m, params):
    """HAS_PERMS_BY_NAME on a database: NULL when it does not exist; its owner and sysadmin hold CONTROL."""
    db = state["databases"].get(params[0])
    if db is None:
        return [([""], [(None,)])]
    return [([""], [(int(P.holds(state, "OWNER", major(state), db) or P.holds(state, "CONTROL SERVER", major(state))),)])]


@_h(re.escape("SELECT host_platform FROM sys.dm_os_host_info"))
def _host(state, s, m, params):
    # sys.dm_os_host_info arrived in SQL Server 2017; its page does not list Managed Instance, so the simulator
    # treats it as absent there (an assumption: docs/sqlserver-simulator.md)
    if (major(state) < 14 and not azure(state)) or azure(state) == "mi":
        raise sql_error(208, "Invalid object name 'sys.dm_os_host_info'.")
    need_view_server_state(state, "sys.dm_os_host_info")  # public before 2022; 2022: VIEW SERVER PERFORMANCE STATE
    return [(["host_platform"], [(state["platform"],)])]


@_h(re.escape("SELECT cpu_count, socket_count, cores_per_socket, committed_target_kb, affinity_type_desc "
              "FROM sys.dm_os_sys_info"))
def _sys_info(state, s, m, params):
    need_view_server_state(state, "sys.dm_os_sys_info")
    cores = state["cpus"] // state["threads_per_core"]
    return [(["cpu_count", "socket_count", "cores_per_socket", "committed_target_kb", "affinity_type_desc"],
             [(state["cpus"], 1, cores, int(state["memory_gb"] * 0.9 * 2**20),
               "AUTO" if state["affinity"] is None else "MANUAL")])]


@_h(re.escape("SELECT name, CAST(value_in_use AS bigint) AS value_in_use FROM sys.configurations "
              "WHERE name IN (N'affinity mask', N'affinity64 mask')"))
def _affinity_config(state, s, m, params):
    return [(["name", "value_in_use"], _mask_config(state))]


# -- harness.sqlserver_waits ----------------------------------------------------------------------
@_h(re.escape("SELECT wt.session_id, wt.wait_type, wt.wait_duration_ms, wt.blocking_session_id, "
              "wt.resource_description FROM sys.dm_os_waiting_tasks AS wt JOIN sys.dm_exec_sessions AS s "
              "ON s.session_id = wt.session_id WHERE s.database_id = DB_ID() AND wt.session_id <> @@SPID"))
def _in_flight(state, s, m, params):
    """sys.dm_os_waiting_tasks of the current database's other sessions (sys.dm_exec_sessions.database_id)."""
    need_view_server_state(state, "sys.dm_os_waiting_tasks")
    rows = [(r[0], r[1], r[2], r[4], r[3]) for r in _waiting_tasks(state, None, s.database)
            if r[5] == s.database and r[0] != s.spid]
    return [(["session_id", "wait_type", "wait_duration_ms", "blocking_session_id", "resource_description"], rows)]


@_h(re.escape("SELECT sw.session_id, sw.wait_type, sw.waiting_tasks_count, sw.wait_time_ms, sw.max_wait_time_ms, "
              "sw.signal_wait_time_ms FROM sys.dm_exec_session_wait_stats AS sw JOIN sys.dm_exec_sessions AS s "
              "ON s.session_id = sw.session_id WHERE s.database_id = DB_ID() AND sw.session_id <> @@SPID"))
def _session_waits(state, s, m, params):
    """sys.dm_exec_session_wait_stats (2016+): a session's counters, gone when the session ends.

    Without VIEW SERVER STATE (2022: VIEW SERVER PERFORMANCE STATE) a login sees only its own session
    (the DMV's page), so this query, which leaves its own session out, returns no rows: no error.
    """
    if not P.sees_other_sessions(state, "sys.dm_exec_session_wait_stats", major(state)):
        return [(["session_id", "wait_type", "waiting_tasks_count", "wait_time_ms", "max_wait_time_ms",
                  "signal_wait_time_ms"], [])]
    rows = []
    for spid, sess in state["sessions"].items():
        if sess.get("database") != s.database or int(spid) == s.spid:
            continue
        for wait, (n, ms, mx, sig) in sess.get("waits", {}).items():
            rows.append((int(spid), wait, n, ms, mx, sig))
    return [(["session_id", "wait_type", "waiting_tasks_count", "wait_time_ms", "max_wait_time_ms",
              "signal_wait_time_ms"], rows)]


# -- Extended Events: the wait sampler's event session (harness/sqlserver_xevents.py) --------------
# Sources (learn.microsoft.com):
#   CREATE EVENT SESSION  /sql/t-sql/statements/create-event-session-transact-sql  (ON SERVER; ADD EVENT with
#     ACTION and WHERE; ADD TARGET; WITH options; permission ALTER ANY EVENT SESSION, and from SQL Server 2022
#     also CREATE ANY EVENT SESSION)
#   ALTER EVENT SESSION   /sql/t-sql/statements/alter-event-session-transact-sql  (STATE = START | STOP)
#   DROP EVENT SESSION    /sql/t-sql/statements/drop-event-session-transact-sql
#   sys.server_event_sessions  /sql/relational-databases/system-catalog-views/sys-server-event-sessions-transact-sql
#   sys.dm_xe_sessions    /sql/relational-databases/system-dynamic-management-views/sys-dm-xe-sessions-transact-sql
#     (only started sessions appear in it)
#   sys.dm_xe_session_targets  /sql/relational-databases/system-dynamic-management-views/
#     sys-dm-xe-session-targets-transact-sql (target_data: the ring_buffer's XML)
#   ring_buffer target    /sql/relational-databases/extended-events/targets-for-extended-events-in-sql-server
#     (<RingBufferTarget eventsPerSec= processingTime= totalEventsProcessed= eventCount= droppedCount=
#     memoryUsed=> with <event name= timestamp=><data name=><value/><text/></data><action .../></event>)
# The ring keeps max_events_limit events (1,000 when the option is not set), fewer if max_memory runs out first
# (targets page); the simulator models the count only.  When full it drops the oldest: eventCount stays at the
# limit while totalEventsProcessed grows.  Whether such discards also count in droppedCount is not documented;
# the simulator leaves droppedCount at 0 (docs/sqlserver-simulator.md).
XE_RING_EVENTS = 1000


def _xe_permission(state: dict, statement: str) -> None:
    """Each event-session statement's own page (permissions.STATEMENTS): create, alter (start/stop), drop."""
    P.check(state, statement, major(state))


@_h(re.escape("SELECT COUNT(*) FROM sys.server_event_sessions WHERE name = ?"))
def _xe_exists(state, s, m, params):
    # sys.server_event_sessions' page: "Requires VIEW SERVER STATE"; a catalog view shows a login only the rows
    # its permissions reach (metadata visibility), so without it the session is not seen (no error)
    seen = P.sees_other_sessions(state, "sys.server_event_sessions", major(state))
    return [([""], [(int(seen and params[0] in state.setdefault("xe_sessions", {})),)])]


@_h(r"SELECT session_id FROM sys\.dm_exec_sessions WHERE database_id = DB_ID\(\) AND session_id <> @@SPID "
    r"AND is_user_process = 1")
def _user_sessions(state, s, m, params):
    if not P.sees_other_sessions(state, "sys.dm_exec_sessions", major(state)):  # own session only, left out here
        return [(["session_id"], [])]
    return [(["session_id"], [(int(k),) for k, v in state["sessions"].items()
                              if v.get("database") == s.database and int(k) != s.spid])]


@_h(r"CREATE EVENT SESSION \[(\w+)\] ON SERVER ADD EVENT sqlos\.wait_info \( ACTION \(sqlserver\.session_id\) "
    r"WHERE \(\[opcode\] = \(1\) AND \(((?:\[sqlserver\]\.\[session_id\] = \(\d+\)(?: OR )?)+)\)\)\) "
    r"ADD TARGET package0\.ring_buffer \(SET (?:max_events_limit = \((\d+)\), )?max_memory = \((\d+)\)\) "
    r"WITH \(MAX_DISPATCH_LATENCY = \d+ SECONDS, "
    r"EVENT_RETENTION_MODE = ALLOW_SINGLE_EVENT_LOSS, STARTUP_STATE = OFF\);?")
def _xe_create(state, s, m, params):
    _xe_permission(state, "CREATE EVENT SESSION")
    sessions = state.setdefault("xe_sessions", {})
    if m.group(1) in sessions:
        raise sql_error(25631, f"The event session, \"{m.group(1)}\", already exists.  Choose a unique name for "
                               "the event session.")
    ids = sorted(int(x) for x in re.findall(r"\[session_id\] = \((\d+)\)", m.group(2)))
    sessions[m.group(1)] = {"session_ids": ids, "started": False, "events": [], "processed": 0, "dropped": 0,
                            "limit": int(m.group(3)) if m.group(3) else XE_RING_EVENTS}
    return []


@_h(r"ALTER EVENT SESSION \[(\w+)\] ON SERVER STATE = (START|STOP);?")
def _xe_state(state, s, m, params):
    _xe_permission(state, "ALTER EVENT SESSION")
    sess = state.setdefault("xe_sessions", {}).get(m.group(1))
    if sess is None:
        raise sql_error(15151, f"Cannot alter the event session '{m.group(1)}', because it does not exist or you do "
                               "not have permission.")
    sess["started"] = m.group(2) == "START"
    if not sess["started"]:
        sess.update(events=[], processed=0, dropped=0)  # STOP frees the ring buffer's memory
    return []


@_h(r"IF EXISTS \(SELECT 1 FROM sys\.server_event_sessions WHERE name = N'(\w+)'\) DROP EVENT SESSION \[(\w+)\] "
    r"ON SERVER;?")
def _xe_drop(state, s, m, params):
    if not P.sees_other_sessions(state, "sys.server_event_sessions", major(state)):
        return []  # IF EXISTS sees no row without VIEW SERVER STATE: nothing is dropped
    if m.group(1) != m.group(2):
        raise UnknownStatement(f"IF EXISTS on {m.group(1)} but DROP of {m.group(2)}")
    if m.group(1) in state.setdefault("xe_sessions", {}):
        _xe_permission(state, "DROP EVENT SESSION")
        del state["xe_sessions"][m.group(1)]
    return []


@_h(r"SELECT CAST\(t\.target_data AS xml\) FROM sys\.dm_xe_session_targets AS t JOIN sys\.dm_xe_sessions AS s "
    r"ON s\.address = t\.event_session_address WHERE s\.name = N'(\w+)' AND t\.target_name = N'ring_buffer';?")
def _xe_ring(state, s, m, params):
    need_view_server_state(state, "sys.dm_xe_session_targets")
    sess = state.setdefault("xe_sessions", {}).get(m.group(1))
    if sess is None or not sess["started"]:
        return [([""], [])]  # sys.dm_xe_sessions lists started sessions only
    from xml.sax.saxutils import quoteattr

    events = "".join(
        f'<event name="wait_info" package="sqlos" timestamp={quoteattr(ts)}>'
        f'<data name="wait_type"><value>0</value><text>{wait}</text></data>'
        f'<data name="opcode"><value>1</value><text>End</text></data>'
        f'<data name="duration"><value>{ms}</value></data><data name="signal_duration"><value>{sig}</value></data>'
        f'<action name="session_id" package="sqlserver"><value>{spid}</value></action></event>'
        for ts, spid, wait, ms, sig in sess["events"])
    xml = (f'<RingBufferTarget truncated="0" processingTime="0" totalEventsProcessed="{sess["processed"]}" '
           f'eventCount="{len(sess["events"])}" droppedCount="{sess["dropped"]}" memoryUsed="0">{events}'
           f'</RingBufferTarget>')
    return [([""], [(xml,)])]


def xe_record(state: dict, spid: int, wait: str, ms: float, signal_ms: float) -> None:
    """A completed wait of ``spid``: into every started event session that watches it (oldest dropped when full)."""
    for sess in state.get("xe_sessions", {}).values():
        if sess["started"] and spid in sess["session_ids"]:
            sess["processed"] += 1
            sess["events"].append([time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), spid, wait, ms, signal_ms])
            if len(sess["events"]) > sess.get("limit", XE_RING_EVENTS):
                sess["events"].pop(0)


def documented_columns() -> dict[str, tuple[str, ...]]:
    """Every column of each system view, DMV and table-valued function in the catalogue (``catalogue.json``: the
    columns of its Microsoft Learn page that the project names, and for the statistics DMVs the whole view), in
    the page's order.  Every row ``views.py`` computes carries exactly these (tests/test_sqlserver_views.py)."""
    return {name: tuple(entry["columns"]) for name, entry in Q.catalogue()["objects"].items() if entry["columns"]}


# The evaluator and the views read this module's state helpers, so they are imported once it is complete.
from . import evaluate as E  # noqa: E402
from . import tsql as T  # noqa: E402
from . import views as V  # noqa: E402
