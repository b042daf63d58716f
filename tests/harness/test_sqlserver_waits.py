"""Waits as DBAs read them: categories and benign waits from the data file, resource vs signal, session waits."""
import pandas as pd

from contention_book.harness import sqlserver_waits as W
from sqlserver_sim import run as R
from sqlserver_sim import server as S


def test_categories_follow_exact_names_then_the_longest_prefix():
    assert W.classify("PAGELATCH_EX") == ("Buffer Latch", False)
    assert W.classify("PAGEIOLATCH_SH") == ("Buffer IO", False)
    assert W.classify("LCK_M_X") == ("Lock", False)
    assert W.classify("SLEEP_TASK") == ("Idle", True)
    assert W.classify("BROKER_TRANSMITTER") == ("Service Broker", True)  # exact beats BROKER_%
    assert W.classify("BROKER_SHUTDOWN") == ("Service Broker", False)
    assert W.classify("HADR_THROTTLE_LOG_RATE_GOVERNOR") == ("Log Rate Governor", False)  # exact beats HADR_%
    assert W.classify("SOMETHING_NEW") == ("Other", False)


def test_the_dba_table_drops_benign_waits_and_splits_resource_from_signal():
    delta = pd.DataFrame({"name": ["LATCH_EX", "SLEEP_TASK", "CXPACKET"], "waits": [100, 5, 10],
                          "wait_time_ms": [2000, 9000, 500], "max_wait_time_ms": [50, 10, 90],
                          "signal_wait_time_ms": [500, 0, 100]})
    t = W.dba_table(delta, seconds=10, cores=4)
    assert list(t["wait_type"]) == ["LATCH_EX", "CXPACKET"]
    latch = t.iloc[0]
    assert latch["wait_time_s"] == 2.0 and latch["signal_wait_time_s"] == 0.5 and latch["resource_wait_time_s"] == 1.5
    assert latch["percent_signal"] == 25.0 and latch["avg_ms_per_wait"] == 20.0
    assert latch["per_core_per_second"] == 2.0 / 10 / 4
    assert set(W.DBA_COLUMNS) == set(t.columns)


def test_session_waits_keep_each_sessions_last_reading():
    samples = pd.DataFrame({"t_s": [0.1, 1.1, 0.1, 1.1], "session_id": [51, 51, 52, 52],
                            "wait_type": ["WRITELOG"] * 4, "waiting_tasks_count": [1, 3, 2, 5],
                            "wait_time_ms": [10, 30, 20, 50], "max_wait_time_ms": [5, 9, 7, 8],
                            "signal_wait_time_ms": [1, 3, 2, 5]})
    t = W.session_totals(samples).iloc[0]
    assert (t["session_count"], t["waiting_tasks"], t["wait_time_ms"], t["resource_wait_time_ms"]) == (2, 8, 80, 72)


import pytest


@pytest.mark.parametrize("version", ["2019", "2022"])
def test_a_run_records_in_flight_and_session_waits_of_its_own_sessions(tmp_path, version):
    """2022 appends the latch to a PAGELATCH resource_description; both formats name their page."""
    state = S.create(tmp_path / "state.json", version=version,
                     faults=[{"match": r"^SET NOCOUNT ON; DECLARE @todo int", "nth": 0, "kind": "slow",
                              "seconds": 0.15}])
    rc, out, _ = R.run_in_process("last-page-insert", state, tmp_path / "rec",
                                  {"variants": "sequential", "sessions": "2", "duration_s": "1.5",
                                   "rows_per_session": "2000", "rows_per_call": "100"})
    assert rc == 0, out
    inflight = pd.read_csv(tmp_path / "rec" / "samples" / "in_flight_waits.csv")
    assert "PAGELATCH_EX" in set(inflight["wait_type"]) and (inflight["wait_category"] == "Buffer Latch").any()
    sessions = pd.read_csv(tmp_path / "rec" / "dmv" / "session_waits.csv")
    assert (sessions.loc[sessions["wait_type"] == "PAGELATCH_EX", "session_count"] == 2).all()
    dba = pd.read_csv(tmp_path / "rec" / "dmv" / "waits_dba.csv")
    assert "SLEEP_TASK" not in set(dba["wait_type"]) and "PAGELATCH_EX" in set(dba["wait_type"])
    hot = pd.read_csv(tmp_path / "rec" / "dmv" / "hot_pages.csv")
    assert len(hot) and (hot["object"] == "dbo.lpi_sequential").all()
    manifest = (tmp_path / "rec" / "manifest.json").read_text()
    assert "not db:file:page" not in manifest


def test_a_page_shows_the_tables_with_sp_blitzfirst_names(tmp_path):
    from contention_book.chapters.shared import sqlserver_waits as page

    state = S.create(tmp_path / "state.json", version="2019")
    rc, out, _ = R.run_in_process("logcache-spinlock", state, tmp_path / "rec", {"variants": "default"})
    assert rc == 0, out
    dba = page.dba_waits(tmp_path / "rec")
    assert {"Wait Time (Seconds)", "Signal Wait Time (Seconds)", "Resource Wait Time (Seconds)",
            "Avg ms Per Wait", "Number of Waits", "variant", "sessions"} <= set(dba.columns)
    assert page.in_flight_waits(tmp_path / "rec") is not None and page.session_waits(tmp_path / "rec") is not None
    assert page.dba_waits(tmp_path / "nothing") is None
