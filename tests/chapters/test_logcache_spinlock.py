"""logcache-spinlock chapter: published data, plans and guards without a server, analysis, stacks, native smoke,
and a short live PostgreSQL run."""
import os
import re
import subprocess

import numpy as np
import pandas as pd
import pytest
from load_checks import assert_load_tables
from tsql_parse import problems

from contention_book.chapters.logcache_spinlock import claims, recordings as lc, spec
from contention_book.chapters.logcache_spinlock import run_native as native_run, run_postgres as live_postgres
from contention_book.chapters.logcache_spinlock import run_sqlserver as lss, tables as analysis
from contention_book.chapters.logcache_spinlock import key_numbers
from contention_book.chapters.shared import stacks
from contention_book.harness.params import ParameterError
from contention_book.harness.runner import RunLog, resolve_params, run_chapter
from contention_book.harness.chapter_registry import runners
from contention_book.harness import workloads
from contention_book.harness.guard import ServerChangeNotAllowed, StateGuard
from contention_book.harness.recording import RecordingError, repo_root

RUNNERS = runners("logcache-spinlock")

WPA = repo_root() / "tests" / "perftools" / "fixtures" / "wpa"


# -- fakes for SQL Server ------------------------------------------------------------
class FakeCursor:
    def __init__(self, conn):
        self.conn = conn
        self.description = None
        self._rows = []

    def execute(self, sql, *params):
        self.conn.executed.append(sql)
        if self.conn.fail_on and self.conn.fail_on in sql:
            raise RuntimeError(f"simulated failure on: {sql}")
        for needle, (cols, rows) in self.conn.answers.items():
            if needle in sql:
                self.description = [(c,) for c in cols]
                self._rows = rows
                return self
        self.description, self._rows = None, []
        return self

    def fetchall(self):
        return list(self._rows)

    def fetchone(self):
        return self._rows[0] if self._rows else None

    def nextset(self):
        return False


class FakeConn:
    """Answers the chapter's DMV queries from a recorded scheduler map; records every statement."""

    def __init__(self, answers, log, fail_on=None):
        self.answers, self.executed, self.fail_on = answers, log, fail_on

    def cursor(self):
        return FakeCursor(self)

    def close(self):
        pass


def scheduler_map(cpus=40, online=None, affinity="AUTO", sockets=2, cores=10, lw_cpu=0):
    online = set(range(cpus)) if online is None else set(online)
    return {
        "dm_os_sys_info": (["cpu_count", "hyperthread_ratio", "socket_count", "cores_per_socket", "numa_node_count",
                            "affinity_type_desc"], [(cpus, cpus // sockets, sockets, cores, sockets, affinity)]),
        "dm_os_schedulers\nWHERE scheduler_id < 1048576": (
            ["scheduler_id", "cpu_id", "parent_node_id", "is_online", "status"],
            [(i, i, i * sockets // cpus, int(i in online), "VISIBLE ONLINE" if i in online else "VISIBLE OFFLINE")
             for i in range(cpus)]),
        "LOG WRITER": (["session_id", "command", "scheduler_id", "cpu_id", "parent_node_id"],
                       [(8, "LOG WRITER", lw_cpu, lw_cpu, 0)]),
        "delayed_durability_desc": (["delayed_durability_desc"], [("DISABLED",)]),
    }


def published():
    return lc.load(spec.PUBLISHED), lc.load(spec.PUBLISHED_C2C)


def shown_of(pub, measured, c2c=None, groups=None):
    return lc.Shown(pub, c2c if c2c is not None else lc.load(spec.PUBLISHED_C2C), dict(measured), groups or {})


# -- published -----------------------------------------------------------------------
def test_published_recording_holds_the_articles_numbers():
    pub, c2c = published()
    runs = pub.runs.set_index("variant")
    assert runs.loc["default", "throughput"] == 186_915 and runs.loc["default", "sessions"] == 40
    assert runs.loc["no_logwriter_core", "throughput"] == 436_781 and runs.loc["no_logwriter_core", "sessions"] == 38
    assert runs.loc["no_logwriter_core_tf8015", "throughput_bound"] == "at least"
    shares = pub.table("published_stacks").set_index(["variant", "kind"])["pct"]
    assert shares[("default", "function")] == 23.89 and shares[("no_logwriter_core", "function")] == 1.43
    assert shares[("no_logwriter_core", "module")] == 12.32 and shares[("no_logwriter_core", "spinlock")] == 14.46
    assert pub.recording.manifest["citation"]["url"].startswith("https://chrisadkin.io/2015/09/09/")
    assert pub.recording.host["logical_cpus"] == 40 and pub.recording.engine["settings"]["trace_flags"] == [1117, 2032, 8008]
    pc = c2c.table("published_c2c")
    assert set(pc["relation"]) >= {"SMT sibling", "same socket", "cross socket", "same CCX", "cross CCX"}


def test_a_published_recording_is_refused_as_the_measured_one():
    with pytest.raises(RecordingError, match="takes a measured recording"):
        lc.load_measured(spec.PUBLISHED)


# -- the affinity plan ------------------------------------------------------------------
def test_cpu_ranges_and_siblings():
    assert lss.cpu_ranges([0, 1, 2, 5, 7, 8]) == "0 TO 2, 5, 7 TO 8"
    assert lss.cpu_ranges([3]) == "3"
    assert lss.core_siblings(0, 2) == [0, 1] and lss.core_siblings(21, 2) == [20, 21]
    assert lss.core_siblings(5, 1) == [5]
    assert lss.threads_per_core({"cpu_count": 40, "socket_count": 2, "cores_per_socket": 10}) == 2
    assert lss.threads_per_core({"cpu_count": 8}) == 1
    with pytest.raises(ValueError, match="at least one CPU"):
        lss.cpu_ranges([])


def test_affinity_plan_from_a_scheduler_map_removes_both_hyperthreads():
    log = []
    conn = FakeConn(scheduler_map(lw_cpu=0), log)
    change = lss.affinity_change(lss.log_writer_cpus)
    prior = change.read(conn)
    assert prior["auto"] and prior["per_core"] == 2 and prior["logwriter_cpus"] == [0]
    assert prior["new_cpus"] == list(range(2, 40))
    assert change.apply(prior) == ["ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = 2 TO 39"]
    assert change.restore(prior) == ["ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO"]
    assert change.scope == "server"
    for sql in change.apply(prior) + change.restore(prior):
        assert not problems(sql + ";"), sql


def test_a_manual_mask_is_restored_to_its_own_cpus():
    answers = scheduler_map(online=range(0, 20), affinity="MANUAL", lw_cpu=11)
    answers["sys.configurations"] = (["name", "value_in_use"], [("affinity mask", 2**20 - 1), ("affinity64 mask", 0)])
    conn = FakeConn(answers, [])
    change = lss.affinity_change(lss.log_writer_cpus)
    prior = change.read(conn)
    assert prior["new_cpus"] == [c for c in range(20) if c not in (10, 11)]
    assert change.apply(prior) == ["ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = 0 TO 9, 12 TO 19"]
    assert change.restore(prior) == ["ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = 0 TO 19"]


def test_a_manual_mask_keeps_the_cpus_offline_for_licensing():
    """Standard edition on 40 CPUs: only 24 cores' schedulers are online, but the mask the reader set had all 40."""
    answers = scheduler_map(online=range(0, 24), affinity="MANUAL", lw_cpu=3)
    answers["sys.configurations"] = (["name", "value_in_use"], [("affinity mask", -1), ("affinity64 mask", 255)])
    prior = lss.affinity_change(lss.log_writer_cpus).read(FakeConn(answers, []))
    assert prior["cpus"] == list(range(40))
    assert lss.affinity_statement(prior) == "ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = 0 TO 39"


def test_cpus_given_by_the_reader_are_removed_exactly():
    # Linux numbering: core 0's hyperthreads are CPUs 0 and 20, so the reader passes both
    conn = FakeConn(scheduler_map(lw_cpu=0), [])
    change = lss.affinity_change([0, 20], exact=True)
    prior = change.read(conn)
    assert prior["new_cpus"] == [c for c in range(40) if c not in (0, 20)]
    assert change.apply(prior) == ["ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = 1 TO 19, 21 TO 39"]
    assert change.restore(prior) == ["ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO"]


def test_the_log_writers_location_goes_into_the_manifest_settings():
    answers = scheduler_map()
    answers["LOG WRITER"] = (["session_id", "command", "scheduler_id", "cpu_id", "parent_node_id"],
                             [(8, "LOG WRITER", 10, 10, 0), (9, "LOG WRITER", 30, 30, 1)])
    answers["TRACESTATUS"] = (["TraceFlag", "Status", "Global", "Session"], [(8015, 1, 1, 0), (3604, 1, 0, 1)])
    settings, sched, lw = lss.server_facts(FakeConn(answers, []))
    assert settings["trace_flags"] == [8015]  # global flags only
    assert settings["log_writer"] == {"session_id": 8, "command": "LOG WRITER", "scheduler_id": 10, "cpu_id": 10,
                                      "parent_node_id": 0}
    assert [w["cpu_id"] for w in settings["log_writers"]] == [10, 30]
    assert settings["affinity_type"] == "AUTO" and settings["threads_per_core"] == 2 and len(sched) == 40
    import json
    json.dumps(settings)  # plain values: the manifest is JSON
    change = lss.affinity_change(lss.log_writer_cpus)
    prior = change.read(FakeConn(answers, []))
    assert prior["new_cpus"] == [c for c in range(40) if c not in (10, 11, 30, 31)]  # both writers' cores


def test_no_log_writer_means_no_plan():
    answers = scheduler_map()
    answers["LOG WRITER"] = (["session_id", "command", "scheduler_id", "cpu_id", "parent_node_id"], [])
    with pytest.raises(RuntimeError, match="no LOG WRITER"):
        lss.affinity_change(lss.log_writer_cpus).read(FakeConn(answers, []))


def test_affinity_is_restored_after_a_failure_inside_the_guard():
    log = []
    change = lss.affinity_change(lss.log_writer_cpus)
    with pytest.raises(ZeroDivisionError):
        with StateGuard(lambda db: FakeConn(scheduler_map(), log), [change], allow_server_changes=True,
                        log=lambda *_: None, retry_wait_s=0):
            1 / 0
    alters = [s for s in log if s.startswith("ALTER SERVER")]
    assert alters == ["ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = 2 TO 39",
                      "ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO"]


def test_an_affinity_change_the_server_refused_is_not_restored():
    """The ALTER failed, so the mask never changed: restoring it would be a change of its own."""
    log = []
    change = lss.affinity_change([0])
    with pytest.raises(RuntimeError, match="simulated failure"):
        with StateGuard(lambda db: FakeConn(scheduler_map(), log, fail_on="CPU = 2 TO 39"), [change],
                        allow_server_changes=True, log=lambda *_: None, retry_wait_s=0):
            pass
    assert "ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO" not in log and not change.applied


def test_affinity_change_needs_opt_in_and_the_run_refuses_before_starting():
    with pytest.raises(ServerChangeNotAllowed, match="process affinity"):
        with StateGuard(lambda db: FakeConn(scheduler_map(), []), [lss.affinity_change([0])],
                        allow_server_changes=False, log=lambda *_: None):
            pass
    with pytest.raises(ServerChangeNotAllowed, match="variants=default"):
        from contention_book.harness.runner import RunContext

        params = resolve_params(spec.SPEC, "sqlserver", {})
        lss.run_sqlserver(RunContext(spec.SPEC, "sqlserver", params, None, print, None, False))


def test_delayed_durability_is_database_scoped_and_restored():
    change = lss.delayed_durability_change("contention_lab")
    prior = change.read(FakeConn(scheduler_map(), []))
    assert change.scope == "database" and prior == "DISABLED"
    assert change.apply(prior) == ["ALTER DATABASE [contention_lab] SET DELAYED_DURABILITY = FORCED"]
    assert change.restore(prior) == ["ALTER DATABASE [contention_lab] SET DELAYED_DURABILITY = DISABLED"]
    with pytest.raises(Exception, match="plain identifier"):
        lss.delayed_durability_change("x]; DROP DATABASE y; --")


def test_trace_flags_read_only_global_ones():
    answers = {"TRACESTATUS": (["TraceFlag", "Status", "Global", "Session"], [(8015, 1, 1, 0), (3604, 1, 0, 1)])}
    assert lss.trace_flags(FakeConn(answers, [])) == [8015]


# -- T-SQL --------------------------------------------------------------------------------
@pytest.mark.parametrize("script", sorted(p.stem for p in (repo_root() / "workloads" / "logcache-spinlock" /
                                                           "sqlserver").glob("*.sql")))
def test_every_tsql_workload_parses(script):
    for batch in workloads.load("logcache-spinlock", "sqlserver", script, database="contention_lab"):
        found = problems(batch if batch.rstrip().endswith(";") else batch + ";")
        assert not found, f"{script}: {found}\n{batch}"


def test_generated_counter_query_parses():
    from contention_book.harness.sqlserver_dmv import perf_counters_query

    sql, params = perf_counters_query(lss.LOG_COUNTERS)
    assert not problems(sql + ";") and len(params) == 3 * len(lss.LOG_COUNTERS)


# -- PostgreSQL pinning plan ------------------------------------------------------------------
def test_cpu_split_and_pinning_restore():
    assert live_postgres.cpu_split({0, 1, 2, 3}) == ([0], [1, 2, 3])
    with pytest.raises(live_postgres.PinError, match="at least 2 CPUs"):
        live_postgres.cpu_split({0})
    state = {10: {0, 1}, 11: {0, 1}}
    calls = []

    def setaff(pid, cpus):
        calls.append((pid, set(cpus)))
        if pid == 11 and len(calls) > 2:
            raise ProcessLookupError  # the backend ended before the restore: not a problem
        state[pid] = set(cpus)

    with pytest.raises(KeyError):
        with live_postgres.Pinning(lambda *_: None, getaffinity=lambda pid: state[pid], setaffinity=setaff) as p:
            p.pin(10, [0], "walwriter alone")
            p.pin(11, [1], "backend")
            raise KeyError("workload failed")
    assert state[10] == {0, 1}  # restored although the workload failed
    assert calls[-2:] == [(11, {0, 1}), (10, {0, 1})]


# -- analysis on recordings ---------------------------------------------------------------------
def fake_native(tmp_path, cpus=4, topo=None):
    """A small native recording written by the real writer."""
    from contention_book.harness import native

    from contention_book.harness.recording import RecordingWriter

    dest = tmp_path / f"nat{cpus}"
    with RecordingWriter(dest, chapter=spec.CHAPTER, kind="measured", engine={"name": "native", "version": "cc 12"},
                         host={"cpu_model": "test CPU", "sockets": 1, "cores": cpus, "logical_cpus": cpus,
                               "numa_nodes": 1}, parameters={},
                         measured={"tool": "t", "tool_version": "0", "command": "test"}) as w:
        rows = [(a, b, "store", 10, 10, 5.0 if topo and topo[a][0] == topo[b][0] else 40.0 + a, 1, 1, 1)
                for a in range(cpus) for b in range(a + 1, cpus)]
        w.write_csv(spec.FILES["c2c"], pd.DataFrame(rows, columns=[
            "cpu_a", "cpu_b", "method", "batches", "round_trips_per_batch", "median_one_way_ns", "p10_one_way_ns",
            "p90_one_way_ns", "min_one_way_ns"]))
        w.write_csv(spec.FILES["topology"], pd.DataFrame(
            [{"cpu": c, "core": (topo or {}).get(c, (c, 0))[0], "package": (topo or {}).get(c, (c, 0))[1],
              "l3": "0-3", "siblings": str(c)} for c in range(cpus)]))
        w.write_csv(spec.FILES["chase"], pd.DataFrame({"size_bytes": [16384, 2**28], "loads": [1, 1],
                                                              "ns_per_load": [1.0, 120.0]}))
        w.write_csv(spec.FILES["ctxswitch"], pd.DataFrame(
            {"method": ["futex", "futex"], "placement": ["same_cpu", "different_cpus"], "cpu_a": [0, 0],
             "cpu_b": [0, 1], "batches": [100, 100], "median_ns_per_handoff": [2000.0, 5000.0],
             "p10_ns_per_handoff": [1900.0, 4800.0], "p90_ns_per_handoff": [2200.0, 5400.0]}))
        w.write_csv("runs.csv", pd.DataFrame({  # three repetitions, the least a verdict is drawn from
            "variant": ["writer_shared", "writer_alone"] * 3, "sessions": [2] * 6, "workers": [2] * 6,
            "repetition": [0, 0, 1, 1, 2, 2], "throughput": [1e6, 2e6, 1.2e6, 2.2e6, 1.1e6, 2.1e6],
            "spins_per_record": [1.0, 0.1, 1.1, 0.1, 1.05, 0.1],
            "backoffs_per_record": [0.01, 0.0] * 3, "collisions_per_record": [0.1, 0.01] * 3,
            "writer_flushes_per_s": [100.0, 5000.0, 120.0, 5100.0, 110.0, 5050.0],
            "writer_wait_p50_ns": [1e7, 100.0, 1e7, 90.0, 1e7, 95.0], "writer_wait_p99_ns": [1e8, 1e4] * 3,
            # where each variant ran its 2 workers: B gives them a CPU each only when there are 3 CPUs besides the writer's
            "writer_cpu": [0] * 6, "worker_cpus": ["0 1", "1 2" if cpus >= 3 else "1"] * 3,
            # the accounting every measured point must balance: appended = records x size = flushed + left
            "records": [1000] * 6, "record_bytes": [64] * 6, "bytes_appended": [64000] * 6,
            "bytes_flushed": [60000] * 6, "bytes_left": [4000] * 6,
            # who flushed it: in A the starved writer half (the workers the rest, 10 full 3,000-byte buffers), in B all
            "buffer_bytes": [3000] * 6, "elapsed_s": [2.0] * 6, "inline_flushes": [10, 0] * 3,
            "inline_bytes": [30000, 0] * 3, "writer_bytes": [30000, 60000] * 3}))
    return lc.load(dest)


def test_matrix_relations_and_ladder(tmp_path):
    topo = {0: (0, 0), 1: (0, 0), 2: (1, 1), 3: (1, 1)}  # two sockets, one core each with two hyperthreads
    nat = fake_native(tmp_path, topo=topo)
    m = analysis.c2c_matrix(nat)
    assert m.shape == (4, 4) and np.isnan(m.loc[0, 0]) and m.loc[0, 1] == m.loc[1, 0]
    rel = analysis.c2c_by_relation(nat).set_index("relation")
    assert rel.loc["SMT sibling", "pairs"] == 2 and rel.loc["cross socket", "pairs"] == 4
    lad = analysis.ladder(nat)
    assert lad["ns"].is_monotonic_increasing and lad["operation"].iloc[-1].startswith("wake a sleeper")
    pub, _ = published()
    v = claims.verdicts(shown_of(pub, {"native": nat})).set_index("recording")
    rows = claims.verdicts(shown_of(pub, {"native": nat}))
    # the ladder by distance is the book's background (published matrices), not one of the article's claims
    assert not rows["claim"].str.startswith("A line transfer").any()
    distance = claims.distance_check(shown_of(pub, {"native": nat}))
    assert distance["verdict"] == "direction reproduced"  # SMT 5 ns < cross socket 40+ ns
    ctx = rows[rows["claim"].str.startswith("A context switch")].iloc[0]
    assert ctx["verdict"] == "direction reproduced" and ctx["tested_on"] == "C model on 4 CPUs"
    assert set(v["verdict"].str.split(":").str[0]) <= {"direction reproduced", "differs", "not testable here"}


def test_virtual_cpus_give_no_relation(tmp_path, monkeypatch):
    topo = {0: (0, 0), 1: (0, 0), 2: (1, 1), 3: (1, 1)}
    nat = fake_native(tmp_path, topo=topo)
    assert analysis.relations_sentence(analysis.c2c_pairs(nat)) == (
        "Of the pairs, 4 ran on two sockets, 2 on two hyperthreads of one core.")
    monkeypatch.setattr(analysis.machine_card, "load", lambda rec: {"topology": {"hypervisor": "KVM"}})
    pairs = analysis.c2c_pairs(nat)
    assert set(pairs["relation"]) == {analysis.VIRTUAL}
    assert "virtual" in analysis.relations_sentence(pairs)
    pub, _ = published()
    distance = claims.distance_check(shown_of(pub, {"native": nat}))
    assert distance["verdict"].startswith("not testable here: virtual CPUs")


def test_verdicts_can_differ(tmp_path):
    nat = fake_native(tmp_path, cpus=4)
    r = nat.runs
    r.loc[r["variant"] == "writer_alone", "throughput"] = 1.0  # B slower than A
    pub, _ = published()
    rows = claims.verdicts(shown_of(pub, {"native": nat}))
    toy = rows[rows["claim"].str.contains("toy log cache: records")].iloc[0]
    assert toy["verdict"] == "differs"
    one = claims.distance_check(shown_of(pub, {"native": nat}))
    assert one["verdict"].startswith("not testable here") and "one distance" in one["measured"]


def test_toy_sentences_and_spins_verdict_follow_the_data(tmp_path):
    pub, c2c = published()
    nat = fake_native(tmp_path, cpus=4)
    nums = key_numbers(shown_of(pub, {"native": nat}, c2c))
    # 110 -> 5050 flushes/s, and the writer's share of the log 50% -> 100%: the workers took over its flushes
    assert nums["nat_writer_sentence"].startswith("With a CPU of its own the writer flushed 100% of the log. Sharing")
    assert nums["nat_writer_sentence"].endswith(
        "only 50% of the log, and the workers flushed the rest themselves, each time holding the lock while the other "
        "worker waited.")
    assert "a log writer starved" in nums["nat_two_cores_costs"]
    assert nums["nat_spins_sentence"].startswith("The toy differs")  # 1.05 -> 0.1 spins per record
    rows = claims.verdicts(shown_of(pub, {"native": nat}))
    spins = rows[rows["claim"].str.contains("spins per second")].iloc[0]
    assert spins["verdict"] == "differs"  # 1.05 x 1.1e6 -> 0.1 x 2.1e6 spins/s: not 'about the same'
    r = nat.runs
    r.loc[r["variant"] == "writer_alone", "writer_flushes_per_s"] = r.loc[r["variant"] == "writer_shared",
                                                                          "writer_flushes_per_s"].to_numpy()
    r.loc[r["variant"] == "writer_alone", "spins_per_record"] = 0.6
    nums = key_numbers(shown_of(pub, {"native": nat}, c2c))
    assert "barely changed" in nums["nat_writer_sentence"] and "within a factor of two" in nums["nat_spins_sentence"]
    assert nums["nat_two_cores_costs"] == "the line transfer and the context switch"
    rows = claims.verdicts(shown_of(pub, {"native": nat}))
    assert rows[rows["claim"].str.contains("spins per second")].iloc[0]["verdict"] == "direction reproduced"


def test_the_toy_writer_alone_is_not_judged_below_four_cpus(tmp_path):
    """On 2 CPUs variant B puts both workers on one CPU: they pass the lock by time slicing, with no cache-line
    transfer, so B's gain cannot be credited to the writer's free core.  Shown, labelled, not judged."""
    pub, c2c = published()
    nat = fake_native(tmp_path, cpus=2)
    rows = claims.verdicts(shown_of(pub, {"native": nat}))
    toy = rows[rows["claim"].str.contains("toy log cache")]
    assert len(toy) == 3 and toy["verdict"].str.startswith("not testable here: 2 CPUs: B puts 2 workers on 1 CPU").all()
    assert toy["measured"].str.endswith("(shown, not judged)").all()
    nums = key_numbers(shown_of(pub, {"native": nat}, c2c))
    # the placement sentence says why (one CPU for the workers, no line moved); the next says what follows
    assert "take turns on one CPU" in nums["nat_placement"]
    assert "not credited to the writer's free core" in nums["nat_confound_sentence"]


def test_who_flushed_the_log_is_read_from_old_and_new_recordings():
    """The program prints the bytes each side flushed; a recording made before it did gives them exactly, since a
    worker flushed only a buffer too full for one more record (here 3 flushes of 7 whole 128-byte records)."""
    new = pd.DataFrame({"writer_bytes": [2312], "inline_bytes": [2688], "bytes_flushed": [5000]})
    old = pd.DataFrame({"inline_flushes": [3], "buffer_bytes": [1000], "record_bytes": [128], "bytes_flushed": [5000]})
    for frame in (new, old):
        writer, inline = analysis.flush_split(frame)
        assert (writer.iloc[0], inline.iloc[0]) == (2312.0, 2688.0)
    assert analysis.flush_split(pd.DataFrame({"bytes_flushed": [5000]})) is None
    share = analysis.with_flush_split(old.assign(elapsed_s=2.0))
    assert share["writer_share_pct"].iloc[0] == pytest.approx(46.24) and share["inline_flushes_per_s"].iloc[0] == 1.5


def _writer_numbers(**changes):
    """The numbers writer_words reads, as the first reference recording had them: a 60 KiB buffer, about 9 million
    records/s, the writer flushing 4.1 times as often alone as shared but only 3.8% (alone) and 0.9% (shared) of the
    log."""
    return {"nat_a_throughput": 8.8e6, "nat_b_throughput": 9.06e6, "nat_record_bytes": 128.0,
            "nat_buffer_bytes": 61440.0, "nat_flush_us": 100.0, "nat_flush_x": 4.1, "nat_a_writer_share_pct": 0.9,
            "nat_b_writer_share_pct": 3.8, "nat_a_workers": 2, **changes}


def test_a_writer_the_workers_outran_is_not_called_starved():
    """The reviewer's finding: workers flushed inline ~36,000 times a run against the writer's 840-5,060, so a
    lower flush rate in A said nothing of a starved writer.  The words now say who flushed the log."""
    w = analysis.writer_words(_writer_numbers())
    assert "starves" not in w["nat_writer_sentence"] and "bystander" in w["nat_writer_sentence"]
    assert "only 4% of the log (1% when it shared one)" in w["nat_writer_sentence"]
    assert w["nat_two_cores_costs"] == "the line transfer and the context switch"
    assert w["nat_buffer_sentence"].startswith("The buffer holds only about 53 µs of records")
    assert "flush it themselves" in w["nat_buffer_sentence"]
    assert [analysis.byte_size(x) for x in (61440, 64 << 20, 1536, 512)] == ["60 KiB", "64 MiB", "1.5 KiB", "512 bytes"]


def test_a_writer_that_never_flushed_while_sharing_is_starved_not_a_division_error():
    """CI met it: a smallest native run in which the writer, sharing a CPU, did not flush once (ZeroDivisionError)."""
    assert analysis.flush_ratio(120.0, 0.0) == float("inf") and analysis.flush_ratio(0.0, 0.0) == 1.0
    assert analysis.flush_ratio(120.0, 40.0) == 3.0 and np.isnan(analysis.flush_ratio(float("nan"), 0.0))
    big = {"nat_buffer_bytes": float(spec.TOY_BUFFER_BYTES), "nat_a_throughput": 35e6, "nat_b_throughput": 45e6}
    w = analysis.writer_words(_writer_numbers(**big, nat_flush_x=float("inf"), nat_a_writer_share_pct=0.0,
                                              nat_b_writer_share_pct=60.0))
    assert w["nat_writer_sentence"].startswith("Sharing a CPU with busy workers the writer starved: it did not flush "
                                               "once (with a CPU of its own it flushed 60% of the log)")
    assert "inf" not in w["nat_writer_sentence"]
    # neither variant flushed (the workers flushed everything): a bystander, whatever the ratio
    w = analysis.writer_words(_writer_numbers(**big, nat_flush_x=1.0, nat_a_writer_share_pct=0.0,
                                              nat_b_writer_share_pct=0.0))
    assert "bystander" in w["nat_writer_sentence"]


def test_a_writer_that_keeps_up_alone_and_falls_behind_shared_is_starved():
    big = {"nat_buffer_bytes": float(spec.TOY_BUFFER_BYTES), "nat_a_throughput": 35e6, "nat_b_throughput": 45e6}
    w = analysis.writer_words(_writer_numbers(**big, nat_flush_x=9.0, nat_a_writer_share_pct=40.0,
                                              nat_b_writer_share_pct=100.0))
    assert w["nat_writer_sentence"].startswith("With a CPU of its own the writer flushed 100% of the log.")
    assert "starved: it flushed 9 times less often, only 40% of the log" in w["nat_writer_sentence"]
    assert "a log writer starved" in w["nat_two_cores_costs"]
    # a writer that even alone left a fifth of the log to the workers (a busy machine kept it away now and then)
    # still flushed most of it: no bystander
    w = analysis.writer_words(_writer_numbers(**big, nat_flush_x=9.0, nat_a_writer_share_pct=45.0,
                                              nat_b_writer_share_pct=79.0, nat_a_workers=3))
    assert w["nat_writer_sentence"].startswith("With a CPU of its own the writer flushed 79% of the log.")
    assert w["nat_writer_sentence"].endswith("while the other workers waited.")
    w = analysis.writer_words(_writer_numbers(**big, nat_flush_x=9.0, nat_a_writer_share_pct=40.0,
                                              nat_b_writer_share_pct=100.0))
    assert w["nat_buffer_sentence"].startswith("The buffer holds about 11.7 ms of records")
    assert "empties it long before it fills" in w["nat_buffer_sentence"]
    # fewer, larger flushes, but the buffer seldom filled: starved, without the workers taking over
    w = analysis.writer_words(_writer_numbers(**big, nat_flush_x=9.0, nat_a_writer_share_pct=97.0,
                                              nat_b_writer_share_pct=100.0))
    # without per-repetition counts the share is said to be the median repetition's
    assert ("each flush larger, yet it still flushed 97% of the log in the median repetition (against 100%"
            in w["nat_writer_sentence"])
    # with them, the sentence counts repetitions (a median of 100% hid two repetitions with inline flushes)
    w = analysis.writer_words(_writer_numbers(**big, nat_flush_x=9.0, nat_a_writer_share_pct=100.0,
                                              nat_b_writer_share_pct=100.0, nat_a_reps=5, nat_a_writer_all_reps=3,
                                              nat_b_reps=5, nat_b_writer_all_reps=5))
    assert w["nat_writer_sentence"].endswith("yet it still flushed all of the log in 3 of 5 repetitions; in the other "
                                             "2 the workers flushed part of it inline, and with a CPU of its own it "
                                             "did in all 5.")
    # the same share in both and the same flush rate: no starved writer
    w = analysis.writer_words(_writer_numbers(**big, nat_flush_x=1.2, nat_a_writer_share_pct=99.0,
                                              nat_b_writer_share_pct=100.0))
    assert "shows no starved writer" in w["nat_writer_sentence"] and "starved" not in w["nat_two_cores_costs"]


def test_pinning_and_stack_verdicts_are_not_testable_on_two_cpus():
    """On 2 CPUs pinning the walwriter takes half the machine; with more CPUs the verdicts turn on the data
    (tests/chapters/test_verdicts_can_fail.py turns them both ways)."""
    pub, _ = published()
    pg = lc.load_measured(None)["postgres"]
    shares = pd.DataFrame({"recording": [pg.id, pg.id], "variant": ["default", "walwriter_alone"],
                           "role": ["baseline", "relieved"], "what": ["x", "x"], "pct": [12.0, 3.0]})
    assert pg.recording.manifest["host"]["logical_cpus"] == 2
    rows = claims.verdicts(shown_of(pub, {"postgres": pg}), shares).set_index("claim")
    pin = rows.loc[rows.index.str.contains("walwriter pinned")].iloc[0]
    assert pin["verdict"].startswith("not testable here: 2 CPUs") and "2 CPUs" in pin["measured"]
    assert rows.loc[rows.index.str.contains("stack samples"), "verdict"].tolist() == ["not testable here: 2 CPUs"]
    tiny = shares.assign(pct=[0.25, 0.13])
    rows = claims.verdicts(shown_of(pub, {"postgres": pg}), tiny).set_index("claim")
    stack = rows.loc[rows.index.str.contains("stack samples")].iloc[0]
    assert stack["verdict"].startswith("not testable here") and "under 1%" in stack["measured"]


def test_postgres_prose_numbers_say_what_one_call_does():
    pub, c2c = published()
    measured = lc.load_measured(None)
    nums = key_numbers(shown_of(pub, measured, c2c))
    assert nums["pg_batch"] == measured["postgres"].recording.parameters["batch"] >= 1
    assert nums["pg_cpus"] == measured["postgres"].recording.host["logical_cpus"]
    assert nums["pg_top_wait_meaning"] == analysis.WAIT_MEANINGS.get(
        nums["pg_top_wait"], analysis.WAIT_MEANINGS.get(nums["pg_top_wait"].split(":")[0], ""))
    assert all("`" not in v for v in analysis.WAIT_MEANINGS.values())  # glued text is not parsed as Markdown
    setup = workloads.load(spec.CHAPTER, "postgres", "setup")[-1]
    assert "COMMIT;" in setup and "WHILE i < p_rows LOOP" in setup  # one call: p_rows rows, each committed


def test_key_numbers_on_the_reference_recordings():
    pub, c2c = published()
    measured = lc.load_measured(None)
    assert set(measured) >= {"native", "postgres"}
    nums = key_numbers(shown_of(pub, measured, c2c))
    assert nums["pub_base_rate"] == 186_915 and nums["pub_aff_x"] == pytest.approx(436_781 / 186_915)
    assert nums["nat_c2c_pairs"] >= 1 and 1 < nums["nat_c2c_median_ns"] < 1000
    assert nums["nat_cs_same_ns"] > nums["nat_c2c_median_ns"]
    assert nums["pg_def_one"] > 0 and nums["pg_wal_bytes_per_insert"] > 50
    assert all(not isinstance(v, np.generic) for v in nums.values())
    curve = analysis.throughput_curve([pub, *measured.values()])
    assert set(curve["kind"]) == {"published", "measured"}


# -- stacks -----------------------------------------------------------------------------------------
def test_stack_spec_errors_and_wpa_backoff_share(tmp_path):
    with pytest.raises(stacks.StacksError, match="is not a file"):
        stacks.parse_spec(str(tmp_path / "missing.csv"))
    spec = f"default:{WPA / 'logcache_before.csv'},no_logwriter_core:{WPA / 'logcache_after.csv'}"
    paths = stacks.parse_spec(spec)
    assert list(paths) == ["default", "no_logwriter_core"]
    with pytest.raises(stacks.StacksError, match="given twice"):
        stacks.parse_spec(f"dup:{WPA / 'logcache_before.csv'},dup:{WPA / 'logcache_after.csv'}")
    pub, _ = published()
    part = analysis.stack_section(shown_of(pub, {}, groups={"fixture": stacks.load_profiles(paths)}))
    shares = part.numbers["shares"].set_index("role")["pct"]
    assert shares["baseline"] > shares["relieved"] > 0
    assert any("LogAppendContext::BackOff" in " ".join(map(str, t.reset_index().iloc[:, 2].astype(str)))
               for t in part.tables if "path" in t.columns)
    rows = claims.verdicts(shown_of(pub, {}), part.numbers["shares"])
    assert rows[rows["claim"].str.contains("stack samples")]["verdict"].tolist() == ["direction reproduced"]


def test_bad_stack_file_names_the_label(tmp_path):
    bad = tmp_path / "bad.folded"
    bad.write_text("a;b;c notanumber\n")
    with pytest.raises(stacks.StacksError, match="stacks bad"):
        stacks.load_profiles(stacks.parse_spec(str(bad)))


# -- native ---------------------------------------------------------------------------------------------
def test_native_programs_reject_bad_options():
    from contention_book.harness import native

    for program, arg in (("c2c_pingpong", "--batches=1"), ("logcache_spin", "--workers=0"),
                         ("ctxswitch_pingpong", "--method=smoke"), ("c2c_chase", "--sizes=64")):
        exe = native.build(program)
        proc = subprocess.run([str(exe), arg], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2 and program in proc.stderr, (program, proc.stderr)


def _toy_run(*args) -> pd.Series:
    """One run of the toy log cache, its CSV row."""
    import io

    from contention_book.harness import native

    exe = native.build("logcache_spin")
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return pd.read_csv(io.StringIO(proc.stdout)).iloc[0]


def test_the_toy_says_who_flushed_and_balances():
    """Without a writer every flush is a worker's, each a full buffer; with --full=wait no worker flushes; either
    way the bytes flushed are the workers' plus the writer's, and appended = flushed + left."""
    cpus = sorted(os.sched_getaffinity(0))
    r = _toy_run("--workers=1", f"--worker-cpus={cpus[0]}", "--seconds-ms=20", "--buffer-bytes=1024")
    assert r["writer_bytes"] == 0 and r["inline_flushes"] > 0
    assert r["inline_bytes"] == r["bytes_flushed"] == r["inline_flushes"] * 1024  # 8 whole 128-byte records each
    assert r["bytes_appended"] == r["records"] * r["record_bytes"] == r["bytes_flushed"] + r["bytes_left"]
    r = _toy_run("--workers=1", f"--worker-cpus={cpus[0]}", f"--writer-cpu={cpus[-1]}", "--seconds-ms=50",
                 "--buffer-bytes=1024", "--full=wait")
    assert r["inline_flushes"] == r["inline_bytes"] == 0 and r["full_waits"] > 0
    assert r["writer_bytes"] == r["bytes_flushed"] > 0
    assert r["bytes_appended"] == r["bytes_flushed"] + r["bytes_left"]


def test_a_writer_with_a_cpu_of_its_own_does_the_flushing():
    """With the old 60 KiB buffer the workers flushed about 96% of the log even when the writer had a CPU to itself.
    With the default buffer a lone writer flushes it (at least half here: a loaded machine may keep the writer away
    long enough, now and then, for a worker to flush once)."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("a writer with a CPU of its own needs 2 CPUs")
    r = _toy_run("--workers=1", f"--worker-cpus={cpus[1]}", f"--writer-cpu={cpus[0]}", "--seconds-ms=300")
    assert r["buffer_bytes"] == spec.TOY_BUFFER_BYTES  # the program's default is the chapter's
    assert r["writer_bytes"] + r["inline_bytes"] == r["bytes_flushed"] > 0
    assert r["writer_bytes"] >= 0.5 * r["bytes_flushed"], r.to_dict()


def test_native_smoke_run_writes_a_recording_that_loads(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the native chapter needs 2 CPUs")
    path = run_chapter(spec.SPEC, RUNNERS, {"sessions": "1", "duration_s": "0.1", "repetitions": "1",
                                            "c2c_batches": "20", "ctx_batches": "10", "chase_loads": "20000"},
                       engine="native", record_to=str(tmp_path / "n"), log=RunLog(lambda *_: None))
    nat = lc.load(path)
    assert nat.engine == "native" and set(nat.runs["variant"]) == {"writer_shared", "writer_alone"}
    assert (nat.runs["records"] > 0).all()
    assert len(nat.table("c2c")) == len(os.sched_getaffinity(0)) * (len(os.sched_getaffinity(0)) - 1) // 2
    assert set(nat.table("ctxswitch")["placement"]) == {"same_cpu", "different_cpus"}
    # the program ran each variant where it was told: A's writer among the workers' CPUs, B's alone
    lc_ = analysis.logcache_summary(nat).set_index("variant")
    a, b = lc_.loc["writer_shared"], lc_.loc["writer_alone"]
    assert str(a["writer_cpu"]) in str(a["worker_cpus"]).split()
    assert str(b["writer_cpu"]) not in str(b["worker_cpus"]).split()


def test_native_layouts():
    lay = native_run.layouts([0, 1, 2], 2)
    assert lay["writer_shared"] == {"writer_cpu": 0, "worker_cpus": [0, 1, 2]}
    assert lay["writer_alone"] == {"writer_cpu": 0, "worker_cpus": [1, 2]}
    assert native_run.default_workers(2) == [1, 2] and native_run.default_workers(16) == [15, 16]
    with pytest.raises(ValueError, match="at least 2 CPUs"):
        native_run.layouts([0], 1)


def test_bad_parameters_are_named():
    with pytest.raises(ParameterError, match="engine 'oracle'"):
        resolve_params(spec.SPEC, "oracle", {})
    with pytest.raises(ParameterError, match="variants"):
        resolve_params(spec.SPEC, "postgres", {"variants": "default,nope"})
    with pytest.raises(ParameterError, match="sessions="):
        resolve_params(spec.SPEC, "postgres", {"sessions": "1,two"})
    with pytest.raises(ParameterError, match="logwriter_cpus.*applies only to engine sqlserver"):
        resolve_params(spec.SPEC, "postgres", {"logwriter_cpus": "0"})


# -- live PostgreSQL ---------------------------------------------------------------------------------------
@pytest.mark.live
def test_live_postgres_run_writes_a_recording_and_restores_affinity(pg, tmp_path):
    from conftest import TEST_ENV_VAR
    from contention_book.harness.targets import resolve_target

    conn = resolve_target(TEST_ENV_VAR, "postgres").connect()
    ww = live_postgres.walwriter_pid(conn)
    conn.close()
    before = os.sched_getaffinity(ww)
    mine = os.sched_getaffinity(0)
    path = run_chapter(spec.SPEC, RUNNERS, {"sessions": "1,2", "duration_s": 1.0, "batch": 50, "seed_rows": 100, "repetitions": 1,
                                            "database": "contention_test", "capture_stacks": False,
                                            "warmup_s": 0.1, "rate": 300, "arrival": "fixed"},
                       engine="postgres", target=TEST_ENV_VAR, record_to=str(tmp_path / "rec"),
                       log=RunLog(lambda *_: None))
    g = lc.load(path)
    assert_load_tables(g, 4)
    points = g.by_repetition("load_points")
    assert (points["loop"] == "open").all() and (points["rate"] == 300).all() and (points["lag_p99_ms"] >= 0).all()
    assert points["driver"].str.contains("the window in C").all()  # the open-loop window ran in native/pg_openloop
    assert g.engine == "postgres" and g.recording.manifest["measured"]["command"]
    assert set(g.runs["variant"]) == {"default", "walwriter_alone"}
    assert (g.runs["throughput"] > 0).all() and set(g.runs["sessions"]) == {1, 2}
    assert set(g.table("pg_waits")["backend_type"]) <= {"client backend", "walwriter"}
    assert (g.table("pg_wal")["wal_records"] >= g.table("pg_wal")["rows"]).all()  # at least one record per insert
    assert (g.runs["rows"] == g.runs["rows_counted"]).all()  # every row the driver counted is in the table
    assert os.sched_getaffinity(ww) == before and os.sched_getaffinity(0) == mine


def test_a_walwriter_left_pinned_by_a_killed_run_is_unpinned(monkeypatch):
    """Its CPUs go back to its postmaster's; a walwriter already like its postmaster is left alone."""
    child = subprocess.Popen(["sleep", "30"])  # stands for the walwriter; this process is its "postmaster"
    try:
        monkeypatch.setattr(live_postgres, "walwriter_pid", lambda conn: child.pid)
        cpus = {child.pid: {0}, os.getpid(): {0, 1, 2, 3}}
        set_calls = []
        lines = []

        def setaff(pid, c):
            set_calls.append((pid, set(c)))
            cpus[pid] = set(c)

        assert live_postgres.unpin_leftover(None, lines.append, getaffinity=cpus.__getitem__, setaffinity=setaff)
        assert set_calls == [(child.pid, {0, 1, 2, 3})] and "left it pinned" in lines[0]
        assert not live_postgres.unpin_leftover(None, lines.append, getaffinity=cpus.__getitem__,
                                                setaffinity=setaff)
        assert len(set_calls) == 1
    finally:
        child.kill()
        child.wait()


# -- review findings on chapter 2's pages (round r1) -----------------------------------------------------------------
def _reference():
    return lc.load_shown("")


def test_the_pair_count_and_the_writer_wait_are_words_computed_from_the_numbers():
    assert analysis.pairs_text(1) == "single CPU pair" and analysis.pairs_text(6) == "6 CPU pairs"
    assert analysis.wait_text(8192) == "8 µs" and analysis.wait_text(576) == "0.6 µs"
    n = key_numbers(_reference())
    assert n["nat_c2c_pairs_text"] == analysis.pairs_text(n["nat_c2c_pairs"])
    for tag in ("a", "b"):  # the words and the details table's number are one number
        assert n[f"nat_{tag}_writer_wait_text"] == analysis.wait_text(n[f"nat_{tag}_writer_wait_p50_ns"])


def test_the_hand_off_limit_sentence_matches_the_rates():
    """Review: "A's rate is 83% of that limit": the limit binds hand-offs between cores, while records/s counts
    mostly uncontended re-takes.  The sentence sets no rate against the limit; it gives the computed collisions per
    record instead, and says whether most acquisitions found the lock free."""
    n = key_numbers(_reference())
    text = n["nat_limit_sentence"]
    limit = n["nat_c2c_handoffs_per_s"]
    pa, pb = n["nat_a_throughput"] / limit, n["nat_b_throughput"] / limit
    for share in (f"{pa:.0%}", f"{pb:.0%}", f"{pa:.1f} times", "of that limit", "above that limit"):
        assert share not in text, share
    lc_ = analysis.logcache_summary(_reference().measured["native"])
    a = lc_[(lc_["variant"] == "writer_shared") & (lc_["workers"] == n["nat_a_workers"])]
    ca = float(a["collisions_per_record"].iloc[0])
    assert n["nat_a_collisions_per_record"] == pytest.approx(ca)
    assert f"collided (found the lock taken) {ca:.4f} times per record" in text
    assert ("found the lock free" in text) == (ca < 0.5)
    b = lc_[(lc_["variant"] == "writer_alone") & (lc_["workers"] == n["nat_b_workers"])]
    b_moves_no_line = len(str(b["worker_cpus"].iloc[0]).split()) == 1 and n["nat_b_workers"] > 1
    assert ("share one CPU" in text) == b_moves_no_line
    assert "can exceed" not in text and "MESI" in text and "not set against that limit" in text
    # a made-up recording whose workers collide on most records says they waited for hand-offs
    fake = dict(n, nat_a_collisions_per_record=0.9, nat_b_collisions_per_record=0.8)
    busy = analysis.limit_sentence(fake, lc_.assign(worker_cpus="0 1"))
    assert "0.9000 times per record and B's 0.8000" in busy and "found the lock taken and waited" in busy


def test_the_writer_sentence_counts_repetitions_not_a_median():
    sh = _reference()
    n = key_numbers(sh)
    runs = sh.measured["native"].runs
    part = runs[(runs["variant"] == "writer_shared") & (runs["workers"] == n["nat_a_workers"])]
    all_reps, reps = int((part["inline_flushes"] == 0).sum()), len(part)
    assert (n["nat_a_writer_all_reps"], n["nat_a_reps"]) == (all_reps, reps)
    text = n["nat_writer_sentence"]
    assert "100% of the log" not in text
    if 0 < all_reps < reps:
        assert f"all of the log in {all_reps} of {reps} repetitions" in text
        assert f"in the other {reps - all_reps} the workers flushed part of it inline" in text


def test_the_in_short_box_says_what_was_found_then_the_action_without_intervals():
    """Review round 4: the box leads with what the chapter can say (the finding and the numbers that carry it),
    then the action, then each verdict beside its number; no interval (those are the table's)."""
    text = key_numbers(_reference())["lc_in_short"]
    assert text.startswith("**Found:** ") and text.index("**Found:**") < text.index("**For a DBA:**") \
        < text.index("**Verdicts")
    assert not re.search(r"\([^()]*\d[^()]*–[^()]*\)", text), "an interval in the box: it belongs in the table"
    assert "hidden schedulers" in text and "CTP" in text


def test_the_in_short_box_says_plainly_when_the_articles_affinity_effect_was_not_tested():
    """Review: "Tested: why taking the log writer's core out ... (2.3×)" while every affinity row was not testable.
    The box says the article's gain went untested and what it needs, after what the chapter can say; review round
    4: it does not lead with the context switch against a memory load, whose measurement includes what the
    article leaves out."""
    from contention_book.chapters.shared.claims import head
    from contention_book.chapters.shared.in_short import UNTESTED

    sh = _reference()
    n = key_numbers(sh)
    text = n["lc_in_short"]
    v = claims.verdicts(sh)
    affinity = v[v["claim"].isin([claims.CLAIM1, claims.CLAIM1 + claims.TOY, claims.CLAIM1 + claims.PG])]
    untested = affinity["verdict"].map(head).isin(UNTESTED).all()
    found = text.split("**For a DBA:**")[0]
    assert ("is not tested on" in found) == bool(untested)
    if untested:
        assert "SQL Server" in found.split("needs", 1)[1] and f"{spec.MIN_CPUS_FOR_ALONE} or more CPUs" in found
        assert f"{n['pub_aff_x']:.1f}× the inserts" in found and "why taking" not in text
    # the lead is what one hand-off costs here, running against switched in, not the memory comparison
    assert f"{n['nat_c2c_median_ns']:,.0f} ns" in found and f"{n['nat_cs_same_ns']:,.0f} ns" in found
    assert "system calls included" in found and "load from main memory" not in found


def test_the_in_short_box_names_claims_as_the_article_states_them():
    """Review: "the toy's rate, the toy's spins, ... walwriter pinned" is internal shorthand.  Review round 4: the
    claims that could not be tested are counted, not listed (the claims table says why each)."""
    sh = _reference()
    text = key_numbers(sh)["lc_in_short"]
    listed = text.split("**Verdicts", 1)[1]
    for shorthand in ("the toy's rate", "the toy's spins", "toy's spins per second", "walwriter pinned",
                      "cost by distance", "back-off in stacks"):
        assert shorthand not in listed, shorthand
    assert "context switch dearer than twice a memory access" in listed
    v = claims.verdicts(sh)
    from contention_book.chapters.shared.claims import head
    from contention_book.chapters.shared.in_short import UNTESTED

    untested = int(v["verdict"].map(head).isin(UNTESTED).sum())
    assert f"*Not testable here*: {untested} more claims; the claims table says why" in listed
    assert "free log writer core raises throughput" not in listed and "pressure moves to XDESMGR" not in listed
    assert "an upper bound: it includes the system calls the article leaves out" in listed


def test_the_diagram_caption_marks_here_only_when_the_diagram_does():
    from contention_book.chapters.logcache_spinlock import diagrams, tables

    sh = _reference()
    nat = sh.measured["native"]
    steps = diagrams.step_latencies(sh.pub_c2c.table("published_c2c"), tables.c2c_by_relation(nat))
    measured = steps["measured_ns"].notna().any()
    assert ("'here'" in diagrams.caption(steps)) == bool(measured)
    some = steps.assign(measured_ns=[40.0] + [float("nan")] * (len(steps) - 1))
    assert "marked 'here'" in diagrams.caption(some) and "marked 'here'" in diagrams.alt(some)


def test_figures_name_recordings_and_variants_in_words_not_ids():
    from contention_book.chapters.logcache_spinlock import figures

    sh = _reference()
    nat = sh.measured["native"]
    table = analysis.c2c_comparison(nat, sh.pub_c2c)
    assert not table["source"].str.contains(nat.id, regex=False).any()
    pub = sh.published.table("published_stacks")
    shares = pd.DataFrame([{"recording": nat.id, "variant": "writer_alone", "role": None, "what": "x", "pct": 1.0}])
    fig = figures.stack_shares(shares, pub, {nat.id: nat.label})
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert not any("no_logwriter_core" in t or nat.id in t for t in ticks), ticks
    assert any(spec.LABELS["no_logwriter_core"] in t for t in ticks)


def test_the_placement_query_reads_the_scheduler_status_before_any_mask_change():
    sql = (repo_root() / "workloads/logcache-spinlock/diagnose/sqlserver/03-log-writer-placement.sql").read_text()
    assert "s.status" in sql and "HIDDEN ONLINE" in sql and "the core the article took out" not in sql
    assert not problems(sql)


def _notebook_text() -> str:
    import json

    nb = json.loads((repo_root() / "notebooks/02-logcache-spinlock.ipynb").read_text())
    return "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_the_hand_off_limit_is_stated_for_hand_offs_between_cores_only():
    """Review: "can then change hands at most about 29.1 million times a second, whatever else the holders do"
    beside 1-worker rates above it.  The sentence limits hand-offs between cores, as the MESI sentence does."""
    text = " ".join(_notebook_text().split())
    assert "can then change hands at most" not in text and "one hot lock can change hands at most" not in text
    assert "can pass between cores at most about {glue:text}`nat_c2c_handoffs_text` times a second" in text
    assert "one core re-taking a lock is not held to it" in text
    assert "only hand-offs between CPUs" in key_numbers(_reference())["nat_limit_sentence"]


def test_the_transfer_cost_is_said_once_to_be_this_recordings_own_measurement():
    """Review: chapters quote different transfer costs for the same two-vCPU machine; the chapter says, once, that
    its cost is its recording's own, and on a virtual machine depends on where the hypervisor placed the vCPUs."""
    sh = _reference()
    n = key_numbers(sh)
    text = _notebook_text()
    assert text.count("{glue:text}`nat_c2c_own_sentence`") == 1
    assert text.index("nat_c2c_own_sentence") < text.index("nat_c2c_handoffs_text")
    sentence = n["nat_c2c_own_sentence"]
    assert "this recording's own measurement" in sentence
    virtual = bool(analysis.on_hypervisor(sh.measured["native"]))
    assert ("where the hypervisor placed the two vCPUs" in sentence) == virtual
    assert ("other chapters' recordings" in sentence) == virtual
    # the opening quotes no transfer cost any more (its claim is the article's: against a main-memory load)
    assert "cache-line transfer (" not in n["lc_in_short"]


def test_the_article_is_not_credited_with_the_books_inference_about_a_preempted_holder():
    """Review: the article says only that the log writer may be context switched in before the hand-off; a
    descheduled holder is the book's inference, and a holder is descheduled by Windows, not by SQLOS."""
    text = " ".join(_notebook_text().split())
    assert "what follows is its account" not in text
    assert "When the log writer needs the CPU, a worker must give it up" not in text
    said, inferred = text.index("**What the article says.**"), text.index("**What the book infers")  # summary first
    assert said < inferred and text.index("**What the book infers.**") > inferred  # the full text, on details
    assert "does not yield while it holds a spinlock" in text[inferred:] and "Windows" in text[inferred:]
    assert "holds LOGCACHE_ACCESS" not in text[said:inferred] and "holder" not in text[said:inferred]


def test_the_article_is_not_credited_with_a_scheduler_status():
    text = " ".join(_notebook_text().split())
    assert "as on the article's build" not in text
    assert "The article does not report its log writer's scheduler status" in text


def test_the_recordings_list_names_recordings_by_their_titles_not_their_ids():
    sh = _reference()
    note = lc.header_note(sh)
    for g in (sh.published, sh.pub_c2c, *sh.measured.values()):
        assert f"`{g.id}`" not in note, g.id
        title = str(g.recording.manifest.get("title") or "").removeprefix("Published: ")
        assert title[1:] in note, title
    assert "Measured (native)" not in note and "Measured (postgres)" not in note


def test_the_context_switch_claim_is_the_articles_memory_comparison():
    """Review: the article compares a context switch with a main-memory access ("upwards of twice"), never with a
    line transfer; the 104× against a line transfer is the book's own illustration, kept out of the verdicts."""
    sh = _reference()
    n = key_numbers(sh)
    v = claims.verdicts(sh).set_index("claim")
    row = v.loc[claims.CLAIM3]
    assert "main-memory" in claims.CLAIM3 and "line transfer" not in claims.CLAIM3
    assert "line transfer" not in row["measured"] and "line transfer" not in row["rule"]
    assert f"({n['nat_cs_vs_mem_x']:.0f}×)" in row["measured"] and f"{n['nat_mem_ns']:.0f} ns per main-memory" in row["measured"]
    verdicts_part = n["lc_in_short"].split("**Verdicts:**", 1)[1]
    assert f"memory access, {n['nat_cs_vs_mem_x']:.0f}×" in verdicts_part and "line transfer" not in verdicts_part
    # the line-transfer ratio stays as the book's illustration in the prose
    assert "{glue:text}`nat_cs_vs_line_x:,.0f` times a line" in _notebook_text()


def test_the_published_distance_matrices_are_background_not_an_article_claim():
    """Review: "7.6 / 44 / 118 ns on a Xeon E5-2695 v4 (published matrices)" sat under the article's claims."""
    sh = _reference()
    v = claims.verdicts(sh)
    assert not v["published"].str.contains("published").any() and claims.CLAIM4 not in set(v["claim"])
    d = claims.distance_check(sh)
    assert "Viennot" in d["published"] and "not in the article" in d["published"]
    text = key_numbers(sh)["nat_distance_check"]
    shown_words = d["verdict"].removeprefix("not testable here: ") if d["verdict"].startswith("not testable") \
        else d["measured"]
    assert shown_words in text and "{glue:text}`nat_distance_check`" in _notebook_text()


def test_the_wal_bytes_per_insert_name_their_points():
    """Review: "Each insert wrote about 188 bytes of WAL" beside a table of 177, 183, 184, 192."""
    sh = _reference()
    text = key_numbers(sh)["pg_wal_bytes_text"]
    table = analysis.pg_wal_table(sh.measured["postgres"])
    d = table[table["variant"] == analysis.LABELS.get("default", "default")].sort_values("sessions")
    per = d["WAL bytes / insert"]
    assert f"{per.iloc[0]:,.0f} bytes of WAL at {int(d['sessions'].iloc[0])} session" in text or \
        f"between {per.min():,.0f} and {per.max():,.0f}" in text
    assert f"{per.iloc[-1]:,.0f}" in text and "default variant" in text
    assert "pg_wal_bytes_per_insert" not in _notebook_text() and "{glue:text}`pg_wal_bytes_text`" in _notebook_text()
    flat = pd.DataFrame({"variant": ["default"] * 2, "sessions": [1, 2], "wal_bytes": [100.0, 200.0],
                         "rows": [1.0, 2.0]})
    assert analysis.wal_bytes_text(flat) == "about 100 bytes of WAL at every point of the default variant"


def test_the_context_switch_row_says_its_measurement_includes_what_the_article_leaves_out():
    """Review round 4: the article's switch excludes the trip from user mode into the kernel; the book's is a futex
    hand-off, timed with both system calls.  The row, its note and the details prose say it is an upper bound, so
    the verdict holds only for a switch as a thread pays it."""
    sh = _reference()
    row = claims.verdicts(sh).set_index("claim").loc[claims.CLAIM3]
    assert "not counting the switch into and out of kernel mode" in row["published"]
    assert "two system calls" in row["measured"] and "upper bound" in row["measured"]
    assert "upper bound on the article's switch" in row["size"] and "a switch with those trips" in row["size"]
    text = " ".join(_notebook_text().split())
    assert "each hand-off makes two system calls" in text and "upper bound on the article's" in text


def test_waiters_spin_whenever_the_holder_runs_and_back_off_only_when_it_is_descheduled():
    """Review round 4: "only Windows preemption can take a holder's CPU, and only then do waiters spin and back off"
    is wrong: waiters spin on any contended hand-off (the article's LOGCACHE_ACCESS spins were about the same under
    both masks); only a descheduled holder makes them spin long enough to back off.  Both pages say so."""
    text = " ".join(_notebook_text().split())
    assert "only then do waiters spin and back off" not in text
    assert "Waiters spin whenever the holder runs on another core" in text
    assert "only while the holder is off its CPU does a waiter spin long enough to back off" in text
    assert "Waiters spin on every contended hand-off while the holder runs on another core" in text
    assert "spins through its whole budget and then backs off" in text


def test_the_main_page_sends_the_reader_to_the_placement_query_where_it_is():
    """Review round 4: the main page said "the third says where the log writer runs … Run the placement query above"
    while it shows two SQL Server queries; the third is on the details page, and the text says so and links it."""
    from contention_book.chapters.shared import diagnose

    text = " ".join(_notebook_text().split())
    assert "the third says where the log writer runs" not in text and "Run the placement query above" not in text
    assert text.count("<02-logcache-spinlock-details>`") >= 2
    from contention_book.chapters import logcache_spinlock as chapter

    main = [q.title.lower() for q in chapter.diagnose.queries("sqlserver")[:diagnose.MAIN_QUERIES]]
    assert "log writer placement" not in main  # so the main page must point to the details page for it
