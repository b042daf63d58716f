"""Answers computed from the statement (issue 33): the simulator evaluates what a batch names against its state.

Each system view's rows carry every column of its catalogue entry (``documented_columns()``); a SELECT returns the
columns it selects and the rows its own filters let through; a name that is not there is refused as a server
refuses it; what the simulator cannot evaluate is refused with the statement named.  Every diagnose query
(workloads/*/diagnose/sqlserver) is executed, not only parsed, and returns the columns it selects.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sqlserver_sim import fake_pyodbc
from sqlserver_sim import run as R
from sqlserver_sim import server as S
from sqlserver_sim import views as V

REPO = Path(__file__).resolve().parents[1]
DIAGNOSE = sorted((REPO / "workloads").glob("*/diagnose/sqlserver/*.sql"))

# The result set each diagnose file ends with, by hand from the file (its last SELECT's column names).
DIAGNOSE_COLUMNS = {
    "ghost-cleanup/01-open-versioning-transactions.sql": [
        "session_id", "is_snapshot", "elapsed_time_seconds", "status", "login_name", "host_name", "program_name",
        "last_request_end_time"],
    "ghost-cleanup/02-version-ghosts-per-index.sql": [
        "table_name", "index_name", "index_level", "page_count", "record_count", "ghost_record_count",
        "version_ghost_record_count", "avg_page_space_used_in_percent"],
    "ghost-cleanup/03-skipped-ghosts-per-second.sql": ["skipped_ghosted_records_per_second"],
    "last-page-insert/01-page-latch-waiters.sql": ["resource_description", "wait_type", "waiting_tasks",
                                                   "longest_wait_ms"],
    "last-page-insert/02-waited-page-to-index.sql": [
        "session_id", "wait_type", "wait_ms", "database_id", "file_id", "page_id", "schema_name", "object_name",
        "index_id", "partition_id", "page_type_desc", "page_level", "is_last_page"],
    "last-page-insert/03-index-latch-waits.sql": [
        "schema_name", "object_name", "index_name", "partition_number", "leaf_insert_count", "page_latch_wait_count",
        "page_latch_wait_in_ms", "avg_wait_ms"],
    "last-page-insert/04-page-latch-waits-over-an-interval.sql": ["wait_type", "waits", "wait_ms", "avg_wait_ms"],
    "last-page-insert/05-identity-clustered-indexes.sql": [
        "schema_name", "object_name", "index_name", "first_key_column", "optimize_for_sequential_key", "partitions"],
    "latch-fairness/01-latch-deltas.sql": ["latch_class", "waits", "wait_time_ms", "avg_wait_us",
                                           "max_wait_ms_since_startup"],
    "latch-fairness/02-spinlock-deltas.sql": ["name", "collisions", "spins", "spins_per_collision", "backoffs",
                                              "sleep_time"],
    "latch-fairness/03-latch-waiters-now.sql": ["session_id", "command", "wait_type", "latch", "waiting_tasks",
                                                "longest_wait_ms"],
    "lmax-queue/01-queue-waits-over-a-minute.sql": ["wait_type", "waits", "wait_ms", "signal_ms"],
    "lmax-queue/02-queue-index-contention.sql": [
        "table_name", "index_name", "leaf_insert_count", "leaf_delete_count", "leaf_ghost_count",
        "page_latch_wait_count", "page_latch_wait_in_ms", "row_lock_wait_count", "row_lock_wait_in_ms"],
    "lmax-queue/03-queue-ghost-records.sql": ["index_name", "index_level", "page_count", "record_count",
                                              "ghost_record_count", "version_ghost_record_count"],
    "lmax-queue/04-spinlocks-over-a-minute.sql": ["name", "collisions", "spins", "backoffs"],
    "logcache-spinlock/01-log-spinlock-deltas.sql": ["name", "collisions", "spins", "spins_per_collision",
                                                     "backoffs", "sleep_time"],
    "logcache-spinlock/02-log-wait-deltas.sql": ["wait_type", "waits", "wait_time_ms", "signal_wait_time_ms",
                                                 "avg_wait_ms"],
    "logcache-spinlock/03-log-writer-placement.sql": ["session_id", "command", "scheduler_id", "status", "cpu_id",
                                                      "parent_node_id"],
}
# Columns every row leaves NULL, because the state does not model them (or, forwarded_record_count, because the
# page says it is NULL for an index); every other column of a view with rows has a value in at least one row.
UNMODELLED = {
    "sys.dm_os_waiting_tasks": ["resource_address", "blocking_task_address", "blocking_session_id",
                                "blocking_exec_context_id"],
    "sys.dm_exec_requests": ["page_resource"],
    "sys.dm_exec_sessions": ["login_time", "last_request_end_time"],
    "sys.dm_db_index_physical_stats": ["forwarded_record_count"],
}
# The chapters' tables the diagnose files read, created as the chapters' own setup files create them.
SETUP = [("ghost-cleanup", "setup", ()), ("last-page-insert", "create_sequential", ())]


def _batches(text: str) -> list[str]:
    from contention_book.harness import workloads

    return [b for b in workloads.split_tsql(text) if b.strip()]


def _lab(tmp_path, version="2022", phenomena=False, **kw):
    state = S.create(tmp_path / "s.json", version=version, phenomena=phenomena, **kw)
    st = S.load(state)
    st["databases"]["lab"] = S._db(st["next_db_id"])
    st["databases"]["lab"]["owner"] = "sa"
    Path(state).write_text(json.dumps(st))
    return state, fake_pyodbc.connect(R.connection_string(state, extra="Database=lab;"), autocommit=True)


def _run(conn, sql: str, *params):
    cur = conn.cursor()
    cur.execute(sql, *params)
    sets = []
    while True:
        if cur.description is not None:
            sets.append(([d[0] for d in cur.description], [tuple(r) for r in cur.fetchall()]))
        if not cur.nextset():
            return sets


def _setup(conn) -> None:
    for chapter, script, params in SETUP:
        for batch in _batches((REPO / "workloads" / chapter / "sqlserver" / f"{script}.sql").read_text()):
            _run(conn, batch, *params)
    _run(conn, "CREATE TABLE dbo.lmax_disk_queue (id bigint IDENTITY(1, 1) NOT NULL, pushed_at datetime2 NOT NULL, "
               "message char(300) NOT NULL, CONSTRAINT pk_lmax_disk_queue PRIMARY KEY CLUSTERED (id));")
    for _ in range(3):
        _run(conn, "INSERT INTO dbo.lpi_sequential (col1) VALUES (REPLICATE('x', 32));")


# -- every documented column ------------------------------------------------------------------------
def test_every_row_the_simulator_computes_carries_every_documented_column(tmp_path):
    state, conn = _lab(tmp_path, phenomena=True)
    _setup(conn)
    st = S.load(state)
    st["sessions"]["77"] = {"database": "lab", "pid": 1, "last_wait": "PAGELATCH_EX", "snapshot_txn": True}
    st["stats"]["latch"]["BUFFER"] = [3, 4, 2]
    st["stats"]["spinlock"]["LOGCACHE_ACCESS"] = [5, 500, 0, 1]
    sess = S.Session(60, "lab")
    documented = S.documented_columns()
    assert set(V.PROVIDERS) <= set(documented), sorted(set(V.PROVIDERS) - set(documented))
    empty = []
    for name in V.PROVIDERS:
        args = {"sys.dm_db_index_physical_stats": [st["databases"]["lab"]["id"], None, None, None, "DETAILED"],
                "sys.dm_db_index_operational_stats": [st["databases"]["lab"]["id"], None, None, None],
                "sys.dm_db_page_info": [None, None, None, "DETAILED"], "sys.fn_pagerescracker": [None]}.get(name, [])
        rows = V.rows(st, sess, name, args)
        for row in rows:
            assert tuple(row) == documented[name], (name, tuple(row))
        if not rows:
            empty.append(name)
            continue
        nulls = [c for c in documented[name] if all(r[c] is None for r in rows)]
        assert nulls == UNMODELLED.get(name, []), (name, nulls)
    # the page-to-index functions need a page_resource, which the simulator's requests do not carry
    assert set(empty) <= {"sys.fn_pagerescracker", "sys.dm_db_page_info", "sys.partition_functions",
                          "sys.partition_schemes", "sys.extended_properties"}, empty


def test_select_star_returns_every_documented_column_of_the_view(tmp_path):
    _state, conn = _lab(tmp_path)
    for name in ("sys.dm_os_wait_stats", "sys.dm_os_latch_stats", "sys.dm_os_spinlock_stats", "sys.dm_os_sys_info",
                 "sys.dm_os_schedulers", "sys.dm_os_waiting_tasks"):
        (cols, _rows), = _run(conn, f"SELECT * FROM {name};")
        assert tuple(cols) == S.documented_columns()[name], name


# -- the shape comes from the statement --------------------------------------------------------------
def test_a_select_returns_the_columns_it_names_and_the_rows_its_filter_keeps(tmp_path):
    state, conn = _lab(tmp_path)
    waits = S.load(state)["stats"]["wait"]
    (cols, rows), = _run(conn, "SELECT w.wait_time_ms AS t, w.wait_type FROM sys.dm_os_wait_stats AS w "
                               "WHERE w.wait_type LIKE N'SLEEP[_]%' ORDER BY w.wait_type DESC;")
    assert cols == ["t", "wait_type"]
    expected = sorted(((v[1], k) for k, v in waits.items() if k.startswith("SLEEP_")), key=lambda r: r[1],
                      reverse=True)
    assert rows == expected and rows
    (cols, rows), = _run(conn, "SELECT n = COUNT(*) FROM sys.dm_os_wait_stats WHERE waiting_tasks_count > ?;", 10**9)
    assert (cols, rows) == (["n"], [(0,)])


def test_a_workload_query_changed_by_a_reader_gets_the_changed_answer(tmp_path):
    """Nothing is matched by a workload file's text: the index query with a column added and its order reversed
    is answered for what it now asks."""
    _state, conn = _lab(tmp_path)
    _setup(conn)
    text = (REPO / "workloads/ghost-cleanup/sqlserver/index_stats.sql").read_text()
    assert "ORDER BY ips.index_level;" in text
    changed = text.replace("FROM sys.dm_db_index_physical_stats", ",\n    [extra] = ips.index_type_desc\nFROM "
                           "sys.dm_db_index_physical_stats").replace("ORDER BY ips.index_level;",
                                                                      "ORDER BY ips.index_level DESC;")
    (cols, rows), = _run(conn, changed)
    assert cols[-1] == "extra" and cols[:2] == ["level", "pages"]
    assert [r[-1] for r in rows] == ["CLUSTERED INDEX"] * len(rows) and rows
    assert [r[0] for r in rows] == sorted((r[0] for r in rows), reverse=True)


def test_user_tables_are_read_from_the_simulated_rows(tmp_path):
    _state, conn = _lab(tmp_path)
    _setup(conn)
    (cols, rows), = _run(conn, (REPO / "workloads/last-page-insert/sqlserver/count_rows.sql").read_text()
                         .replace("{{table}}", "lpi_sequential"))
    assert (cols, rows) == (["row_count"], [(3,)])
    (cols, rows), = _run(conn, "SELECT TOP (2) ID FROM dbo.lpi_sequential ORDER BY ID DESC;")
    assert rows == [(3,), (2,)]
    (cols, rows), = _run(conn, (REPO / "workloads/ghost-cleanup/sqlserver/row_state.sql").read_text())
    assert (cols, rows) == (["updates_done", "live_rows"], [(0, 1)])


@pytest.mark.parametrize("sql, number", [
    ("SELECT no_such_column FROM dbo.GhostTest;", 207),
    ("SELECT g.id FROM dbo.GhostTestz AS g;", 208),
    ("SELECT x.id FROM dbo.GhostTest AS g;", 4104),
    ("SELECT wait_type FROM sys.dm_os_wait_stats AS a JOIN sys.dm_os_wait_stats AS b ON b.wait_type = a.wait_type;",
     209),
    ("INSERT INTO dbo.lpi_sequential (col2) VALUES ('x');", 207),
    ("INSERT INTO dbo.lpi_sequential (ID) VALUES (1);", 515),
    ("SELECT latch_class FROM #never_made;", 208),
    ("DROP TABLE dbo.not_there;", 3701),
    ("UPDATE dbo.GhostTest SET idx = 1;", 207),
    ("UPDATE dbo.lpi_sequential SET ID = 7;", 8102),
    ("DELETE FROM dbo.GhostTest WHERE nothing = 1;", 207),
    ("DELETE FROM dbo.GhostTestz;", 208),
])
def test_a_name_that_is_not_there_is_refused_as_a_server_refuses_it(tmp_path, sql, number):
    _state, conn = _lab(tmp_path)
    _setup(conn)
    with pytest.raises(fake_pyodbc.Error, match=rf"\({number}\)"):
        _run(conn, sql)


def test_what_the_simulator_cannot_evaluate_is_refused_with_the_statement_named(tmp_path):
    _state, conn = _lab(tmp_path)
    with pytest.raises(S.UnknownStatement, match=r"SOUNDEX.*SELECT SOUNDEX\(name\) FROM sys\.databases"):
        _run(conn, "SELECT SOUNDEX(name) FROM sys.databases;")
    with pytest.raises(S.UnknownStatement, match="never taught this statement: 'MERGE dbo.GhostTest"):
        _run(conn, "MERGE dbo.GhostTest AS t USING (SELECT 1 AS id) AS s ON t.id = s.id WHEN MATCHED THEN DELETE;")


# -- the diagnose files, executed ------------------------------------------------------------------
def test_every_diagnose_file_is_listed_here():
    assert sorted(DIAGNOSE_COLUMNS) == sorted(f"{p.parts[-4]}/{p.name}" for p in DIAGNOSE)


@pytest.mark.parametrize("version", ["2019", "2022", "mi"])
@pytest.mark.parametrize("path", DIAGNOSE, ids=[f"{p.parts[-4]}/{p.name}" for p in DIAGNOSE])
def test_each_diagnose_query_is_answered_with_the_columns_it_selects(tmp_path, path, version):
    _state, conn = _lab(tmp_path, version=version, phenomena=True)
    _setup(conn)
    sets = []
    for batch in _batches(path.read_text(encoding="utf-8")):
        sets += _run(conn, batch)
    assert sets, f"{path.name} returned no result set"
    assert sets[-1][0] == DIAGNOSE_COLUMNS[f"{path.parts[-4]}/{path.name}"]


def test_diagnose_answers_follow_the_simulated_tables(tmp_path):
    _state, conn = _lab(tmp_path)
    _setup(conn)
    run = lambda rel: [s for b in _batches((REPO / "workloads" / rel).read_text()) for s in _run(conn, b)][-1][1]
    ghosts = run("ghost-cleanup/diagnose/sqlserver/02-version-ghosts-per-index.sql")
    assert [(r[0], r[1], r[2], r[4]) for r in ghosts] == [("GhostTest", "PK_GhostTest", 0, 1)]
    identity = run("last-page-insert/diagnose/sqlserver/05-identity-clustered-indexes.sql")
    assert sorted(r[:5] for r in identity) == [("dbo", "lmax_disk_queue", "pk_lmax_disk_queue", "id", 0),
                                                ("dbo", "lpi_sequential", "PK_lpi_sequential", "ID", 0)]
    writer = run("logcache-spinlock/diagnose/sqlserver/03-log-writer-placement.sql")
    assert [r[1] for r in writer] == ["LOG WRITER"]
    queue = run("lmax-queue/diagnose/sqlserver/03-queue-ghost-records.sql")
    assert [(r[0], r[1], r[3]) for r in queue] == [("pk_lmax_disk_queue", 0, 0)]


def test_updates_and_deletes_change_the_simulated_rows(tmp_path):
    state, conn = _lab(tmp_path, phenomena=True)
    _setup(conn)
    chunk = (REPO / "workloads/ghost-cleanup/sqlserver/update_chunk.sql").read_text()
    _run(conn, chunk, 5)
    (cols, rows), = _run(conn, (REPO / "workloads/ghost-cleanup/sqlserver/row_state.sql").read_text())
    assert rows == [(5, 1)]  # UPDATE TOP (1) ... SET g.id = g.id + 1, five times
    locks = S.load(state)["counters"]["locks"]
    _run(conn, "CREATE TABLE dbo.plain (k int NOT NULL, v int NULL, CONSTRAINT pk_plain PRIMARY KEY CLUSTERED (k));")
    _run(conn, "INSERT INTO dbo.plain (k, v) VALUES (1, 10), (2, 20), (3, 30);")
    _run(conn, "UPDATE dbo.plain SET v = v + 1 WHERE k >= 2;")  # not the key: no row moves, no ghost
    assert S.load(state)["counters"]["locks"] == locks
    (_c, rows), = _run(conn, "SELECT k, v FROM dbo.plain ORDER BY k;")
    assert rows == [(1, 10), (2, 21), (3, 31)]
    _run(conn, "DELETE FROM dbo.plain WHERE v > 20;")
    (_c, rows), = _run(conn, "SELECT COUNT(*) FROM dbo.plain;")
    assert rows == [(1,)]


def test_procedures_and_sequences_are_recorded_and_an_exec_is_checked_against_them(tmp_path):
    state, conn = _lab(tmp_path, phenomena=True)
    _setup(conn)
    setup = (REPO / "workloads/logcache-spinlock/sqlserver/setup.sql").read_text().replace("{{database}}", "lab")
    for batch in _batches(setup):
        _run(conn, batch)
    db = S.load(state)["databases"]["lab"]
    assert "FG_LOGCACHE" in db["filegroups"] and any(f["name"] == "logcache_data" for f in db["files"])
    assert db["procedures"]["usp_logcache_insert"]["params"] == ["@rowstoinsert", "@offset"]
    before = dict(S.load(state)["stats"]["spinlock"])
    _run(conn, (REPO / "workloads/logcache-spinlock/sqlserver/insert_call.sql").read_text(), 200, 0)
    assert S.load(state)["stats"]["spinlock"]["LOGCACHE_ACCESS"][0] > before.get("LOGCACHE_ACCESS", [0])[0]
    with pytest.raises(fake_pyodbc.Error, match=r"\(2812\)"):
        _run(conn, "EXEC dbo.usp_logcache_insertz @RowsToInsert = 1, @Offset = 0;")
    with pytest.raises(fake_pyodbc.Error, match=r"\(8145\)"):
        _run(conn, "EXEC dbo.usp_logcache_insert @RowsToInsrt = 1, @Offset = 0;")
    _run(conn, (REPO / "workloads/logcache-spinlock/sqlserver/cleanup.sql").read_text())
    assert "usp_logcache_insert" not in S.load(state)["databases"]["lab"]["procedures"]
    with pytest.raises(fake_pyodbc.Error, match=r"\(3701\)"):
        _run(conn, "DROP PROCEDURE dbo.usp_logcache_insert;")
    _run(conn, "CREATE SEQUENCE dbo.s1 AS bigint START WITH 0 INCREMENT BY 1;")
    with pytest.raises(fake_pyodbc.Error, match=r"\(2714\)"):
        _run(conn, "CREATE SEQUENCE dbo.s1 AS bigint START WITH 0 INCREMENT BY 1;")


def test_a_filegroup_setup_is_run_by_its_statements(tmp_path):
    """The ring's filegroup: IF NOT EXISTS over sys.filegroups, then the container's ADD FILE built in a string and
    run by sp_executesql; run twice, the guards see what the first run made and add nothing."""
    state, conn = _lab(tmp_path)
    text = (REPO / "workloads/lmax-queue/sqlserver/memory_optimized_filegroup.sql").read_text()
    for _ in range(2):
        for batch in _batches(text.replace("{{database}}", "lab")):
            _run(conn, batch)
    db = S.load(state)["databases"]["lab"]
    assert db["filegroups"] == ["lab_mod"] and db["mo_filegroups"] == ["lab_mod"]
    assert [(f["name"], f["type_desc"], f["physical_name"]) for f in db["files"] if f["type_desc"] == "FILESTREAM"] \
        == [("lab_mod", "FILESTREAM", V.DATA_PATH + "lab_mod")]


# -- window functions, row generators and DML through a CTE (answered from their own text until this round) -----
def test_row_number_numbers_each_partition_in_its_order(tmp_path):
    _state, conn = _lab(tmp_path)
    _run(conn, "CREATE TABLE dbo.w (k int NOT NULL, g int NOT NULL, CONSTRAINT pk_w PRIMARY KEY CLUSTERED (k));")
    _run(conn, "INSERT INTO dbo.w (k, g) VALUES (1, 2), (2, 1), (3, 2), (4, 1), (5, 2);")
    (_c, rows), = _run(conn, "SELECT k, ROW_NUMBER() OVER (PARTITION BY g ORDER BY k DESC) AS rn FROM dbo.w ORDER BY k;")
    assert rows == [(1, 3), (2, 2), (3, 2), (4, 1), (5, 1)]
    for sql, number in [("SELECT ROW_NUMBER() OVER () FROM dbo.w;", 4112),
                        ("SELECT ROW_NUMBER(k) OVER (ORDER BY k) FROM dbo.w;", 174),
                        ("SELECT k FROM dbo.w WHERE ROW_NUMBER() OVER (ORDER BY k) = 1;", 4108),
                        ("SELECT ROW_NUMBER() OVER (ORDER BY nope) FROM dbo.w;", 207)]:
        with pytest.raises(fake_pyodbc.Error, match=rf"\({number}\)"):
            _run(conn, sql)


def test_a_row_generator_fills_a_table_with_the_count_top_asks_for(tmp_path):
    """``TOP (n)`` over sys.all_columns crossed with itself, and over a cross join of CTEs a trillion rows long: the
    count is computed, the first rows are evaluated (so their errors surface), nothing is built past them."""
    state, conn = _lab(tmp_path)
    _run(conn, "CREATE TABLE dbo.slots (n bigint NOT NULL, at datetime2 NOT NULL);")
    _run(conn, "DECLARE @size bigint = ?; INSERT INTO dbo.slots (n, at) SELECT TOP (@size) ROW_NUMBER() OVER "
               "(ORDER BY (SELECT NULL)) - 1, SYSDATETIME() FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b;",
         3_000_000)
    (_c, rows), = _run(conn, "SELECT COUNT_BIG(*) FROM dbo.slots;")
    assert rows == [(3_000_000,)]
    _run(conn, "TRUNCATE TABLE dbo.slots;")
    _run(conn, "INSERT INTO dbo.slots (n, at) SELECT TOP (5) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) - 1, "
               "SYSDATETIME() FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b;")
    (_c, rows), = _run(conn, "SELECT n FROM dbo.slots ORDER BY n;")
    assert rows == [(0,), (1,), (2,), (3,), (4,)]
    text = (REPO / "workloads/latch-fairness/sqlserver/insert.sql").read_text().replace("{{maxdop}}", "4")
    _run(conn, "CREATE TABLE dbo.LatchFairnessBatchHelper (x int NULL);")
    _run(conn, "CREATE TABLE dbo.LatchFairnessTarget (ID bigint NOT NULL, TypeID int NOT NULL, "
               "DateTimeUTC datetime NOT NULL);")
    (cols, rows), = _run(conn, text, 10_000_000)
    assert cols == ["elapsed_ms"]
    (_c, rows), = _run(conn, "SELECT COUNT_BIG(*) FROM dbo.LatchFairnessTarget;")
    assert rows == [(10_000_000,)]


def test_a_delete_through_a_cte_removes_the_rows_it_chooses_and_outputs_them(tmp_path):
    _state, conn = _lab(tmp_path)
    _run(conn, "CREATE TABLE dbo.lmax_disk_queue (id bigint IDENTITY(1, 1) NOT NULL, pushed_at datetime2 NOT NULL, "
               "message char(300) NOT NULL, CONSTRAINT pk_lmax_disk_queue PRIMARY KEY CLUSTERED (id));")
    pop = (REPO / "workloads/lmax-queue/sqlserver/pop_disk_naive.sql").read_text()
    assert _run(conn, pop) == [(["age_us"], [])]  # an empty queue: no row
    _run(conn, "INSERT INTO dbo.lmax_disk_queue (pushed_at, message) VALUES ('2026-01-01T00:00:00', 'a'), "
               "('2026-01-01T00:00:01', 'b');")
    (cols, rows), = _run(conn, pop)
    assert cols == ["age_us"] and len(rows) == 1 and rows[0][0] > 10**12  # the oldest: pushed in January
    (_c, rows), = _run(conn, "SELECT id, message FROM dbo.lmax_disk_queue;")
    assert rows == [(2, "b")]
    _run(conn, "CREATE TABLE dbo.other (id bigint NOT NULL);")
    with pytest.raises(fake_pyodbc.Error, match=r"\(4405\)"):
        _run(conn, "WITH two AS (SELECT q.id FROM dbo.lmax_disk_queue AS q JOIN dbo.other AS o ON o.id = q.id) "
                   "DELETE FROM two;")


@pytest.mark.parametrize("maxdop, parallel", [(4, True), (1, False)])
def test_a_parallel_heap_insert_is_recognised_by_its_hint_and_maxdop_not_by_its_file(tmp_path, maxdop, parallel):
    """The phenomena model's NESTING_TRANSACTION_FULL latch (seed 000) follows INSERT ... WITH (TABLOCK) into a heap
    with a degree of parallelism above 1, whatever the batch's text."""
    state, conn = _lab(tmp_path, phenomena=True)
    _run(conn, "CREATE TABLE dbo.heap (n bigint NOT NULL);")
    _run(conn, f"INSERT dbo.heap WITH (TABLOCK) (n) SELECT TOP (1000) ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) "
               f"FROM sys.all_columns AS a CROSS JOIN sys.all_columns AS b OPTION (MAXDOP {maxdop});")
    assert ("NESTING_TRANSACTION_FULL" in S.load(state)["stats"]["latch"]) is parallel
