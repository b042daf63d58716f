"""Issue 24's defects 5 to 7 (Managed Instance, data_mb, the spinlock CLEAR, documented after all: issue 33), against the simulator.

Defects 1 to 4 have their tests beside the code they touch: test_sqlserver_run_lock.py (the run lock),
test_sqlserver_sim_xevents.py (event-session permissions, the ring's limit and counter) and
test_sqlserver_preflight.py (each DMV queried).  Each test here fails on the code before the issue.
"""
from __future__ import annotations

import pandas as pd
import pytest

from sqlserver_sim import fake_pyodbc
from sqlserver_sim import run as R
from sqlserver_sim import server as S


def _conn(state):
    conn = fake_pyodbc.connect(R.connection_string(state), autocommit=True)
    conn.cursor().execute("SET LOCK_TIMEOUT 500")
    return conn


# -- 5: Managed Instance ----------------------------------------------------------------------------------
def test_managed_instance_refuses_turning_adr_off_and_the_preflight_names_it(tmp_path):
    state = S.create(tmp_path / "state.json", version="mi")
    conn = _conn(state)
    conn.cursor().execute("CREATE DATABASE [lab]")
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(5008\)"):
        conn.cursor().execute("ALTER DATABASE [lab] SET ACCELERATED_DATABASE_RECOVERY = OFF")
    conn.close()
    from contention_book.harness import sqlserver_preflight as pf

    assert pf.ADR_OFF in pf.MISSING[8]
    rc, out, seconds = R.run_in_process("ghost-cleanup", S.create(tmp_path / "g.json", version="mi"),
                                        tmp_path / "rec")
    assert rc == 2 and seconds < 5 and "turning accelerated database recovery off" in out, out


def test_managed_instance_is_not_asked_for_sys_dm_os_host_info(tmp_path):
    state = S.create(tmp_path / "state.json", version="mi")
    conn = _conn(state)
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(208\)"):
        conn.cursor().execute("SELECT host_platform FROM sys.dm_os_host_info")
    conn.close()
    rc, out, _ = R.run_in_process("last-page-insert", state, tmp_path / "rec")
    assert rc == 0, out


def test_managed_instance_ring_is_sized_against_the_per_vcore_in_memory_oltp_cap(tmp_path):
    """8 vCores: at least 6.4 GB of In-Memory OLTP memory, less than the default pool's share of 16 GB."""
    state = S.create(tmp_path / "state.json", version="mi", cpus=8, memory_gb=16, xtp=True)  # Business Critical
    rc, out, seconds = R.run_in_process("lmax-queue", state, tmp_path / "rec",
                                        {"variants": "imoltp_v2", "queue_size": "10000000"})
    assert rc == 2 and seconds < 5, out
    assert "Managed Instance Business Critical's In-Memory OLTP cap" in out and "Set queue_size=" in out, out


# -- 6: data_mb is the data in all, over the PRIMARY filegroup's files --------------------------------------
def test_file_layout_leaves_other_filegroups_out():
    from contention_book.chapters.latch_fairness import run_sqlserver as ss

    files = pd.DataFrame([(1, "ROWS", "lab", "/d/lab.mdf", 8, "PRIMARY"),
                          (2, "LOG", "lab_log", "/d/lab_log.ldf", 8, None),
                          (3, "ROWS", "logcache_data", "/d/lab_logcache.ndf", 1024, "FG_LOGCACHE")],
                         columns=["file_id", "type_desc", "name", "physical_name", "size_mb", "filegroup"])
    stmts = ss.file_layout_statements("lab", files, schedulers=4, data_mb=2048, log_mb=8)
    adds = [s for s in stmts if "ADD FILE" in s]
    assert len(adds) == 3 and all(s.endswith("TO FILEGROUP [PRIMARY]") for s in adds), stmts
    assert not any("logcache_data" in s for s in stmts)
    assert "MODIFY FILE (NAME = N'lab', SIZE = 512MB)" in stmts[0]  # 2048 MB in all over 4 files


def test_latch_fairness_after_logcache_spinlock_in_one_lab_database_makes_one_primary_file_per_scheduler(tmp_path):
    state = S.create(tmp_path / "state.json", version="2022", cpus=4)
    rc, out, _ = R.run_in_process("logcache-spinlock", state, tmp_path / "logcache", {"variants": "default"})
    assert rc == 0, out
    rc, out, _ = R.run_in_process("latch-fairness", state, tmp_path / "latch", {"variants": "fair"})
    assert rc == 0, out
    files = S.load(state)["databases"]["contention_lab"]["files"]
    primary = [f for f in files if f["type_desc"] == "ROWS" and f.get("filegroup", "PRIMARY") == "PRIMARY"]
    assert len(primary) == 4 and any(f.get("filegroup") == "FG_LOGCACHE" for f in files), files


# -- 7: DBCC SQLPERF('sys.dm_os_spinlock_stats', CLEAR) is not documented ------------------------------------
def test_clear_stats_runs_the_spinlock_clear_its_page_documents(tmp_path):
    """Issue 33, defect 8 (replacing issue 24's defect 7): sys.dm_os_spinlock_stats' own page documents
    DBCC SQLPERF ('sys.dm_os_spinlock_stats', CLEAR), so nothing calls it undocumented."""
    state = S.create(tmp_path / "state.json", version="2022", cpus=4)
    rc, out, _ = R.run_in_process("latch-fairness", state, tmp_path / "rec",
                                  {"variants": "fair", "clear_stats": "true"}, allow=True)
    assert rc == 0, out
    assert "DBCC SQLPERF('sys.dm_os_spinlock_stats', CLEAR)" in out, out
    assert "not documented" not in out and "documents CLEAR for the wait and latch statistics only" not in out, out


def test_running_live_describes_the_fixed_behaviour():
    text = (R.TESTS.parent / "book" / "running-live.md").read_text(encoding="utf-8")
    assert "2 GB a scheduler" not in text and "`data_mb` per scheduler" not in text
    assert "GRANT ALTER ANY EVENT SESSION" in text and "sp_getapplock" in text and "master" in text
