"""The simulator can say no: one error a server would reject, put into a temporary copy of the SQL, is refused.

Issue 33: a misspelled DMV or column in a workload file used to pass, because every workload batch matched a
pattern of its own text.  Each mutation below changes one thing in a copy of a workload or diagnose file: an
invented DMV (Msg 208), an invented column (Msg 207), a keyword out of place (Msg 102), a construct a natively
compiled module does not support (Msg 10794), or a permission the login lacks (Msg 300).  Workload mutations run
the whole chapter through the live runner against the simulator, reading the copied workloads; diagnose
mutations are sent as a reader would send them.  Each must be refused with the server's error number, and the
unmutated text must not be refused with it (so the mutation, not the file, is what fails).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sqlserver_sim import fake_pyodbc
from sqlserver_sim import run as R
from sqlserver_sim import server as S

REPO = Path(__file__).resolve().parents[1]

# (chapter, workload file, text, replacement, error number, server options, run parameters)
WORKLOAD = [
    ("ghost-cleanup", "index_stats.sql", "ips.version_ghost_record_count", "ips.no_such_column_xyz", 207, {}, {}),
    ("ghost-cleanup", "open_transaction_check.sql", "sys.dm_tran_session_transactions",
     "sys.dm_tran_session_transactionz", 208, {}, {}),
    ("ghost-cleanup", "perf_counters.sql", "sys.dm_os_performance_counters AS pc", "sys.dm_os_perf_counters AS pc",
     208, {}, {}),
    ("ghost-cleanup", "row_state.sql", "FROM dbo.GhostTest AS g", "FROM FROM dbo.GhostTest AS g", 102, {}, {}),
    ("latch-fairness", "schedulers.sql", "FROM sys.dm_os_schedulers", "FROM sys.dm_os_schedulerz", 208, {}, {}),
    ("latch-fairness", "schedulers.sql", "WHERE status =", "WHERE state =", 207, {}, {}),
    ("latch-fairness", "database_files.sql", "SELECT file_id, type_desc,", "SELECT file_id, type_name,", 207, {}, {}),
    ("last-page-insert", "insert_rows.sql", "INSERT INTO dbo.", "INSERT INTO INTO dbo.", 102, {}, {}),
    ("last-page-insert", "count_rows.sql", "SELECT COUNT_BIG(*) AS row_count FROM",
     "SELECT COUNT_BIG(*) AS row_count WHERE FROM", 102, {}, {}),
    ("last-page-insert", "database_id.sql", "DB_ID()", "DB_ID() FROM sys.databasez", 208, {}, {}),
    ("logcache-spinlock", "log_writer.sql", "r.command = N'LOG WRITER'", "r.commands = N'LOG WRITER'", 207, {},
     {"variants": "default"}),
    ("logcache-spinlock", "log_writer.sql", "JOIN sys.dm_os_tasks AS t", "JOIN sys.dm_os_taskz AS t", 208, {},
     {"variants": "default"}),
    ("lmax-queue", "setup_imoltp.sql", "INSERT INTO dbo.lmax_sequence (filler) VALUES (0);\n    SET @slot",
     "INSERT INTO dbo.lmax_sequence DEFAULT VALUES;\n    SET @slot", 10794, {}, {"variants": "imoltp_v1"}),
    ("lmax-queue", "setup_disk.sql", "CREATE SEQUENCE dbo.lmax_disk_seq AS bigint",
     "CREATE SEQUENCE SEQUENCE dbo.lmax_disk_seq AS bigint", 102, {}, {"variants": "disk_naive"}),
    # the row generators and the DELETE through a CTE (answered from their own text until this round)
    ("latch-fairness", "insert.sql", "    Numbers.n,\n", "    Numbers.nn,\n", 207, {}, {"variants": "fair"}),
    ("latch-fairness", "insert.sql", "ROW_NUMBER() OVER (ORDER BY @@SPID)", "ROW_NUMBER() OVER ()", 4112, {},
     {"variants": "fair"}),
    ("lmax-queue", "setup_disk.sql", "FROM sys.all_columns AS a CROSS JOIN", "FROM sys.all_columnz AS a CROSS JOIN",
     208, {}, {"variants": "disk_naive"}),
    ("lmax-queue", "setup_imoltp.sql", "ROW_NUMBER() OVER (ORDER BY (SELECT NULL)) - 1, NULL",
     "ROW_NUMBER(1) OVER (ORDER BY (SELECT NULL)) - 1, NULL", 174, {}, {"variants": "imoltp_v1"}),
    ("lmax-queue", "pop_disk_naive.sql", "deleted.pushed_at", "deleted.pushed_on", 207, {},
     {"variants": "disk_naive"}),
    ("logcache-spinlock", "reset.sql", "SELECT TOP (?) n.k,", "SELECT TOP (?) n.kk,", 207, {},
     {"variants": "default"}),
]

# Issue 33's two scratch-copy mutations: the first is WORKLOAD[0] (index_stats.sql); the second is in a query that
# the waiting-task sampler runs, whose failure the harness keeps as a note rather than ending the run (below).
ISSUE_33 = [WORKLOAD[0][:4], ("last-page-insert", "waiting_tasks.sql", "sys.dm_os_waiting_tasks",
                              "sys.dm_os_waiting_taskz")]

# (diagnose file, text, replacement, error number, login)
DIAGNOSE = [
    ("ghost-cleanup/diagnose/sqlserver/01-open-versioning-transactions.sql", "t.elapsed_time_seconds",
     "t.elapsed_seconds", 207, "sysadmin"),
    ("ghost-cleanup/diagnose/sqlserver/02-version-ghosts-per-index.sql", "sys.dm_db_index_physical_stats",
     "sys.dm_db_index_phys_stats", 208, "sysadmin"),
    ("latch-fairness/diagnose/sqlserver/01-latch-deltas.sql", None, None, 300, ["CREATE ANY DATABASE"]),
    ("latch-fairness/diagnose/sqlserver/02-spinlock-deltas.sql", "sys.dm_os_spinlock_stats",
     "sys.dm_os_spinlocks_stats", 208, "sysadmin"),
    ("last-page-insert/diagnose/sqlserver/01-page-latch-waiters.sql", None, None, 300, ["CREATE ANY DATABASE"]),
    ("last-page-insert/diagnose/sqlserver/03-index-latch-waits.sql", "os.page_latch_wait_in_ms,",
     "os.page_latch_wait_ms,", 207, "sysadmin"),
    ("lmax-queue/diagnose/sqlserver/01-queue-waits-over-a-minute.sql", "sys.dm_os_wait_stats",
     "sys.dm_os_waits_stats", 208, "sysadmin"),
    ("lmax-queue/diagnose/sqlserver/04-spinlocks-over-a-minute.sql", None, None, 300, ["CREATE ANY DATABASE"]),
    ("logcache-spinlock/diagnose/sqlserver/03-log-writer-placement.sql", "sys.dm_os_schedulers",
     "sys.dm_os_scheduler", 208, "sysadmin"),
    ("logcache-spinlock/diagnose/sqlserver/02-log-wait-deltas.sql", "ORDER BY wait_time_ms DESC;", "ORDER wait_time_ms DESC;",
     102, "sysadmin"),
]


@pytest.fixture
def copied_workloads(tmp_path, monkeypatch):
    """workloads/ copied to a temporary directory that the harness reads instead of the repository's."""
    from contention_book.harness import workloads

    root = tmp_path / "workloads"
    shutil.copytree(REPO / "workloads", root)
    monkeypatch.setattr(workloads, "workload_dir", lambda chapter, engine: root / chapter / engine)
    return root


def _mutate(path: Path, text: str, replacement: str) -> None:
    body = path.read_text(encoding="utf-8")
    assert body.count(text) >= 1, f"{path}: {text!r} not found (the mutation no longer applies)"
    path.write_text(body.replace(text, replacement, 1), encoding="utf-8")


@pytest.mark.parametrize("chapter, name, text, replacement, number, server, params", WORKLOAD,
                         ids=[f"{c}/{n}:{e}" for c, n, _, _, e, _, _ in WORKLOAD])
def test_a_mutated_workload_is_refused_with_the_servers_error(copied_workloads, tmp_path, chapter, name, text,
                                                             replacement, number, server, params):
    _mutate(copied_workloads / chapter / "sqlserver" / name, text, replacement)
    state = S.create(tmp_path / "state.json", **{"version": "2022", "phenomena": False, **server})
    rc, out, _ = R.run_in_process(chapter, state, tmp_path / "rec", params)
    assert rc != 0, f"the mutated {chapter}/{name} ran:\n{out[-2000:]}"
    assert f"({number})" in out, out[-3000:]


def test_issue_33_mutations_are_both_refused(copied_workloads, tmp_path):
    """``ips.no_such_column_xyz`` ends the ghost-cleanup run with Msg 207 (as WORKLOAD[0]); ``sys.dm_os_waiting_taskz``
    is refused with Msg 208 every time the waiting-task sampler sends it: the sampler stops at the first refusal and
    the recording says so in its notes, with no waiting-task sample taken (the sampler is best-effort by design,
    harness/polling.py, so the run itself goes on)."""
    assert ISSUE_33[0] == ("ghost-cleanup", "index_stats.sql", "ips.version_ghost_record_count",
                           "ips.no_such_column_xyz")
    chapter, name, text, replacement = ISSUE_33[1]
    _mutate(copied_workloads / chapter / "sqlserver" / name, text, replacement)
    state = S.create(tmp_path / "state.json", version="2022", phenomena=False)
    rc, out, _ = R.run_in_process(chapter, state, tmp_path / "rec", {})
    notes = [n for m in (tmp_path / "rec").rglob("manifest.json")
             for n in json.loads(m.read_text()).get("notes", [])]
    refused = [n for n in notes if "waiting-task sampler" in n]
    assert refused and all("Invalid object name 'sys.dm_os_waiting_taskz'. (208)" in n for n in refused), notes
    assert not list((tmp_path / "rec").rglob("waiting_tasks.csv")), "a sample was taken from the mutated query"
    # the unmutated query is not refused: the same run without the mutation leaves no such note
    _mutate(copied_workloads / chapter / "sqlserver" / name, replacement, text)
    state = S.create(tmp_path / "ok.json", version="2022", phenomena=False)
    rc, out, _ = R.run_in_process(chapter, state, tmp_path / "rec_ok", {})
    assert rc == 0, out[-2000:]
    notes = [n for m in (tmp_path / "rec_ok").rglob("manifest.json")
             for n in json.loads(m.read_text()).get("notes", [])]
    assert not [n for n in notes if "(208)" in n], notes


def _diagnose_session(tmp_path, login):
    state = S.create(tmp_path / "d.json", version="2022", login=login if login == "sysadmin" else list(login),
                     phenomena=False)
    st = S.load(state)
    db = S._db(st["next_db_id"])
    db["owner"] = "dba"
    st["databases"]["lab"] = db
    Path(state).write_text(json.dumps(st))
    return fake_pyodbc.connect(R.connection_string(state, extra="Database=lab;"), autocommit=True)


def _batches(text: str) -> list[str]:
    from contention_book.harness import workloads

    return [b for b in workloads.split_tsql(text) if b.strip()]


@pytest.mark.parametrize("rel, text, replacement, number, login", DIAGNOSE,
                         ids=[f"{r.split('/')[0]}/{r.split('/')[-1]}:{n}" for r, _, _, n, _ in DIAGNOSE])
def test_a_mutated_diagnose_query_is_refused_with_the_servers_error(tmp_path, rel, text, replacement, number, login):
    original = (REPO / "workloads" / rel).read_text(encoding="utf-8")
    mutated = original if text is None else original.replace(text, replacement)  # the header cites it too
    assert text is None or mutated != original, f"{rel}: {text!r} not found"
    conn = _diagnose_session(tmp_path, login)
    with pytest.raises(fake_pyodbc.ProgrammingError, match=rf"\({number}\)"):
        for batch in _batches(mutated):
            conn.cursor().execute(batch)
    # the same file, unmutated and by sysadmin, is not refused with that number
    conn = _diagnose_session(tmp_path / "ok" if (tmp_path / "ok").mkdir() is None else None, "sysadmin")
    for batch in _batches(original):
        try:
            conn.cursor().execute(batch)
        except fake_pyodbc.ProgrammingError as exc:
            assert f"({number})" not in str(exc), exc


def test_at_least_twenty_mutations_across_every_chapter_and_the_diagnose_files():
    chapters = {c for c, *_ in WORKLOAD}
    assert chapters == {r.split("/")[0] for r, *_ in DIAGNOSE}
    assert len(WORKLOAD) + len(DIAGNOSE) >= 20
    assert chapters == {p.name for p in (REPO / "workloads").iterdir() if (p / "sqlserver").is_dir()}
    assert {n for *_, n, _ in DIAGNOSE} | {e for *_, e, _, _ in WORKLOAD} >= {207, 208, 102, 300}
