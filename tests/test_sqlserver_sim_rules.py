"""The simulator's T-SQL rules: each one refuses a batch that breaks it with the documented error, and every batch
shipped in workloads/*/sqlserver passes them all.

A breaking batch is sent through the fake pyodbc connection, as the harness would send it, so the rule is what
answers (before any known-batch matching).  The exclusive-access rules need other sessions and are exercised in
test_sqlserver_run_lock.py as well as here.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from sqlserver_sim import fake_pyodbc
from sqlserver_sim import rules as RULES
from sqlserver_sim import run as R
from sqlserver_sim import server as S

REPO = Path(__file__).resolve().parents[1]
RING = ("CREATE TABLE dbo.ring (slot bigint NOT NULL, msg char(10) COLLATE Latin1_General_100_BIN2 NOT NULL, "
        "CONSTRAINT pk_ring PRIMARY KEY NONCLUSTERED HASH (slot) WITH (BUCKET_COUNT = 1024)) "
        "WITH (MEMORY_OPTIMIZED = ON, DURABILITY = SCHEMA_AND_DATA);")
DISK = "CREATE TABLE dbo.disk (id int NOT NULL PRIMARY KEY);"
GOOD_PROC = ("CREATE PROCEDURE dbo.good @slot bigint WITH NATIVE_COMPILATION, SCHEMABINDING AS BEGIN ATOMIC WITH "
             "(TRANSACTION ISOLATION LEVEL = SNAPSHOT, LANGUAGE = N'us_english') "
             "UPDATE dbo.ring SET msg = 'x' WHERE slot = @slot; END;")


def native(body: str, options: str = "TRANSACTION ISOLATION LEVEL = SNAPSHOT, LANGUAGE = N'us_english'",
           header: str = "WITH NATIVE_COMPILATION, SCHEMABINDING") -> str:
    return (f"CREATE PROCEDURE dbo.bad @slot bigint {header} AS BEGIN ATOMIC WITH ({options}) {body} END;")


# (rule, breaking batch, error number, text the message contains)
BREAKING = [
    ("native.schemabinding", native("UPDATE dbo.ring SET msg = 'x' WHERE slot = @slot;",
                                    header="WITH NATIVE_COMPILATION"), 10794, "NATIVE_COMPILATION"),
    ("native.atomic", "CREATE PROCEDURE dbo.bad WITH NATIVE_COMPILATION, SCHEMABINDING AS BEGIN "
                      "UPDATE dbo.ring SET msg = 'x'; END;", 10794, "BEGIN ATOMIC"),
    ("atomic.required", native("UPDATE dbo.ring SET msg = 'x';", options="TRANSACTION ISOLATION LEVEL = SNAPSHOT"),
     10794, "LANGUAGE"),
    ("atomic.isolation", native("UPDATE dbo.ring SET msg = 'x';",
                                options="TRANSACTION ISOLATION LEVEL = READ COMMITTED, LANGUAGE = N'us_english'"),
     10794, "READ COMMITTED"),
    ("atomic.option", native("UPDATE dbo.ring SET msg = 'x';", options="TRANSACTION ISOLATION LEVEL = SNAPSHOT, "
                                                                       "LANGUAGE = N'us_english', XACT_ABORT = ON"),
     10794, "XACT_ABORT"),
    ("native.cursor", native("DECLARE c CURSOR FOR SELECT slot FROM dbo.ring;"), 12306, "Cursors"),
    ("native.multirow_insert", native("INSERT INTO dbo.ring (slot, msg) VALUES (1, 'a'), (2, 'b');"), 12309,
     "multiple rows"),
    ("native.cte", native("WITH s AS (SELECT slot FROM dbo.ring) SELECT slot FROM s;"), 12310, "Common Table"),
    ("native.update_from", native("UPDATE dbo.ring SET msg = 'x' FROM dbo.ring;"), 12319, "FROM clause"),
    ("native.temp_table", native("INSERT INTO #t (slot) SELECT slot FROM dbo.ring;"), 12322, "Temporary tables"),
    ("native.transaction", native("BEGIN TRANSACTION; UPDATE dbo.ring SET msg = 'x'; COMMIT;"), 10794,
     "BEGIN TRANSACTION"),
    ("native.dynamic_exec", native("EXEC sys.sp_executesql N'SELECT 1';"), 12340, "object name"),
    ("native.exec_interpreted", native("EXEC dbo.interpreted @slot;"), 12342, "natively compiled modules"),
    ("native.construct", native("SELECT slot FROM dbo.ring WHERE msg LIKE 'a%';"), 10794, "'LIKE'"),
    ("native.construct", native("SELECT @slot = NEXT VALUE FOR dbo.seq;"), 10794, "NEXT VALUE FOR"),
    ("native.construct", native("SET NOCOUNT ON; UPDATE dbo.ring SET msg = 'x';"), 10794, "'SET'"),
    ("native.construct", native("UPDATE dbo.ring WITH (SNAPSHOT) SET msg = 'x';"), 10794, "'SNAPSHOT'"),
    ("native.version", native("SELECT @slot = CASE WHEN slot > 0 THEN 1 ELSE 0 END FROM dbo.ring;"), 10794,
     "'CASE'"),
    ("native.disk_table", native("UPDATE dbo.disk SET id = 1;"), 10775, "dbo.disk"),
    ("mot.clustered", RING.replace("NONCLUSTERED HASH (slot) WITH (BUCKET_COUNT = 1024)", "CLUSTERED (slot)"),
     12317, "Specify a NONCLUSTERED index"),
    ("mot.on", RING.replace("WITH (MEMORY_OPTIMIZED = ON, DURABILITY = SCHEMA_AND_DATA);",
                            "ON [PRIMARY] WITH (MEMORY_OPTIMIZED = ON);"), 10794, "'ON'"),
    ("mot.bucket_count", RING.replace(" WITH (BUCKET_COUNT = 1024)", ""), 10794, "BUCKET_COUNT"),
    ("mot.hash_order", RING.replace("HASH (slot)", "HASH (slot DESC)"), 10787, "hash index"),
    ("mot.index_option", RING.replace("BUCKET_COUNT = 1024", "BUCKET_COUNT = 1024, FILLFACTOR = 90"), 10794,
     "FILLFACTOR"),
    ("mot.type", RING.replace("msg char(10) COLLATE Latin1_General_100_BIN2", "msg xml"), 10794, "'xml'"),
    ("mot.truncate", "TRUNCATE TABLE dbo.ring;", 10794, "TRUNCATE TABLE"),
    ("txn.statement", "BEGIN TRANSACTION; ALTER DATABASE [lab] SET RECOVERY SIMPLE; COMMIT;", 226,
     "ALTER DATABASE statement not allowed within multi-statement transaction"),
    ("txn.statement", "BEGIN TRANSACTION; CREATE DATABASE [other]; COMMIT;", 226, "CREATE DATABASE statement"),
    ("txn.mo_ddl", "BEGIN TRANSACTION; " + RING + " COMMIT;", 12331, "inside user transactions"),
]


def _lab(tmp_path, version="2016sp2"):
    state = S.create(tmp_path / "state.json", version=version)
    with S._locked(state) as st:
        db = S._db(st["next_db_id"])
        db.update(owner="sa", filegroups=["FX"], mo_tables=["dbo.ring"], native_procs=["dbo.good"],
                  tables={"disk": {"rows": 0}})
        st["databases"]["lab"] = db
        st["next_db_id"] += 1
    conn = fake_pyodbc.connect(R.connection_string(state, extra="Database=lab;"), autocommit=True)
    conn.cursor().execute("SET LOCK_TIMEOUT 500")
    return state, conn


@pytest.mark.parametrize("rule,batch,error,text", BREAKING, ids=[f"{b[0]}-{i}" for i, b in enumerate(BREAKING)])
def test_each_rule_refuses_a_batch_that_breaks_it_with_the_documented_error(rule, batch, error, text, tmp_path):
    state, conn = _lab(tmp_path)
    with pytest.raises(fake_pyodbc.ProgrammingError) as info:
        conn.cursor().execute(batch)
    message = info.value.args[1]
    assert f"({error})" in message and text in message, message
    ctx = S.rule_context(S.load(state), conn.session)
    assert RULES.violations(S._norm(batch), ctx)[0].rule.key == rule


def test_every_rule_has_a_breaking_batch_a_page_and_a_number():
    covered = {b[0] for b in BREAKING} | {"exclusive.rcsi", "exclusive.adr"}
    assert covered == set(RULES.RULES)
    for rule in RULES.RULES.values():
        assert rule.page.startswith("https://learn.microsoft.com/"), rule
        assert rule.error > 0


@pytest.mark.parametrize("option,rule", [("SET READ_COMMITTED_SNAPSHOT ON", "exclusive.rcsi"),
                                         ("SET ACCELERATED_DATABASE_RECOVERY = OFF", "exclusive.adr")])
def test_exclusive_access_options_wait_for_the_other_connections_and_fail_at_the_lock_timeout(option, rule,
                                                                                                tmp_path):
    state, conn = _lab(tmp_path, "2022")
    guard = fake_pyodbc.connect(R.connection_string(state), autocommit=True)
    guard.cursor().execute("SET LOCK_TIMEOUT 500")
    with pytest.raises(fake_pyodbc.ProgrammingError, match=rf"\({RULES.RULES[rule].error}\)"):
        guard.cursor().execute(f"ALTER DATABASE [lab] {option}")
    conn.close()  # alone in the database now: the option changes
    guard.cursor().execute(f"ALTER DATABASE [lab] {option}")


def test_the_batches_that_follow_the_rules_are_still_answered(tmp_path):
    state, conn = _lab(tmp_path, "2019")
    conn.cursor().execute("SELECT DB_ID(?)", "lab")
    assert not RULES.violations(S._norm(GOOD_PROC), S.rule_context(S.load(state), conn.session))
    assert not RULES.violations(S._norm(RING), RULES.Context(major=13))
    # CASE in a natively compiled module is supported from SQL Server 2017 (the NATIVE page)
    case = S._norm(native("SELECT @slot = CASE WHEN slot > 0 THEN 1 ELSE 0 END FROM dbo.ring;"))
    assert not RULES.violations(case, RULES.Context(major=14, mo_tables={"dbo.ring"}))


def _shipped(chapter_dir: Path) -> list[tuple[str, str]]:
    """(file, normalised batch) of a chapter's scripts, the setup scripts first (as the chapters run them)."""
    from contention_book.harness import workloads

    order = sorted(chapter_dir.glob("*.sql"), key=lambda p: (not p.stem.startswith("setup")
                                                             and p.stem != "memory_optimized_filegroup", p.stem))
    out = []
    for path in order:
        for batch in workloads.split_tsql(path.read_text(encoding="utf-8")):
            n = S._norm(batch).replace("{{database}}", "contention_lab").replace("{{procedure}}", "lmax_loop_v2")
            if n:
                out.append((path.name, re.sub(r"\{\{\s*\w+\s*\}\}", "x", n)))
    return out


@pytest.mark.parametrize("major", [13, 16])
@pytest.mark.parametrize("chapter_dir", sorted((REPO / "workloads").glob("*/sqlserver")), ids=lambda p: p.parent.name)
def test_every_shipped_batch_passes_every_rule(chapter_dir, major):
    mo, native_procs = set(), set()
    checked = 0
    for name, batch in _shipped(chapter_dir):
        found = RULES.violations(batch, RULES.Context(major=major, mo_tables=mo, native_procs=native_procs))
        assert not found, f"{chapter_dir.parent.name}/{name}: {[v.message for v in found]}\n{batch[:300]}"
        RULES.record(batch, mo, native_procs)
        checked += 1
    assert checked
    if chapter_dir.parent.name == "lmax-queue":  # the rules saw the natively compiled modules and their tables
        assert mo == {"dbo.lmax_ring", "dbo.lmax_sequence"} and "dbo.lmax_loop_v3" in native_procs


def test_the_report_page_lists_every_placeholder_error_number():
    """docs/sqlserver-simulator.md (moved out of the book by issue 31.17) names each rule whose number no page gives,
    with that number."""
    from sqlserver_sim import permissions as P

    page = (REPO / "docs" / "sqlserver-simulator.md").read_text(encoding="utf-8")
    rows = {line.split("|")[1].strip(): line for line in page.splitlines() if re.match(r"^\| \d", line)}
    placeholders = [(r.key, r.error) for r in RULES.RULES.values() if r.placeholder or r.runtime] + \
                   [(r.statement, r.error) for r in P.STATEMENTS.values() if r.placeholder]
    for key, number in placeholders:
        assert str(number) in rows and f"`{key}`" in rows[str(number)], (key, number)
