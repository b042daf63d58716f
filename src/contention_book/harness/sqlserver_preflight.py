"""Before a SQL Server run changes or creates anything: can this instance and this login run it?

A reader's first run used to fail minutes in (a trace flag refused after three 67M-row inserts).
The preflight asks the server, in a few round trips, everything a chapter will need, and either
prints the plan (what runs, what changes and how it is restored, an estimate of the run time) or
refuses at once with the exact GRANT, parameter or setting to add:

- the connection and the driver (ODBC Driver 18 encrypts by default and must trust the server's
  certificate; FreeTDS needs TDS_Version 7.3 or later);
- version, edition and EngineEdition; Azure SQL Database (5) and Managed Instance (8) are named,
  and what they cannot do is refused by feature, not by their ProductVersion (12.x on both);
- the permissions each chosen variant needs, and each server DMV the harness reads, queried rather than
  inferred from a grant (on SQL Server 2022 each DMV page's "Permissions for SQL Server 2022 and later" names
  VIEW SERVER PERFORMANCE STATE, sys.dm_os_latch_stats', sys.dm_os_spinlock_stats' and sys.dm_os_host_info's
  included: https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/
  sys-dm-os-latch-stats-transact-sql, ms.date 02/27/2023);
- In-Memory OLTP availability, per database on Managed Instance (DATABASEPROPERTYEX(DB_NAME(), 'IsXTPSupported'):
  General Purpose has none although SERVERPROPERTY('IsXTPSupported') is 1; MI T-SQL differences page), and the memory the LMAX ring will take (queue_size is a parameter);
- the opt-ins: a variant that changes the server without ``allow_server_changes`` drops out of the
  default list with a printed note, and fails here, listing the variants and the flag, when the
  reader asked for it by name.

What each chapter needs is data in its ``spec.py`` (``extra["sqlserver"]``: variant -> :class:`Needs`).
Sources: SERVERPROPERTY, DBCC TRACEON (sysadmin), ALTER SERVER CONFIGURATION (ALTER SETTINGS),
each DMV's own page (VIEW SERVER STATE; from 2022 VIEW SERVER PERFORMANCE STATE for most), the Azure T-SQL
differences pages, and In-Memory OLTP's memory estimation and edition quota pages
(learn.microsoft.com; the simulator in tests/sqlserver_sim cites each).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .redaction import redact
from .targets import AZURE_ENGINE_EDITIONS, IDENTITY_QUERY, Target, TargetError, gate_version, major_version

# Features some deployments lack (Azure T-SQL differences pages).
SET_RECOVERY = "ALTER DATABASE ... SET RECOVERY"
FILE_PATH = "ALTER DATABASE ... ADD FILE with a FILENAME"
IMOLTP = "In-Memory OLTP (memory-optimized tables)"
ADR_OFF = "turning accelerated database recovery off"
SERVER_DMVS = "server-scoped statistics (sys.dm_os_wait_stats, _latch_stats, _spinlock_stats) with VIEW SERVER STATE"
MISSING = {
    5: {SET_RECOVERY, FILE_PATH, ADR_OFF, SERVER_DMVS},  # SQL Database: no trace flags or affinity either
    # Managed Instance: a short list of global flags only; ADR is always on and cannot be turned off (ADR
    # management page, https://learn.microsoft.com/sql/relational-databases/accelerated-database-recovery-management)
    8: {SET_RECOVERY, FILE_PATH, ADR_OFF},
}
# Every server-scoped DMV the harness or a chapter reads.  Each is queried (SELECT TOP (0)) by the preflight:
# the permission a DMV needs is the one on its own page (on 2022 VIEW SERVER PERFORMANCE STATE for all of them).
PROBED_DMVS = ("sys.dm_os_wait_stats", "sys.dm_os_latch_stats", "sys.dm_os_spinlock_stats",
               "sys.dm_os_waiting_tasks", "sys.dm_os_performance_counters", "sys.dm_os_schedulers",
               "sys.dm_os_sys_info")
# Managed Instance, Business Critical: In-Memory OLTP memory is capped per vCore, 0.8 to 1.65 GB a vCore on
# standard-series hardware (more on premium-series); the lowest figure is the one that is sure
# (https://learn.microsoft.com/azure/azure-sql/managed-instance/resource-limits).
MI_XTP_GB_PER_VCORE = 0.8
EXPRESS_XTP_QUOTA_MB = 352     # memory-optimized data per database (editions and features pages, 2016 SP1+)
STANDARD_XTP_QUOTA_MB = 32 * 1024
RING_ROW_BYTES = 24 + 8 + (8 + 8 + 8 + 300 + 4)  # row header, one hash index pointer, the lmax_ring columns
RING_BUCKET_BYTES = (2_097_152 + 524_288) * 8    # the two hash indexes' buckets (setup_imoltp.sql)


class PreflightError(TargetError):
    """The instance or the login cannot run what was asked; the message says what to add."""


@dataclass(frozen=True)
class Needs:
    """What one variant (or ``"*"``: every variant of the chapter) needs from the server."""

    trace_flags: tuple[int, ...] = ()   # global trace flags turned on for the run (sysadmin, server change)
    affinity: bool = False              # process affinity changed (ALTER SETTINGS, server change)
    min_major: int = 0                  # SQL Server major version (13 = 2016, 15 = 2019, 16 = 2022)
    features: frozenset = field(default_factory=frozenset)
    why: str = ""                       # what the variant shows, for the plan

    def server_changes(self) -> list[str]:
        out = [f"global trace flag {f} on (DBCC TRACEON({f}, -1)); restored with DBCC TRACEOFF({f}, -1) "
               "unless it was already on" for f in self.trace_flags]
        if self.affinity:
            out.append("process affinity without the log writer's core (ALTER SERVER CONFIGURATION SET PROCESS "
                       "AFFINITY); restored to the exact prior mask, or AUTO")
        return out


@dataclass
class Facts:
    """What the preflight read from the server."""

    version: str
    edition: str
    engine_edition: int
    xtp: bool
    sysadmin: bool
    login: str
    perms: dict[str, bool]
    platform: str
    cpu_count: int
    threads_per_core: int
    committed_target_kb: int
    affinity_type: str
    online_schedulers: int
    trace_flags: list[int]
    database_exists: bool
    driver: str
    dmv_denied: dict[str, str] = field(default_factory=dict)  # DMV -> the server's refusal
    database_control: bool = True  # CONTROL on an existing lab database (its owner holds it)

    @property
    def azure(self) -> str | None:
        return AZURE_ENGINE_EDITIONS.get(self.engine_edition)

    @property
    def major(self) -> int:
        return major_version(gate_version({"version": self.version,
                                           "settings": {"engine_edition": self.engine_edition}}))


# -- reading the facts ---------------------------------------------------------------------------
def _one(cur, sql: str, *params) -> Any:
    row = cur.execute(sql, *params).fetchone()
    return row[0] if row else None


def read_facts(target: Target, database: str | None, dmvs: Sequence[str] = PROBED_DMVS) -> Facts:
    """A handful of round trips; nothing is changed."""
    import pyodbc

    try:
        conn = target.connect()
    except TargetError as exc:
        raise PreflightError(str(exc)) from None
    try:
        cur = conn.cursor()
        version, _level, _update, edition, engine_edition, xtp, sysadmin, _text = cur.execute(IDENTITY_QUERY).fetchone()
        engine_edition = int(engine_edition or 0)
        driver = str(conn.getinfo(pyodbc.SQL_DRIVER_NAME) or "")
        facts = Facts(version=str(version), edition=str(edition), engine_edition=engine_edition, xtp=bool(xtp),
                      sysadmin=bool(sysadmin), login="", perms={}, platform="Windows", cpu_count=0,
                      threads_per_core=1, committed_target_kb=0, affinity_type="AUTO", online_schedulers=0,
                      trace_flags=[], database_exists=False, driver=driver)
        if engine_edition == 5:
            return facts  # refused by feature below; server-level DMVs and DBCC would only fail here
        facts.login = str(_one(cur, "SELECT SUSER_SNAME()") or "")
        view = view_state_permission(facts.major)
        for perm in (view, "CREATE ANY DATABASE", "ALTER SETTINGS", "ALTER SERVER STATE", "ALTER ANY EVENT SESSION"):
            facts.perms[perm] = bool(_one(cur, "SELECT HAS_PERMS_BY_NAME(NULL, NULL, ?)", perm))
        if database:
            facts.database_exists = _one(cur, "SELECT DB_ID(?)", database) is not None
            if facts.database_exists:
                # ALTER DATABASE needs ALTER on it and the setup scripts' DDL needs CREATE TABLE and ALTER on the
                # schema (ALTER DATABASE and CREATE TABLE pages); the database's owner holds CONTROL, which covers
                # them all (https://learn.microsoft.com/sql/t-sql/functions/has-perms-by-name-transact-sql)
                facts.database_control = bool(_one(cur, "SELECT HAS_PERMS_BY_NAME(?, 'DATABASE', 'CONTROL')",
                                                   database))
        if engine_edition == 8:
            # In-Memory OLTP on Managed Instance is a property of the database (General Purpose: 0), not of the
            # server; read it in the lab database when it exists, else in master (same tier)
            facts.xtp = bool(_database_xtp(target, database if facts.database_exists else None))
        facts.dmv_denied = probe_dmvs(cur, dmvs)
        if {"sys.dm_os_sys_info", "sys.dm_os_schedulers"} & set(facts.dmv_denied):
            return facts  # the facts below come from them; refused below with the GRANT
        if facts.major >= 14 and engine_edition != 8:
            # sys.dm_os_host_info is documented for SQL Server 2017+, not for Managed Instance (which runs on
            # Windows; the platform matters only to the affinity variant, which MI cannot run anyway)
            facts.platform = str(_one(cur, "SELECT host_platform FROM sys.dm_os_host_info") or "Windows")
        row = cur.execute("SELECT cpu_count, socket_count, cores_per_socket, committed_target_kb, affinity_type_desc "
                          "FROM sys.dm_os_sys_info").fetchone()
        cpus, sockets, per_socket, committed, affinity = row
        facts.cpu_count, facts.committed_target_kb, facts.affinity_type = int(cpus), int(committed or 0), str(affinity)
        facts.threads_per_core = max(1, int(cpus) // (int(sockets) * int(per_socket))) if sockets and per_socket else 1
        facts.online_schedulers = int(_one(cur, "SELECT COUNT(*) FROM sys.dm_os_schedulers "
                                                "WHERE status = N'VISIBLE ONLINE'"))
        cur.execute("DBCC TRACESTATUS(-1) WITH NO_INFOMSGS")  # any login may read them (DBCC TRACESTATUS page)
        rows = cur.fetchall() if cur.description else []
        facts.trace_flags = sorted(int(r[0]) for r in rows if int(r[2]) == 1)
        return facts
    except pyodbc.Error as exc:
        raise PreflightError(f"target {target.name!r}: the preflight could not read the server's facts: "
                             f"{redact(exc)}") from None
    finally:
        conn.close()


def _database_xtp(target: Target, database: str | None) -> int:
    """DATABASEPROPERTYEX(DB_NAME(), 'IsXTPSupported') in ``database`` (None: the login's default database)."""
    conn = target.connect(database) if database else target.connect()
    try:
        return int(_one(conn.cursor(), "SELECT CAST(DATABASEPROPERTYEX(DB_NAME(), 'IsXTPSupported') AS int)") or 0)
    finally:
        conn.close()


def probe_dmvs(cur, dmvs: Sequence[str] = PROBED_DMVS) -> dict[str, str]:
    """Each server DMV given, queried for no rows: {DMV: the server's refusal} for those refused."""
    import pyodbc

    denied = {}
    for dmv in dmvs:
        try:
            cur.execute(f"SELECT TOP (0) 1 FROM {dmv}").fetchall()
        except pyodbc.Error as exc:
            denied[dmv] = redact(exc)
    return denied


def grant_for(major: int) -> str:
    """The grant that reaches every DMV the harness reads: VIEW SERVER PERFORMANCE STATE from 2022 (each DMV's
    page, "Permissions for SQL Server 2022 and later"), VIEW SERVER STATE before."""
    return "VIEW SERVER PERFORMANCE STATE" if major >= 16 else "VIEW SERVER STATE"


def view_state_permission(major: int) -> str:
    """The permission the DMV overview names for the version; only reported, since each DMV's own page decides
    (the preflight queries them: :func:`probe_dmvs`)."""
    return "VIEW SERVER PERFORMANCE STATE" if major >= 16 else "VIEW SERVER STATE"


# -- deciding ------------------------------------------------------------------------------------
def chapter_needs(spec) -> Mapping[str, Needs]:
    return (spec.extra or {}).get("sqlserver", {})


def variant_needs(spec, variant: str, params: Mapping[str, Any], facts: Facts) -> Needs:
    """The chapter's ``"*"`` needs merged with the variant's, plus what depends on the server's state."""
    table = chapter_needs(spec)
    base, own = table.get("*", Needs()), table.get(variant, Needs())
    flags = tuple(own.trace_flags) + tuple(base.trace_flags)
    features = set(base.features) | set(own.features)
    if variant == "fair" and 3933 in facts.trace_flags:
        flags += (-3933,)  # the fair run turns a flag someone left on off, and back on after
    if facts.engine_edition not in AZURE_ENGINE_EDITIONS:
        features.discard(ADR_OFF)
    if facts.engine_edition == 8 and variant.startswith("imoltp"):
        features.discard(FILE_PATH)  # Business Critical instances hold the memory-optimized filegroup already
    return Needs(trace_flags=flags, affinity=own.affinity or base.affinity,
                 min_major=max(own.min_major, base.min_major), features=frozenset(features | {SERVER_DMVS}),
                 why=own.why)


@dataclass
class Problem:
    variant: str
    what: str
    fix: str
    server_change: bool = False  # the problem is only the missing opt-in


def problems_of(variant: str, needs: Needs, facts: Facts, allow_server_changes: bool) -> list[Problem]:
    out = []
    missing = MISSING.get(facts.engine_edition, set()) & set(needs.features)
    if needs.trace_flags and facts.azure:
        missing.add("global trace flags " + ", ".join(str(abs(f)) for f in needs.trace_flags))
    if needs.affinity and facts.azure:
        missing.add("process affinity (ALTER SERVER CONFIGURATION)")
    if IMOLTP in needs.features and not facts.xtp:
        missing.add(IMOLTP)
    if missing:
        out.append(Problem(variant, f"{facts.azure or facts.edition} does not support: {'; '.join(sorted(missing))}",
                           "run it on SQL Server (2016 SP2 or later)" + (
                               ", or an Azure tier with In-Memory OLTP (Premium / Business Critical)"
                               if missing == {IMOLTP} else "")))
        return out
    if facts.major < needs.min_major:
        names = {13: "2016", 14: "2017", 15: "2019", 16: "2022"}
        out.append(Problem(variant, f"needs SQL Server {names.get(needs.min_major, needs.min_major)} "
                                    f"(major {needs.min_major}); this server is {facts.version}",
                           "leave the variant out, or run it on a newer instance"))
        return out
    changes = needs.server_changes() + ([f"global trace flag {-f} off for the run, back on after"
                                         for f in needs.trace_flags if f < 0])
    if changes and not allow_server_changes:
        out.append(Problem(variant, "changes the server: " + "; ".join(changes),
                           "add ALLOW_SERVER_CHANGES=1 (make) or --allow-server-changes (python -m "
                           "contention_book.run)", server_change=True))
    if needs.trace_flags and not facts.sysadmin:
        out.append(Problem(variant, f"DBCC TRACEON/TRACEOFF(n, -1) needs membership in sysadmin (Msg 2571 otherwise); "
                                    f"login {facts.login or '?'} is not a member",
                           f"ALTER SERVER ROLE sysadmin ADD MEMBER [{facts.login or 'your_login'}];"))
    if needs.affinity and not facts.perms.get("ALTER SETTINGS"):
        out.append(Problem(variant, "ALTER SERVER CONFIGURATION SET PROCESS AFFINITY needs ALTER SETTINGS",
                           f"USE master; GRANT ALTER SETTINGS TO [{facts.login or 'your_login'}];"))
    return out


def login_problems(facts: Facts, params: Mapping[str, Any]) -> list[Problem]:
    out = []
    if facts.dmv_denied:
        names = ", ".join(sorted(facts.dmv_denied))
        first = next(iter(facts.dmv_denied.values()))
        why = (" (VIEW SERVER STATE, which includes it, also does)" if facts.major >= 16 else "")
        out.append(Problem("*", f"the server refused a read of {names} ({first})",
                           f"USE master; GRANT {grant_for(facts.major)} TO [{facts.login or 'your_login'}];{why}"))
    if not facts.database_exists and not facts.perms.get("CREATE ANY DATABASE"):
        out.append(Problem("*", f"the lab database {params.get('database')} does not exist and the login may not "
                                "create it", f"USE master; GRANT CREATE ANY DATABASE TO [{facts.login or 'your_login'}];"
                                             " (or create the database yourself and make the login its owner)"))
    if facts.database_exists and not facts.database_control:
        db = params.get("database")
        out.append(Problem("*", f"the lab database {db} exists but login {facts.login or '?'} does not hold CONTROL "
                                "on it, which its ALTER DATABASE and setup DDL need (its owner holds it)",
                           f"ALTER AUTHORIZATION ON DATABASE::[{db}] TO [{facts.login or 'your_login'}]; (or drop the "
                           "database and let the harness create it)"))
    if params.get("wait_source") == "xevents" and not facts.perms.get("ALTER ANY EVENT SESSION"):
        # Three statements, three pages: CREATE EVENT SESSION (ALTER ANY EVENT SESSION, or 2022's CREATE ANY
        # EVENT SESSION), ALTER EVENT SESSION ... STATE = START / STOP (ALTER ANY EVENT SESSION only) and DROP
        # EVENT SESSION (ALTER ANY EVENT SESSION, or 2022's DROP ANY EVENT SESSION): ALTER ANY EVENT SESSION is
        # the one grant all three pages name (https://learn.microsoft.com/sql/t-sql/statements/
        # alter-event-session-transact-sql#permissions)
        out.append(Problem("*", "wait_source=xevents creates, starts, stops and drops an Extended Events session; "
                                "ALTER ANY EVENT SESSION is the permission the pages of all three statements name "
                                "(CREATE ANY EVENT SESSION alone, on 2022, could create a session it cannot start "
                                "or drop)",
                           f"USE master; GRANT ALTER ANY EVENT SESSION TO [{facts.login or 'your_login'}]; "
                           "(or use wait_source=polling)"))
    if params.get("clear_stats"):
        if not facts.perms.get("ALTER SERVER STATE"):
            out.append(Problem("*", "clear_stats=true runs DBCC SQLPERF(..., CLEAR), which needs ALTER SERVER STATE",
                               f"USE master; GRANT ALTER SERVER STATE TO [{facts.login or 'your_login'}];"))
    return out


# -- In-Memory OLTP sizing -----------------------------------------------------------------------
def xtp_limit_bytes(facts: Facts) -> tuple[int, str]:
    """What memory-optimized data may use here: the edition's per-database quota or the default pool's share.

    The share of committed target memory the default pool gives memory-optimized tables: 70% up to
    8 GB, 75% to 16 GB, 80% to 32 GB, 85% to 96 GB, 90% above (In-Memory OLTP resource pool page).
    """
    gb = facts.committed_target_kb / 2**20
    pct = 0.70 if gb <= 8 else 0.75 if gb <= 16 else 0.80 if gb <= 32 else 0.85 if gb <= 96 else 0.90
    pool = int(facts.committed_target_kb * 1024 * pct)
    if facts.engine_edition == 8:
        cap = int(MI_XTP_GB_PER_VCORE * max(1, facts.cpu_count) * 2**30)
        if cap < pool:
            return cap, (f"Managed Instance Business Critical's In-Memory OLTP cap, at least {MI_XTP_GB_PER_VCORE} "
                         f"GB a vCore ({facts.cpu_count} vCores; more on premium-series hardware)")
    quota_mb = EXPRESS_XTP_QUOTA_MB if "express" in facts.edition.lower() else \
        STANDARD_XTP_QUOTA_MB if "standard" in facts.edition.lower() else None
    if quota_mb is not None and quota_mb * 2**20 < pool:
        return quota_mb * 2**20, f"the {facts.edition.split(' Edition')[0]} edition's quota of {quota_mb:,} MB " \
                                 "of memory-optimized data per database"
    return pool, f"{pct:.0%} of the server's committed target memory ({gb:,.1f} GB), the default pool's share"


def ring_bytes(queue_size: int) -> int:
    """The ring's rows, twice (the reset UPDATE makes a new version of every row), plus the hash buckets."""
    return 2 * queue_size * RING_ROW_BYTES + RING_BUCKET_BYTES


def check_ring_memory(facts: Facts, params: Mapping[str, Any], variants: Sequence[str]) -> str | None:
    """A line for the plan, or a PreflightError naming the queue_size (and messages) that fit."""
    if not any(v.startswith("imoltp") for v in variants):
        return None
    size = int(params["queue_size"])
    need = ring_bytes(size)
    limit, why = xtp_limit_bytes(facts)
    line = (f"In-Memory OLTP ring: {size:,} slots take about {need / 2**20:,.0f} MB while a reset runs "
            f"({RING_ROW_BYTES} bytes a row version, two versions per slot, plus hash buckets); this instance "
            f"allows about {limit / 2**20:,.0f} MB ({why})")
    if need <= limit * 0.8:
        return line
    fit = max(0, int((limit * 0.8 - RING_BUCKET_BYTES) / (2 * RING_ROW_BYTES)))
    sessions = max(params.get("sessions") or [1])
    per = max(1, fit // sessions)
    raise PreflightError(
        f"{line}: the ring would not fit (Msg 41823 or 41805 mid-run). Set queue_size={fit:,} and "
        f"messages_per_session={min(per, int(params['messages_per_session'])):,} (every push of a point must fit "
        f"the ring at {sessions} sessions), or give the server more memory, or leave the imoltp variants out")


# -- run-time estimate ---------------------------------------------------------------------------
def estimate_seconds(spec, params: Mapping[str, Any], variants: Sequence[str], facts: Facts) -> tuple[float, str]:
    """(seconds, how it was derived): the chapter's own estimate function if it has one, else points x duration."""
    fn: Callable | None = (spec.extra or {}).get("sqlserver_estimate")
    if fn is not None:
        return fn(params, variants, facts)
    reps = int(params.get("repetitions") or 1)
    points = len(params.get("sessions") or [1])
    dur = float(params.get("duration_s") or 10)
    return reps * len(variants) * points * (dur + 5), "points x duration_s, plus 5 s of setup a point"


# -- the whole check -----------------------------------------------------------------------------
def preflight(spec, params: dict[str, Any], raw_params: Mapping[str, Any], target: Target, *,
              allow_server_changes: bool, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Check everything; return the parameters with the variants that will run, or raise PreflightError."""
    # a chapter may name the server DMVs it reads (spec.extra["sqlserver_dmvs"]); otherwise every one the harness reads
    facts = read_facts(target, params.get("database"), (spec.extra or {}).get("sqlserver_dmvs", PROBED_DMVS))
    where = facts.azure or f"SQL Server {facts.version} {facts.edition}"
    log(f"[preflight] {target.name}: {where} (EngineEdition {facts.engine_edition}), driver {facts.driver or '?'}, "
        f"login {facts.login or '?'}{' (sysadmin)' if facts.sysadmin else ''}")
    if "tdsodbc" in facts.driver.lower():
        log("[preflight] FreeTDS: make sure TDS_Version is 7.3 or later (7.4 recommended) in the connection "
            "string, DSN or freetds.conf")
    if facts.engine_edition == 5:
        raise PreflightError(
            f"{spec.chapter} cannot run on {target.name}: it is Azure SQL Database (EngineEdition 5), which has no "
            "global trace flags, process affinity, ALTER DATABASE SET RECOVERY or ADD FILE, keeps ADR always on, "
            "and scopes the wait, latch and spinlock statistics differently from the sys.dm_os_* views every chapter "
            "reads; nothing was changed. Run the chapter on SQL Server 2016 SP2 or later, or on a Managed Instance "
            "(last-page-insert and lmax-queue run there)")
    asked = [v for v in params["variants"]]
    explicit = "variants" in raw_params and raw_params["variants"] not in (None, "", [])
    blocking: list[Problem] = login_problems(facts, params)
    keep, dropped = [], []
    for v in asked:
        probs = problems_of(v, variant_needs(spec, v, params, facts), facts, allow_server_changes)
        if not probs:
            keep.append(v)
        elif explicit:
            blocking.extend(probs)
        else:
            dropped.extend(probs)
    if params.get("clear_stats"):
        log("[preflight] note: clear_stats=true also runs DBCC SQLPERF('sys.dm_os_spinlock_stats', CLEAR), as the "
            "articles did (documented on sys.dm_os_spinlock_stats' own page)")
    if params.get("clear_stats") and not allow_server_changes:
        blocking.append(Problem("*", "clear_stats=true clears wait, latch and spinlock statistics server-wide",
                                "add ALLOW_SERVER_CHANGES=1, or leave clear_stats off (the harness subtracts "
                                "snapshots instead)", server_change=True))
    if params.get("wait_source") == "xevents" and not allow_server_changes:
        blocking.append(Problem("*", "wait_source=xevents creates an Extended Events session on the server (a "
                                     "server-scope object, dropped at the end of every point)",
                                "add ALLOW_SERVER_CHANGES=1 (make) or --allow-server-changes (python -m "
                                "contention_book.run), or use wait_source=polling", server_change=True))
    if spec.chapter == "logcache-spinlock" and "no_logwriter_core" in keep:
        blocking.extend(_affinity_problems(facts, params))
    if not keep and not blocking:
        blocking.extend(dropped)
    if blocking:
        lines = "\n".join(f"  - {p.variant if p.variant != '*' else 'every variant'}: {p.what}\n      fix: {p.fix}"
                          for p in blocking)
        needing = sorted({p.variant for p in blocking if p.server_change})
        tail = (f"\n  variants that change the server: {', '.join(needing)}; they run only with "
                "ALLOW_SERVER_CHANGES=1" if needing else "")
        raise PreflightError(f"{spec.chapter} cannot run on {target.name} as asked; nothing was changed:\n{lines}{tail}")
    for p in dropped:
        log(f"[preflight] note: {p.variant} left out of the default variants: {p.what} ({p.fix})")
    params = {**params, "variants": keep}
    memory = check_ring_memory(facts, params, keep) if "queue_size" in params else None
    _print_plan(spec, params, keep, facts, allow_server_changes, memory, log)
    return params


def _affinity_problems(facts: Facts, params: Mapping[str, Any]) -> list[Problem]:
    out = []
    if facts.platform.lower() == "linux" and facts.threads_per_core > 1 and not params.get("logwriter_cpus"):
        out.append(Problem(
            "no_logwriter_core",
            "on Linux, SQL Server numbers CPUs as Linux does, where a core's two hyperthreads are often not "
            "neighbours (0 and 8, say), and no DMV says which logical CPUs share a core",
            "give the log writer's core yourself: logwriter_cpus=<cpu>,<its sibling> (on the server: "
            "cat /sys/devices/system/cpu/cpu<N>/topology/thread_siblings_list)"))
    if facts.affinity_type.upper() == "MANUAL" and facts.cpu_count > 64:
        out.append(Problem("no_logwriter_core", "a manual affinity mask on more than 64 CPUs cannot be read back "
                                                "exactly (sys.configurations holds CPUs 0-63)",
                           "set the affinity to AUTO first, or leave no_logwriter_core out"))
    return out


def _print_plan(spec, params, variants, facts: Facts, allow: bool, memory: str | None, log) -> None:
    table = chapter_needs(spec)
    log(f"[preflight] plan: {', '.join(variants)} x {params.get('repetitions', 1)} repetition(s)"
        + (f" at sessions {params['sessions']}" if params.get("sessions") else ""))
    for v in variants:
        needs = variant_needs(spec, v, params, facts)
        changes = needs.server_changes() + [f"global trace flag {-f} off for the run, back on after"
                                            for f in needs.trace_flags if f < 0]
        what = table.get(v, Needs()).why
        log(f"[preflight]   {v}{': ' + what if what else ''}; server changes: "
            f"{'; '.join(changes) if changes else 'none'}")
    log(f"[preflight] database {params.get('database')}: "
        f"{'exists' if facts.database_exists else 'will be created'}; its options are changed for each run and "
        "restored after (printed by the guard)")
    if memory:
        log(f"[preflight] {memory}")
    seconds, how = estimate_seconds(spec, params, variants, facts)
    log(f"[preflight] estimated run time: about {_duration(seconds)} (an estimate: {how})")


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    if seconds < 5400:
        return f"{math.ceil(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
