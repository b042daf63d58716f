"""Ghost-cleanup chapter: plans, arithmetic and analysis without a server; a short live run on PostgreSQL."""
import numpy as np
import pandas as pd
import pytest
from load_checks import assert_load_tables
from tsql_parse import problems

from types import SimpleNamespace

from contention_book.chapters.ghost_cleanup import claims, recordings, run_common, run_sqlserver, spec, tables
from contention_book.chapters.ghost_cleanup import tables as ghost_tables
from contention_book.harness.chapter_registry import runners
from contention_book.chapters.shared.claims import VERDICTS
from contention_book.harness.runner import RunLog, run_chapter

RUNNERS = runners("ghost-cleanup")

# The chapter's pieces under the names these tests were written with.
ghost = SimpleNamespace(
    DEFAULT_MEASURED=spec.DEFAULT_MEASURED, chunk_sizes=run_common.chunk_sizes,
    counter_rates=run_sqlserver.counter_rates, curve_growth=tables.curve_growth, ghost_visits=tables.ghost_visits,
    sqlserver_changes=run_sqlserver.sqlserver_changes, load=recordings.load, load_published=recordings.load_published,
    key_numbers=lambda pub, m: tables.key_numbers(recordings.Shown(pub, m)),
    verdicts=lambda pub, m: claims.verdicts(recordings.Shown(pub, m)),
    stacks_section=lambda g: tables.stack_section(recordings.Shown([], g)),
)


def run_live(*, target, engine, record_to, log, stacks=True, variants=None, **params):
    raw = {**params, "capture_stacks": stacks, **({"variants": variants} if variants else {})}
    return run_chapter(spec.SPEC, RUNNERS, raw, engine=engine, target=target, record_to=record_to, log=RunLog(log))
from contention_book.harness.guard import ServerChangeNotAllowed, StateGuard


class FakeCursor:
    def __init__(self, rows):
        self.rows = rows
        self.description = [("c",)]

    def execute(self, sql, *params):
        self.sql = sql
        return self

    def fetchone(self):
        return self.rows[0]

    def fetchall(self):
        return self.rows


class FakeConn:
    def __init__(self, rows):
        self.rows = rows
        self.executed = []

    def cursor(self):
        return FakeCursor(self.rows)

    def close(self):
        pass


def test_chunk_sizes():
    assert ghost.chunk_sizes(10, 3) == [3, 3, 3, 1]
    assert ghost.chunk_sizes(123456, 1235)[-1] == 123456 - 99 * 1235
    with pytest.raises(ValueError):
        ghost.chunk_sizes(0, 5)


def test_ghost_visits_is_the_triangular_number():
    assert ghost.ghost_visits(123_455) == 123_455 * 123_454 // 2
    assert ghost.ghost_visits(1) == 0


def test_database_options_plan_restores_the_prior_state():
    change = ghost.sqlserver_changes("rcsi", "contention_lab", "16.0.4135.4")[0]
    prior = change.read(FakeConn([("FULL", "DISABLED", False, "ON", True)]))
    assert prior == {"recovery": "FULL", "delayed_durability": "DISABLED", "rcsi": False, "snapshot": "ON",
                     "adr": True}
    apply = change.apply(prior)
    restore = change.restore(prior)
    assert "ALTER DATABASE [contention_lab] SET READ_COMMITTED_SNAPSHOT ON WITH ROLLBACK IMMEDIATE" in apply
    assert "ALTER DATABASE [contention_lab] SET ACCELERATED_DATABASE_RECOVERY = OFF WITH ROLLBACK IMMEDIATE" in apply
    assert "ALTER DATABASE [contention_lab] SET RECOVERY FULL" in restore
    assert "ALTER DATABASE [contention_lab] SET DELAYED_DURABILITY = DISABLED" in restore
    assert "ALTER DATABASE [contention_lab] SET ALLOW_SNAPSHOT_ISOLATION ON" in restore
    assert "ALTER DATABASE [contention_lab] SET ACCELERATED_DATABASE_RECOVERY = ON WITH ROLLBACK IMMEDIATE" in restore
    assert change.scope == "database"
    for sql in apply + restore:
        assert not problems(sql + ";"), sql


def test_no_adr_statement_before_2019():
    change = ghost.sqlserver_changes("read_committed", "contention_lab", "14.0.3456.2")[0]
    prior = change.read(FakeConn([("SIMPLE", "ALLOWED", True, "OFF")]))
    assert not any("ACCELERATED" in s for s in change.apply(prior) + change.restore(prior))
    assert "ALTER DATABASE [contention_lab] SET READ_COMMITTED_SNAPSHOT OFF WITH ROLLBACK IMMEDIATE" in change.apply(prior)


def test_trace_flag_is_server_scoped_and_restored_only_if_it_was_off():
    changes = ghost.sqlserver_changes("rcsi_open_txn_tf7006", "contention_lab", "16.0.1000.6")
    tf = changes[1]
    assert tf.scope == "server"
    off = tf.read(FakeConn([]))
    assert off is False
    assert tf.apply(off) == ["DBCC TRACEON(7006, -1)"] and tf.restore(off) == ["DBCC TRACEOFF(7006, -1)"]
    on = tf.read(FakeConn([(7006, 1, 1, 0)]))
    assert on is True and tf.apply(on) == [] and tf.restore(on) == []
    for sql in tf.apply(off) + tf.restore(off):
        assert not problems(sql + ";")


def test_trace_flag_needs_opt_in():
    changes = ghost.sqlserver_changes("rcsi_open_txn_tf7006", "contention_lab", "16.0.1000.6")
    with pytest.raises(ServerChangeNotAllowed, match="global trace flag 7006"):
        with StateGuard(lambda db: FakeConn([]), changes, allow_server_changes=False, log=lambda *_: None):
            pass


def test_database_name_is_validated():
    with pytest.raises(Exception, match="plain identifier"):
        ghost.sqlserver_changes("rcsi", "lab]; DROP DATABASE x; --", "16.0")


def test_counter_rates_by_type():
    cols = ["object_name", "counter_name", "instance_name", "cntr_value", "cntr_type"]
    before = pd.DataFrame([("SQLServer:Locks", "Lock Requests/sec", "_Total", 1_000, 272696576),
                           ("SQLServer:Access Methods", "Skipped Ghosted Records/sec", "", 500, 272696576),
                           ("SQLServer:Transactions", "Version Store Size (KB)", "", 64, 65792)], columns=cols)
    after = before.assign(cntr_value=[61_000, 400, 128])  # the skipped-ghost counter was reset meanwhile
    rates = ghost.counter_rates(before, after, 2.0).set_index("counter")
    assert rates.loc["Lock Requests/sec", "per_second"] == 30_000
    assert rates.loc["Skipped Ghosted Records/sec", "per_second"] == 0  # clamped, not negative
    assert np.isnan(rates.loc["Version Store Size (KB)", "per_second"])
    assert rates.loc["Version Store Size (KB)", "value"] == 128


def test_curve_growth_detects_linear_growth():
    x = np.arange(1, 101) * 100
    curve = pd.DataFrame({"variant": ["open_snapshot"] * 100 + ["baseline"] * 100,
                          "updates_done": np.concatenate([x, x]),
                          "elapsed_s": 0.0,
                          "us_per_update": np.concatenate([10 + 0.01 * x, np.full(100, 10.0) + np.sin(x)])})
    growth = ghost.curve_growth(curve).set_index("variant")
    assert growth.loc["open_snapshot", "r2"] > 0.99
    assert growth.loc["open_snapshot", "slope_us_per_1000"] == pytest.approx(10, rel=0.01)
    assert growth.loc["baseline", "growth"] == pytest.approx(1, abs=0.2)


def test_published_recordings_match_the_article():
    pub = {g.recording.engine["version"]: g for g in ghost.load_published()}
    sql2019 = pub["15.0.4410"]
    assert sql2019.recording.kind == "published"
    assert "sql.kiwi" in sql2019.recording.manifest["citation"]["url"]
    idx = sql2019.index_stats
    end = idx[(idx["variant"] == "rcsi_open_txn") & (idx["phase"] == "after_run")]
    assert end["pages"].tolist() == [823, 2, 1]
    assert end["ghost_versions"].tolist()[0] == 123455
    nums = ghost.key_numbers(ghost.load_published(), ghost.load(ghost.DEFAULT_MEASURED))
    assert nums["pub15_rcsi_s"] == 82 and nums["pub16_rcsi_open_txn_s"] == 92
    assert nums["pub15_rcsi_x"] == 41
    assert all(not isinstance(v, np.generic) for v in nums.values())


def test_autovacuum_runs_are_found_and_set_aside():
    """The reference was recorded with autovacuum off on the loop table and counted autovacuum runs: none reached a
    loop, so nothing is set aside.  A recording without those counts (as the earlier reference was) is judged from
    what VACUUM alone does (freed line pointers, deleted index pages): such runs leave every time, ratio, growth
    and size, and are named."""
    raw = recordings.rec.load_view(spec.CHAPTER, ghost.DEFAULT_MEASURED, spec.LAYOUT, recordings.GhostRecording)
    rel = raw.by_repetition("relation")
    assert "autovacuum_during_run" in rel.columns
    assert not recordings.vacuumed_during_run(raw)["vacuumed"].any()
    g = ghost.load(ghost.DEFAULT_MEASURED)
    assert g.tables.get("runs_vacuumed") is None or g.tables["runs_vacuumed"].empty
    assert not any("autovacuum reached" in n for n in g.notes)
    # an older recording (no counts), one of whose runs VACUUM reached: 500 line pointers freed
    hit = ("baseline", 2)
    older = rel.drop(columns=["autovacuum_during_run"])
    mark = (older["variant"] == hit[0]) & (older["repetition"] == hit[1]) & (older["phase"] == "after_run") \
        & (older["relation"] == recordings.HEAP)
    assert mark.sum() == 1
    older.loc[mark, "lp_unused"] = 500
    raw.tables["relation_by_repetition"] = older
    found = recordings.vacuumed_during_run(raw)
    assert set(zip(found.loc[found["vacuumed"], "variant"], found.loc[found["vacuumed"], "repetition"])) == {hit}
    assert "500 freed line pointers" in found.loc[found["vacuumed"], "evidence"].iloc[0]


def test_verdicts_on_the_reference_recording():
    table = ghost.verdicts(ghost.load_published(), ghost.load(ghost.DEFAULT_MEASURED))
    heads = table["verdict"].str.split(":").str[0]
    assert set(heads) <= set(VERDICTS)
    rows = table.set_index("claim")["verdict"]
    # statements about SQL Server 2022 stay untested without a SQL Server 2022 recording
    assert rows[claims.CLAIMS["tf7006"]].startswith("not testable here")
    assert rows[claims.CLAIMS["version_store"]].startswith("not testable here")
    assert (table["tested_on"].str.startswith("PostgreSQL")).all()
    decided = table[heads.isin(["reproduced", "direction reproduced", "differs"])]
    assert decided["size"].str.startswith("not compared").all()  # an analogue's size is never set beside SQL Server's
    assert not table["published"].str.contains("a few seconds after commit").any()  # nothing typed by hand


@pytest.mark.live
def test_live_postgres_run_writes_a_recording_that_loads(pg, tmp_path):
    from conftest import TEST_ENV_VAR

    lines = []
    path = run_live(target=TEST_ENV_VAR, engine="postgres", updates=1500, chunk=100, repetitions=2,
                          record_to=str(tmp_path / "rec"), database="contention_test", stacks=False,
                          log=lines.append)
    g = ghost.load(path)
    assert_load_tables(g, 8)
    assert g.recording.kind == "measured" and g.recording.engine["name"] == "postgres"
    assert g.recording.manifest["measured"]["command"]
    every = ["baseline", "vacuum_each_chunk", "idle_read_committed", "open_snapshot"]
    assert set(g.runs["variant"]) == set(every)
    assert (g.runs["operations"] == 1500).all()
    assert (g.runs["updates_done"] == 1500).all() and (g.runs["live_rows"] == 1).all()  # the key read back
    # variants interleaved: A B C D, A B C D, each repetition tagged
    assert list(zip(g.runs["repetition"], g.runs["variant"])) == [(r, v) for r in (0, 1) for v in every]
    assert len(g.curve) == 4 * 2 * 15
    rel = g.relation_stats.set_index(["variant", "phase", "relation"])
    # the held snapshot keeps every replaced version with its storage; VACUUM removes them once it ends
    assert rel.loc[("open_snapshot", "after_run", "ghost_test"), "dead_tuples"] >= 1400
    assert rel.loc[("open_snapshot", "after_cleanup", "ghost_test"), "dead_tuples"] == 0
    # with nothing held (or an idle READ COMMITTED transaction) pruning frees the storage but leaves a dead line
    # pointer per update, referenced by an index entry until the index drops it (B-tree simple deletion can, once a
    # scan has marked the entry dead: seen in one of two repetitions on a loaded machine); VACUUM after every chunk
    # leaves neither
    for v in ("baseline", "idle_read_committed"):
        assert rel.loc[(v, "after_run", "ghost_test"), "dead_tuples"] < 1400
        assert rel.loc[(v, "after_run", "ghost_test"), "lp_dead"] >= 1000
        assert 0 < rel.loc[(v, "after_run", "ghost_test_pkey"), "entries_to_dead_pointers"] <= \
            rel.loc[(v, "after_run", "ghost_test"), "lp_dead"]
    assert rel.loc[("vacuum_each_chunk", "after_run", "ghost_test"), "lp_dead"] == 0
    assert rel.loc[("vacuum_each_chunk", "after_run", "ghost_test_pkey"), "index_entries"] <= 100
    # what each holder pinned: REPEATABLE READ an xmin, READ COMMITTED nothing; neither wrote, so no xid
    pins = ghost_tables.pins_table(g)
    assert pins.loc["idle REPEATABLE READ transaction", "xmin_held"] == 2
    assert pins.loc["idle READ COMMITTED transaction", "xmin_held"] == 0
    assert (pins["xid_held"] == 0).all()
    assert pins.loc["idle REPEATABLE READ transaction", "xmin_age_end"] >= 1500
    # autovacuum is kept off the loop's table in every variant but the VACUUM control (the table's own storage
    # parameter, read back while the table exists), and the run records that it never reached the table
    heap = g.by_repetition("relation")
    heap = heap[(heap["relation"] == "ghost_test") & (heap["phase"] == "after_run")]
    control = heap["variant"] == "vacuum_each_chunk"
    assert (heap.loc[~control, "autovacuum_enabled"] == 0).all()
    assert (heap.loc[control, "autovacuum_enabled"] == 1).all()
    assert (heap.loc[~control, "autovacuum_during_run"] == 0).all()
    assert heap["autoanalyze_during_run"].notna().all()
    assert "runs_vacuumed" not in g.tables  # nothing set aside: the counts say autovacuum never came
    assert any("complete" in line for line in lines)


@pytest.mark.live
def test_load_check_counts_the_driven_session_not_the_idle_holder(pg, tmp_path, monkeypatch):
    """Each point's load_points row carries the wait sampler and the driven backend's server/client shares; the
    holder, idle in its transaction and so waiting for its client the whole run, is sampled but not counted."""
    from conftest import TEST_ENV_VAR
    from contention_book.chapters.ghost_cleanup import run_postgres
    from contention_book.harness.pg_waits import client_bound

    seen = {"holder": [], "record": []}
    real_holder, real_record = run_postgres._holder_state, run_postgres.record

    def holder_state(run, conn, variant, pid, phase):
        seen["holder"].append(int(pid))
        return real_holder(run, conn, variant, pid, phase)

    def record(writer, result, **kw):
        seen["record"].append(kw)
        return real_record(writer, result, **kw)

    monkeypatch.setattr(run_postgres, "_holder_state", holder_state)
    monkeypatch.setattr(run_postgres, "record", record)
    path = run_live(target=TEST_ENV_VAR, engine="postgres", updates=6000, chunk=500, repetitions=1,
                    variants=["baseline", "idle_read_committed"], record_to=str(tmp_path / "rec"),
                    database="contention_test", stacks=False, log=lambda *_: None)
    points = ghost.load(path).by_repetition("load_points").set_index("variant")
    assert {"wait_source", "server_share", "client_share", "observer_cpu_per_s"} <= set(points.columns)
    assert points["wait_source"].isin(["pg_wait_sampling", "polling"]).all()
    assert points["client_share"].between(0, 1).all()
    assert (points["server_share"] + points["client_share"]).round(9).eq(1).all()

    kw = seen["record"][1]
    assert kw["variant"] == "idle_read_committed"
    holder = set(seen["holder"])
    assert len(holder) == 1 and not holder & kw["pids"] and len(kw["pids"]) == 1
    frame = kw["frame"]
    driven = frame[frame["pid"].isin(kw["pids"])]
    assert driven["samples"].sum() > 0  # the driven backend was sampled
    held = frame[frame["pid"].isin(holder)]
    # the holder was sampled too, waiting for its client: counting it would have raised the client share
    assert held.loc[held["wait_event"] == "ClientRead", "samples"].sum() > 0
    recorded = points.loc["idle_read_committed", "client_share"]
    assert recorded == pytest.approx(client_bound(frame, kw["pids"])["client_share"])
    assert recorded < client_bound(frame, kw["pids"] | holder)["client_share"]


@pytest.mark.live
def test_interrupted_live_run_leaves_an_incomplete_recording(pg, tmp_path, monkeypatch):
    from conftest import TEST_ENV_VAR
    from contention_book.harness.recording import Recording, RecordingError

    real = run_common.run_sessions
    calls = {"n": 0}

    def second_variant_interrupted(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(run_common, "run_sessions", second_variant_interrupted)
    dest = tmp_path / "interrupted"
    with pytest.raises(KeyboardInterrupt):
        run_live(target=TEST_ENV_VAR, engine="postgres", updates=300, chunk=100, record_to=str(dest),
                       database="contention_test", stacks=False, log=lambda *_: None)
    with pytest.raises(RecordingError, match="marked incomplete .*KeyboardInterrupt"):
        Recording.open(dest)
    partial = Recording.open(dest, allow_incomplete=True)
    assert partial.csv("runs.csv")["variant"].tolist() == ["baseline"]  # the finished variant is kept
    # the holder of the second variant was released: nothing holds the horizon any more
    from contention_book.harness.targets import resolve_target

    c = resolve_target(TEST_ENV_VAR).connect("contention_test")
    held = c.cursor().execute("SELECT count(*) FROM pg_stat_activity WHERE datname = 'contention_test' "
                              "AND state LIKE 'idle in transaction%'").fetchone()[0]
    assert held == 0


@pytest.mark.live
def test_stacks_recorded_or_explained(pg, tmp_path, monkeypatch):
    """With perf the recording holds stacks per variant; without it the run goes on and says why."""
    from conftest import TEST_ENV_VAR
    from contention_book.perftools.capture import perf_available

    monkeypatch.setenv("PERF", "/nonexistent/perf")
    path = run_live(target=TEST_ENV_VAR, engine="postgres", updates=200, chunk=100, variants=["baseline"],
                          record_to=str(tmp_path / "noperf"), database="contention_test", log=lambda *_: None)
    g = ghost.load(path)
    assert not g.stacks
    assert any(n.startswith("stacks for baseline: not recorded") for n in g.recording.manifest["notes"])
    assert "holds no CPU stacks" in ghost.stacks_section(g).text

    monkeypatch.delenv("PERF")
    if not perf_available().ok:
        pytest.skip("perf is not usable on this machine; the path without it is covered above")
    path = run_live(target=TEST_ENV_VAR, engine="postgres", updates=3000, chunk=1000, repetitions=1,  # stacks: rep. 1
                         record_to=str(tmp_path / "perf"), database="contention_test", log=lambda *_: None)
    g = ghost.load(path)
    assert set(g.stacks) == {"baseline", "vacuum_each_chunk", "idle_read_committed", "open_snapshot"}
    section = ghost.stacks_section(g)
    assert len(section.figures) == 4 and len(section.tables) == 5
    assert "hottest function" in section.text


# -- On your own server: the queries the page shows ------------------------------------------------------------
def test_sqlserver_diagnose_queries_parse_and_name_documented_views():
    from contention_book.chapters.ghost_cleanup import diagnose

    files = diagnose.files("sqlserver")
    assert len(files) >= 3
    text = "\n".join(f.read_text() for f in files)
    for f in files:
        assert not problems(f.read_text()), f.name
    for name in ("sys.dm_tran_active_snapshot_database_transactions", "version_ghost_record_count",
                 "Skipped Ghosted Records/sec"):
        assert name in text
    assert "```tsql" in diagnose.markdown("sqlserver")


def test_documented_parameters_parse():
    """Every PARAMS= and --param value the chapter's page documents goes through the parameter parser."""
    import json
    import re
    from pathlib import Path

    from contention_book.harness import params as P

    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / spec.NOTEBOOK).read_text())
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    found = re.findall(r'ENGINE=(\w+) PARAMS="([^"]+)"', text)
    assert found
    for engine, assignments in found:
        P.parse(spec.PARAMS, P.split_assignments(assignments.split(), "PARAMS"), engine)


@pytest.mark.live
def test_postgres_diagnose_queries_run_on_a_plain_database(pg_target):
    from contention_book.chapters.ghost_cleanup import diagnose

    conn = pg_target.connect("contention_test")
    holder = pg_target.connect("contention_test", autocommit=False)
    try:
        holder.cursor().execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.cursor().execute("SELECT count(*) FROM pg_class").fetchall()
        results = {}
        for f in diagnose.files("postgres"):
            cur = conn.cursor()
            cur.execute(f.read_text())
            results[f.name] = ([d[0] for d in cur.description], cur.fetchall())
        cols, rows = results["01-what-idle-transactions-pin.sql"]
        assert "backend_xmin" in cols and "backend_xid" in cols
        assert any(r[cols.index("backend_xmin")] is not None for r in rows)  # the idle snapshot holder is found
    finally:
        holder.rollback()
        holder.close()
        conn.close()


def test_the_article_prediction_uses_the_article_alone():
    """The article's loop is predicted from its own numbers (one lock request per skipped ghost at its plain RCSI
    test's rate), never from a step measured on PostgreSQL: so it is "published only"."""
    from contention_book.chapters.ghost_cleanup import model

    shown = recordings.load_shown("")
    (p,) = model.predictions(shown)
    assert all(i.source.startswith("published") for i in p.inputs)
    t_v = next(i for i in p.inputs if i.symbol == "t_v")
    assert t_v.value.median == pytest.approx(1e9 / 6e6)  # the article's ~6 million lock requests a second
    assert p.verdict.startswith("published only")
    assert 18 * 60 < p.predicted.median < 24 * 60  # about 21 minutes, consistent with "over 4 min"


def test_unnamed_frames_are_said_plainly():
    assert ghost_tables._unresolved_words(0.0) == "Every sampled frame in the first capture resolved to a function name."
    assert "12.0%" in ghost_tables._unresolved_words(0.12)


def test_the_read_committed_ratio_is_not_printed_without_a_clean_pair():
    """The reference has clean pairs, so its ratio is printed; a recording whose every pair autovacuum reached on
    one side (made from the reference: line pointers freed, as an older recording without counts shows it) gives
    no ratio, and names the repetitions in words, not the variants' ids."""
    from dataclasses import replace

    from contention_book.chapters.ghost_cleanup import finding
    shown = recordings.load_shown("")
    rows = claims.verdicts(shown).set_index("claim")
    assert not rows.loc[claims.CLAIMS["unpinned"], "measured"].startswith(tables.NO_PAIR)
    raw = recordings.rec.load_view(spec.CHAPTER, ghost.DEFAULT_MEASURED, spec.LAYOUT, recordings.GhostRecording)
    rel = raw.by_repetition("relation").drop(columns=["autovacuum_during_run"])
    for variant, reps in (("baseline", (2, 4)), ("idle_read_committed", (0, 1, 3))):
        mark = (rel["variant"] == variant) & rel["repetition"].isin(reps) & (rel["phase"] == "after_run") \
            & (rel["relation"] == recordings.HEAP)
        rel.loc[mark, "lp_unused"] = 500
    raw.tables["relation_by_repetition"] = rel
    recordings._set_aside_vacuumed_points(raw)
    rows = claims.verdicts(replace(shown, measured=raw)).set_index("claim")
    assert rows.loc[claims.CLAIMS["unpinned"], "measured"].startswith(tables.NO_PAIR)
    text = finding.controls_text(raw)
    assert "no paired ratio" in text and "repetitions 3 and 5" in text and "repetitions 1, 2 and 4" in text
    assert "baseline" not in text and "idle_read_committed" not in text


def _raw_reference():
    return recordings.rec.load_view(spec.CHAPTER, ghost.DEFAULT_MEASURED, spec.LAYOUT, recordings.GhostRecording)


def _vacuumed(raw, hits):
    """``raw`` as an older recording (no autovacuum counts) whose ``hits`` (variant -> repetitions) VACUUM reached
    (line pointers freed), set aside as the loader does."""
    rel = raw.by_repetition("relation").drop(columns=["autovacuum_during_run"])
    for variant, reps in hits.items():
        mark = (rel["variant"] == variant) & rel["repetition"].isin(reps) & (rel["phase"] == "after_run") \
            & (rel["relation"] == recordings.HEAP)
        rel.loc[mark, "lp_unused"] = 500
    raw.tables["relation_by_repetition"] = rel
    recordings._set_aside_vacuumed_points(raw)
    return raw


def test_runs_set_aside_are_spoken_of_only_when_the_data_set_some_aside():
    """Review of chapter 3's details: "(in the 5 runs autovacuum did not reach) … and in the runs set aside autovacuum
    did" was printed for a recording made with autovacuum off on the test table, which set no run aside.  Every text
    that speaks of runs autovacuum reached, or of runs set aside, asks the data first."""
    from dataclasses import replace

    from contention_book.chapters.ghost_cleanup import finding
    shown = recordings.load_shown("")
    g = shown.measured
    assert tables.set_aside(g) == 0 and tables.autovacuum_kept_off(g, "baseline")
    note = tables.growth_note(g)
    assert "set aside" not in note and "did not reach" not in note
    assert "Its dead versions did not go: at the end" in note
    assert "only VACUUM removes both, and with autovacuum off on the test table none ran" in note
    assert "autovacuum" not in finding.controls_text(g).lower().replace("autovacuum off", "")
    # the same recording with one unheld run reached by VACUUM: that run is set aside and the words say so
    hit = _vacuumed(_raw_reference(), {"baseline": (2,)})
    assert tables.set_aside(hit, "baseline") == 1
    note = tables.growth_note(hit)
    assert "(in the 4 runs autovacuum did not reach; the one run it reached is set aside)" in note
    assert "only VACUUM removes both, and in the runs set aside autovacuum did" in note
    # no clean pair: autovacuum is named where it set runs aside, and not where the pairs are missing for another reason
    gone = _vacuumed(_raw_reference(), {"baseline": (2, 4), "idle_read_committed": (0, 1, 3)})
    measured = claims.verdicts(replace(shown, measured=gone)).set_index("claim").loc[claims.CLAIMS["unpinned"],
                                                                                     "measured"]
    assert measured.startswith(f"{tables.NO_PAIR} in which autovacuum reached neither run")
    unpaired = _raw_reference()
    runs = unpaired.runs
    drop = ((runs["variant"] == "baseline") & runs["repetition"].isin((2, 4))) | \
        ((runs["variant"] == "idle_read_committed") & runs["repetition"].isin((0, 1, 3)))
    unpaired.tables["runs"] = runs[~drop].reset_index(drop=True)
    measured = claims.verdicts(replace(shown, measured=unpaired)).set_index("claim").loc[claims.CLAIMS["unpinned"],
                                                                                         "measured"]
    assert measured.startswith(f"{tables.NO_PAIR} with both runs") and "autovacuum" not in measured
    text = finding.controls_text(unpaired)
    assert "No repetition holds both that run and the one with nothing held" in text and "autovacuum" not in text


def test_growth_sentence_says_the_growth_is_each_repetitions_not_the_ratio_of_the_medians_shown():
    """Review of chapter 3: "from 167.0 µs … to 2418.8 µs (a growth of 12.8× …)" read as 2,418.8 / 167 = 14.5×; the
    growth is the median of each repetition's own growth, and the sentence says so, with thousands separators."""
    import json
    from pathlib import Path

    from contention_book.chapters.ghost_cleanup import finding
    g = recordings.load_shown("").measured
    n = tables.measured_numbers(g)
    text = finding.growth_text(g)
    per = tables.growth_by_repetition(g.curve)
    held = per[per["variant"] == tables.HELD[g.engine]]["growth"]
    assert n["m_held_growth_text"].startswith(f"{held.median():.1f}×")
    assert f"{n['m_held_last_us']:,.1f} µs in the last" in text and "," in f"{n['m_held_last_us']:,.1f}"
    assert f"the growth, taken in each repetition (its last tenth over its first), had a median of " \
           f"{n['m_held_growth_text']}" in text
    assert "(a growth of" not in text
    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / "03-ghost-cleanup.ipynb").read_text())
    code = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "is not the ratio of the two medians above it" in code and "growth (×), each repetition's own" in code


def _ghost_markdown() -> str:
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / "03-ghost-cleanup.ipynb").read_text())
    return " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_the_scan_sentence_says_what_it_checks_from_the_line_pointer_counts():
    """Review: "checks the visibility of every tuple it finds there": with nothing held most line pointers are
    LP_DEAD (no tuple to check); with the horizon held every pinned dead tuple is checked."""
    g = recordings.load_shown("").measured
    text = tables.key_numbers(recordings.load_shown(""))["m_scan_text"]
    end = g.relation_stats[(g.relation_stats["phase"] == "after_run") & (g.relation_stats["relation"] == "ghost_test")]
    base = end[end["variant"] == tables.UNHELD[g.engine]][["lp_dead", "lp_normal", "dead_tuples"]].median()
    held = end[end["variant"] == tables.HELD[g.engine]][["lp_dead", "lp_normal", "dead_tuples"]].median()
    assert base["lp_dead"] > base["lp_normal"]                          # why the old sentence was wrong
    assert f"{base['lp_dead']:,.0f} of the heap's {base['lp_dead'] + base['lp_normal']:,.0f} line pointers" in text
    assert f"{held['dead_tuples']:,.0f} of them dead but pinned" in text and "LP_DEAD" in text
    md = _ghost_markdown()
    assert "checks the visibility of every tuple it finds there" not in md and "{glue:text}`m_scan_text`" in md


def test_the_version_store_aside_names_sql_server():
    md = _ghost_markdown()
    assert "(its version store is still kept)" not in md and "(SQL Server 2022 still keeps the version store)" in md


def test_each_claim_has_its_own_rule_stated_as_judged():
    """Review: rule 4 spoke of a ratio whose denominator is zero; rule 2 reused the held-over-unheld words of rule 1
    for the unpinned (idle RCSI) holder."""
    rules = claims.RULES
    assert len(set(rules.values())) == len(rules)                       # no two claims share a rule
    pile = rules[claims.CLAIMS["pile_up"]]
    assert "post-cleanup dead versions" not in pile and "none left counts as one" in pile
    assert "all versions pinned at the end and none after cleanup holds" in pile
    unpinned = rules[claims.CLAIMS["unpinned"]]
    assert "held over unheld" not in unpinned and "idle RCSI transaction open" in unpinned
    # the pile-up verdict follows the counts as the rule says: all pinned, none after cleanup -> holds
    v = claims.verdicts(recordings.load_shown("")).set_index("claim").loc[claims.CLAIMS["pile_up"]]
    assert "0 after cleanup" in v["measured"] and v["verdict"] == "direction reproduced"


def test_the_growth_note_says_why_postgres_grows_less_than_the_article():
    """Review: 1.16× beside the article's 9.5× (826/87) with no reason: here the index stays the same size."""
    sh = recordings.load_shown("")
    lp = tables.line_pointer_numbers(sh.measured)
    size = claims.verdicts(sh).set_index("claim").loc[claims.CLAIMS["grows"], "size"]
    assert lp["held_index_pages"] == lp["base_index_pages"]
    assert f"the index, at {lp['held_index_pages']:,.0f} pages in both runs, dilutes that" in size
    assert f"{lp['base_heap_pages']:,.0f} → {lp['held_heap_pages']:,.0f} pages" in size
    st = tables.storage_long([p for p in sh.published if p.recording.engine["version"].startswith("15")][0])
    st = st.set_index(["variant", "phase"])
    a, b = st.loc[("rcsi_open_txn", "after_run"), "pages"], st.loc[("rcsi", "after_run"), "pages"]
    assert f"{a / b:.1f}× ({a:,.0f} / {b:,.0f} pages)" in size


def test_the_unheld_heap_is_said_to_stop_at_the_line_pointer_cap_only_where_its_counts_show_it():
    """Review of chapter 3: why did the unheld heap stop at 425 pages?  PostgreSQL allows at most 291 line pointers
    on an 8 KB heap page (MaxHeapTuplesPerPage, src/include/access/htup_details.h); the reference's most on one
    page is 291, and its 123,457 line pointers fit in no fewer than its 425 pages.  A recording whose counts show
    anything else gets no such sentence."""
    assert tables.MAX_HEAP_TUPLES_PER_PAGE == 291                    # (8192 − 24) / (24 + 4), rounded down
    g = recordings.load_shown("").measured
    lp = tables.line_pointer_numbers(g)
    assert (lp["base_lp_max"], lp["base_heap_pages"], lp["base_lp_dead"] + lp["base_lp_normal"]) == (291, 425, 123_457)
    note = tables.growth_note(g)
    assert "The 291 on one page is PostgreSQL's cap for an 8 KB heap page" in note
    assert "123,457 line pointers at 291 a page fit in no fewer than 425 pages, the heap's size" in note
    assert "MaxHeapTuplesPerPage" in note and "htup_details.h" in note
    assert tables.line_pointer_cap_text({**lp, "base_lp_max": 250.0}) == ""      # not the cap: not said
    assert tables.line_pointer_cap_text({**lp, "base_heap_pages": 500.0}) == ""  # pages to spare: not said


def test_the_elapsed_figure_names_engine_and_version_on_its_axis_and_stays_on_its_canvas():
    """Review of chapter 3, Fig. 3.1: the y axis repeated "read committed (locking) / RCSI / RCSI + open RCSI
    transaction" twice, and only colour told SQL Server 2019 from 2022.  Each recording's settings now sit under a
    bold heading that names engine and version; nothing runs past the canvas."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    from contention_book.chapters.ghost_cleanup import figures
    from contention_book.chapters.shared import style

    sh = recordings.load_shown("")
    el = tables.elapsed_table([*sh.published, sh.measured])
    assert list(el["group"].drop_duplicates()) == ["SQL Server 2019 (published)", "SQL Server 2022 (published)",
                                                   "PostgreSQL 15.18 (measured)"]
    with plt.rc_context():  # the book's look, as shared.notebook.start sets it
        sns.set_theme(style="whitegrid", context="notebook", font_scale=0.8)
        plt.rcParams["figure.dpi"] = 100
        plt.rcParams["figure.constrained_layout.use"] = True
        fig = style.fit_width(figures.plot_elapsed(el))
        fig.canvas.draw()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    bold = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_fontweight() == "bold"]
    assert bold == ["SQL Server 2019 (published)", "SQL Server 2022 (published)", "PostgreSQL 15.18 (measured)"]
    assert labels.index("SQL Server 2019 (published)") < labels.index("RCSI + open RCSI transaction") \
        < labels.index("SQL Server 2022 (published)")
    assert labels.count("RCSI") == 2 and len(labels) == len(el) + 3
    assert not fig.legends                                 # the headings say what the colours said
    assert style.past_canvas(fig, fig.canvas.get_renderer()) == [] and style.overlaps(fig) == []


def test_the_details_name_recordings_and_settings_in_words():
    """Review of chapter 3: "published-white-2024-sql2019", "measured-postgres-reference", "baseline,
    vacuum_each_chunk, idle_read_committed and open_snapshot" and "contention_lab" in the prose.  The recordings
    are named by their manifests' titles (the ids stay in the Data page links); the settings by their plain names,
    their ids only in the commands a reader types."""
    import re

    sh = recordings.load_shown("")
    note = recordings.header_note(sh)
    for r in [sh.measured.recording, *(g.recording for g in sh.published)]:
        assert f"`{r.id}`" not in note
    assert "“Ghost cleanup: one row, its key updated over and over”" in note
    assert "“Ghost cleanup on SQL Server 15”" in note and "data.html#" in note
    prose = re.sub(r"```.*?```", "", _ghost_markdown(), flags=re.S)   # commands stay as typed
    for raw in ("contention_lab", "`baseline`", "vacuum_each_chunk", "idle_read_committed", "open_snapshot",
                "published-white", "measured-postgres"):
        assert raw not in prose, raw


def test_the_load_check_calls_its_driver_calls_chunks_of_updates():
    """Review of chapter 3, Table 3.5: "driver calls / s 5.24" where a call is a chunk of updates: 123,456 updates in
    chunks of 1,235 are 99 chunks and a last one of 1,191, the 100 calls each repetition made."""
    from contention_book.chapters.shared.notebook import load_summary

    g = recordings.load_shown("").measured
    assert run_common.chunk_sizes(123_456, 1_235) == [1_235] * 99 + [1_191]
    assert (g.by_repetition("load_points")["operations"] == 100).all()
    assert tables.chunk_words(g) == "chunks/s (1,235 updates each, the last 1,191)"
    shown_load = tables.per_chunk(load_summary(g), g)
    assert "chunks/s (1,235 updates each, the last 1,191)" in shown_load.columns
    assert "calls_per_s" not in shown_load.columns and "chunks a second" in shown_load.attrs["caption"]
    assert shown_load.attrs["said_once"].startswith("Every point:")


def test_the_models_section_says_nothing_of_a_machine_card_no_model_uses():
    """Review of chapter 3: "its machine card … bars taking the contended increment as the cost of one line
    transfer" on a page whose models take no cost from a card.  The chapter's models say they use none, and every
    input comes from the recordings or the article."""
    from contention_book.chapters.ghost_cleanup import model

    sh = recordings.load_shown("")
    assert model.USES_MACHINE_CARD is False
    for p in [*model.machine_predictions(sh), *model.predictions(sh)]:
        assert all("machine card" not in i.source for i in p.inputs)


def test_the_opening_gives_the_finding_its_number_the_action_then_the_verdicts():
    """Review of chapter 3: the "In short" box is the finding with the one number that carries it, the action, then
    each verdict beside its own number."""
    from contention_book.chapters.ghost_cleanup import finding

    sh = recordings.load_shown("")
    rows = claims.verdicts(sh)
    text = finding.in_short(sh, rows, tables.key_numbers(sh))
    body = text.split(":class: tip\n", 1)[1]
    assert body.startswith("**Found:** ") and "**Tested:**" not in body
    held = tables.measured_numbers(sh.measured)["m_held_x_text"].split(" (")[0]
    found = body.split("**For a DBA:**")[0]
    assert f"**{held}**" in found and found.count("**") == 4     # "Found:" and the one number, in bold
    assert body.index("**Found:**") < body.index("**For a DBA:**") < body.index("**Verdicts**")
    assert f"time with a REPEATABLE READ holder, {held}" in body.split("**Verdicts**")[1]
