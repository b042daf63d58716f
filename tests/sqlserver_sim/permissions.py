"""Per-statement permissions: each statement the harness sends, checked against what its own page names.

A login is a set of grants (``state["grants"]``), or sysadmin (which holds every permission).  A rule names
the permissions any one of which allows the statement, from which version each exists, the error the
server returns without them, and the Microsoft Learn page the permission is read from.  A test can then give
a login exactly the documented grant and nothing more (:func:`server.create` ``login=[...]``).

Permissions that imply others (the permission hierarchy,
https://learn.microsoft.com/sql/relational-databases/security/permissions-hierarchy-database-engine, and
SQL Server 2022's split of VIEW SERVER STATE,
https://learn.microsoft.com/sql/relational-databases/security/permissions-database-engine): VIEW SERVER
STATE covers VIEW SERVER PERFORMANCE STATE; ALTER ANY EVENT SESSION covers the 2022 CREATE / DROP ANY EVENT
SESSION; the database's owner (the login that created it) holds every permission inside it.

Error numbers marked *placeholder* are not on the statement's page; docs/sqlserver-simulator.md
lists them for a reader's report to settle.
"""
from __future__ import annotations

from dataclasses import dataclass, field

LEARN = "https://learn.microsoft.com/sql/"
VSS, VSPS = "VIEW SERVER STATE", "VIEW SERVER PERFORMANCE STATE"
IMPLIED = {VSPS: (VSS,), "VIEW DATABASE STATE": (VSS, "CONTROL SERVER"),
           "VIEW DATABASE PERFORMANCE STATE": (VSS, VSPS, "VIEW DATABASE STATE", "CONTROL SERVER"),
           "CREATE ANY EVENT SESSION": ("ALTER ANY EVENT SESSION",),
           "DROP ANY EVENT SESSION": ("ALTER ANY EVENT SESSION",)}


@dataclass(frozen=True)
class Rule:
    """``any_of`` allows the statement; ``since`` gives the first major version a permission exists in."""

    statement: str
    any_of: tuple[str, ...]
    error: int
    message: str
    page: str
    since: dict = field(default_factory=dict)
    severity: int = 14
    placeholder: bool = False  # the error number is not on the page (see the module docstring)


_NO_PERM = "User does not have permission to perform this action."
STATEMENTS: dict[str, Rule] = {r.statement: r for r in (
    Rule("CREATE DATABASE", ("CREATE DATABASE", "CREATE ANY DATABASE", "ALTER ANY DATABASE"), 262,
         "CREATE DATABASE permission denied in database 'master'.",
         LEARN + "t-sql/statements/create-database-transact-sql#permissions"),
    Rule("ALTER DATABASE", ("ALTER ANY DATABASE", "OWNER"), 5011,
         "User does not have permission to alter database '{database}', the database does not exist, or the "
         "database is not in a state that allows access checks.",
         LEARN + "t-sql/statements/alter-database-transact-sql#permissions", placeholder=True),
    Rule("DDL IN DATABASE", ("OWNER", "CONTROL SERVER"), 262, "{what} permission denied in database '{database}'.",
         LEARN + "t-sql/statements/create-table-transact-sql#permissions"),
    Rule("DBCC TRACEON", ("SYSADMIN",), 2571, "User '{login}' does not have permission to run DBCC {command}.",
         LEARN + "t-sql/database-console-commands/dbcc-traceon-transact-sql#permissions"),
    Rule("ALTER SERVER CONFIGURATION", ("ALTER SETTINGS",), 15247, _NO_PERM,
         LEARN + "t-sql/statements/alter-server-configuration-transact-sql#permissions", severity=16,
         placeholder=True),
    Rule("DBCC SQLPERF CLEAR", ("ALTER SERVER STATE",), 297, "The user does not have permission to perform this "
         "action.", LEARN + "t-sql/database-console-commands/dbcc-sqlperf-transact-sql#permissions", severity=16,
         placeholder=True),
    # Extended Events: CREATE needs ALTER ANY EVENT SESSION, or from 2022 CREATE ANY EVENT SESSION; ALTER
    # (STATE = START / STOP) names ALTER ANY EVENT SESSION only; DROP needs ALTER ANY EVENT SESSION, or from
    # 2022 DROP ANY EVENT SESSION.  2022's ALTER ANY EVENT SESSION ENABLE / DISABLE are not on the ALTER page.
    Rule("CREATE EVENT SESSION", ("ALTER ANY EVENT SESSION", "CREATE ANY EVENT SESSION"), 15247, _NO_PERM,
         LEARN + "t-sql/statements/create-event-session-transact-sql#permissions",
         since={"CREATE ANY EVENT SESSION": 16}, severity=16, placeholder=True),
    Rule("ALTER EVENT SESSION", ("ALTER ANY EVENT SESSION",), 15247, _NO_PERM,
         LEARN + "t-sql/statements/alter-event-session-transact-sql#permissions", severity=16, placeholder=True),
    Rule("DROP EVENT SESSION", ("ALTER ANY EVENT SESSION", "DROP ANY EVENT SESSION"), 15247, _NO_PERM,
         LEARN + "t-sql/statements/drop-event-session-transact-sql#permissions",
         since={"DROP ANY EVENT SESSION": 16}, severity=16, placeholder=True),
)}

_DMV_PAGE = LEARN + "relational-databases/system-dynamic-management-views/{}-transact-sql#permissions"
VDS, VDPS = "VIEW DATABASE STATE", "VIEW DATABASE PERFORMANCE STATE"
PUBLIC = "PUBLIC"  # granted to public by default (sys.dm_os_host_info before 2022)
# DMV -> (permission before SQL Server 2022, from 2022), as the DMV's own page states it.  Issue 33, defect 4: the
# latch and spinlock pages (ms.date 02/27/2023) and sys.dm_os_host_info's have a "Permissions for SQL Server 2022
# and later" section naming VIEW SERVER PERFORMANCE STATE.  The catalogue (catalogue.json) holds the same data per
# object with its page; this table is what the statement handlers check.
DMVS: dict[str, tuple[str, str]] = {
    "sys.dm_os_wait_stats": (VSS, VSPS),
    "sys.dm_os_latch_stats": (VSS, VSPS),
    "sys.dm_os_spinlock_stats": (VSS, VSPS),
    "sys.dm_os_host_info": (PUBLIC, VSPS),
    "sys.dm_os_waiting_tasks": (VSS, VSPS),
    "sys.dm_os_performance_counters": (VSS, VSPS),
    "sys.dm_os_sys_info": (VSS, VSPS),
    "sys.dm_os_schedulers": (VSS, VSPS),
    "sys.dm_os_tasks": (VSS, VSPS),
    "sys.dm_os_nodes": (VSS, VSPS),
    "sys.dm_os_buffer_descriptors": (VSS, VSPS),
    "sys.dm_tran_locks": (VSS, VSPS),
    "sys.dm_tran_active_snapshot_database_transactions": (VSS, VSPS),
    "sys.dm_tran_session_transactions": (VSS, VSPS),
    "sys.dm_xe_session_targets": (VSS, VSPS),
    "sys.dm_xe_sessions": (VSS, VSPS),
    # sys.dm_db_page_info / sys.dm_db_index_physical_stats: a database permission (VIEW DATABASE STATE; 2022 VIEW
    # DATABASE PERFORMANCE STATE); the database's owner holds it, and VIEW SERVER STATE covers it (hierarchy page)
    "sys.dm_db_page_info": (VDS, VDPS),
    "sys.dm_db_index_physical_stats": (VDS, VDPS),
    "DBCC SQLPERF(LOGSPACE)": (VSS, VSPS),  # dbcc-sqlperf page: VIEW SERVER STATE, 2022 VIEW SERVER PERFORMANCE STATE
}
# Session-scoped DMVs show every session with the permission and only the caller's own without it
# (sys.dm_exec_sessions and sys.dm_exec_session_wait_stats pages): no error, fewer rows.
SESSION_SCOPED = {"sys.dm_exec_sessions": (VSS, VSPS), "sys.dm_exec_session_wait_stats": (VSS, VSPS),
                  "sys.dm_exec_requests": (VSS, VSPS),
                  # sys.server_event_sessions (catalog view) page, ms.date 03/14/2017: "Requires VIEW SERVER STATE
                  # permission on the server"; a catalog view hides the rows rather than raising (metadata visibility)
                  "sys.server_event_sessions": (VSS, VSS)}


def dmv_page(dmv: str) -> str:
    if dmv.startswith("DBCC"):
        return LEARN + "t-sql/database-console-commands/dbcc-sqlperf-transact-sql#permissions"
    return _DMV_PAGE.format(dmv.replace("sys.", "sys-").replace("_", "-"))


def holds(state: dict, perm: str, major: int, database: dict | None = None) -> bool:
    """Does the login hold ``perm`` (directly, by sysadmin, by a permission that covers it, or as owner)?"""
    if state["sysadmin"]:
        return True
    if perm == "SYSADMIN":
        return False
    if perm == "PUBLIC":
        return True
    if perm == "OWNER":
        return database is not None and database.get("owner") == login_name(state)
    if perm in ("VIEW DATABASE STATE", "VIEW DATABASE PERFORMANCE STATE") and database is not None \
            and database.get("owner") == login_name(state):
        return True
    if perm in state["grants"]:
        return True
    return any(p in state["grants"] for p in IMPLIED.get(perm, ()))


def login_name(state: dict) -> str:
    return "sa" if state["sysadmin"] else "reader"


def allowed(state: dict, statement: str, major: int, db: dict | None = None) -> bool:
    rule = STATEMENTS[statement]
    return any(major >= rule.since.get(p, 0) and holds(state, p, major, db) for p in rule.any_of)


def check(state: dict, statement: str, major: int, db: dict | None = None, **fmt) -> None:
    """Raise the documented error unless the login may run ``statement`` (``db``: the database it alters)."""
    from .server import sql_error

    if not allowed(state, statement, major, db):
        rule = STATEMENTS[statement]
        raise sql_error(rule.error, rule.message.format(login=login_name(state), **fmt), "42000", rule.severity)


def dmv_permission(dmv: str, major: int) -> str:
    before, since_2022 = DMVS.get(dmv) or SESSION_SCOPED[dmv]
    return since_2022 if major >= 16 else before


def check_dmv(state: dict, dmv: str, major: int, database: dict | None = None, db_name: str = "master") -> None:
    """Msg 300 without the DMV's permission (each DMV page's Permissions section); ``database``: the current one,
    for the database-scoped permissions its owner holds."""
    from .server import sql_error

    perm = dmv_permission(dmv, major)
    if not holds(state, perm, major, database):
        where = f"database '{db_name}'" if perm.startswith("VIEW DATABASE") else "object 'server', database 'master'"
        raise sql_error(300, f"{perm} permission was denied on {where}.", "42000", 14)


def sees_other_sessions(state: dict, dmv: str, major: int) -> bool:
    return holds(state, dmv_permission(dmv, major), major)
