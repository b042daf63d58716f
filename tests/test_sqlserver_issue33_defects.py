"""Issue 33's nine defects, each against the simulator or the code it touches; each failed before the fix.

Pages quoted (Microsoft Learn; the sources are in the MicrosoftDocs/sql-docs repository):

- sys.dm_os_latch_stats, ms.date 02/27/2023,
  https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-latch-stats-transact-sql
  and sys.dm_os_spinlock_stats,
  https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-spinlock-stats-transact-sql
  "Permissions for SQL Server 2022 and later: Requires VIEW SERVER PERFORMANCE STATE permission on the server";
  the spinlock page: "You can reset the contents of sys.dm_os_spinlock_stats by using DBCC SQLPERF ...
  DBCC SQLPERF ('sys.dm_os_spinlock_stats', CLEAR);".
- sys.dm_os_host_info,
  https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-host-info-transact-sql
- Supported features for natively compiled T-SQL modules, "INSERT VALUES (one row per statement) and INSERT ...
  SELECT": https://learn.microsoft.com/sql/relational-databases/in-memory-oltp/supported-features-for-natively-compiled-t-sql-modules
- Managed Instance T-SQL differences (In-Memory OLTP per database, not on General Purpose; FILENAME refused with
  41903): https://learn.microsoft.com/azure/azure-sql/managed-instance/transact-sql-tsql-differences-sql-server
- DATABASEPROPERTYEX 'IsXTPSupported': https://learn.microsoft.com/sql/t-sql/functions/databasepropertyex-transact-sql
- Error 5061 "ALTER DATABASE failed because a lock could not be placed on database": database-engine-events-and-errors
  (https://learn.microsoft.com/sql/relational-databases/errors-events/database-engine-events-and-errors-5000-to-5999)
- ADR management: "requires an exclusive database lock":
  https://learn.microsoft.com/sql/relational-databases/accelerated-database-recovery-management
- sys.dm_db_page_info (VIEW DATABASE STATE; 2022 VIEW DATABASE PERFORMANCE STATE), sys.dm_os_buffer_descriptors,
  sys.dm_tran_session_transactions, sys.dm_tran_active_snapshot_database_transactions (VIEW SERVER STATE; 2022
  VIEW SERVER PERFORMANCE STATE), sys.dm_exec_requests ("If the user doesn't have VIEW SERVER STATE ... the user
  sees only the currently executing session"), sys.server_event_sessions: their pages under
  https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/ and system-catalog-views/.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sqlserver_sim import fake_pyodbc
from sqlserver_sim import rules as RULES
from sqlserver_sim import run as R
from sqlserver_sim import server as S

REPO = Path(__file__).resolve().parents[1]


def _conn(state, database: str | None = None):
    extra = f"Database={database};" if database else ""
    conn = fake_pyodbc.connect(R.connection_string(state, extra=extra), autocommit=True)
    conn.cursor().execute("SET LOCK_TIMEOUT 500")
    return conn


def _with_database(state: Path, name: str, owner: str) -> None:
    """A database a DBA created and gave to ``owner`` (ALTER AUTHORIZATION): no harness mark on it."""
    st = json.loads(state.read_text())
    db = S._db(st["next_db_id"])
    db["owner"] = owner
    st["next_db_id"] += 1
    st["databases"][name] = db
    state.write_text(json.dumps(st))


# -- 1: a lab database the DBA created and gave to the login ------------------------------------------------
def test_a_lab_database_the_login_owns_is_accepted_without_the_mark(tmp_path):
    state = S.create(tmp_path / "s.json", version="2019", login=["VIEW SERVER STATE"])  # no CREATE ANY DATABASE
    _with_database(state, "contention_lab", owner="reader")
    rc, out, _ = R.run_in_process("last-page-insert", state, tmp_path / "rec")
    assert rc == 0, out
    assert S.load(state)["databases"]["contention_lab"]["props"].get("contention_book_owner"), \
        "the owned database is marked once accepted"


def test_a_lab_database_someone_else_owns_is_still_refused(tmp_path):
    state = S.create(tmp_path / "s.json", version="2019", login=["VIEW SERVER STATE", "CREATE ANY DATABASE"])
    _with_database(state, "contention_lab", owner="dba")
    rc, out, _ = R.run_in_process("last-page-insert", state, tmp_path / "rec")
    assert rc != 0 and ("was not created by this harness" in out or "CONTROL" in out), out


def test_running_live_documents_the_owner_property_and_owned_databases():
    text = (REPO / "book" / "running-live.md").read_text(encoding="utf-8")
    assert "contention_book_owner" in text
    assert "owner_sid" in text or "its owner" in text
    assert "allow_foreign_database=True" not in text, "no parameter sets it; the page must not offer it"


# -- 2: Managed Instance General Purpose has no In-Memory OLTP, whatever SERVERPROPERTY says ----------------
def test_mi_general_purpose_server_says_yes_database_says_no(tmp_path):
    state = S.create(tmp_path / "s.json", version="mi", xtp=False)  # General Purpose
    conn = _conn(state)
    cur = conn.cursor()
    assert cur.execute("SELECT CAST(SERVERPROPERTY('IsXTPSupported') AS int)").fetchone()[0] == 1
    assert cur.execute("SELECT CAST(DATABASEPROPERTYEX(DB_NAME(), 'IsXTPSupported') AS int)").fetchone()[0] == 0
    conn.close()


def test_mi_general_purpose_lmax_imoltp_is_refused_by_the_preflight(tmp_path):
    state = S.create(tmp_path / "s.json", version="mi", xtp=False)
    rc, out, seconds = R.run_in_process("lmax-queue", state, tmp_path / "rec", {"variants": "imoltp_v2"})
    assert rc == 2 and seconds < 5, out
    assert "In-Memory OLTP" in out and "FX" not in json.dumps(S.load(state)["databases"].get("contention_lab", {})), out


# -- 3: INSERT ... DEFAULT VALUES is not on the native-module page ------------------------------------------
def test_native_module_insert_default_values_is_rejected():
    sql = ("CREATE PROCEDURE dbo.p WITH NATIVE_COMPILATION, SCHEMABINDING AS BEGIN ATOMIC WITH "
           "(TRANSACTION ISOLATION LEVEL = SNAPSHOT, LANGUAGE = N'us_english') "
           "INSERT INTO dbo.seq DEFAULT VALUES; END;")
    found = RULES.violations(sql, RULES.Context(major=16, trancount=0, mo_tables={"dbo.seq"}, native_procs=set()))
    assert found and found[0].rule.error == 10794, found


def test_setup_imoltp_uses_a_documented_insert_shape():
    text = (REPO / "workloads" / "lmax-queue" / "sqlserver" / "setup_imoltp.sql").read_text()
    code = "\n".join(line.split("--")[0] for line in text.splitlines())
    assert "DEFAULT VALUES" not in code.upper()
    assert re.search(r"INSERT INTO dbo\.lmax_sequence \(filler\) VALUES \(0\)", text)


# -- 4: SQL Server 2022's VIEW SERVER PERFORMANCE STATE reaches the latch, spinlock and host DMVs -------------
@pytest.mark.parametrize("sql", ["SELECT latch_class AS name, waiting_requests_count AS waits, wait_time_ms, "
                                 "max_wait_time_ms FROM sys.dm_os_latch_stats",
                                 "SELECT name, collisions, spins, spins_per_collision, sleep_time, backoffs "
                                 "FROM sys.dm_os_spinlock_stats",
                                 "SELECT host_platform FROM sys.dm_os_host_info"])
def test_2022_view_server_performance_state_is_enough(tmp_path, sql):
    state = S.create(tmp_path / "s.json", version="2022", login=["VIEW SERVER PERFORMANCE STATE"])
    conn = _conn(state)
    conn.cursor().execute(sql).fetchall()
    conn.close()


def test_2022_host_info_needs_view_server_performance_state(tmp_path):
    state = S.create(tmp_path / "s.json", version="2022", login=["CREATE ANY DATABASE"])
    conn = _conn(state)
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(300\)"):
        conn.cursor().execute("SELECT host_platform FROM sys.dm_os_host_info")
    conn.close()


def test_2022_permission_texts_name_view_server_performance_state():
    from contention_book.harness import sqlserver_preflight as pf

    src = (REPO / "src" / "contention_book" / "harness" / "sqlserver_preflight.py").read_text()
    assert "which alone does not reach" not in src
    for page in ("running-live.md", "report-sqlserver-difference.md"):
        text = (REPO / "book" / page).read_text()
        assert "still name VIEW SERVER STATE" not in text, page
    assert pf.grant_for(16) == "VIEW SERVER PERFORMANCE STATE" and pf.grant_for(15) == "VIEW SERVER STATE"


# -- 5: the error numbers ------------------------------------------------------------------------------------
def test_rcsi_without_the_database_to_itself_is_5061(tmp_path):
    state = S.create(tmp_path / "s.json", version="2019")
    a = _conn(state)
    a.cursor().execute("CREATE DATABASE [lab]")
    b = _conn(state, "lab")
    b.cursor().execute("SELECT DB_ID(?)", "lab").fetchall()
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(5061\)"):
        a.cursor().execute("ALTER DATABASE [lab] SET READ_COMMITTED_SNAPSHOT ON")


def test_mi_filename_is_41903(tmp_path):
    state = S.create(tmp_path / "s.json", version="mi")
    conn = _conn(state)
    conn.cursor().execute("CREATE DATABASE [lab]")
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(41903\)"):
        conn.cursor().execute("ALTER DATABASE [lab] ADD FILE (NAME = N'x', FILENAME = N'/x.ndf', SIZE = 8MB)")
    conn.close()


# -- 6: the queue ghost query names a SQL Server table and refuses a missing one ------------------------------
def test_queue_ghost_query_defaults_to_the_sql_server_queue_and_guards_object_id():
    text = (REPO / "workloads/lmax-queue/diagnose/sqlserver/03-queue-ghost-records.sql").read_text()
    default = re.search(r"DECLARE @queue nvarchar\(\d+\) = N'([\w.]+)'", text).group(1)
    created = set(re.findall(r"CREATE TABLE (dbo\.\w+)", (REPO / "workloads/lmax-queue/sqlserver/setup_disk.sql")
                             .read_text()))
    assert default in created, (default, created)
    assert re.search(r"IF OBJECT_ID\(@queue\) IS NULL\s+THROW", text), "a wrong name must stop the query"


# -- 7: ADR is changed with a termination clause ---------------------------------------------------------------
def test_ghost_cleanup_adr_statement_has_rollback_immediate():
    from contention_book.chapters.ghost_cleanup import run_sqlserver as gc

    change = gc._database_options_change("lab", "15.0.4410.1", rcsi=True)
    stmts = change.apply(None)
    adr = [s for s in stmts if "ACCELERATED_DATABASE_RECOVERY" in s]
    assert adr and all(s.endswith("WITH ROLLBACK IMMEDIATE") for s in adr), adr


# -- 8: the spinlock CLEAR is documented ------------------------------------------------------------------------
def test_nothing_calls_the_spinlock_clear_undocumented():
    for rel in ("book/running-live.md", "book/report-sqlserver-difference.md",
                "src/contention_book/harness/sqlserver_preflight.py", "src/contention_book/harness/sqlserver_dmv.py",
                "docs/sqlserver-simulator.md"):
        p = REPO / rel
        if p.exists():
            text = p.read_text()
            assert not re.search(r"spinlock[^.\n]*CLEAR[^.\n]*(undocumented|not documented)|documents CLEAR for the "
                                 r"wait and latch statistics only|spinlock statistics[^|.\n]*does not document",
                                 text, re.I), rel


# -- 9: permissions the simulator ignored -----------------------------------------------------------------------
def _reader(tmp_path, version="2019", grants=("CREATE ANY DATABASE",)):
    state = S.create(tmp_path / "s.json", version=version, login=list(grants))
    conn = _conn(state)
    conn.cursor().execute("CREATE DATABASE [lab]")
    conn.close()
    return state


@pytest.mark.parametrize("rel", ["workloads/ghost-cleanup/sqlserver/open_transaction_check.sql"])
def test_snapshot_and_session_transaction_dmvs_need_view_server_state(tmp_path, rel):
    state = _reader(tmp_path)
    conn = _conn(state, "lab")
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(300\)"):
        conn.cursor().execute((REPO / rel).read_text())


def test_buffer_descriptors_need_view_server_state(tmp_path):
    from contention_book.chapters.last_page_insert import run_common as pages

    state = _reader(tmp_path, version="2017")
    conn = _conn(state, "lab")
    sql, params = pages.buffer_descriptor_query([(5, 1, 100)])
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(300\)"):
        conn.cursor().execute(sql, *params)


def test_page_info_needs_view_database_state_unless_owner(tmp_path):
    from contention_book.chapters.last_page_insert import run_common as pages

    state = S.create(tmp_path / "s.json", version="2019", login=["CREATE ANY DATABASE"])
    _with_database(state, "lab", owner="dba")
    conn = _conn(state, "lab")
    sql, params = pages.page_info_query([(5, 1, 100)])
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(300\)"):
        conn.cursor().execute(sql, *params)


def test_log_writer_shows_only_the_own_session_without_view_server_state(tmp_path):
    state = _reader(tmp_path, grants=("CREATE ANY DATABASE",))
    conn = _conn(state, "lab")
    sql = (REPO / "workloads/logcache-spinlock/sqlserver/log_writer.sql").read_text()
    # dm_os_schedulers and dm_os_tasks are refused without VIEW SERVER STATE; dm_exec_requests alone returns
    # the caller's own request only (never the log writer's)
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(300\)"):
        conn.cursor().execute(sql)


def test_server_event_sessions_shows_nothing_without_its_permission(tmp_path):
    state = _reader(tmp_path, grants=("CREATE ANY DATABASE", "ALTER ANY EVENT SESSION"))
    conn = _conn(state)
    st = S.load(state)
    st["xe_sessions"] = {"x": {"session_ids": [], "started": False, "events": [], "processed": 0, "dropped": 0}}
    Path(state).write_text(json.dumps(st))
    assert conn.cursor().execute("SELECT COUNT(*) FROM sys.server_event_sessions WHERE name = ?", "x").fetchone()[0] \
        == 0
    vss = S.create(tmp_path / "v.json", version="2019", login=["VIEW SERVER STATE"])
    st = S.load(vss)
    st["xe_sessions"] = {"x": {"session_ids": [], "started": False, "events": [], "processed": 0, "dropped": 0}}
    Path(vss).write_text(json.dumps(st))
    conn = _conn(vss)
    assert conn.cursor().execute("SELECT COUNT(*) FROM sys.server_event_sessions WHERE name = ?", "x").fetchone()[0] \
        == 1


def test_partition_ddl_needs_the_database_owner(tmp_path):
    state = S.create(tmp_path / "s.json", version="2019", login=["VIEW SERVER STATE"])
    _with_database(state, "lab", owner="dba")
    conn = _conn(state, "lab")
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(262\)"):
        conn.cursor().execute("CREATE PARTITION FUNCTION lpi_pf_hash (tinyint) AS RANGE LEFT FOR VALUES (0, 1, 2)")
