"""Last-page-insert chapter: page resolution, T-SQL, plans, gates and analysis without a server; a short live run."""
import io
import json

import numpy as np
import pandas as pd
import pytest
from load_checks import assert_load_tables
from tsql_parse import problems

from types import SimpleNamespace

from contention_book.chapters.last_page_insert import claims, recordings, spec, tables
from contention_book.chapters.last_page_insert import run_common

calls = pages = readcost = run_common  # the runs' shared pieces, under the names these tests were written with
from contention_book.chapters.last_page_insert import run_sqlserver as live_sqlserver
from contention_book.harness.chapter_registry import runners
from contention_book.chapters.last_page_insert.spec import CHAPTER, DEFAULT_MEASURED
from contention_book.harness.params import ParameterError
from contention_book.harness.runner import RunLog, resolve_params, run_chapter

RUNNERS = runners("last-page-insert")

# The chapter's pieces under the names these tests were written with.
analysis = SimpleNamespace(**{k: getattr(tables, k) for k in dir(tables) if not k.startswith("__")})
analysis.load, analysis.load_published = recordings.load, recordings.load_published
analysis.key_numbers = lambda pub, m: tables.key_numbers(recordings.Shown(pub, m))
analysis.verdicts = lambda pub, m: claims.verdicts(recordings.Shown(pub, m))
live = calls
from contention_book.harness.polling import PollingSampler
from contention_book.harness import workloads
from contention_book.harness.guard import StateGuard

# Waiting-task rows as sys.dm_os_waiting_tasks returns them during a last-page convoy on database 7:
# most waiters on page 7:1:24601 (the clustered index's rightmost leaf), a few on a PFS page and one
# unparseable description; one row is another wait type.
WAITING_TASKS = """session_id,wait_type,wait_duration_ms,resource_description,variant,sessions
61,PAGELATCH_EX,3,7:1:24601,sequential,8
62,PAGELATCH_EX,2,7:1:24601,sequential,8
63,PAGELATCH_EX,2,7:1:24601,sequential,8
64,PAGELATCH_SH,1,7:1:24601,sequential,8
65,PAGELATCH_EX,1,7:1:24601,sequential,8
66,PAGELATCH_UP,0,7:1:1,sequential,8
67,PAGELATCH_EX,4,7:1:24600,sequential,8
68,WRITELOG,1,,sequential,8
69,PAGELATCH_EX,1,7:1:99999999999x,sequential,8
"""
# What sys.dm_db_page_info resolved them to (2019+): 24601 is a leaf with no right neighbour.
RESOLVED = pd.DataFrame([
    (7, 1, 24601, "dbo", "lpi_sequential", "PK_lpi_sequential", 1, 0, 0, 1),
    (7, 1, 24600, "dbo", "lpi_sequential", "PK_lpi_sequential", 1, 0, 24601, 0),
    (7, 1, 1, "sys", "(PFS)", None, None, 0, 0, 0),
], columns=pages.RESOLVED_COLUMNS)


def samples():
    return pd.read_csv(io.StringIO(WAITING_TASKS), dtype={"resource_description": str})


def test_parse_resource():
    assert pages.parse_resource("7:1:24601") == (7, 1, 24601)
    with pytest.raises(pages.PageResolutionError, match="expected <database_id>:<file_id>:<page_id>"):
        pages.parse_resource("7:1")


def test_page_resolution_on_recorded_waiting_tasks():
    rows, bad = pages.page_samples(samples())
    assert bad == 1 and len(rows) == 7  # WRITELOG left out, one unparseable row counted
    assert pages.distinct_pages(rows)[0] == (7, 1, 24601)
    ranking = pages.hot_pages(rows, RESOLVED)
    top = ranking.iloc[0]
    assert top["page"] == "7:1:24601" and top["object"] == "dbo.lpi_sequential" and top["samples"] == 5
    assert top["index"] == "PK_lpi_sequential" and top["is_last_page"] == 1
    assert pages.last_page_share(ranking) == pytest.approx(5 / 7)


def test_unresolved_pages_stay_in_the_ranking_and_old_builds_cannot_tell_the_last_page():
    rows, _ = pages.page_samples(samples())
    old = RESOLVED.iloc[:1].assign(is_last_page=None, next_page_page_id=None)
    ranking = pages.hot_pages(rows, old)
    assert "(unresolved)" in set(ranking["object"])
    assert np.isnan(pages.last_page_share(ranking.assign(is_last_page=np.nan)))


def test_bad_samples_name_the_missing_columns():
    with pytest.raises(pages.PageResolutionError, match="resource_description"):
        pages.page_samples(pd.DataFrame({"wait_type": ["PAGELATCH_EX"]}))
    with pytest.raises(pages.PageResolutionError, match="at most"):
        pages.page_info_query([(7, 1, i) for i in range(pages.MAX_PAGES + 1)])


def test_resolution_query_is_version_gated_and_parses():
    sql, params, method = pages.resolution_query("15.0.4123.1", [(7, 1, 5), (7, 1, 6)])
    assert method == "sys.dm_db_page_info" and "sys.dm_db_page_info" in sql and params == [7, 1, 5, 7, 1, 6]
    assert sql.count("?") == len(params)
    old_sql, _, old_method = pages.resolution_query("13.0.5026.0", [(7, 1, 5)])
    assert old_method == "sys.dm_os_buffer_descriptors" and "allocation_units" in old_sql
    for q in (sql, old_sql):
        assert not problems(q + ";"), q


def test_every_tsql_workload_parses():
    for path in sorted(workloads.workload_dir(CHAPTER, "sqlserver").glob("*.sql")):
        for batch in workloads.load(CHAPTER, "sqlserver", path.stem, table="lpi_sequential"):
            assert not problems(batch if batch.rstrip().endswith(";") else batch + ";"), (path.name, batch)
    for batch in live_sqlserver.hash_partition_batches(16):
        assert not problems(batch), batch
    for _, q in live_sqlserver.point_lookups(16):
        assert not problems(q), q


def test_hash_partition_function_has_one_partition_per_hash_value():
    batches = live_sqlserver.hash_partition_batches(4)
    assert "RANGE LEFT FOR VALUES (0, 1, 2)" in batches[0]  # 3 boundaries: <=0, 1, 2, >2
    assert "ABS(ID % 4)" in batches[2] and "PERSISTED NOT NULL" in batches[2]
    assert "(ID, HashID) ON lpi_ps_hash (HashID)" in batches[3]
    assert "% 32) AS tinyint)" in live_sqlserver.point_lookups(32)[1][1]
    with pytest.raises(ValueError, match="2 to 64"):
        live_sqlserver.hash_partition_batches(1)


def test_optimize_for_sequential_key_is_gated_at_2019():
    live_sqlserver.check_variant_version("sequential_optimized", "15.0.2000.5")
    live_sqlserver.check_variant_version("sequential", "11.0.7001.0")
    with pytest.raises(live_sqlserver.VersionGateError, match=r"2019 \(15.x\); this server is 14.0.3456.2"):
        live_sqlserver.check_variant_version("sequential_optimized", "14.0.3456.2")


class FakeConn:
    def __init__(self, rows):
        self.rows = rows

    def cursor(self):
        conn = self

        class C:
            def execute(self, sql, *params):
                return self

            def fetchone(self):
                return conn.rows[0]
        return C()

    def close(self):
        pass


def test_durability_change_restores_the_prior_setting():
    change = live_sqlserver.durability_change("contention_lab")
    prior = change.read(FakeConn([("DISABLED",)]))
    assert change.scope == "database"
    assert change.apply(prior) == ["ALTER DATABASE [contention_lab] SET DELAYED_DURABILITY = FORCED"]
    assert change.restore(prior) == ["ALTER DATABASE [contention_lab] SET DELAYED_DURABILITY = DISABLED"]
    for sql in change.apply(prior) + change.restore(prior):
        assert not problems(sql + ";")
    plan = StateGuard(lambda db: FakeConn([("ALLOWED",)]), [change], log=lambda *_: None).plan()
    assert plan[0]["restore"] == ["ALTER DATABASE [contention_lab] SET DELAYED_DURABILITY = ALLOWED"]
    with pytest.raises(Exception, match="plain identifier"):
        live_sqlserver.durability_change("x]; DROP DATABASE y; --")


SHOWPLAN = """<ShowPlanXML xmlns="http://schemas.microsoft.com/sqlserver/2004/07/showplan" Version="1.539">
<BatchSequence><Batch><Statements><StmtSimple><QueryPlan>
<RelOp NodeId="0" PhysicalOp="Clustered Index Seek" LogicalOp="Clustered Index Seek">
<RunTimeInformation><RunTimeCountersPerThread Thread="0" ActualRows="1" ActualLogicalReads="16" /></RunTimeInformation>
<RunTimePartitionSummary><PartitionsAccessed PartitionCount="8"><PartitionRange Start="1" End="8" />
</PartitionsAccessed></RunTimePartitionSummary>
</RelOp></QueryPlan></StmtSimple></Statements></Batch></BatchSequence></ShowPlanXML>"""


def test_plan_parsers():
    assert readcost.showplan_cost(SHOWPLAN) == {"partitions_touched": 8.0, "logical_reads": 16.0}
    with pytest.raises(readcost.PlanError, match="not well-formed"):
        readcost.showplan_cost("<ShowPlanXML")
    msgs = ["[Microsoft][ODBC Driver 18 for SQL Server][SQL Server]Table 'lpi_hash'. Scan count 8, logical reads 16, "
            "physical reads 0, page server reads 0, read-ahead reads 0"]
    assert readcost.statistics_io_reads(msgs) == {"lpi_hash": (8, 16)}
    plan = [{"Plan": {"Node Type": "Append", "Shared Hit Blocks": 9, "Shared Read Blocks": 0, "Actual Rows": 100,
                      "Plans": [
        {"Node Type": "Index Scan", "Relation Name": "lpi_insert_p0", "Actual Loops": 1},
        {"Node Type": "Index Scan", "Relation Name": "lpi_insert_p1", "Actual Loops": 0}]},
        "Execution Time": 0.02}]
    assert readcost.postgres_plan_cost(json.dumps(plan)) == {"partitions_touched": 1.0, "logical_reads": 9.0,
                                                            "rows_returned": 100.0, "execution_ms": 0.02}
    with pytest.raises(readcost.PlanError, match="'Plan'"):
        readcost.postgres_plan_cost("{}")


def test_parameters_are_checked():
    assert resolve_params(spec.SPEC, "postgres", {"sessions": "8, 1,2"})["sessions"] == [8, 1, 2]
    with pytest.raises(ParameterError, match="sessions='one'"):
        resolve_params(spec.SPEC, "postgres", {"sessions": "one"})
    with pytest.raises(ParameterError, match=">= 1"):
        resolve_params(spec.SPEC, "postgres", {"sessions": "0"})
    assert resolve_params(spec.SPEC, "postgres", {})["variants"] == ["sequential", "hash_partitioned", "random_key"]
    with pytest.raises(ParameterError, match="sequential_optimized"):
        resolve_params(spec.SPEC, "postgres", {"variants": "sequential_optimized"})
    with pytest.raises(ParameterError, match="<= 64"):
        resolve_params(spec.SPEC, "postgres", {"partitions": 100})
    with pytest.raises(ParameterError, match="unknown parameter.*max_seconds"):
        resolve_params(spec.SPEC, "postgres", {"max_seconds": 3})
    with pytest.raises(ValueError, match="at most 100"):
        PollingSampler(lambda: None, "SELECT 1", hz=1000)


def test_published_recordings_match_the_sources():
    sqlcat, wp = analysis.load_published()
    assert sqlcat.kind == wp.kind == "published"
    nums = analysis.published_numbers([sqlcat, wp])
    assert nums["sqlcat_customer_hash_partitioned_rel"] == 1.15
    assert (nums["sqlcat_lab32_sequential_tp"], nums["sqlcat_lab32_hash_partitioned_tp"]) == (17_000, 26_000)
    assert nums["sqlcat_lab32later_hash_partitioned_tp"] == 30_000
    assert (nums["wp_business_transactions_per_sec_before"], nums["wp_business_transactions_per_sec_after"]) == (36, 249)
    assert nums["wp_sql_batch_requests_per_sec_after"] == 47_045 and nums["wp_latch_waits_per_sec_before"] == 9_562
    # the whitepaper's "300%" read as after / before, as its own 36 -> 249 is called "690%": one reading for both
    assert nums["wp_example_hash_partitioned_rel"] == 3.0
    assert round(nums["wp_pos_hash_partitioned_rel"], 1) == 6.9
    assert "learn.microsoft.com" in wp.recording.manifest["citation"]["url"]


def _fake(runs, waits, pins=None, index=None, cpus=4, repetitions=1):
    """A small PostgreSQL view; with ``repetitions`` the same point repeated (rates 1% apart), as a run would."""
    if repetitions > 1:
        runs = [(v, n, tp * (1 + rep / 100), rep) for rep in range(repetitions) for v, n, tp in runs]
        waits = [(*w, rep) for rep in range(repetitions) for w in waits]
    rep_col = ["repetition"] if repetitions > 1 else []

    class R:
        host = {"logical_cpus": cpus}
        parameters = {"partitions": 4, "max_seconds": 1.0}
        manifest = {"notes": []}
        engine = {"name": "postgres", "version": "15.0"}
        kind = "measured"
        id = "fake"
    g = recordings.LpiRecording(R(), {"runs": pd.DataFrame(runs, columns=["variant", "sessions", "throughput",
                                                                          *rep_col])})
    g.waits = pd.DataFrame(waits, columns=["variant", "sessions", "wait", "samples", *rep_col])
    g.pins, g.index = pins, index
    return g


def test_little_law_and_verdicts_can_go_either_way():
    runs = [("sequential", 1, 1000.0), ("sequential", 4, 2000.0), ("hash_partitioned", 1, 1000.0),
            ("hash_partitioned", 4, 3000.0)]
    waits = [("sequential", 1, "CPU", 10), ("sequential", 4, "CPU", 50), ("sequential", 4, "LWLock:BufferContent", 50),
             ("hash_partitioned", 4, "CPU", 90), ("hash_partitioned", 4, "LWLock:BufferContent", 10),
             ("hash_partitioned", 1, "CPU", 10)]
    g = _fake(runs, waits, repetitions=3)
    lt = analysis.little(g, "sequential", 4)
    assert lt["queue"] == pytest.approx(2.0) and lt["wait_us"] == pytest.approx(1000.0, rel=0.02)  # 2 / ~2000 per s
    v = analysis.verdicts([], g).set_index("claim")["verdict"]
    assert v["Hash partitioning raises the insert rate"] == "direction reproduced"
    assert v["Concurrent inserts with an ever-increasing key queue on the last page's latch"] == "direction reproduced"
    assert v["With hash partitioning the page-latch waits go away"] == "direction reproduced"  # 50% -> 10%
    same = _fake(runs, [(a, b, c, 50 if c == "LWLock:BufferContent" else d) for a, b, c, d in waits], repetitions=3)
    assert analysis.verdicts([], same).set_index("claim")["verdict"][
        "With hash partitioning the page-latch waits go away"] == "direction reproduced, weaker"  # 50% -> 36%: fewer, not gone
    idle = _fake(runs, [("sequential", 1, "CPU", 10), ("sequential", 4, analysis.IDLE, 95),
                        ("sequential", 4, "CPU", 5), ("hash_partitioned", 4, "CPU", 5)], repetitions=3)
    vi = analysis.verdicts([], idle).set_index("claim")
    assert vi.loc["Concurrent inserts with an ever-increasing key queue on the last page's latch",
                  "verdict"].startswith("not testable here")
    assert "waiting for their client" in vi.loc[
        "Concurrent inserts with an ever-increasing key queue on the last page's latch", "measured"]
    # no backend ever waits on the page latch (all on CPU): no queue, the claim must come out "differs"
    busy = _fake(runs, [("sequential", 1, "CPU", 10), ("sequential", 4, "CPU", 100), ("hash_partitioned", 4, "CPU", 100),
                        ("hash_partitioned", 1, "CPU", 10)], repetitions=3)
    assert analysis.verdicts([], busy).set_index("claim")["verdict"][
        "Concurrent inserts with an ever-increasing key queue on the last page's latch"] == "differs"
    worse = _fake([(a, b, c / 2 if a == "hash_partitioned" and b == 4 else c) for a, b, c in runs], waits,
                  repetitions=3)
    assert analysis.verdicts([], worse).set_index("claim")["verdict"]["Hash partitioning raises the insert rate"] == "differs"
    # on 2 CPUs the 4-session point is oversubscribed: it is shown, labelled, and decides nothing; with only 1
    # session left in the regime the concurrency claims name the point they lack
    small = _fake(runs, waits, repetitions=3, cpus=2)
    rows = analysis.verdicts([], small).set_index("claim")
    assert "at 4 sessions (oversubscribed" in rows.loc["Hash partitioning raises the insert rate", "measured"]
    for claim in ("Hash partitioning raises the insert rate",
                  "Concurrent inserts with an ever-increasing key queue on the last page's latch"):
        assert rows.loc[claim, "verdict"] == ("not testable with this recording: no point with 2 sessions "
                                              "(concurrent, not oversubscribed)")
    assert (rows["tested_on"] == "PostgreSQL 15 analogue on 2 CPUs").all()
    with_two = _fake(runs + [(v, 2, tp * 1.5) for v, n, tp in runs if n == 4],
                     waits + [(v, 2, w, c) for v, n, w, c in waits if n == 4], repetitions=3, cpus=2)
    rows = analysis.verdicts([], with_two).set_index("claim")
    assert "at 2 sessions" in rows.loc["Hash partitioning raises the insert rate", "measured"]
    assert rows.loc["Hash partitioning raises the insert rate", "verdict"] == "direction reproduced"


def test_pins_give_the_last_page_share():
    pins = pd.DataFrame([("sequential", 4, "lpi_insert_pkey", 90, 30, "rightmost leaf"),
                         ("sequential", 4, "lpi_insert_pkey", 3, 10, "other leaf"),
                         ("sequential", 4, "lpi_insert", 400, 50, "heap")], columns=[*spec.PIN_COLUMNS, "role"])
    g = _fake([("sequential", 4, 1.0)], [("sequential", 4, "CPU", 1)], pins=pins)
    assert analysis.pin_last_page_share(g, "sequential", 4) == pytest.approx(0.75)  # heap pins not counted
    assert np.isnan(analysis.pin_last_page_share(g, "sequential", 2))  # no pins sampled at 2 sessions
    rank = analysis.pin_ranking(g)
    assert rank.iloc[0]["page"] == "lpi_insert block 400" and rank.iloc[1]["is_last_page"] == 1
    roles = analysis.pin_roles(g).set_index("page")
    assert roles.loc["rightmost leaf", "share"] == pytest.approx(30 / 90) and roles.loc["heap", "is_last_page"] == 0


def test_rows_per_call_chooses_the_call_and_counts_rows():
    assert resolve_params(spec.SPEC, "postgres", {"rows_per_call": "100"})["rows_per_call"] == 100
    for bad in (0, -1, "x", 10001):
        with pytest.raises(ParameterError, match="rows_per_call"):
            resolve_params(spec.SPEC, "postgres", {"rows_per_call": bad})
    sql, args = live.insert_call("postgres", 1)
    assert sql.startswith("INSERT INTO lpi_insert") and args == ()
    sql, args = live.insert_call("postgres", 50)
    assert sql == "CALL lpi_insert_rows(?)" and args == (50,)
    sql, args = live.insert_call("sqlserver", 50, table="lpi_hash")
    assert "WHILE @done < @todo" in sql and "dbo.lpi_hash" in sql and args == (50,)
    assert not problems(sql.replace("?", "50"))
    assert live.calls_per_session(0, 100) is None and live.calls_per_session(250, 100) == 3
    from contention_book.harness.driver import RunResult
    row = live.runs_row(RunResult(sessions=2, elapsed_s=2.0, operations=30, errors=0,
                                  latency={"p50_ms": 1.0}, per_session=[]), 100, variant="sequential")
    assert (row["operations"], row["throughput"], row["calls"], row["calls_per_s"]) == (3000, 1500.0, 30, 15.0)
    assert row["rows_per_call"] == 100 and row["p50_ms"] == 1.0  # latency stays per call


def test_prose_follows_the_recording_not_a_fixed_direction():
    runs = [("sequential", 1, 1000.0), ("sequential", 4, 2000.0)]
    quiet = _fake(runs, [("sequential", 1, analysis.IDLE, 90), ("sequential", 4, analysis.IDLE, 90),
                         ("sequential", 4, "CPU", 10)])
    n = analysis.key_numbers([], quiet)
    assert n["m_rows_per_call"] == 1 and "round trip" in n["m_call_text"]  # no rows_per_call: an old recording
    assert "no sample found" in n["m_queue_text"] and "client round trip" in n["m_bound_text"]
    assert n["m_pins_text"] == "This recording has no page-level samples."
    # 4 sessions on 2 CPUs: oversubscribed, so the prose quotes the 2-session point and explains the 4-session one
    busy = _fake(runs + [("sequential", 2, 1500.0)],
                 [("sequential", 2, "CPU", 50), ("sequential", 2, "LWLock:BufferContent", 50),
                  ("sequential", 4, "CPU", 10), ("sequential", 4, "LWLock:BufferContent", 90),
                  ("sequential", 1, "CPU", 10)], cpus=2)
    busy.recording.parameters = {"partitions": 4, "max_seconds": 1.0, "rows_per_call": 100}
    n = analysis.key_numbers([], busy)
    assert "server-side loop that inserts 100 rows" in n["m_call_text"]
    assert "with 2 sessions on the sequential key, 50.0% of samples" in n["m_queue_text"]
    assert "preempted" in n["m_bound_text"] and "4 sessions (oversubscribed" in n["m_bound_text"]
    busy.recording.parameters = {"rows_per_call": "many"}
    with pytest.raises(analysis.rec.RecordingError, match="rows_per_call 'many'"):
        analysis.rows_per_call(busy)


def test_reference_recording_renders_its_numbers():
    pub, g = analysis.load_published(), analysis.load(DEFAULT_MEASURED)
    assert g.recording.kind == "measured" and g.engine == "postgres"
    t = analysis.throughput_table(g)
    assert set(t["variant"]) == {"sequential", "hash_partitioned", "random_key"} and (t["throughput"] > 0).all()
    nums = analysis.key_numbers(pub, g)
    assert all(not isinstance(v, np.generic) for v in nums.values())
    assert 0 < nums["m_sequential_avg_leaf_density"] <= 100
    table = analysis.verdicts(pub, g)
    from contention_book.chapters.shared.claims import VERDICTS

    assert set(table["verdict"].str.split(":").str[0]) <= set(VERDICTS) - {"reproduced"}  # no size is comparable
    assert (table["tested_on"] == f"PostgreSQL {g.recording.engine['version'].split('.')[0]} analogue on "
                                  f"{g.cpus} CPUs").all()
    assert (g.runs["rows_inserted"] == g.runs["rows_counted"]).all()  # every point balanced
    assert table["verdict"].str.startswith("not testable here").any()  # OPTIMIZE_FOR_SEQUENTIAL_KEY: SQL Server
    assert nums["m_rows_per_call"] == int(g.recording.parameters.get("rows_per_call", 1))
    assert (analysis.throughput_table(g)["rows_per_call"] == nums["m_rows_per_call"]).all()


def test_a_recording_without_interval_rows_says_so_in_its_figure():
    """Recordings made before the driver kept interval rows and histograms still load, and the page notes it."""
    import matplotlib

    matplotlib.use("Agg")
    from contention_book.chapters.last_page_insert import figures

    import copy

    from contention_book.harness.load_record import load_summary

    ref = analysis.load(DEFAULT_MEASURED)  # the reference carries them
    assert ref.table("intervals") is not None and ref.table("load_points") is not None
    fig = figures.plot_throughput_over_time(ref)
    assert not fig.axes[0].texts and len(fig.axes[0].lines) >= 3
    old = copy.copy(ref)  # the same recording as it was before the driver kept them
    old.tables = {k: v for k, v in ref.tables.items() if not k.startswith(("intervals", "load_points"))}
    assert old.table("intervals") is None and old.table("load_points") is None
    fig = figures.plot_throughput_over_time(old)
    assert any("no interval rows" in t.get_text() for ax in fig.axes for t in ax.texts)
    assert "no load_points table" in load_summary(old)


@pytest.mark.live
def test_live_postgres_run_writes_a_recording_that_loads(pg, tmp_path):
    from conftest import TEST_ENV_VAR

    lines = []
    path = run_chapter(spec.SPEC, RUNNERS, {"sessions": "1,2", "duration_s": 0.7, "partitions": 2,
                                            "rows_per_call": 10, "database": "contention_test", "repetitions": 2,
                                            "capture_stacks": False, "warmup_s": 0.1},
                       engine="postgres", target=TEST_ENV_VAR, record_to=str(tmp_path / "rec"),
                       log=RunLog(lines.append))
    g = analysis.load(path)
    assert_load_tables(g, len(g.runs))
    assert g.by_repetition("load_points")["wait_source"].isin(["pg_wait_sampling", "polling"]).all()
    assert any("[load]" in line and "waiting for the client" in line for line in lines)
    import matplotlib

    matplotlib.use("Agg")
    from contention_book.chapters.last_page_insert import figures

    fig = figures.plot_throughput_over_time(g)
    assert not fig.axes[0].texts and len(fig.axes[0].lines) >= 3  # one line per design at 2 sessions
    from contention_book.harness.load_record import load_summary

    summary = load_summary(g)
    assert len(summary) == 6 and ((summary["server_share"] + summary["client_share"]).round(6) == 1).all()
    assert g.recording.manifest["measured"]["command"] and g.recording.parameters["rows_per_call"] == 10
    assert len(g.runs) == 12 and (g.runs["errors"] == 0).all() and (g.runs["operations"] > 0).all()
    assert (g.runs["operations"] == g.runs["calls"] * 10).all()
    assert (g.waits["wait"] != "").all() and g.waits.groupby(["variant", "sessions"])["samples"].sum().min() > 0
    assert set(g.index["variant"]) == {"sequential", "hash_partitioned", "random_key"}
    assert (g.index["variant"] == "hash_partitioned").sum() == 2  # one B-tree per partition
    rc = g.read_cost.set_index(["variant", "query"])
    assert rc.loc[("hash_partitioned", "point lookup, no partition pruning"), "partitions_touched"] == 2
    assert rc.loc[("hash_partitioned", "point lookup"), "partitions_touched"] == 1
    assert g.waits is not None and g.waits["samples"].sum() > 0
    assert any("complete" in line for line in lines)


def test_sql_server_2022_resource_descriptions_name_their_page():
    """2022 appends the latch to resource_description; the page is still the db:file:page before it."""
    assert pages.parse_resource("6:3:749442168 (LATCH 0x000001E4A5C8E2A8: Class: BUFFER)") == (6, 3, 749442168)
    assert pages.parse_resource("7:1:12345") == (7, 1, 12345)
    with pytest.raises(pages.PageResolutionError, match="expected <database_id>:<file_id>:<page_id>"):
        pages.parse_resource("7:1:12345 trailing")
    samples = pd.DataFrame({"session_id": [51, 52], "wait_type": ["PAGELATCH_EX", "PAGELATCH_EX"],
                            "wait_duration_ms": [3, 4],
                            "resource_description": ["6:3:749442168 (LATCH 0x1: Class: BUFFER)", "6:3:749442168"]})
    rows, bad = pages.page_samples(samples)
    assert bad == 0 and set(rows["page"]) == {"6:3:749442168"}


def _sqlserver(runs, cpus, read_cost=None):
    """A SQL Server view of ``cpus`` CPUs with repeated runs (rates 1% apart) and, optionally, read-cost rows."""
    g = _fake(runs, [], repetitions=3, cpus=cpus)
    g.recording.engine = {"name": "sqlserver", "version": "16.0.4135.4"}
    g.recording.parameters = {"partitions": 8}
    g.waits = None
    if read_cost is not None:
        g.read_cost = pd.DataFrame([{"variant": "hash_partitioned", "repetition": rep, "query": q,
                                     "partitions_touched": parts, "logical_reads": 2 * parts}
                                    for rep in range(3) for q, parts in read_cost])
    return g


# 5x against the lab's 1.53x: the direction holds, the size lies outside the factor (differs is kept for the other
# direction); 1x: the direction itself fails
@pytest.mark.parametrize("gain, verdict", [(1.5, "reproduced"), (5.0, "direction reproduced"), (1.0, "differs")])
def test_a_large_sql_server_compares_the_size_with_the_32_core_lab(gain, verdict):
    runs = [(v, n, 1000.0 * n * (gain if v == "hash_partitioned" and n > 1 else 1)) for v in ("sequential",
            "hash_partitioned") for n in (1, 16)]
    rows = analysis.verdicts(analysis.load_published(), _sqlserver(runs, 16)).set_index("claim")
    row = rows.loc["Hash partitioning raises the insert rate"]
    assert row["verdict"].split(":")[0] == verdict and row["tested_on"] == "SQL Server 16.0.4135.4 on 16 CPUs"
    if gain != 1.0:  # 1.0x: the direction itself fails, and the size is not the reason
        assert row["size"].startswith("compared") and "1.53" in row["size"]
    small = analysis.verdicts(analysis.load_published(), _sqlserver(
        [(v, n, tp) for v, n, tp in runs if n == 1] + [(v, 4, tp / 4) for v, n, tp in runs if n == 16], 4))
    assert small.set_index("claim").loc["Hash partitioning raises the insert rate", "size"].startswith(
        "not compared")  # 4 CPUs: fewer than the whitepaper's 16


def test_sql_server_partition_elimination_is_compared_with_all_partitions():
    runs = [("sequential", 1, 1000.0), ("hash_partitioned", 1, 1000.0)]
    every = _sqlserver(runs, 16, [("point lookup by ID", 8), ("point lookup by ID + hash predicate", 1)])
    row = analysis.verdicts([], every).set_index("claim").loc["Without partition elimination a point lookup must "
                                                               "search every partition"]
    assert row["verdict"] == "reproduced" and "within 1.5×" in row["size"]
    some = _sqlserver(runs, 16, [("point lookup by ID", 2), ("point lookup by ID + hash predicate", 1)])
    row = analysis.verdicts([], some).set_index("claim").loc["Without partition elimination a point lookup must "
                                                              "search every partition"]
    assert row["verdict"].startswith("direction reproduced, weaker")  # searched 2 of 8: fewer than every partition


def test_lwlock_sleeps_are_split_by_the_code_that_took_the_lock(tmp_path):
    """Issue 31/34: the wait event says LWLock:BufferContent for the leaf and the sequence page alike; the off-CPU
    stacks' caller of LWLockAcquire tells them apart."""
    from types import SimpleNamespace

    from contention_book.harness.spec import OFFCPU_STACKS

    name = OFFCPU_STACKS.format(variant="sequential")
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_bytes(__import__("gzip").compress(
        b"postgres (1);postgres!_bt_search;postgres!_bt_relandgetbuf;postgres!LWLockAcquire;[state S] 60\n"
        b"postgres (1);postgres!nextval_internal;postgres!read_seq_tuple;postgres!LWLockAcquire;[state S] 20\n"
        b"postgres (1);postgres!secure_read;libc.so.6!epoll_wait;[state S] 20\n"))
    rec = SimpleNamespace(path=tmp_path, has=lambda n: (tmp_path / n).exists())
    split = tables.lwlock_sleeps(SimpleNamespace(recording=rec))
    assert split["total_share"] == pytest.approx(0.8)
    assert split["the identity's sequence page"] == pytest.approx(0.25)
    assert split["the B-tree's pages (the insert's descent to its leaf)"] == pytest.approx(0.75)
    text = tables.lwlock_sleeps_text(SimpleNamespace(recording=rec))
    assert "80% of the sequential key run" in text or "80% of the" in text
    empty = SimpleNamespace(recording=SimpleNamespace(path=tmp_path, has=lambda n: False))
    assert tables.lwlock_sleeps(empty) == {} and "no off-CPU stacks" in tables.lwlock_sleeps_text(empty)


def test_reference_page_numbers_are_the_recordings_own_as_reviewed():
    """Review round 3: the leaf's share of waits is the sequential key's less the non-sequential control's;
    pins are said as within the right edge with their count per repetition; rows per leaf are the median of the
    per-repetition ratios; the off-CPU split names its oversubscribed session count; no latch "held" samples."""
    import numpy as np

    from contention_book.chapters import last_page_insert as L
    from contention_book.chapters.last_page_insert import tables as T
    sh = L.load_shown("")
    g = sh.measured
    n = L.key_numbers(sh)
    per = T.per_repetition(g)
    leaf = np.median([x["m_sequential_hot_share"] - x["m_random_key_hot_share"] for x in per])
    assert f"an estimated {leaf:.1%} of samples" in n["lpi_in_short"] and "**Verdicts:**" in n["lpi_in_short"]
    assert "Neither fix paid off" in n["lpi_in_short"]
    # a rate beside a verdict of "not testable here" says why it does not test the article's gain (review round 4)
    untested = "which a queue this short cannot test"
    assert (untested in n["lpi_in_short"]) == str(n["v_hash_rate"]).startswith("not testable here")
    tested = L.finding._fixes_sentence({**n, "v_hash_rate": "direction reproduced"}, "+15%")
    assert "Neither fix paid off" in tested and untested not in tested
    assert n["q_random_vs_seq_text"] in n["lpi_in_short"]
    assert f"{n['m_leaf_wait_us']:.1f} µs of waiting at the leaf per row" in n["m_queue_text"]
    assert n["m_leaf_wait_us"] < n["m_sequential_wait_us"]
    counts = T.pin_index_counts(g, "sequential", n["m_nd"])
    assert f"{min(counts)}–{max(counts)} pins per repetition" in n["m_pins_text"]
    assert "distinct pages" not in n["m_pins_text"]
    rows = L.verdicts(sh).set_index("claim")["measured"]
    assert any(f"within {T.RIGHT_EDGE_HOPS} leaves of the right edge" in str(v) for v in rows)
    assert not any("latch held" in str(v) for v in rows) and "latch held" not in n["m_decide_text"]
    rpl = np.median([x["m_random_key_rows_per_leaf"] for x in per])
    assert n["q_random_rows_per_leaf"] == f"{rpl:.0f}"
    assert "at 8 sessions (oversubscribed)" in T.lwlock_sleeps_text(g)
    wide = T.throughput_wide(g)
    assert any(v != round(v, 2) for v in wide.filter(like="p99").stack())  # rounded once, by the shown table


def test_waited_page_query_counts_only_an_index_leaf_as_a_last_page():
    """Review: a heap page or an allocation page (PFS, GAM, SGAM, IAM) has no next page either; only an index's
    leaf that holds rows is a last page.  sys.dm_db_page_info needs a database permission, not VIEW SERVER STATE."""
    from pathlib import Path

    sql = (Path(__file__).resolve().parents[2] / "workloads" / "last-page-insert" / "diagnose" / "sqlserver"
           / "02-waited-page-to-index.sql").read_text()
    harness, _ = pages.page_info_query([(7, 1, 5)])
    for text in (sql, harness):
        case = text[text.index("CASE WHEN"):text.index("AS is_last_page")]
        assert "pi.index_id > 0" in case and "pi.page_type_desc IN (N'DATA_PAGE', N'INDEX_PAGE')" in case
        assert "pi.page_level = 0" in case and "pi.next_page_page_id = 0" in case
        assert not problems(text if text.rstrip().endswith(";") else text + ";")
    assert "VIEW DATABASE STATE" in sql and "VIEW DATABASE PERFORMANCE STATE" in sql
    assert "Needs VIEW SERVER STATE." not in sql


def test_the_postgres_runner_records_the_session_override_of_synchronous_commit():
    """Review: the server default (on) is what pg_settings shows; the workload sets synchronous_commit off in every
    session, and future manifests say so beside the server's value."""
    from contention_book.chapters.last_page_insert import run_postgres

    assert run_postgres.session_settings() == {"synchronous_commit (sessions)": "off"}


def test_review_round_ch4_sampler_caveat_gives_the_deciding_points_procarray_share_and_rule_5_reads_plainly():
    """Review: the main page's sampler caveat sets the 2-session LWLock:ProcArray share, with its interval over
    repetitions, beside the BufferContent share that decides; rule 5 says what SQL Server's size check is."""
    from contention_book.chapters import last_page_insert as L
    from contention_book.chapters.last_page_insert import tables as T
    from contention_book.chapters.shared.spread import spread
    sh = L.load_shown("")
    g = sh.measured
    w = g.by_repetition("waits")
    nd = T.deciding(g)
    two = w[(w["variant"] == "sequential") & (w["sessions"] == nd)]
    tot = two.groupby("repetition")["samples"].sum()
    pa = two[two["wait"] == T.PROCARRAY].groupby("repetition")["samples"].sum().reindex(tot.index, fill_value=0)
    s = spread((pa / tot).tolist())
    text = T.sampler_text(g, T.quoted(g, T.per_repetition(g)))
    assert f"at {nd} sessions it is still {s.text('.1%')}" in text and 0.03 < s.median < 0.12
    assert "LWLock:BufferContent" in text
    rule = claims.RULES[claims.C["elimination"]]
    assert "on SQL Server the size is compared too" in rule and "within 1.5× of the partition count" in rule
    assert "size compared within 1.5× of all partitions, on SQL Server" not in rule


def test_review_round_ch4_notebook_names_the_function_that_caches_the_leaf():
    """PostgreSQL 15 nbtinsert.c: _bt_insertonpg caches the rightmost leaf only when _bt_getrootheight(rel) >=
    BTREE_FASTPATH_MIN_LEVEL (2); _bt_search_insert only tries it."""
    from contention_book.harness.recording import repo_root
    nb = (repo_root() / "notebooks" / "04-last-page-insert.ipynb").read_text()
    assert "`_bt_insertonpg` caches the leaf only when the root is at level" in nb
    assert "`_bt_search_insert` tries the cached leaf" in nb
    assert "two levels above the leaves, high" not in nb
