"""Per-statement permissions in the simulator: a login holding exactly one documented grant may run the statement,
a login holding none gets the documented error.  Logins are sets of grants (server.create(login=[...]))."""
from __future__ import annotations

import pytest

from sqlserver_sim import fake_pyodbc
from sqlserver_sim import permissions as P
from sqlserver_sim import run as R
from sqlserver_sim import server as S

XE = "contention_book_waits_4242"


def _statements():
    from contention_book.harness import sqlserver_xevents as xe
    from contention_book.harness import workloads

    create, start = xe.create_statements(XE, [55])
    ghost_setup = workloads.split_tsql((R.TESTS.parent / "workloads" / "ghost-cleanup" / "sqlserver" /
                                        "setup.sql").read_text(encoding="utf-8"))[0]  # ... DROP TABLE IF EXISTS ...
    return {
        "DDL IN DATABASE": (ghost_setup, None),
        "CREATE DATABASE": ("CREATE DATABASE [other]", None),
        "ALTER DATABASE": ("ALTER DATABASE [lab] SET DELAYED_DURABILITY = ALLOWED", None),
        "DBCC TRACEON": ("DBCC TRACEON(3933, -1)", None),
        "ALTER SERVER CONFIGURATION": ("ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO", None),
        "DBCC SQLPERF CLEAR": ("DBCC SQLPERF('sys.dm_os_wait_stats', CLEAR)", None),
        "CREATE EVENT SESSION": (create, None),
        "ALTER EVENT SESSION": (start, create),
        "DROP EVENT SESSION": (xe.drop_statements(XE)[0], create),
    }


def _server(tmp_path, version, grants, owner="someone else"):
    state = S.create(tmp_path / "state.json", version=version, login=list(grants))
    with S._locked(state) as st:
        db = S._db(st["next_db_id"])
        db["owner"] = owner
        st["databases"]["lab"] = db
        st["next_db_id"] += 1
    return state


def _run(state, sql, before=None):
    database = "lab" if "GhostTest" in sql else "master"  # the DDL runs inside the lab database
    conn = fake_pyodbc.connect(R.connection_string(state, extra=f"Database={database};"), autocommit=True)
    try:
        if before:  # the object the statement works on, made by a sysadmin beforehand
            with S._locked(state) as st:
                saved = st["sysadmin"]
                st["sysadmin"] = True
            try:
                conn.cursor().execute(before)
            finally:
                with S._locked(state) as st:
                    st["sysadmin"] = saved
        conn.cursor().execute(sql)
    finally:
        conn.close()


CASES = [(statement, grant, version) for statement, rule in P.STATEMENTS.items()
         for grant in rule.any_of if grant not in ("OWNER", "SYSADMIN")
         for version in ("2019", "2022") if int(S.VERSIONS[version]["ProductVersion"].split(".")[0])
         >= rule.since.get(grant, 0)]


@pytest.mark.parametrize("statement,grant,version", CASES, ids=lambda x: str(x))
def test_exactly_the_documented_grant_allows_the_statement(statement, grant, version, tmp_path):
    sql, before = _statements()[statement]
    _run(_server(tmp_path, version, [grant]), sql, before)


@pytest.mark.parametrize("statement", sorted(P.STATEMENTS))
def test_without_any_documented_grant_the_statement_gets_the_documented_error(statement, tmp_path):
    sql, before = _statements()[statement]
    rule = P.STATEMENTS[statement]
    others = ["CONTROL DATABASE", "VIEW SERVER STATE", "CREATE ANY DATABASE", "ALTER SETTINGS", "ALTER SERVER STATE",
              "ALTER ANY EVENT SESSION", "CREATE ANY EVENT SESSION", "DROP ANY EVENT SESSION", "ALTER ANY DATABASE"]
    grants = [g for g in others if g not in rule.any_of and not any(g in P.IMPLIED.get(a, ()) for a in rule.any_of)]
    with pytest.raises(fake_pyodbc.ProgrammingError, match=rf"\({rule.error}\)"):
        _run(_server(tmp_path, "2022", grants), sql, before)
    assert rule.page.startswith("https://learn.microsoft.com/sql/") and "#permissions" in rule.page


def test_the_databases_owner_may_alter_it_and_the_2022_grants_do_not_exist_before_2022(tmp_path):
    _run(_server(tmp_path, "2019", [], owner="reader"), "ALTER DATABASE [lab] SET DELAYED_DURABILITY = ALLOWED")
    sql, before = _statements()["DROP EVENT SESSION"]
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(15247\)"):  # DROP ANY EVENT SESSION is 2022's
        _run(_server(tmp_path / "x" if (tmp_path / "x").mkdir() is None else None, "2019",
                     ["VIEW SERVER STATE", "DROP ANY EVENT SESSION"]), sql, before)


@pytest.mark.parametrize("dmv", sorted(d for d in P.DMVS if d.startswith("sys.")))  # DBCC SQLPERF(LOGSPACE):
@pytest.mark.parametrize("version", ["2019", "2022"])                              # a workload batch, run by the matrix
def test_each_dmv_asks_for_the_permission_its_own_page_names(dmv, version, tmp_path):
    major = int(S.VERSIONS[version]["ProductVersion"].split(".")[0])
    needed = P.dmv_permission(dmv, major)
    _run(_server(tmp_path, version, [needed]), f"SELECT TOP (0) 1 FROM {dmv}")
    if needed == P.PUBLIC:  # sys.dm_os_host_info before 2022: granted to public
        return
    if needed in (P.VSPS, P.VDS, P.VDPS):  # VIEW SERVER PERFORMANCE STATE covers VIEW DATABASE PERFORMANCE STATE
        other = []
    else:
        other = [P.VSPS] if major >= 16 else []
    with pytest.raises(fake_pyodbc.ProgrammingError, match=rf"{needed} permission was denied.*\(300\)"):
        _run(_server(tmp_path / "no" if (tmp_path / "no").mkdir() is None else None, version, other),
             f"SELECT TOP (0) 1 FROM {dmv}")
