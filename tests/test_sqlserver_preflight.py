"""The preflight against the simulator: what a reader lacks is named in the first seconds, with the fix."""
from __future__ import annotations

import pytest

from sqlserver_sim import run as R
from sqlserver_sim import server as S


def go(tmp_path, chapter, params=None, allow=False, conn_str=None, **server):
    state = S.create(tmp_path / "state.json", **server)
    before = S.load(state)
    rc, out, seconds = R.run_in_process(chapter, state, tmp_path / "rec", params, allow=allow,
                                        conn_str=conn_str and conn_str.format(state=state))
    assert S.lasting_changes(S.load(state), before) == {}
    return rc, out, seconds, S.load(state)


def test_the_readme_example_no_longer_fails_late_it_drops_the_trace_flag_variant_with_a_note(tmp_path):
    rc, out, _, state = go(tmp_path, "ghost-cleanup", version="2022")
    assert rc == 0, out
    assert "note: rcsi_open_txn_tf7006 left out of the default variants" in out and "ALLOW_SERVER_CHANGES=1" in out
    assert "ServerChangeNotAllowed" not in out and state["trace_flags"] == []


@pytest.mark.parametrize("chapter,variants,flag", [("ghost-cleanup", "rcsi,rcsi_open_txn_tf7006", "7006"),
                                                  ("latch-fairness", "fair,unfair", "3933")])
def test_a_server_change_asked_for_by_name_without_the_opt_in_is_refused_before_any_work(tmp_path, chapter,
                                                                                          variants, flag):
    rc, out, seconds, state = go(tmp_path, chapter, {"variants": variants}, version="2022")
    assert rc == 2 and seconds < 5, out
    assert f"DBCC TRACEON({flag}, -1)" in out and "ALLOW_SERVER_CHANGES=1" in out and "nothing was changed" in out
    assert "contention_lab" not in state["databases"]  # not even the lab database was created


def test_trace_flags_without_sysadmin_name_the_role_to_add(tmp_path):
    rc, out, seconds, _ = go(tmp_path, "latch-fairness", {"variants": "fair,unfair"}, allow=True,
                             version="2019", login="documented")
    assert rc == 2 and seconds < 5
    assert "Msg 2571" in out and "ALTER SERVER ROLE sysadmin ADD MEMBER [reader];" in out


def test_affinity_without_alter_settings_names_the_grant(tmp_path):
    rc, out, _, _ = go(tmp_path, "logcache-spinlock", {"variants": "no_logwriter_core"}, allow=True,
                       version="2019", login="documented")
    assert rc == 2 and "GRANT ALTER SETTINGS TO [reader];" in out, out


def test_the_affinity_grant_alone_is_enough_for_the_affinity_variant(tmp_path):
    rc, out, _, _ = go(tmp_path, "logcache-spinlock", {"variants": "no_logwriter_core"}, allow=True, version="2019",
                       login=["CREATE ANY DATABASE", "VIEW SERVER STATE", "ALTER SETTINGS"])
    assert rc == 0, out


@pytest.mark.parametrize("version", ["2019", "2022"])
def test_a_login_without_the_dmv_permission_is_told_which_grant(tmp_path, version):
    """The grant named is the one every DMV page names for the version: VIEW SERVER STATE before 2022, VIEW
    SERVER PERFORMANCE STATE on 2022 (issue 33, defect 4)."""
    rc, out, seconds, _ = go(tmp_path, "last-page-insert", version=version, login=["CREATE ANY DATABASE"])
    assert rc == 2 and seconds < 5
    grant = "VIEW SERVER PERFORMANCE STATE" if version == "2022" else "VIEW SERVER STATE"
    assert f"GRANT {grant} TO [reader];" in out and "(300)" in out, out


def test_on_2022_view_server_performance_state_alone_reaches_every_dmv(tmp_path):
    """Issue 33, defect 4 (replacing issue 24's defect 3): on 2022 the latch and spinlock pages, like the others,
    name VIEW SERVER PERFORMANCE STATE ("Permissions for SQL Server 2022 and later",
    https://learn.microsoft.com/sql/relational-databases/system-dynamic-management-views/sys-dm-os-latch-stats-transact-sql,
    ms.date 02/27/2023), so that grant alone runs the chapter; without it the preflight names it."""
    rc, out, _, _ = go(tmp_path, "latch-fairness", version="2022",
                       login=["CREATE ANY DATABASE", "VIEW SERVER PERFORMANCE STATE"])
    assert rc == 0, out
    (tmp_path / "none").mkdir()
    rc, out, seconds, state = go(tmp_path / "none", "latch-fairness", version="2022", login=["CREATE ANY DATABASE"])
    assert rc == 2 and seconds < 5, out
    assert "GRANT VIEW SERVER PERFORMANCE STATE TO [reader];" in out and "contention_lab" not in state["databases"]


def test_linux_with_hyperthreads_needs_logwriter_cpus(tmp_path):
    rc, out, _, _ = go(tmp_path, "logcache-spinlock", {"variants": "no_logwriter_core"}, allow=True,
                       version="2022", platform="Linux")
    assert rc == 2 and "logwriter_cpus=" in out and "thread_siblings_list" in out, out
    rc, out, _, _ = go(tmp_path / "given", "logcache-spinlock", {"variants": "no_logwriter_core",
                                                                 "logwriter_cpus": "0,4"},
                       allow=True, version="2022", platform="Linux") if (tmp_path / "given").mkdir() is None else None
    assert rc == 0, out
    assert "PROCESS AFFINITY CPU = 1 TO 3, 5 TO 7" in out  # the two given CPUs out, nothing guessed


def test_the_lmax_ring_that_does_not_fit_express_says_what_to_set(tmp_path):
    rc, out, seconds, _ = go(tmp_path, "lmax-queue", {"queue_size": "2000000", "variants": "imoltp_v2"},
                             version="2019", edition="express")
    assert rc == 2 and seconds < 5, out
    assert "quota of 352 MB" in out and "Set queue_size=" in out
    size = int(out.split("Set queue_size=")[1].split(" ")[0].replace(",", ""))
    rc, out, _, _ = go(tmp_path / "fits", "lmax-queue", {"queue_size": str(size), "variants": "imoltp_v2"},
                       version="2019", edition="express") if (tmp_path / "fits").mkdir() is None else None
    assert rc == 0, out  # the simulator, sized by the documented quota, accepts the suggested ring


def test_the_default_ring_fits_a_developer_edition_with_enough_memory(tmp_path):
    rc, out, _, _ = go(tmp_path, "lmax-queue", {"queue_size": "2000000", "messages_per_session": "100",
                                                "variants": "imoltp_v1", "sessions": "1"},
                       version="2022", memory_gb=16)
    assert rc == 0, out
    assert "In-Memory OLTP ring: 2,000,000 slots" in out


def test_driver_18_with_an_untrusted_certificate_says_what_to_do(tmp_path):
    state = S.create(tmp_path / "state.json", version="2022")
    st = S.load(state)
    st["certificate"] = "self-signed"
    state.write_text(__import__("json").dumps(st))
    rc, out, seconds = R.run_in_process("last-page-insert", state, tmp_path / "rec")
    assert rc == 2 and seconds < 5
    assert "TrustServerCertificate=yes" in out and "Encrypt=yes" in out
    rc, out, _ = R.run_in_process("last-page-insert", state, tmp_path / "rec2",
                                  conn_str=R.connection_string(state, extra="TrustServerCertificate=yes;"))
    assert rc == 0, out


def test_freetds_is_reminded_of_the_tds_version(tmp_path):
    state = S.create(tmp_path / "state.json", version="2019")
    rc, out, _ = R.run_in_process("last-page-insert", state, tmp_path / "rec",
                                  conn_str=R.connection_string(state, driver="FreeTDS", extra="TDS_Version=7.4;"))
    assert rc == 0 and "TDS_Version is 7.3 or later" in out, out


def test_the_plan_lists_changes_restores_and_an_estimate(tmp_path):
    rc, out, _, _ = go(tmp_path, "latch-fairness", allow=True, version="2019")
    assert rc == 0
    plan = [line for line in out.splitlines() if line.startswith("[preflight]")]
    assert any("plan: fair, unfair" in line for line in plan)
    assert any("DBCC TRACEON(3933, -1)" in line and "restored with DBCC TRACEOFF(3933, -1)" in line for line in plan)
    assert any("estimated run time" in line and "an estimate" in line for line in plan)


def test_azure_versions_do_not_trip_the_version_gates(tmp_path):
    """Managed Instance reports ProductVersion 12.x; its disk variants must not be refused as 'older than 2016'."""
    rc, out, _, _ = go(tmp_path, "lmax-queue", {"variants": "disk_naive,disk_ring_sequence"}, version="mi")
    assert rc == 0, out
    assert "needs SQL Server" not in out and "skipped" not in out


def test_the_simulator_refuses_sql_it_was_never_taught(tmp_path):
    from sqlserver_sim import fake_pyodbc

    state = S.create(tmp_path / "state.json")
    conn = fake_pyodbc.connect(R.connection_string(state))
    with pytest.raises(fake_pyodbc.ProgrammingError, match=r"\(208\)"):  # not in the documented catalogue
        conn.cursor().execute("SELECT * FROM sys.dm_os_ring_buffers")
    with pytest.raises(S.UnknownStatement, match="sys.dm_xe_sessions"):  # documented, allowed, no rows computed
        conn.cursor().execute("SELECT name FROM sys.dm_xe_sessions WHERE name LIKE N'x%'")
    conn.close()


def test_the_simulator_answers_documented_errors(tmp_path):
    from sqlserver_sim import fake_pyodbc

    state = S.create(tmp_path / "state.json", login="documented")
    cur = fake_pyodbc.connect(R.connection_string(state)).cursor()
    with pytest.raises(fake_pyodbc.Error, match=r"\(2571\)"):
        cur.execute("DBCC TRACEON(3933, -1)")
    with pytest.raises(fake_pyodbc.Error, match=r"\(15247\)"):
        cur.execute("ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = 0 TO 3")
    assert S.load(state)["trace_flags"] == [] and S.load(state)["affinity"] is None


def test_managed_instance_business_critical_runs_the_in_memory_ring(tmp_path):
    """Business Critical databases hold the XTP filegroup already, so the ring's setup adds no file with a path."""
    rc, out, _, state = go(tmp_path, "lmax-queue", {"variants": "imoltp_v2", "sessions": "1"}, version="mi", xtp=True)
    assert rc == 0, out


def test_managed_instance_general_purpose_leaves_the_in_memory_variants_out(tmp_path):
    rc, out, _, _ = go(tmp_path, "lmax-queue", {"sessions": "1"}, version="mi")
    assert rc == 0, out
    assert "note: imoltp_v1 left out of the default variants" in out and "In-Memory OLTP" in out


def test_a_lab_database_the_login_does_not_own_is_refused_at_once_with_the_fix(tmp_path):
    """ALTER DATABASE and the setup DDL need the database's owner (CONTROL); the preflight asks HAS_PERMS_BY_NAME
    instead of failing at the guard's first ALTER DATABASE."""
    state = S.create(tmp_path / "state.json", version="2019", login="documented")
    with S._locked(state) as st:
        db = S._db(st["next_db_id"])
        db["owner"] = "a dba"
        db["props"]["contention_book_owner"] = "created by the contention-book harness; safe to drop"
        st["databases"]["contention_lab"] = db
        st["next_db_id"] += 1
    rc, out, seconds = R.run_in_process("ghost-cleanup", state, tmp_path / "rec")
    assert rc == 2 and seconds < 5, out
    assert "ALTER AUTHORIZATION ON DATABASE::[contention_lab] TO [reader];" in out, out
