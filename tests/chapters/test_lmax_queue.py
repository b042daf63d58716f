"""LMAX-queue chapter: workloads parse, guard plans, gates, analysis, published numbers; native and PostgreSQL smoke."""
import re
import subprocess

import numpy as np
import pandas as pd
import pytest
from load_checks import assert_load_tables
from tsql_parse import problems

from types import SimpleNamespace

from contention_book.chapters.shared.spread import ratio_spread

from contention_book.chapters.lmax_queue import claims, recordings, run_native as native_run, spec, tables
from contention_book.chapters.lmax_queue import run_postgres as lp, run_sqlserver as ss
from contention_book.harness.chapter_registry import runners
from contention_book.harness.params import ParameterError
from contention_book.harness.runner import RunLog, resolve_params, run_chapter

RUNNERS = runners("lmax-queue")

# The chapter's pieces under the names these tests were written with.
analysis = SimpleNamespace(**{k: getattr(tables, k) for k in dir(tables) if not k.startswith("__")})
analysis.key_numbers = lambda adkin, lmax, native, db: tables.key_numbers(recordings.Shown(adkin, lmax, native, db))
analysis.verdicts = lambda adkin, lmax, native, db: claims.verdicts(recordings.Shown(adkin, lmax, native, db))
lq = SimpleNamespace(load=recordings.load, load_measured=recordings.load_measured, LmaxRecording=recordings.LmaxRecording,
                     load_published=lambda: (recordings.load(spec.PUBLISHED_ADKIN), recordings.load(spec.PUBLISHED_LMAX)))


def run_live(*, engine, record_to, log, target=None, **params):
    return run_chapter(spec.SPEC, RUNNERS, params, engine=engine, target=target, record_to=record_to,
                       log=RunLog(log))
from contention_book.harness import workloads
from contention_book.harness.recording import RecordingError, repo_root

IDS = {"memory_optimized_filegroup": {"database": "contention_lab"}, "push_call": {"procedure": "lmax_loop_v1"}}


class FakeCursor:
    def __init__(self, rows):
        self.rows = rows
        self.description = [("c",)]

    def execute(self, sql, *params):
        self.sql, self.params = sql, params
        return self

    def fetchone(self):
        return self.rows[0] if self.rows else None

    def fetchall(self):
        return self.rows


class FakeConn:
    def __init__(self, rows):
        self.rows = rows

    def cursor(self):
        return FakeCursor(self.rows)

    def close(self):
        pass


# -- T-SQL ------------------------------------------------------------------------------------------
def sqlserver_scripts():
    return sorted(p.stem for p in (repo_root() / "workloads" / "lmax-queue" / "sqlserver").glob("*.sql"))


@pytest.mark.parametrize("script", sqlserver_scripts())
def test_every_tsql_batch_parses(script):
    for i, batch in enumerate(workloads.load("lmax-queue", "sqlserver", script, **IDS.get(script, {}))):
        found = problems(batch if batch.rstrip().endswith(";") else batch + ";")
        assert not found, f"{script} batch {i}: {found}\n{batch}"


def test_natively_compiled_procedures_are_there_and_parse():
    batches = workloads.load("lmax-queue", "sqlserver", "setup_imoltp")
    native = [b for b in batches if "WITH NATIVE_COMPILATION, SCHEMABINDING" in b]
    names = {re.search(r"CREATE PROCEDURE dbo\.(\w+)", b).group(1) for b in native}
    assert names == {"lmax_get_slot", "lmax_push_v1", "lmax_push_v2", "lmax_loop_v3"}
    assert all("BEGIN ATOMIC WITH (TRANSACTION ISOLATION LEVEL = SNAPSHOT" in b for b in native)
    assert all(not problems(b + ";") for b in native)
    # the parser does catch a broken native procedure (the test above can fail)
    assert problems(native[0].replace("BEGIN ATOMIC WITH (", "BEGIN ATOMIC WITH ((") + ";")


def test_memory_optimized_filegroup_stand_in_is_strict():
    assert not problems("ALTER DATABASE [lab] ADD FILEGROUP [lab_mod] CONTAINS MEMORY_OPTIMIZED_DATA;")
    assert problems("ALTER DATABASE [lab] ADD FILEGROUP [lab_mod] CONTAINS MEMORY_OPTIMIZED;")


def test_the_queue_size_goes_to_the_one_fill_batch():
    for script in ("setup_imoltp", "setup_disk"):
        i = ss.parameter_batch(script)
        assert "DECLARE @queue_size bigint = ?" in workloads.load("lmax-queue", "sqlserver", script)[i]


# -- guard, gates, arithmetic -----------------------------------------------------------------------
def test_delayed_durability_plan_restores_the_prior_setting():
    change = ss.delayed_durability_change("contention_lab")
    prior = change.read(FakeConn([("DISABLED",)]))
    assert change.scope == "database"
    assert change.apply(prior) == ["ALTER DATABASE [contention_lab] SET DELAYED_DURABILITY = FORCED"]
    assert change.restore(prior) == ["ALTER DATABASE [contention_lab] SET DELAYED_DURABILITY = DISABLED"]
    for sql in change.apply(prior) + change.restore(prior):
        assert not problems(sql + ";")
    with pytest.raises(RuntimeError, match="not found"):
        change.read(FakeConn([]))
    with pytest.raises(Exception, match="plain identifier"):
        ss.delayed_durability_change("lab]; DROP DATABASE x; --")


def test_version_gate_and_single_session_v3():
    keep, notes = ss.runnable(["imoltp_v1", "disk_naive"], "12.0.6024.0")
    assert keep == [] and len(notes) == 2 and "2016" in notes[0]
    keep, notes = ss.runnable(["imoltp_v1", "imoltp_v3", "disk_ring_sequence"], "16.0.4135.4")
    assert keep == ["imoltp_v1", "imoltp_v3", "disk_ring_sequence"] and not notes
    assert ss.sessions_for("imoltp_v3", [1, 2, 4]) == [1]
    assert ss.sessions_for("imoltp_v2", [1, 2, 4]) == [1, 2, 4]


def test_chunks_and_queue_size_checks():
    assert ss.chunks(100_000, 1000) == (100, 1000)
    assert ss.chunks(500, 1000) == (1, 500)
    with pytest.raises(ValueError):
        ss.chunks(0, 10)
    assert ss.queue_size_for("imoltp_v2", 2_000_000, 16, 100_000) == 2_000_000
    with pytest.raises(ValueError, match="ring would fill"):
        ss.queue_size_for("imoltp_v2", 2_000_000, 32, 100_000)
    assert ss.queue_size_for("disk_naive", 10, 32, 100_000) == 10  # the naive queue has no slots


def test_spinlock_deltas_put_the_articles_spinlocks_first():
    cols = ["name", "collisions", "spins", "spins_per_collision", "sleep_time", "backoffs"]
    before = pd.DataFrame([("LOCK_HASH", 10, 100, 10, 0, 0), ("CMED_HASH_SET", 5, 50, 10, 0, 0)], columns=cols)
    after = pd.DataFrame([("LOCK_HASH", 20, 10_100, 10, 0, 1), ("CMED_HASH_SET", 7, 250, 10, 0, 0)], columns=cols)
    empty = {"wait": pd.DataFrame(columns=["name", "waits", "wait_time_ms", "max_wait_time_ms", "signal_wait_time_ms"]),
             "latch": pd.DataFrame(columns=["name", "waits", "wait_time_ms", "max_wait_time_ms"])}
    d = ss.stats_deltas({**empty, "spinlock": before}, {**empty, "spinlock": after})["spinlock"]
    assert d["name"].tolist()[:5] == ["CMED_HASH_SET", "XDESMGR", "BLOCKER_ENUM", "LOGCACHE_ACCESS", "LOCK_HASH"]
    assert d.set_index("name").loc["CMED_HASH_SET", "spins"] == 200
    assert d.set_index("name").loc["XDESMGR", "spins"] == 0


# -- parameters -------------------------------------------------------------------------------------
def test_parameters_are_checked():
    def params(engine, **raw):
        return resolve_params(spec.SPEC, engine, raw)

    assert params("postgres", sessions="4, 1,2")["sessions"] == [4, 1, 2]
    assert params("native")["sessions"] == [1, 2, 3, 4]
    with pytest.raises(ParameterError, match="sessions='1,x'"):
        params("postgres", sessions="1,x")
    with pytest.raises(ParameterError, match=">= 1"):
        params("postgres", sessions="0")
    assert params("postgres", variants="ring, naive")["variants"] == ["ring", "naive"]
    with pytest.raises(ParameterError, match="variants='imoltp_v1'"):
        params("postgres", variants="imoltp_v1")
    with pytest.raises(ParameterError, match="engine 'oracle'"):
        params("oracle")
    with pytest.raises(ValueError, match="power of two"):
        native_run.check_queue_size(1000)
    assert params("postgres", pushes_per_call=50)["pushes_per_call"] == 50
    for bad in (0, -3, 2.5, "many", 100_001):
        with pytest.raises(ParameterError, match="pushes_per_call="):
            params("postgres", pushes_per_call=bad)


def test_pop_loop_results_are_parsed():
    assert lp.parse_ages("0.5,1.25") == [0.5, 1.25]
    assert lp.parse_ages("") == [] and lp.parse_ages(None) == []
    assert lp.parse_ages("0.001") == [0.001]


# -- recordings and analysis ------------------------------------------------------------------------
def test_published_recordings_hold_the_sources_numbers():
    adkin, lmax = lq.load_published()
    assert adkin.recording.kind == lmax.recording.kind == "published"
    assert adkin.recording.host["logical_cpus"] == 40
    n = analysis.key_numbers(adkin, lmax, *lq.load_measured(""))
    assert n["pub_knee_threads"] == 23 and n["pub_v3_msgs"] == 200_000 and n["pub_queue_size"] == 2_000_000
    assert n["lmax_1p1c_disruptor"] == 25_998_336 and n["lmax_3p1c_abq"] == 5_539_531
    assert n["lmax_lat_abq_ns"] == 32_757 and n["lmax_lat_disruptor_ns"] == 52
    assert n["lmax_inc_single_ns"] == pytest.approx(0.6) and n["lmax_inc_cas2_ns"] == pytest.approx(60)
    assert all(not isinstance(v, np.generic) for v in n.values())
    # shapes are kept as text: the v2 speed-up has no invented number
    v2 = analysis.finding(adkin, "speedup", "imoltp_v2")
    assert np.isnan(v2["value"]) and "nearly doubled" in v2["statement"]


def test_a_published_recording_is_refused_as_the_measured_one():
    with pytest.raises(RecordingError, match="expected a measured recording"):
        lq.load_measured("published-adkin-2016-imoltp")
    with pytest.raises(RecordingError, match="no manifest.json"):
        lq.load("no-such-recording")


def test_verdicts_on_the_references():
    native, db = lq.load_measured("")
    table = analysis.verdicts(*lq.load_published(), native, db)
    heads = table["verdict"].str.split(":").str[0]
    assert set(heads) <= {"reproduced", "direction reproduced", "direction reproduced, weaker", "differs",
                          "inconclusive", "not testable here", "not testable with this recording"}
    assert table["rule"].str.len().min() > 20  # every row names its rule
    assert (table["rule"].str.split().str.len() <= 40).all()  # a footnote, not a cell that runs on
    decided = table[heads.isin(["reproduced", "direction reproduced", "direction reproduced, weaker", "differs"])]
    assert decided["tested_on"].str.contains(r"on \d+ CPUs?").all() and decided["size"].str.len().gt(0).all()
    # on 2 CPUs only one producer fits beside the consumer: the several-producers claim is not decided there
    if tables.logical_cpus(native) < 3:
        row = table[table["claim"].str.startswith("The ring keeps its lead")]
        assert row["verdict"].iloc[0].startswith("not testable here")
    # the four SQL Server claims cannot be decided on a PostgreSQL recording, whatever it measured
    sql = table[table["claim"].str.startswith(("v1 ", "v2 ", "v3 ", "Latch-free"))]
    assert len(sql) == 4 and (sql["verdict"].str.startswith("not testable here")).all()


def test_call_notes_follow_the_recording():
    g = fake_recording("postgres", {"variant": ["ring", "naive"], "sessions": [1, 1], "throughput": [2.0, 3.0]},
                       waits=pd.DataFrame({"variant": ["ring"] * 2, "sessions": [1, 1],
                                           "wait": ["CPU", "Client:ClientRead"], "samples": [3, 1],
                                           "share": [0.75, 0.25]}))
    g.recording.host, g.recording.parameters, g.recording.id = {"logical_cpus": 2}, {}, "fake"
    old = analysis.call_notes(g)  # no pushes_per_call column: an old, one-statement-per-message recording
    assert old["db_pushes_per_call"] == 1 and "one round trip" in old["db_call_how"]
    assert "25%" in old["db_client_note"] and "2 CPUs" in old["db_client_note"]
    assert "through ODBC" in old["db_client_note"]  # a recording that does not name its client ran pyodbc
    g.recording.manifest = {"measured": {"client": "psycopg 3.3.9 (libpq 18.6, binary)"}}
    assert "through libpq" in analysis.call_notes(g)["db_client_note"]  # the client the manifest names
    assert "polling pg_stat_activity" in old["db_wait_sampler"]
    # with the load check's rows, the client's share is the backends' ClientRead share, not the busy sessions'
    g.tables["load_points"] = pd.DataFrame({"variant": ["ring", "naive"], "sessions": [1, 1],
                                            "client_share": [0.30, 0.40], "wait_source": ["pg_wait_sampling"] * 2,
                                            "wait_sample_hz": [99.0, 99.0]})
    loaded = analysis.call_notes(g)
    assert "35% of the backends' samples" in loaded["db_client_note"]
    assert "inside the server by the pg_wait_sampling extension, about 99 times a second" in loaded["db_wait_sampler"]
    del g.tables["load_points"]
    g.runs["pushes_per_call"] = 50
    new = analysis.call_notes(g)
    assert new["db_pushes_per_call"] == 50 and "50 messages" in new["db_call_how"] and "per call" in new["db_call_how"]
    assert not new["db_call_how"].endswith(".")  # the page's sentence goes on after it
    # where the sessions backed off follows the recording: older ones returned and slept in the client
    assert "returned at once and the client backed off" in new["db_client_note"]
    g.recording.parameters = {"back_off": "in the server (pg_sleep 1 ms) in the loops"}
    moved = analysis.call_notes(g)["db_client_note"]
    assert "backed off in the server (pg_sleep 1 ms) in the loops" in moved and "Timeout:PgSleep" in moved
    assert "waiting after a miss (server-side back-off)" in moved and "client backed off" not in moved
    assert "Each call carries 50 messages, so" in moved  # no budget recorded: every call carried them all
    g.recording.parameters["call_budget_ms"] = 50.0
    assert "Each call carries up to 50 messages and ends once it has run 50 ms" in \
        analysis.call_notes(g)["db_client_note"]
    t = analysis.scaling(g)
    assert analysis.one_session_note(t, analysis.label).index("INSERT") < analysis.one_session_note(t, analysis.label).index("ring")
    g.runs["pushes_per_call"] = [50, 10]
    with pytest.raises(ValueError, match="pushes_per_call"):
        analysis.pushes_per_call(g)


def fake_recording(engine, runs, **extra):
    class R:
        pass

    r = R()
    r.engine = {"name": engine, "version": "x"}
    r.kind = "measured"
    g = lq.LmaxRecording(r, {"runs": pd.DataFrame(runs), **extra})
    return g


def test_scaling_takes_medians_and_best_finds_the_peak():
    g = fake_recording("native", {"variant": ["ring"] * 4, "sessions": [1, 1, 1, 2],
                                  "throughput": [10.0, 30.0, 20.0, 50.0], "p50_ns": [1000] * 4, "p99_ns": [2000] * 4})
    t = analysis.scaling(g)
    assert analysis._at(t, "ring", 1) == 20.0 and analysis._at(t, "ring", 1, "p99_us") == 2.0
    assert analysis.best(t, "ring") == (50.0, 2.0)
    assert np.isnan(analysis.best(t, "locked")[0])


def test_an_interval_that_contains_1_is_inconclusive_not_differs():
    """The chapter's rule: differs only when the whole interval lies at or below 1 (no effect); an interval that
    contains 1 is inconclusive, and says which of 1 and the threshold it straddles."""
    from contention_book.chapters.shared.spread import Spread

    at = lambda lo, hi: Spread((lo + hi) / 2, lo, hi, 5, "bootstrap 95%")  # noqa: E731
    assert claims.ratio_above(at(0.9, 1.1), 1.5) == "inconclusive: the interval 0.9–1.1 straddles 1"
    assert claims.ratio_above(at(0.898, 1.27), 1.2) == "inconclusive: the interval 0.898–1.27 straddles 1 and 1.2"
    assert claims.ratio_above(at(1.1, 1.3), 1.5) == "weaker"       # between 1 and the threshold
    assert claims.ratio_above(at(1.2, 1.8), 1.5) == "inconclusive: the interval 1.2–1.8 straddles 1.5"
    assert claims.ratio_above(at(0.5, 1.0), 1.5) == "differs"       # at or below 1, the whole of it
    assert claims.ratio_above(at(1.6, 2.0), 1.5) == "agrees"
    rule = claims.rule_above(1.2, "the ratio")
    assert "differs when it lies wholly at or below 1;" in rule and "inconclusive when it contains 1 or 1.2" in rule
    assert "reaches" not in rule


def test_an_interval_end_beside_a_threshold_gets_the_digits_to_tell_them_apart():
    from contention_book.chapters.shared.spread import Spread

    s = Spread(3.36, 1.5123, 3.61, 5, "bootstrap 95%")
    assert s.text(".1f", "×") == "3.4× (1.5–3.6)"                    # reads as if it touched 1.5
    assert claims.near(s, ".1f", 1.5) == "3.36× (1.51–3.61)"
    assert claims.near(s, ".1f", 5.0) == "3.4× (1.5–3.6)"            # nothing near 5: as before
    assert claims.near(Spread(26.0, 16.0, 30.0, 5, "bootstrap 95%"), ",.0f", 5.0) == "26× (16–30)"
    # the reference's ring against the locked queue: no end of its interval prints as the 1.5 it is not
    sh = recordings.load_shown()
    row = claims.verdicts(sh).set_index("claim")["measured"][claims.C["ring_1p"]]
    s = ratio_spread(sh.native.runs, "throughput", "ring", "locked", where={"sessions": 1})
    shown = claims.near(s, ".1f", claims.LEAD)
    assert shown in row
    low, high = shown[shown.index("(") + 1:shown.index(")")].split(",")[0].removeprefix("range ").split("–")
    assert (low != f"{claims.LEAD:g}" or s.low == claims.LEAD) and (high != f"{claims.LEAD:g}" or s.high == claims.LEAD)


def test_the_ring_tables_come_in_one_order_in_every_group():
    db = recordings.load("measured-postgres-reference")
    r = tables.relation_summary(db)
    orders = {tuple(g["table"]) for _, g in r.groupby(["variant", "sessions"], sort=False) if g["table"].nunique() > 1}
    assert orders == {("ring slots", "producers' cursor", "consumers' cursor")}


def test_keeping_up_is_decided_within_each_repetition():
    """Delivered ÷ pushed is taken inside each repetition, then the median: medians of pushed and of delivered
    come from different repetitions and can say the opposite."""
    pushed = [100.0, 200.0, 300.0, 400.0, 500.0]
    runs = pd.DataFrame({"variant": "ring", "sessions": 1, "consumers": 1, "repetition": range(5),
                         "throughput": pushed, "dequeue_per_s": [90.0, 180.0, 300.0, 360.0, 450.0]})
    share = analysis.delivered_share(runs, "ring", 1)
    assert share.median == pytest.approx(0.9)      # the medians' ratio, 300 / 300, would say 1: kept up
    assert not analysis.keeps_up(share)
    g = fake_recording("postgres", runs.to_dict("list"))
    g.recording.host, g.recording.parameters, g.recording.id = {"logical_cpus": 2}, {}, "fake"
    assert analysis.delivery(g)[analysis.KEEPS_UP_COLUMN].iloc[0] == "no: 0.90 (0.90–1.00)"


def test_the_reference_ring_keeps_up_repetition_by_repetition():
    """The reference's ring at one producer: its median pushed (10,547/s) and median delivered (9,668/s) came
    from different repetitions; within each repetition its consumer took a median 97% of what was pushed."""
    db = recordings.load("measured-postgres-reference")
    table = analysis.delivery(db)
    row = table[(table["design"] == "ring") & (table["producers (and consumers)"] == 1)].iloc[0]
    assert row[tables.KEEPS_UP_COLUMN].startswith("yes: 0.97")
    n = tables.confound_numbers(db, 1)
    assert "so it kept up" in n["db_ring_keeps_up_words"] and "behind" not in n["db_ring_keeps_up_words"]
    # the queue table's pushed ÷ delivered, per repetition then the median (the medians' ratio is 4.49)
    r = db.runs[(db.runs["variant"] == "naive") & (db.runs["sessions"] == 1)]
    assert n["db_naive_over_consumed"] == pytest.approx((r["throughput"] / r["dequeue_per_s"]).median())
    assert n["db_naive_over_consumed_text"].startswith("4.9")
    keep = tables.delivery_numbers(db, tables.scaling(db))["db_keepup_sentence"]
    assert keep.startswith("In 8 of 20 points")


def test_spinlock_shares_and_wait_summaries():
    g = fake_recording("sqlserver", {"variant": ["imoltp_v2"], "sessions": [8], "throughput": [1.0]},
                       spinlocks=pd.DataFrame({"variant": ["imoltp_v2"] * 2, "sessions": [8, 8],
                                               "name": ["CMED_HASH_SET", "XDESMGR"], "collisions": [1, 1],
                                               "spins": [300, 100], "backoffs": [0, 0]}))
    p = analysis.db_pressure(g).set_index("what")["value"]
    assert p["CMED_HASH_SET"] == 0.75
    assert analysis.top_waits(g, "imoltp_v2", n=1) == "CMED_HASH_SET (75%)"
    w = fake_recording("postgres", {"variant": ["ring"], "sessions": [2], "throughput": [1.0]},
                       waits=pd.DataFrame({"variant": ["ring"] * 2, "sessions": [2, 2], "wait": ["CPU", "LWLock:WALWrite"],
                                           "samples": [9, 1], "share": [0.9, 0.1]}))
    assert analysis.top_waits(w, "ring") == "LWLock:WALWrite (10%)"
    slept = fake_recording("postgres", {"variant": ["ring"], "sessions": [2], "throughput": [1.0]},
                           waits=pd.DataFrame({"variant": ["ring"] * 3, "sessions": [2] * 3,
                                               "wait": ["CPU", "Timeout:PgSleep", "Lock:transactionid"],
                                               "samples": [5, 4, 1], "share": [0.5, 0.4, 0.1]}))
    # the loops' back-off is named as waiting after a miss, not as the server's work
    assert analysis.top_waits(slept, "ring") == \
        "waiting after a miss (server-side back-off) (40%), Lock:transactionid (10%)"


# -- native smoke -----------------------------------------------------------------------------------
def test_native_programs_build_run_and_check_their_options(tmp_path):
    runs = native_run.sweep(["ring", "locked"], [1, 2], messages=20_000, queue_size=256, repetitions=1)
    assert len(runs) == 4 and (runs["operations"] == runs["sessions"] * 20_000).all()
    assert (runs["throughput"] > 0).all() and (runs["p99_ns"] >= runs["p50_ns"]).all()
    assert (runs.loc[runs["variant"] == "locked", "mean_batch"] == 1).all()
    fs = native_run.false_sharing(200_000, 2)   # the layouts interleaved, round after round
    assert list(fs["layout"]) == list(native_run.LAYOUTS) * 2
    assert list(fs["repetition"]) == [0] * len(native_run.LAYOUTS) + [1] * len(native_run.LAYOUTS)
    threads = dict(zip(fs["layout"], fs["threads"]))
    assert threads["single_atomic"] == threads["single"] == 1 and threads["shared_atomic"] == 2
    sharing = repo_root() / "native" / "build" / "lmax_false_sharing"
    bad = subprocess.run([str(sharing), "--layout", "triple"], capture_output=True, text=True)
    assert bad.returncode == 2 and "shared_atomic or single_atomic" in bad.stderr
    exe = repo_root() / "native" / "build" / "lmax_disruptor"
    bad = subprocess.run([str(exe), "--queue", "ring", "--producers", "1", "--messages", "10", "--size", "1000"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "power of two" in bad.stderr
    bad = subprocess.run([str(exe), "--queue", "stack"], capture_output=True, text=True)
    assert bad.returncode == 2 and "expected ring or locked" in bad.stderr
    path = run_live(engine="native", variants="ring", sessions="1", messages_per_session=10_000, queue_size=64,
                    repetitions=1, increments=100_000, record_to=tmp_path / "nat", log=lambda *_: None)
    g = lq.load(path)
    assert g.engine == "native" and g.false_sharing is not None and g.recording.manifest["measured"]["command"].startswith("python -m contention_book.run lmax-queue")


# -- PostgreSQL live --------------------------------------------------------------------------------
@pytest.mark.live
def test_live_postgres_run_writes_a_recording_that_renders(pg, tmp_path):
    from conftest import TEST_ENV_VAR

    lines = []
    path = run_live(engine="postgres", target=TEST_ENV_VAR, sessions="1,2", variants="ring,skip_locked",
                       duration_s=0.6, queue_size=500, pushes_per_call=5, repetitions=1, record_to=str(tmp_path / "rec"),
                       database="contention_test", log=lines.append, warmup_s=0.1)
    g = lq.load(path)
    assert_load_tables(g, 4)
    assert g.recording.parameters["pushes_per_call"] == 5 and analysis.pushes_per_call(g) == 5
    queue = g.runs[g.runs["variant"] != "ring"]
    # a call pushes 5 messages unless its time budget ends it first (never before its first message)
    assert (queue["operations"] <= queue["calls"] * 5).all() and (queue["operations"] >= queue["calls"]).all()
    assert (g.runs["pushed"] == g.runs["dequeued"] + g.runs["backlog"] - g.runs["backlog_start"]).all()
    assert g.engine == "postgres" and g.recording.kind == "measured"
    assert set(zip(g.runs["variant"], g.runs["sessions"])) == {("ring", 1), ("ring", 2), ("skip_locked", 1),
                                                               ("skip_locked", 2)}
    assert (g.runs["operations"] > 0).all() and (g.runs["errors"] == 0).all()
    rel = g.relation.set_index(["variant", "sessions"])
    slots = rel[rel["relation"] == "lmax_ring"]
    assert (slots.loc["ring", "live_tuples"] == 500).all()  # a ring never grows
    assert (slots.loc["ring", "n_tup_hot_upd"] > 0).all()
    cursors = rel[rel["relation"].isin(["lmax_ring_read", "lmax_ring_write"])]
    assert (cursors.loc["ring", "live_tuples"] == 1).all()  # one row each, rewritten in place
    sl = g.runs[g.runs["variant"] == "skip_locked"]
    assert (sl["consumers"] == sl["sessions"]).all() and (sl["dequeued"] > 0).all()
    assert g.waits is not None and set(g.waits["variant"]) <= {"ring", "skip_locked"}
    native, db = lq.load_measured(path)
    assert db.id == g.id
    assert not analysis.verdicts(*lq.load_published(), native, db).empty
    assert any("complete" in line for line in lines)
    assert any("(5 per call)" in line for line in lines)
    # one statement per message: the old path still runs
    old = lq.load(run_live(engine="postgres", target=TEST_ENV_VAR, sessions="1", variants="ring,naive",
                              duration_s=0.4, queue_size=200, pushes_per_call=1, repetitions=1, record_to=str(tmp_path / "old"),
                              database="contention_test", log=lines.append))
    naive = old.runs[old.runs["variant"] == "naive"]
    assert (naive["calls"] == naive["operations"]).all() and (old.runs["errors"] == 0).all()
    assert (old.runs["dequeued"] > 0).all() and (old.runs["lost"] == 0).all()
    assert (old.runs.loc[old.runs["variant"] == "naive", "dequeued"] > 0).all()


# -- "On your own server" queries ------------------------------------------------------------------------
def test_diagnose_queries_parse_and_render():
    from contention_book.chapters.lmax_queue import diagnose

    for path in diagnose.files("sqlserver"):
        assert problems(path.read_text()) == [], path.name
    for engine in ("sqlserver", "postgres"):
        text = diagnose.markdown(engine)
        assert text.count("```" + diagnose.LANG[engine]) == len(diagnose.files(engine)) >= 3
        assert all(len(q.purpose.split()) >= 8 for q in diagnose.queries(engine))


@pytest.mark.live
def test_diagnose_postgres_queries_run_on_the_embedded_cluster(pg_target):
    from contention_book.chapters.lmax_queue import diagnose

    conn = pg_target.connect("contention_test")
    try:
        for path in diagnose.files("postgres"):
            cur = conn.cursor()
            cur.execute(path.read_text())
            seen = []
            while True:
                if cur.description:
                    seen.append([d[0] for d in cur.description])
                    cur.fetchall()
                if not cur.nextset():
                    break
            assert seen, f"{path.name}: returned no result set"
    finally:
        conn.close()


def test_wait_samples_the_sampler_could_not_have_taken_are_set_aside_and_said():
    """The reference recording's first repetition at 8 producers holds 4.6 to 13 times the wait samples of the others
    (its sampler's window ran on through the off-CPU capture's post-processing and counted the ended sessions as on
    CPU): those points leave the wait profile and the load check's sampled shares, the medians come from the other
    repetitions, and the page says why.  The same points with believable counts stay."""
    db = recordings.load("measured-postgres-reference")
    over = db.table("waits_overcounted")
    assert sorted(over["variant"]) == sorted(db.runs["variant"].unique())
    assert set(over["sessions"]) == {8} and set(over["repetition"]) == {0} and over["offcpu"].all()
    assert (over["samples"] > 4 * over["ceiling"]).all()
    kept = db.by_repetition("waits")
    assert not ((kept["sessions"] == 8) & (kept["repetition"] == 0)).any()
    raw = db.recording.csv("samples/wait_events.csv")
    cpu = raw[(raw["variant"] == "ring") & (raw["sessions"] == 8) & (raw["wait"] == "CPU")]
    shown = db.waits[(db.waits["variant"] == "ring") & (db.waits["sessions"] == 8) & (db.waits["wait"] == "CPU")]
    assert float(shown["share"].iloc[0]) == pytest.approx(cpu[cpu["repetition"] > 0]["share"].median())
    assert float(shown["share"].iloc[0]) < 0.5 < float(cpu[cpu["repetition"] == 0]["share"].iloc[0])
    points = db.by_repetition("load_points")
    first8 = points[(points["sessions"] == 8) & (points["repetition"] == 0)]
    assert first8["server_share"].isna().all() and first8["throughput"].notna().all()  # the driver's own are kept
    words = tables.overcounted_text(db)
    assert words.startswith("The 5 points that carried the off-CPU capture (every design at 8 producers, the first "
                            "repetition) are left out of the wait shares") and words.count(". ") == 0  # one sentence
    assert "out of the rate medians" in words
    # perturbed by perf beside them, their rates leave the rate medians as their samples leave the wait shares
    assert not ((db.runs["sessions"] == 8) & (db.runs["repetition"] == 0)).any()
    assert ((db.runs["sessions"] == 8) & (db.runs["repetition"] == 1)).any()
    assert "off-CPU capture" in words and "4.6 to 13 times" in words
    assert any(n.startswith("set aside from the wait profile") for n in db.notes)
    # believable counts at the same points: nothing is set aside
    calm = raw.copy()
    cpu8 = (calm["sessions"] == 8) & (calm["wait"] == "CPU")
    typical = calm[cpu8 & (calm["repetition"] > 0)].groupby("variant")["samples"].median()
    first = cpu8 & (calm["repetition"] == 0)
    calm.loc[first, "samples"] = calm.loc[first, "variant"].map(typical).round().astype(int)
    db.tables["waits_by_repetition"] = calm
    assert recordings.set_aside_overcounted_waits(db).empty


def test_review_round_ch5_main_page_says_row_1_stands_with_the_slow_repetitions():
    """Row 1's interval includes the repetitions the details page puts to the vCPUs' placement; the main page says,
    computed, whether the threshold is cleared with them in (read from the reference, whatever it holds)."""
    sh = recordings.load_shown()
    text = claims.split_verdict_text(sh)
    row = claims.verdicts(sh).iloc[0]
    part = sh.native.runs[(sh.native.runs["variant"] == "ring") & (sh.native.runs["sessions"] == 1)]
    rate = part["throughput"]
    slow = int((rate < rate.max() / tables.SPLIT).sum())
    if not slow:
        assert text == ""
    else:
        shown_interval = row["measured"].removeprefix("ring ").split(" the ")[0]
        assert f"Row 1's interval, {shown_interval}, includes the {slow} of {len(part)} repetitions" in text
        s = ratio_spread(sh.native.runs, "throughput", "ring", "locked", where={"sessions": 1})
        if s.low > claims.LEAD:
            assert "still lies above the rule's 1.5, so the verdict stands" in text
            assert row["verdict"] == "direction reproduced"
        else:
            assert "does not clear the rule's 1.5, and the verdict says so" in text
            assert not row["verdict"].startswith("direction reproduced")
    runs = pd.DataFrame([{"variant": v, "sessions": 1, "repetition": r, "throughput": t}
                         for r in range(5) for v, t in (("ring", 3e6), ("locked", 1e6))])
    assert claims.split_verdict_text(SimpleNamespace(native=SimpleNamespace(runs=runs))) == ""  # no split, no word
    split = runs.assign(throughput=[t / 3 if (v, r) == ("ring", 0) else t for v, r, t in
                                    zip(runs["variant"], runs["repetition"], runs["throughput"])])
    assert "includes the 1 of 5 repetitions" in claims.split_verdict_text(SimpleNamespace(native=SimpleNamespace(runs=split)))


def test_review_round_ch5_n_dead_tup_falls_at_vacuum_not_on_pruning():
    """PostgreSQL 15 pruneheap.c: heap_page_prune_opt reports ndeleted - nnewlpdead, so n_dead_tup does not fall
    when pruning turns a non-HOT dead tuple into an LP_DEAD item; it falls at VACUUM."""
    nb = (repo_root() / "notebooks" / "05-lmax-queue.ipynb").read_text()
    assert "counts dead heap tuples until VACUUM, since pruning subtracts only the" in nb
    assert "drops after pruning" not in nb and "undercounts" not in nb


# -- review round: the window, the cursor tables, the recordings list, the wait figure ----------------------------
def test_the_window_sentence_states_the_window_and_the_queue_tables_growth_from_the_recording():
    db = recordings.load(spec.DEFAULT_MEASURED["postgres"])
    words = tables.window_sentence(db)
    window = db.recording.parameters["duration_s"]
    assert words.startswith(f"Each point's measured window was {window:g} s.")
    reg = tables.regime_sessions(db)
    r = db.runs[(db.runs["variant"] == "naive") & (db.runs["sessions"] == reg)]
    growth = ((r["backlog"] - r["backlog_start"]) / r["elapsed_s"])
    assert (growth > 0).all()  # the flat-out queue table never caught up, repetition by repetition
    assert tables.backlog_growth(db, "naive", reg).text(",.0f") in words and "not a steady state" in words
    # a recording without the window's length says nothing about it
    assert tables.window_sentence(SimpleNamespace(recording=SimpleNamespace(parameters={}))) == ""


def test_the_cursor_tables_growth_is_read_from_the_recording():
    db = recordings.load(spec.DEFAULT_MEASURED["postgres"])
    words = tables.cursor_growth_words(db)
    rel = db.relation[db.relation["relation"].isin(tables.CURSORS)]
    one = rel.loc[rel["sessions"] == 1, "table_bytes"].max() / 2**20
    more = rel.loc[rel["sessions"] > 1, "table_bytes"].max() / 2**20
    assert more > 5 * one   # they grew under concurrency ...
    assert f"{one:.3f} MB" in words and f"{more:.2f} MB" in words
    hot = rel.loc[rel["sessions"] > 1, "n_tup_hot_upd"] / rel.loc[rel["sessions"] > 1, "n_tup_upd"]
    assert hot.min() > 0.9 and f"{hot.min():.1%}" in words  # ... although nearly every update was HOT


def test_the_recordings_list_names_each_recording_by_its_title_and_date():
    sh = recordings.load_shown()
    note = recordings.header_note(sh)
    for r in (sh.native.recording, sh.db.recording):
        assert r.manifest["title"] in note and str(r.manifest["started"])[:10] in note
        assert f"`{r.id}`" not in note   # the book's own recordings by title, the id only in the link
    for r in (sh.adkin.recording, sh.lmax.recording):
        assert r.manifest["title"].removeprefix("Published: ")[1:] in note and f"`{r.id}`" not in note


def test_the_wait_figure_gives_its_bars_the_width():
    import matplotlib
    matplotlib.use("Agg")
    from contention_book.chapters.lmax_queue import figures
    from contention_book.chapters.shared import style
    db = recordings.load(spec.DEFAULT_MEASURED["postgres"])
    fig = figures.plot_pressure(db)
    style.fit_width(fig)
    assert style.overlaps(fig) == [] and style.count_problems(fig) == []
    drawn = [ax for ax in fig.axes if ax.axison]
    assert len(drawn) == db.runs["variant"].nunique()
    for ax in drawn:  # short labels: the session counts only, the design in the panel's title
        assert all(len(t.get_text()) <= 8 for t in ax.get_yticklabels()), [t.get_text() for t in ax.get_yticklabels()]
        assert ax.get_position().width > 0.3   # each panel's bars take most of its half of the figure


def test_the_opening_lists_every_judged_verdict_beside_its_number(monkeypatch):
    """Issue 31, point 12: the lead claim's *inconclusive* was in the claims table only."""
    import pandas as pd

    from contention_book.chapters.lmax_queue.claims import C
    from contention_book.chapters.lmax_queue.finding import in_short

    rows = pd.DataFrame([{"claim": C["ring_1p"], "measured": "ring 3.7× (0.9–6.9) the locked queue's rate",
                          "verdict": "inconclusive: the interval 0.9–6.9 straddles 1"},
                         {"claim": C["non_durable"], "measured": "1.08× (0.90–1.27)", "verdict": "inconclusive"},
                         {"claim": C["ring_np"], "measured": "", "verdict": "not testable here"},
                         {"claim": C["v2"], "measured": "", "verdict": "not testable here"}])
    from contention_book.chapters.lmax_queue import finding

    monkeypatch.setattr(finding, "where", lambda view: f"{view} on 2 CPUs")
    shown = type("Shown", (), {"native": "C model", "db": "PostgreSQL 15 analogue"})()
    text = in_short(rows, shown)
    assert "ring over a locked queue, 1 producer, 3.7× (0.9–6.9): *inconclusive*" in text
    assert "UNLOGGED beyond that, 1.08× (0.90–1.27): *inconclusive*" in text
    assert "*Not testable here*: 2 more claims" in text  # every untested row of the table, named or not
