"""Latch-fairness on SQL Server without a server: T-SQL parses, guard plans and restores, the version gate."""
import pandas as pd
import pytest
from tsql_parse import assert_parses, problems

from contention_book.chapters.latch_fairness import run_sqlserver as ss, spec
from contention_book.harness.runner import RunContext, resolve_params
from contention_book.harness import sqlserver_dmv as dmv
from contention_book.harness import workloads
from contention_book.harness.guard import ServerChangeNotAllowed, StateGuard


class FakeCursor:
    def __init__(self, conn):
        self.conn = conn
        self.description = None

    def execute(self, sql, *params):
        self.conn.log.append(sql)
        if self.conn.fail_on and self.conn.fail_on in sql:
            raise RuntimeError(f"simulated failure running {sql}")
        if sql.startswith("DBCC TRACESTATUS"):
            self.rows = [(3933, 1, 1, 0)] if self.conn.server["tf3933"] else []
        elif "recovery_model_desc" in sql:
            self.rows = [(self.conn.server["recovery"],)]
        else:
            self.rows = []
        if sql.startswith("DBCC TRACEON(3933"):
            self.conn.server["tf3933"] = True
        if sql.startswith("DBCC TRACEOFF(3933"):
            self.conn.server["tf3933"] = False
        if "SET RECOVERY" in sql:
            self.conn.server["recovery"] = sql.rsplit(" ", 1)[1]
        self.description = [("c",)] if self.rows else None
        return self

    def fetchone(self):
        return self.rows[0] if self.rows else None

    def fetchall(self):
        return self.rows

    def nextset(self):
        return False


class FakeConn:
    def __init__(self, server, log, fail_on=None):
        self.server, self.log, self.fail_on = server, log, fail_on

    def cursor(self):
        return FakeCursor(self)

    def close(self):
        pass


def fake_server(tf_on=False, recovery="SIMPLE"):
    return {"tf3933": tf_on, "recovery": recovery}


# -- T-SQL parses ---------------------------------------------------------------------------
@pytest.mark.parametrize("script", sorted(p.stem for p in workloads.workload_dir("latch-fairness", "sqlserver").glob("*.sql")))
def test_every_workload_batch_parses(script):
    if script == "insert":
        batches = ss.insert_batches(11)
    else:
        batches = workloads.load("latch-fairness", "sqlserver", script)
    assert batches
    for i, batch in enumerate(batches):
        assert_parses(batch, f"workloads/latch-fairness/sqlserver/{script}.sql batch {i}")


def test_the_parser_is_not_a_rubber_stamp():
    assert problems("INSERT dbo.T WITH (TABLOCK) SELEC 1 FROM;")


def test_insert_has_maxdop_written_in_and_rows_bound():
    batch = ss.insert_batches(7)[0]
    assert "OPTION (MAXDOP 7)" in batch and batch.count("?") == 1 and "WITH (TABLOCK)" in batch
    for bad in (0, -1, 2.5, "11; DROP TABLE x", True):
        with pytest.raises(ValueError, match="maxdop"):
            ss.insert_batches(bad)
    assert ss.default_maxdop(12) == 11 and ss.default_maxdop(1) == 1


def test_generated_file_layout_parses_and_reaches_one_file_per_scheduler():
    files = pd.DataFrame([(1, "ROWS", "contention_lab", r"D:\data\contention_lab.mdf", 8),
                          (2, "LOG", "contention_lab_log", r"D:\data\contention_lab_log.ldf", 8)],
                         columns=["file_id", "type_desc", "name", "physical_name", "size_mb"])
    stmts = ss.file_layout_statements("contention_lab", files, schedulers=4, data_mb=2048, log_mb=2560)
    assert stmts[0] == "ALTER DATABASE [contention_lab] MODIFY FILE (NAME = N'contention_lab', SIZE = 512MB)"
    adds = [s for s in stmts if "ADD FILE" in s]
    assert len(adds) == 3 and r"FILENAME = N'D:\data\contention_lab_lf1.ndf'" in adds[0]
    assert stmts[-1] == "ALTER DATABASE [contention_lab] MODIFY FILE (NAME = N'contention_lab_log', SIZE = 2560MB)"
    for sql in stmts:
        assert_parses(sql, "generated file layout")
    # run again on the grown layout: nothing left to do
    grown = pd.DataFrame([(1, "ROWS", "contention_lab", "/var/opt/mssql/data/contention_lab.mdf", 512),
                          (2, "LOG", "contention_lab_log", "/var/opt/mssql/data/contention_lab_log.ldf", 2560),
                          *[(2 + i, "ROWS", f"contention_lab_lf{i}", f"/var/opt/mssql/data/contention_lab_lf{i}.ndf", 512)
                            for i in (1, 2, 3)]],
                         columns=["file_id", "type_desc", "name", "physical_name", "size_mb"])
    assert ss.file_layout_statements("contention_lab", grown, schedulers=4, data_mb=2048, log_mb=2560) == []
    with pytest.raises(ValueError, match="missing column"):
        ss.file_layout_statements("contention_lab", files.drop(columns="size_mb"), schedulers=2, data_mb=1, log_mb=1)
    with pytest.raises(Exception, match="plain identifier"):
        ss.file_layout_statements("lab]; DROP DATABASE x; --", files, schedulers=2, data_mb=1, log_mb=1)


def test_statistics_and_counter_queries_parse():
    for kind in ("wait", "latch", "spinlock"):
        assert_parses(dmv.QUERIES[kind], f"{kind} snapshot")
    sql, params = dmv.perf_counters_query(ss.COUNTERS)
    assert_parses(sql, "counter query")
    assert "%:Latches" in params and "Average Latch Wait Time Base" in params
    for stmt in dmv.clear_change().apply(None):
        assert_parses(stmt, "clear")


# -- the version gate -----------------------------------------------------------------------
def test_version_gate_refuses_unfair_before_2019():
    with pytest.raises(ss.UnsupportedVersion, match=r"trace flag 3933.*2019 \(CTP 2.5.*14\.0\.3456\.2 \(major 14\).*Nothing was run"):
        ss.version_gate("14.0.3456.2", ["fair", "unfair"])
    ss.version_gate("14.0.3456.2", ["fair"])  # the fair variant runs anywhere
    ss.version_gate("15.0.4249.2", ["fair", "unfair"])
    ss.version_gate("16.0.4135.4", ["unfair"])


# -- guard plans and restores -----------------------------------------------------------------
def test_unfair_plan_sets_and_restores_the_flag_and_recovery():
    server, log = fake_server(tf_on=False, recovery="SIMPLE"), []
    changes = ss.variant_changes("unfair", "contention_lab", flag_on_now=False)
    guard = StateGuard(lambda db: FakeConn(server, log), changes, allow_server_changes=True, log=lambda *_: None)
    plan = {p["change"].split(":")[0].split(" ")[0]: p for p in guard.plan()}
    rec, tf = plan["database"], plan["global"]
    assert rec["apply"] == ["ALTER DATABASE [contention_lab] SET RECOVERY SIMPLE",
                            "ALTER DATABASE [contention_lab] SET RECOVERY FULL"]
    assert rec["restore"] == ["ALTER DATABASE [contention_lab] SET RECOVERY SIMPLE"]
    assert tf["prior"] is False and tf["apply"] == ["DBCC TRACEON(3933, -1)"]
    assert tf["restore"] == ["DBCC TRACEOFF(3933, -1)"]
    for p in plan.values():
        for sql in p["apply"] + p["restore"]:
            assert_parses(sql, "guard statement")


def test_unfair_needs_the_opt_in():
    changes = ss.variant_changes("unfair", "contention_lab", flag_on_now=False)
    with pytest.raises(ServerChangeNotAllowed, match="global trace flag 3933"):
        with StateGuard(lambda db: FakeConn(fake_server(), []), changes, log=lambda *_: None):
            pass


def test_flag_and_recovery_restored_after_a_failure_mid_run():
    server, log = fake_server(tf_on=False, recovery="BULK_LOGGED"), []
    changes = ss.variant_changes("unfair", "contention_lab", flag_on_now=False)
    with pytest.raises(RuntimeError, match="the insert failed"):
        with StateGuard(lambda db: FakeConn(server, log), changes, allow_server_changes=True, log=lambda *_: None):
            assert server == {"tf3933": True, "recovery": "FULL"}
            raise RuntimeError("the insert failed")
    assert server == {"tf3933": False, "recovery": "BULK_LOGGED"}
    assert log.index("DBCC TRACEOFF(3933, -1)") < log.index("ALTER DATABASE [contention_lab] SET RECOVERY BULK_LOGGED")


def test_a_failure_while_applying_restores_what_was_applied_and_nothing_else():
    """A refused TRACEON (Msg 2571 without sysadmin) changed nothing: no TRACEOFF, no false 'restore failed'."""
    server, log = fake_server(tf_on=False, recovery="SIMPLE"), []
    changes = ss.variant_changes("unfair", "contention_lab", flag_on_now=False)
    with pytest.raises(RuntimeError, match="simulated failure running DBCC TRACEON"):
        with StateGuard(lambda db: FakeConn(server, log, fail_on="DBCC TRACEON"), changes,
                        allow_server_changes=True, log=lambda *_: None):
            pass
    assert "DBCC TRACEOFF(3933, -1)" not in log and not server["tf3933"]
    assert server["recovery"] == "SIMPLE"  # the recovery model, changed before, was restored


def test_a_flag_already_on_is_left_on_and_the_fair_variant_turns_it_off_for_the_run():
    server, log = fake_server(tf_on=True), []
    with StateGuard(lambda db: FakeConn(server, log), ss.variant_changes("unfair", "contention_lab", flag_on_now=True),
                    allow_server_changes=True, log=lambda *_: None):
        pass
    assert not any(s.startswith(("DBCC TRACEON", "DBCC TRACEOFF")) for s in log) and server["tf3933"]
    log.clear()
    fair = ss.variant_changes("fair", "contention_lab", flag_on_now=True)
    assert fair[-1].scope == "server"
    with StateGuard(lambda db: FakeConn(server, log), fair, allow_server_changes=True, log=lambda *_: None):
        assert server["tf3933"] is False
    assert server["tf3933"] is True and "DBCC TRACEON(3933, -1)" in log
    # with the flag off, the fair variant changes nothing server-wide and needs no opt-in
    assert [c.scope for c in ss.variant_changes("fair", "contention_lab", flag_on_now=False)] == ["database"]


def test_clearing_statistics_is_an_extra_opt_in():
    changes = ss.variant_changes("fair", "contention_lab", flag_on_now=False, clear_stats=True)
    assert changes[-1].scope == "server" and "cannot be restored" in changes[-1].description
    params = resolve_params(spec.SPEC, "sqlserver", {"clear_stats": "true"})
    with pytest.raises(ServerChangeNotAllowed, match="clear_stats=true .* needs allow_server_changes"):
        ss.run_sqlserver(RunContext(spec.SPEC, "sqlserver", params, None, print, None, False))


def test_log_space_row_and_delta_rows():
    frame = pd.DataFrame([("master", 2.0, 40.0, 0), ("contention_lab", 2560.0, 0.8, 0)],
                         columns=["Database Name", "Log Size (MB)", "Log Space Used (%)", "Status"])
    assert ss.log_space_row(frame, "contention_lab") == {"log_size_mb": 2560.0, "log_used_pct": 0.8}
    with pytest.raises(ValueError, match="no row for database other"):
        ss.log_space_row(frame, "other")
    before = pd.DataFrame([("NESTING_TRANSACTION_FULL", 1000, 500, 30)], columns=["name", "waits", "wait_time_ms", "max_wait_time_ms"])
    after = before.assign(waits=1057, wait_time_ms=501, max_wait_time_ms=30)
    d = dmv.delta(before, after, "latch").iloc[0]
    assert d["waits"] == 57 and d["max_wait_time_ms_bound"] == "at most"  # a maximum cannot be subtracted
