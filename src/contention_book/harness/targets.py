"""Reaching a database: a target is a DSN name or an environment variable.

A notebook's ``target`` parameter is only a *name*: either an ODBC DSN from
odbc.ini, or an environment variable that holds a connection string.  The
connection string itself never enters a parameter, a recording, a log line or
an error message; any password in it is registered with
:mod:`harness.redaction` the moment it is read.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from . import redaction
from .host import local_host

ENGINES = ("sqlserver", "postgres")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
OWNER_PROPERTY = "contention_book_owner"
OWNER_MARK = "created by the contention-book harness; safe to drop"


class TargetError(RuntimeError):
    """A target cannot be resolved, reached or trusted."""


def check_identifier(name: str, what: str = "identifier") -> str:
    """Identifiers are spliced into SQL, so they must be plain words."""
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise TargetError(
            f"{what} {name!r}: expected a plain identifier (a letter or _, then letters, digits or _, at most 63)"
        )
    return name


# -- connection strings ------------------------------------------------------
def parse_connection_string(text: str) -> list[tuple[str, str]]:
    """Split ``k=v;k={v;with;semicolons}`` into ordered pairs (ODBC syntax)."""
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in "; \t\r\n":
            i += 1
        if i >= n:
            break
        eq = text.find("=", i)
        if eq < 0:
            raise TargetError("connection string: expected key=value pairs separated by ';' (a key has no '=')")
        key = text[i:eq].strip()
        i = eq + 1
        if i < n and text[i] == "{":
            j = i + 1
            value_chars = []
            while j < n:
                if text[j] == "}":
                    if j + 1 < n and text[j + 1] == "}":
                        value_chars.append("}")
                        j += 2
                        continue
                    break
                value_chars.append(text[j])
                j += 1
            else:
                raise TargetError(f"connection string: the value of {key!r} opens '{{' but never closes it")
            value = "".join(value_chars)
            i = j + 1
            semi = text.find(";", i)
            i = n if semi < 0 else semi + 1
        else:
            semi = text.find(";", i)
            value = text[i:] if semi < 0 else text[i:semi]
            i = n if semi < 0 else semi + 1
            value = value.strip()
        if key.lower() in redaction.SECRET_KEYS:
            redaction.register(value)
        pairs.append((key, value))
    return pairs


def format_connection_string(pairs: list[tuple[str, str]]) -> str:
    def quote(v: str) -> str:
        return "{" + v.replace("}", "}}") + "}" if any(c in v for c in ";{}") or v != v.strip() else v
    return ";".join(f"{k}={quote(v)}" for k, v in pairs) + ";"


def with_database(conn_str: str, database: str | None) -> str:
    """Return the connection string pointed at another database (first key wins in ODBC)."""
    pairs = parse_connection_string(conn_str)
    if database is None:
        return format_connection_string(pairs)
    kept = [(k, v) for k, v in pairs if k.lower() not in ("database", "initial catalog")]
    return format_connection_string(kept + [("Database", database)])


# -- targets -----------------------------------------------------------------
@dataclass
class Target:
    """A resolved target.  ``name`` is printable; the connection string is not."""

    name: str
    source: str  # "env" or "dsn"
    engine: str | None = None
    _conn_str: str = field(default="", repr=False)
    client: str | None = None  # PostgreSQL only: "psycopg" (the default) or "odbc"; None reads CONTENTION_BOOK_PG_CLIENT

    def connection_string(self, database: str | None = None) -> str:
        return with_database(self._conn_str, database)

    def client_name(self) -> str:
        """Which client connects.  PostgreSQL: "psycopg" (libpq, harness.pg_client) unless "odbc" (pyodbc over
        psqlODBC) is asked for, because psqlODBC's per-call CPU is taken from the server on a small machine.
        SQL Server, and a target whose engine is not known yet: always "odbc", the reader's own driver."""
        from .pg_client import CLIENT_ENV, CLIENTS, DEFAULT_CLIENT

        name = (self.client or os.environ.get(CLIENT_ENV) or DEFAULT_CLIENT).strip().lower()
        if name not in CLIENTS:
            raise TargetError(f"{'the target client' if self.client else CLIENT_ENV}={name!r}: expected one of "
                              f"{', '.join(CLIENTS)} (unset: {DEFAULT_CLIENT}, libpq, for PostgreSQL)")
        return name if self.engine == "postgres" else "odbc"

    def client_description(self, conn) -> str:
        """The client that ran, for a recording's manifest: psycopg and libpq versions, or pyodbc and the driver."""
        if self.client_name() == "psycopg":
            from .pg_client import describe

            return describe()
        import pyodbc

        try:
            driver = f"{conn.getinfo(pyodbc.SQL_DRIVER_NAME)} {conn.getinfo(pyodbc.SQL_DRIVER_VER)}"
        except Exception:  # noqa: BLE001 - a driver that does not say: the name alone
            driver = "the ODBC driver"
        return f"pyodbc {pyodbc.version} over {driver}"

    def connect(self, database: str | None = None, autocommit: bool = True, timeout: int = 15):
        if self.client_name() == "psycopg":
            return self._connect_libpq(database, autocommit, timeout)
        import pyodbc

        try:
            conn = pyodbc.connect(self.connection_string(database), autocommit=autocommit, timeout=timeout)
        except pyodbc.Error as exc:
            hint = " (no environment variable of that name exists, so it was tried as an ODBC DSN)" \
                if self.source == "dsn" else ""
            message = redaction.redact(exc)
            raise TargetError(
                f"target {self.name!r}{hint}: could not connect"
                f"{' to database ' + repr(database) if database else ''}: {message}{connection_advice(message)}"
            ) from None
        if self.engine is None:
            self.engine = detect_engine(conn)
        set_lock_timeout(conn, self.engine)
        return conn

    def _connect_libpq(self, database: str | None, autocommit: bool, timeout: int):
        from . import pg_client

        if self.source != "env":
            raise TargetError(f"target {self.name!r} is an ODBC DSN, which libpq cannot read. PostgreSQL is "
                              "reached through libpq (psycopg) by default: name an environment variable holding "
                              "the connection string (Server, Port, Database, Uid, Pwd) instead, or set "
                              f"{pg_client.CLIENT_ENV}=odbc to connect through psqlODBC and keep the DSN")
        try:
            conn = pg_client.connect(parse_connection_string(self.connection_string(database)),
                                     autocommit=autocommit, timeout=timeout)
        except pg_client.Error as exc:
            message = redaction.redact(exc)
            raise TargetError(f"target {self.name!r} (psycopg client, libpq): could not connect"
                              f"{' to database ' + repr(database) if database else ''}: {message}") from None
        set_lock_timeout(conn, self.engine)
        return conn

    def __str__(self) -> str:
        return f"{self.name} ({'environment variable' if self.source == 'env' else 'ODBC DSN'})"


def connection_advice(message: str) -> str:
    """What to change when the connection itself failed, by what the driver said."""
    low = message.lower()
    if "certificate" in low or "ssl provider" in low:
        return (". ODBC Driver 18 encrypts every connection by default (Encrypt=yes) and checks the server's "
                "certificate. Either give the server a certificate this machine trusts (and connect with the name "
                "on the certificate), or add TrustServerCertificate=yes to the connection string or DSN (still "
                "encrypted, not verified), or Encrypt=no where encryption is not required")
    if "tds" in low or "freetds" in low or "unexpected eof" in low:
        return (". With FreeTDS, set TDS_Version=7.4 (7.3 at least: older versions have no datetime2) in the "
                "connection string, the DSN or freetds.conf")
    if "login failed" in low or "4060" in low or "18456" in low:
        return ". Check the login and its default database; the harness connects to master first"
    return ""


def check_target_name(name: str | None) -> str | None:
    """Refuse a connection string given where a *name* belongs, before anything can print it."""
    if name and ("=" in name or ";" in name):
        raise TargetError(
            "target: this looks like a connection string. Put it in an environment variable "
            "(export MY_SQL='Driver=...;Server=...') and pass the variable's name, or define an ODBC DSN; "
            "connection strings never go into parameters, command lines or logs"
        )
    return name


LOCK_TIMEOUT_ENV = "CONTENTION_BOOK_LOCK_TIMEOUT_S"
DEFAULT_LOCK_TIMEOUT_S = 120


def set_lock_timeout(conn, engine: str | None) -> None:
    """No statement of a run waits for a lock without bound: a wedged run fails with an error instead."""
    seconds = float(os.environ.get(LOCK_TIMEOUT_ENV) or DEFAULT_LOCK_TIMEOUT_S)
    cur = conn.cursor()
    if engine == "postgres":
        cur.execute(f"SET lock_timeout = '{int(seconds * 1000)}ms'")
    elif engine == "sqlserver":
        cur.execute(f"SET LOCK_TIMEOUT {int(seconds * 1000)}")
    if not conn.autocommit:
        conn.commit()  # the setting stays; the transaction it opened must not hold the first statement back


def resolve_target(name: str, engine: str | None = None) -> Target:
    """Resolve a target *name*: an environment variable first, then a DSN."""
    if not name or not isinstance(name, str):
        raise TargetError("target: expected the name of an ODBC DSN or of an environment variable")
    check_target_name(name)
    if engine is not None and engine not in ENGINES:
        raise TargetError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if name in os.environ:
        conn_str = os.environ[name]
        parse_connection_string(conn_str)  # registers secrets, checks syntax
        return Target(name=name, source="env", engine=engine, _conn_str=conn_str)
    if not re.match(r"^[\w .-]{1,64}$", name):
        raise TargetError(f"target {name!r}: no such environment variable, and not a valid DSN name")
    return Target(name=name, source="dsn", engine=engine, _conn_str=f"DSN={name}")


def detect_engine(conn) -> str:
    import pyodbc

    dbms = (conn.getinfo(pyodbc.SQL_DBMS_NAME) or "").lower()
    if "sql server" in dbms:
        return "sqlserver"
    if "postgres" in dbms:
        return "postgres"
    raise TargetError(f"unsupported DBMS {dbms!r}: expected Microsoft SQL Server or PostgreSQL")


# SERVERPROPERTY page: EngineEdition 1-4 are SQL Server editions, 5 Azure SQL Database, 8 Azure SQL Managed
# Instance.  Both Azure services report ProductVersion 12.0.2000.8 whatever engine build they run.
AZURE_ENGINE_EDITIONS = {5: "Azure SQL Database", 8: "Azure SQL Managed Instance"}
AZURE_GATE_MAJOR = 16  # the Azure services run the current engine: version gates treat them as SQL Server 2022
IDENTITY_QUERY = (
    "SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)), "
    "CAST(SERVERPROPERTY('ProductLevel') AS nvarchar(128)), "
    "CAST(SERVERPROPERTY('ProductUpdateLevel') AS nvarchar(128)), "
    "CAST(SERVERPROPERTY('Edition') AS nvarchar(128)), "
    "CAST(SERVERPROPERTY('EngineEdition') AS int) AS EngineEdition, "
    "CAST(SERVERPROPERTY('IsXTPSupported') AS int) AS IsXTPSupported, "
    "IS_SRVROLEMEMBER('sysadmin') AS is_sysadmin, @@VERSION AS version"
)


def server_version(conn, engine: str) -> dict[str, Any]:
    cur = conn.cursor()
    if engine == "sqlserver":
        version, level, update, edition, engine_edition, *_ = cur.execute(IDENTITY_QUERY).fetchone()
        return {"name": "sqlserver", "version": version, "build": " ".join(x for x in (level, update) if x) or None,
                "edition": edition, "settings": {"engine_edition": int(engine_edition) if engine_edition else None}}
    row = cur.execute("SELECT current_setting('server_version'), version()").fetchone()
    return {"name": "postgres", "version": row[0], "build": row[1], "edition": None}


def gate_version(engine: dict[str, Any]) -> str:
    """The version the chapters' version gates compare: ProductVersion, or the current major on Azure.

    Azure SQL Database and Managed Instance report 12.x, which would make every "needs 2016/2019/2022"
    gate refuse them; what they cannot do is refused by the preflight by feature instead.
    """
    if (engine.get("settings") or {}).get("engine_edition") in AZURE_ENGINE_EDITIONS:
        return str(AZURE_GATE_MAJOR)
    return str(engine["version"])


def major_version(version: str) -> int:
    return int(re.match(r"\d+", version).group(0))


def server_host(conn, engine: str) -> dict[str, Any]:
    """Host facts of the *server*: DMVs on SQL Server, the OS when PostgreSQL is local."""
    cur = conn.cursor()
    if engine == "sqlserver":
        info = cur.execute(
            "SELECT cpu_count, hyperthread_ratio, socket_count, cores_per_socket, numa_node_count, "
            "physical_memory_kb FROM sys.dm_os_sys_info"
        ).fetchone()
        cpu, _ht, sockets, per_socket, numa, mem_kb = info
        visible_nodes = cur.execute(
            "SELECT COUNT(*) FROM sys.dm_os_nodes WHERE node_state_desc NOT LIKE '%DAC%'"
        ).fetchone()[0]
        online = cur.execute(
            "SELECT COUNT(*) FROM sys.dm_os_schedulers WHERE status = N'VISIBLE ONLINE'").fetchone()[0]
        return {
            "description": f"SQL Server host, {cpu} logical CPUs, {sockets} socket(s), "
                           f"{online} schedulers visible online",
            "cpu_model": None,
            "sockets": sockets,
            "cores": sockets * per_socket if sockets and per_socket else None,
            "logical_cpus": cpu,
            "numa_nodes": numa or visible_nodes or None,
            "memory_gb": round(mem_kb / 2**20, 1) if mem_kb else None,
            "os": None,
            "source": "sys.dm_os_sys_info, sys.dm_os_nodes and sys.dm_os_schedulers",
        }
    addr = cur.execute("SELECT host(inet_server_addr())").fetchone()[0]
    if addr in (None, "127.0.0.1", "::1"):
        facts = local_host()
        facts["source"] = "lscpu on this machine (the PostgreSQL server is local)"
        return facts
    return {"description": f"remote PostgreSQL at {addr}", "cpu_model": None, "sockets": None, "cores": None,
            "logical_cpus": None, "numa_nodes": None, "source": "unknown: the server is remote"}


# -- the harness's own database ----------------------------------------------
def _owner_mark(target: "Target", conn, engine: str, database: str) -> str | None:
    """The database's owner mark: None if it does not exist, "" if it has none.

    On SQL Server the property is read on a connection to the database itself, with a two-part name:
    Azure SQL Database refuses three-part names across databases (Msg 40515).
    """
    cur = conn.cursor()
    if engine == "sqlserver":
        exists = cur.execute("SELECT DB_ID(?)", database).fetchone()[0]
        if exists is None:
            return None
        own = target.connect(database)
        try:
            row = own.cursor().execute(
                "SELECT CAST(value AS nvarchar(400)) FROM sys.extended_properties WHERE class = 0 AND name = ?",
                OWNER_PROPERTY).fetchone()
        finally:
            own.close()
        return row[0] if row else ""
    row = cur.execute(
        "SELECT coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname = ?",
        database).fetchone()
    return None if row is None else row[0]


def _owned_by_login(conn, database: str) -> bool:
    """SQL Server: is the login the database's owner (sys.databases.owner_sid = SUSER_SID())?

    A DBA who creates the lab database for a login without CREATE ANY DATABASE makes the login its owner
    (ALTER AUTHORIZATION ON DATABASE); the owner holds CONTROL on it, which every setup script needs
    (https://learn.microsoft.com/sql/relational-databases/system-catalog-views/sys-databases-transact-sql,
    https://learn.microsoft.com/sql/t-sql/functions/suser-sid-transact-sql).
    """
    row = conn.cursor().execute(
        "SELECT CASE WHEN owner_sid = SUSER_SID() THEN 1 ELSE 0 END FROM sys.databases WHERE name = ?",
        database).fetchone()
    return bool(row and row[0])


def _mark_sqlserver(target: Target, database: str) -> None:
    own = target.connect(database)
    try:
        own.cursor().execute("EXEC sys.sp_addextendedproperty @name = ?, @value = ?", OWNER_PROPERTY, OWNER_MARK)
    finally:
        own.close()


def ensure_own_database(target: Target, database: str, *, allow_foreign: bool = False, log=print) -> None:
    """Create the harness database if needed; refuse one it did not create, unless the login owns it.

    Setup and reset scripts only ever run inside a database carrying the
    harness's mark (the extended property ``contention_book_owner`` on SQL
    Server, a comment on PostgreSQL).  On SQL Server a database without the
    mark whose owner is the login (a DBA created it for the reader) is
    accepted and marked.  ``allow_foreign`` is for callers in Python only
    (no run parameter sets it).
    """
    check_identifier(database, "database")
    conn = target.connect()
    try:
        engine = target.engine
        mark = _owner_mark(target, conn, engine, database)
        if mark is None:
            log(f"[harness] creating database {database} on {target.name} and marking it as the harness's own")
            cur = conn.cursor()
            if engine == "sqlserver":
                cur.execute(f"CREATE DATABASE [{database}]")
                _mark_sqlserver(target, database)
            else:
                cur.execute(f'CREATE DATABASE "{database}"')
                cur.execute(f"COMMENT ON DATABASE \"{database}\" IS '{OWNER_MARK}'")
        elif mark != OWNER_MARK:
            if engine == "sqlserver" and mark == "" and _owned_by_login(conn, database):
                log(f"[harness] database {database} on {target.name} is owned by this login: marking it as the "
                    f"harness's own (extended property {OWNER_PROPERTY})")
                _mark_sqlserver(target, database)
                return
            if not allow_foreign:
                raise TargetError(
                    f"database {database!r} on {target.name} exists but was not created by this harness "
                    "(no owner mark) and is not owned by this login; refusing to run setup or reset scripts there. "
                    "Choose another database name"
                    + (f", or make the login its owner (ALTER AUTHORIZATION ON DATABASE::[{database}] TO [login])"
                       if engine == "sqlserver" else "")
                )
            log(f"[harness] WARNING: using database {database}, which the harness did not create (allowed explicitly)")
    finally:
        conn.close()
