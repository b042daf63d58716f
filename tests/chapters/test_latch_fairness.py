"""Latch-fairness chapter: published recording, analysis, verdicts, native smoke run; no server needed."""
import numpy as np
import pandas as pd
import pytest

from contention_book.chapters.latch_fairness import claims, recordings as lf, run_native as native_sweep, spec
from contention_book.chapters.latch_fairness import tables as analysis
from contention_book.chapters.latch_fairness import key_numbers
from contention_book.harness.chapter_registry import runners
from contention_book.chapters.latch_fairness.spec import NATIVE_COLUMNS
from contention_book.harness.params import ParameterError
from contention_book.harness.runner import RunLog, resolve_params, run_chapter
from contention_book.harness import native
from contention_book.harness.recording import Recording, RecordingError, RecordingWriter

RUNNERS = runners("latch-fairness")


# -- the published recording -------------------------------------------------------------
def test_published_recording_matches_the_article():
    p = lf.load(spec.PUBLISHED)
    assert p.recording.kind == "published" and p.engine == "sqlserver"
    assert p.recording.manifest["citation"]["url"].startswith("https://www.sql.kiwi/2022/08/")
    assert p.recording.host["logical_cpus"] == 12 and p.recording.host["cores"] == 6
    latch = p.latch.set_index("variant")
    assert latch.loc["fair", "waits"] == 271_609 and latch.loc["fair", "wait_time_ms"] == 22_642
    assert latch.loc["unfair", "waits"] == 57 and latch.loc["unfair", "max_wait_time_ms"] == 1
    spin = p.spinlock.set_index(["variant", "name"])
    assert spin.loc[("unfair", "LATCH_SPIN_STATS"), "spins"] == 221_891_800
    assert spin.loc[("unfair", "LATCH_SPIN_STATS"), "collisions"] == 337_110
    assert spin.loc[("fair", "X_PACKET_LIST"), "spins"] == 56_635
    wait = p.wait.set_index(["variant", "name"])
    assert wait.loc[("fair", "LATCH_EX"), "signal_wait_time_ms"] == 2_644
    assert wait.loc[("unfair", "CXPACKET"), "waits"] == 280_905
    assert p.runs.set_index("variant")["elapsed_s"].to_dict() == {"fair": 5.5, "unfair": 4.5}
    assert (p.runs["operations"] == 64 * 1024 * 1024).all() and (p.runs["sessions"] == 11).all()


def test_published_numbers_are_derived_not_typed():
    k = analysis.published_numbers(lf.load(spec.PUBLISHED))
    assert k["pub_latch_wait_drop_x"] == pytest.approx(271_609 / 57)
    assert k["pub_speedup_x"] == pytest.approx(5.5 / 4.5)
    assert k["pub_fair_wait_s_per_worker"] == pytest.approx(22.642 / 11)
    assert k["convoy_capacity"] == 500  # the article's 2 ms hold time


def test_convoy_arithmetic():
    c = analysis.convoy(2.0, 600.0, seconds=3)
    assert c["capacity_per_s"] == 500 and c["queue_growth_per_s"] == 100
    assert c["queue_after"] == 300 and c["wait_of_last_ms"] == 600
    assert analysis.convoy(2.0, 400.0)["queue_after"] == 0  # below capacity no queue builds
    with pytest.raises(ValueError, match="positive hold time"):
        analysis.convoy(0, 10)


# -- analysis on a synthetic native sweep (2 CPUs: 2 threads is the article's regime, 4 and 8 are oversubscribed) --
def sweep(fair_rate_at_8=1e5, unfair_max_ns=5e6, fair_max_ns=1e6, stp_waits=10, lone_max_ns=1e4, fair_rate_at_2=2e5,
          unfair_p99_ns=400):
    rows = []
    for kind in ("fair", "unfair", "spin_then_park", "eventual"):
        for threads in (1, 2, 4, 8):
            for rep in range(3):
                rate = 1e7 if threads == 1 or kind != "fair" else (fair_rate_at_8 if threads == 8 else fair_rate_at_2)
                records = int(rate)
                waits = records if kind == "fair" and threads > 1 else (stp_waits if kind == "spin_then_park" else 100)
                rows.append({"kind": kind, "threads": threads, "repetition": rep, "duration_s": 1.0,
                             "records": records, "records_per_s": rate, "record_bytes": 64,
                             "waits": waits, "parks": waits, "handoffs": 0,
                             "spins": records * 3 if kind in ("spin_then_park", "eventual") else 0,
                             "backoffs": 0, "queue_spins": 0, "wait_p50_ns": 30,
                             "wait_p99_ns": 5e4 if kind == "fair" else unfair_p99_ns,
                             "wait_p999_ns": 1e5, "wait_max_ns": lone_max_ns if threads == 1 else (
                                 fair_max_ns if kind == "fair" else unfair_max_ns),
                             "voluntary_cs": records if kind == "fair" else 10, "involuntary_cs": 5, "cpu_s": 1.0,
                             "jain_index": 1.0, "min_share": 0.9, "fair_after_us": 500 if kind == "eventual" else -1,
                             "records_under_lock": records, "acquisitions": records})
    frame = pd.DataFrame(rows)
    return native_sweep.to_runs(frame)


def native_recording(tmp_path, runs, name="sweep", cpus=2):
    with RecordingWriter(tmp_path / name, chapter="latch-fairness", kind="measured",
                         engine={"name": "native", "version": "cc 12"},
                         host={"cpu_model": "test CPU", "sockets": 1, "cores": cpus, "logical_cpus": cpus,
                               "numa_nodes": 1},
                         parameters={"duration_ms": 1000, "repetitions": 3, "record_bytes": 64, "fair_after_us": 500,
                                     "spin_us": 20},
                         measured={"tool": "t", "tool_version": "0", "command": "test"}) as w:
        w.write_csv("runs.csv", runs)
    return lf.load(tmp_path / name)


def _heads(v):
    return dict(zip([c.split(" (")[0] for c in v["claim"]], v["verdict"].str.split(":").str[0]))


def test_native_summary_and_verdicts_follow_the_data(tmp_path):
    g = native_recording(tmp_path, sweep())
    s = analysis.native_summary(g)
    assert set(s["kind"]) == {"fair", "unfair", "spin_then_park", "eventual"} and (s["repetitions"] == 3).all()
    assert s.set_index(["kind", "threads"]).loc[("fair", 8), "waits_per_record"] == 1
    v = claims.verdicts(lf.Shown(lf.load(spec.PUBLISHED), g))
    verdict = _heads(v)
    assert verdict["The unfair latch waits far less often"] == "direction reproduced"
    # the C model's fair lock never spins by construction: spins are a counter check there, not a verdict
    assert "The unfair latch spins far more" not in verdict
    assert "the fair lock spun 0 times per record as built" in claims.spin_check(g)
    assert verdict["The unfair latch gives higher throughput"] == "direction reproduced"
    # the tail at the 99th percentile (400 ns against 50 µs), not the longest wait (5 ms against 1 ms)
    assert verdict["The unfair latch's wait tail is shorter"] == "direction reproduced"
    tail = v[v["claim"].str.startswith("The unfair latch's wait tail")].iloc[0]
    assert tail["measured"] == ("99th-percentile wait 0.008× (the same in all 3 runs) the fair lock's at 2 threads "
                                "on 2 CPUs: 400 ns (the same in all 3 runs) against 50 µs (the same in all 3 runs); "
                                "longer in 0 of 3 paired repetitions")
    assert (v["tested_on"] == "C model on 2 CPUs").all()
    assert v["measured"].str.contains("at 2 threads on 2 CPUs").all()  # the article's regime, never 8 threads
    assert v.loc[v["verdict"] == "direction reproduced", "size"].str.startswith("not compared: a C model").all()


def test_verdicts_are_judged_in_the_articles_regime_only(tmp_path):
    """What happens above the CPU count changes no verdict: only the point within the CPUs decides."""
    calm = native_recording(tmp_path, sweep(fair_rate_at_8=1e9), "calm")  # the fair lock fastest when oversubscribed
    v = _heads(claims.verdicts(lf.Shown(lf.load(spec.PUBLISHED), calm)))
    assert v["The unfair latch gives higher throughput"] == "direction reproduced"
    wide = native_recording(tmp_path, sweep(), "wide", cpus=8)  # on 8 CPUs the deciding point is 8 threads
    v = claims.verdicts(lf.Shown(lf.load(spec.PUBLISHED), wide))
    assert v["measured"].str.contains("at 8 threads on 8 CPUs").all()


def test_verdicts_can_flip(tmp_path):
    """Each verdict is computed, not fixed: the opposite data gives the opposite answer."""
    g = native_recording(tmp_path, sweep(fair_rate_at_8=1e8, fair_rate_at_2=1e8, unfair_max_ns=1e5, stp_waits=10**7,
                                         unfair_p99_ns=1e6))
    got = _heads(claims.verdicts(lf.Shown(lf.load(spec.PUBLISHED), g)))
    assert got["The unfair latch gives higher throughput"] == "differs"
    assert got["The unfair latch's wait tail is shorter"] == "differs"  # 1 ms against 50 µs at the 99th percentile
    assert got["The unfair latch waits far less often"] == "differs"


def test_sentences_follow_the_data(tmp_path):
    """The prose's direction-bearing sentences are computed, and turn round with the data."""
    k = key_numbers(lf.Shown(lf.load(spec.PUBLISHED), native_recording(tmp_path, sweep(), "a")))
    assert k["m_tail_sentence"].startswith("At 2 threads the 99th percentile wait was")
    assert ("The longest wait of the plain unfair, spinning and eventually fair locks exceeded the fair lock's"
            in k["m_tail_sentence"])
    assert k["m_over_tail_sentence"].startswith("Oversubscribed (shown, not judged): at 8 threads")
    assert "at 2 threads on 2 CPUs, barging with a spin gave 50.0×" in k["m_conclusion_sentence"]
    # the conclusion (main page) weighs the 99th percentile with each lock's spread, not the longest wait
    assert "its 99th-percentile wait was 0.008" in k["m_conclusion_sentence"]
    assert "400 ns" in k["m_conclusion_sentence"] and "50 µs" in k["m_conclusion_sentence"]
    assert "The spinning lock's tail was reliably shorter." in k["m_conclusion_sentence"]
    assert "The longest single waits are on the details page." in k["m_conclusion_sentence"]
    assert "ms" not in k["m_conclusion_sentence"].split("The longest")[0]  # no longest wait quoted before that
    assert k["m_over_sentence"].startswith("Oversubscribed, and so outside the article's regime: at 8 threads")
    assert "10 times its bound of 500 µs" in k["m_eventual_sentence"]
    assert "at 2 threads on 2 CPUs" in k["in_short"] and "direction reproduced" in k["in_short"]
    assert "**Tested:**" in k["in_short"] and "**Found:**" in k["in_short"]
    assert "spin-then-park ÷ fair" in k["in_short"] and "(range" not in k["in_short"]  # medians; intervals in the table
    assert "The spinning lock's 99th-percentile wait was longer than the fair lock's in 0 of 3 paired repetitions" \
        in k["m_conclusion_sentence"]
    k = key_numbers(lf.Shown(lf.load(spec.PUBLISHED), native_recording(
        tmp_path, sweep(fair_rate_at_2=1e8, unfair_max_ns=1e5, fair_max_ns=1e6), "b")))
    assert "No barging lock's longest wait exceeded the fair lock's" in k["m_tail_sentence"]
    k = key_numbers(lf.Shown(lf.load(spec.PUBLISHED), native_recording(tmp_path, sweep(unfair_p99_ns=1e6), "c")))
    assert "The fair queue kept the tail reliably shorter." in k["m_conclusion_sentence"]
    assert "longer than the fair lock's in 3 of 3 paired repetitions" in k["m_conclusion_sentence"]
    assert "was 20× (the same in all 3 runs) the fair lock's: 1 ms (the same in all 3 runs) against 50 µs" in \
        k["m_conclusion_sentence"]
    k = key_numbers(lf.Shown(lf.load(spec.PUBLISHED), native_recording(
        tmp_path, sweep(fair_rate_at_2=1e8, unfair_max_ns=1e5, fair_max_ns=1e6, lone_max_ns=1e6), "d")))
    assert "measure preemption here: a lone thread, which waits for no one, was held up for 1.0 ms" in \
        k["m_conclusion_sentence"]
    assert "stayed within twice its bound" in k["m_eventual_sentence"]


def test_key_numbers_from_a_native_recording(tmp_path):
    g = native_recording(tmp_path, sweep())
    k = key_numbers(lf.Shown(lf.load(spec.PUBLISHED), g))
    assert k["m_in_threads"] == 2
    # every number glued from the point it describes: 2 threads, 200,000 records/s, 5 µs per record
    assert "At 2 threads the fair lock managed 0.20 million records per second, so each record took 5.0 µs" \
        in k["m_fair_sentence"]
    assert "about 4.9 µs per queued acquisition" in k["m_fair_sentence"]  # 5 µs less a lone thread's 100 ns
    assert k["m_half_sentence"].startswith("Its rate first fell below half the single-thread rate at 2 threads, "
                                           "where it appended 0.20 million records per second, 5.0 µs per record")
    assert k["m_handoff_ns"] == pytest.approx(4900)
    assert all(not isinstance(v, np.generic) for v in k.values())


def test_verdicts_for_a_sqlserver_measured_recording(tmp_path):
    """A reader's SQL Server recording has the published layout; its verdicts come from its own deltas."""
    p = lf.load(spec.PUBLISHED)
    dest = tmp_path / "sql"
    with RecordingWriter(dest, chapter="latch-fairness", kind="measured",
                         engine={"name": "sqlserver", "version": "16.0.4135.4"},
                         host={"cpu_model": None, "sockets": 1, "cores": 8, "logical_cpus": 16, "numa_nodes": 1},
                         parameters={}, measured={"tool": "t", "tool_version": "0", "command": "test"}) as w:
        for name in ("runs.csv", "dmv/latch.csv", "dmv/spinlock.csv", "dmv/wait.csv"):
            one = p.recording.csv(name)  # the article's one run, as if measured three times alike
            w.write_csv(name, pd.concat([one.assign(repetition=k) for k in range(3)], ignore_index=True))
    v = claims.verdicts(lf.Shown(p, lf.load(dest)))
    assert list(v["verdict"]) == ["reproduced"] * 4, v[["claim", "verdict", "size"]]  # the article's own size
    assert (v["tested_on"] == "SQL Server 16.0.4135.4 on 16 CPUs").all()
    single = lf.load(dest)
    single.tables = {k: (t[t["repetition"] == 0] if "repetition" in t else t) for k, t in single.tables.items()}
    v = claims.verdicts(lf.Shown(p, single))
    assert set(v["verdict"]) == {"inconclusive: 1 repetition, the rule needs 3"}  # one run decides nothing
    # the same recording with fair and unfair swapped: every rule must turn round
    swapped = tmp_path / "swapped"
    with RecordingWriter(swapped, chapter="latch-fairness", kind="measured",
                         engine={"name": "sqlserver", "version": "16.0.4135.4"},
                         host={"cpu_model": None, "sockets": 1, "cores": 8, "logical_cpus": 16, "numa_nodes": 1},
                         parameters={}, measured={"tool": "t", "tool_version": "0", "command": "test"}) as w:
        for name in ("runs.csv", "dmv/latch.csv", "dmv/spinlock.csv", "dmv/wait.csv"):
            one = p.recording.csv(name)
            one["variant"] = one["variant"].map({"fair": "unfair", "unfair": "fair"})
            w.write_csv(name, pd.concat([one.assign(repetition=k) for k in range(3)], ignore_index=True))
    v = claims.verdicts(lf.Shown(p, lf.load(swapped)))
    assert list(v["verdict"]) == ["differs", "differs", "differs", "differs"], v[["claim", "verdict"]]


def test_bad_recordings_give_clear_errors(tmp_path):
    runs = sweep().drop(columns=["wait_p99_ns"])
    with pytest.raises(RecordingError, match=r"runs.csv lacks column\(s\) wait_p99_ns"):
        native_recording(tmp_path, runs)
    with pytest.raises(RecordingError, match="no manifest.json found"):
        lf.load(tmp_path / "nowhere")
    with RecordingWriter(tmp_path / "pg", chapter="latch-fairness", kind="measured",
                         engine={"name": "postgres", "version": "16"},
                         host={"cpu_model": None, "sockets": 1, "cores": 1, "logical_cpus": 1, "numa_nodes": 1},
                         parameters={}, measured={"tool": "t", "tool_version": "0", "command": "x"}) as w:
        w.write_text("runs.csv", "variant\n")
    with pytest.raises(RecordingError, match="no PostgreSQL analogue"):
        lf.load(tmp_path / "pg")


def test_parameters_are_checked():
    assert resolve_params(spec.SPEC, "native", {"sessions": "1, 2,4"})["sessions"] == [1, 2, 4]
    assert resolve_params(spec.SPEC, "native", {"sessions": 2})["sessions"] == [2]  # one int is a list of one
    assert resolve_params(spec.SPEC, "native", {})["sessions"] == [1, 2, 4, 8, 16, 32]
    with pytest.raises(ParameterError, match="sessions='1,x'"):
        resolve_params(spec.SPEC, "native", {"sessions": "1,x"})
    with pytest.raises(ParameterError, match=">= 1"):
        resolve_params(spec.SPEC, "native", {"sessions": "0"})
    with pytest.raises(ParameterError, match="variants='fair,bogus'"):
        resolve_params(spec.SPEC, "native", {"variants": "fair,bogus"})
    with pytest.raises(ParameterError, match="unknown parameter.*threads"):
        resolve_params(spec.SPEC, "native", {"threads": "2"})
    with pytest.raises(ParameterError, match="runs on native, sqlserver"):
        resolve_params(spec.SPEC, "postgres", {})


# -- the native program ---------------------------------------------------------------------
def test_native_program_rejects_bad_options():
    import subprocess

    exe = native.build("latch_convoy")
    for args, message in ((["--kinds", "fair,nope"], "unknown kind 'nope'"),
                          (["--threads", "0"], "--threads=0: expected an integer from 1 to 1024"),
                          (["--duration-ms"], "needs a value"), (["--frobnicate", "1"], "unknown option")):
        proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)


def test_the_mutual_exclusion_check_catches_a_broken_lock(tmp_path):
    """Built with a barger that ignores the holder, the program must stop with exit 3 and say so."""
    import subprocess

    exe = tmp_path / "latch_convoy_broken"
    src = native.native_dir() / "latch_convoy.c"
    subprocess.run(["cc", "-O2", "-std=c11", "-pthread", "-DLATCH_CONVOY_SELFTEST_BROKEN", f"-I{src.parent}",
                    str(src), "-o", str(exe), "-lm"], check=True, capture_output=True, timeout=120)
    # more threads than CPUs: a holder preempted inside the critical section lets a barger in even on one CPU
    proc = subprocess.run([str(exe), "--kinds", "unfair", "--threads", "8", "--duration-ms", "400",
                           "--repetitions", "3"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and "unfair lock broken" in proc.stderr, proc.stderr[-500:]


def test_native_smoke_sweep_records_and_renders(tmp_path):
    """Build, run a tiny sweep over every kind, write a recording, and read it back."""
    lines = []
    path = run_chapter(spec.SPEC, RUNNERS, {"sessions": "1,4", "duration_s": "0.06", "repetitions": "1",
                                            "record_bytes": "32"},
                       engine="native", record_to=str(tmp_path / "smoke"), log=RunLog(lines.append))
    rec = Recording.open(path)
    assert rec.kind == "measured" and rec.engine["name"] == "native" and rec.host["logical_cpus"] >= 1
    assert rec.parameters["sessions"] == [1, 4] and rec.manifest["measured"]["command"]
    g = lf.load(path)
    assert set(g.runs["kind"]) == {"fair", "unfair", "spin_then_park", "eventual"}
    assert len(g.runs) == 8 and set(NATIVE_COLUMNS) <= set(g.runs.columns)
    assert (g.runs["records"] > 0).all()
    one = g.runs[g.runs["threads"] == 1]
    assert (one["waits"] == 0).all() and (one["handoffs"] == 0).all()  # alone, nobody waits
    fair4 = g.runs[(g.runs["kind"] == "fair") & (g.runs["threads"] == 4)].iloc[0]
    assert fair4["handoffs"] == fair4["parks"]  # every fair park ends in a hand-off
    assert (g.runs.loc[g.runs["kind"] == "unfair", "handoffs"] == 0).all()  # barging never hands off
    assert (g.runs.loc[g.runs["kind"].isin(["fair", "unfair"]), "spins"] == 0).all()
    assert (g.runs["wait_p50_ns"] <= g.runs["wait_p99_ns"]).all()
    assert (g.runs["wait_p99_ns"] <= g.runs["wait_max_ns"]).all()
    assert any("complete" in line for line in lines)
    claims.verdicts(lf.Shown(lf.load(spec.PUBLISHED), g))  # renders for any sweep


def test_the_published_version_reads_as_the_product_name():
    from contention_book.chapters.latch_fairness.tables import product_version

    assert product_version({"version": "15.0", "build": "CU17 (build number not stated)"}) == "2019 CU17"
    assert product_version({"version": "17.0", "build": None}) == "17.0"


def test_the_longest_wait_is_judged_only_above_the_preemption_floor():
    """Review of chapter 1: a lone thread, which waits for no one, was held up 16.2 ms, longer than the fair lock's
    worst wait (12.3 ms); such a longest wait measures preemption, so the claim is not judged.  Below half the
    locks' longest waits the lone thread's is noise the comparison can rise above, and it is judged."""
    import pandas as pd

    from contention_book.chapters.latch_fairness.tables import preemption_floor

    def summary(lone_ms):
        return pd.DataFrame({"kind": ["fair", "fair", "spin_then_park"], "threads": [1, 2, 2],
                             "wait_max_ns": [lone_ms * 1e6, 12.3e6, 20.1e6]})

    assert preemption_floor(summary(16.2), 2) == (16.2, 12.3)
    assert preemption_floor(summary(6.2), 2) == (6.2, 12.3)  # at least half of 12.3 (6.15)
    assert preemption_floor(summary(6.0), 2) is None


def _notebook_markdown() -> str:
    """The chapter notebook's prose, its markdown cells joined, lines unwrapped."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / "01-latch-fairness.ipynb").read_text())
    return " ".join("".join(c["source"]).replace("\n", " ") for c in nb["cells"] if c["cell_type"] == "markdown")


def test_prose_says_what_the_article_says_of_spins_and_of_the_index_builds():
    """Review of chapter 1: the article says the zero spin count *implies* a fair latch does not spin; and it dates
    parallel index builds to SQL Server 2000 but the contended parallel index-building plans to SQL Server 2008."""
    text = _notebook_markdown()
    assert "a fair latch does not spin, it waits" not in text
    assert "which implies a fair latch does not spin: it waits" in text
    assert "Parallel index builds, which SQL Server 2000 introduced, were the first to have this pattern" not in text
    assert "SQL Server 2000's parallel index builds" in text
    assert "the parallel index-building plans that SQL Server 2008 added" in text


def test_in_short_names_the_tail_claims_direction_and_what_was_measured(tmp_path):
    """Review of chapter 1: the opening listed "longer 99th-percentile wait …, 15×: inconclusive" under a claim that
    reads "the unfair latch's wait tail is shorter".  The label names the claim's direction; the number says what was
    measured, its direction computed from the median, either way round."""
    from contention_book.chapters.latch_fairness.finding import tail_measured

    shorter = key_numbers(lf.Shown(lf.load(spec.PUBLISHED), native_recording(tmp_path, sweep(), "a")))["in_short"]
    assert "shorter wait tail (the article's claim), measured shorter at the 99th percentile, 0.008× " \
           "(spin-then-park ÷ fair): *direction reproduced*" in shorter
    longer = key_numbers(lf.Shown(lf.load(spec.PUBLISHED), native_recording(tmp_path, sweep(unfair_p99_ns=1e6),
                                                                             "c")))["in_short"]
    assert "shorter wait tail (the article's claim), measured 20× longer at the 99th percentile " \
           "(spin-then-park ÷ fair), longer in 3 of 3 paired repetitions: *differs*" in longer
    assert "longer 99th-percentile wait" not in shorter + longer
    assert tail_measured("1/120", True) == "measured shorter at the 99th percentile, 1/120 (spin-then-park ÷ fair)"
    assert tail_measured("1.5×", False) == "measured 1.5× longer at the longest wait (unfair ÷ fair)"


def test_the_reference_says_the_deciding_point_barely_exercises_fairness_and_names_the_convoy():
    """Review: "fewer latch waits … 1/120: direction reproduced" and "too few acquisitions queued … to price a fair
    hand-off" while the fair lock queued on 0.09% of its records and convoyed in 1 of 5 repetitions; and "longer at
    the 99th percentile … inconclusive" while the spinning lock's tail was the longer in 4 of 5 paired repetitions,
    the fifth being the one where the fair lock convoyed.  Each is said where its number is."""
    from contention_book.chapters.latch_fairness.claims import tail_longer
    from contention_book.chapters.latch_fairness.tables import convoyed

    sh = lf.load_shown("")
    k = key_numbers(sh)
    conv, reps = convoyed(sh.measured, 2)
    k_longer, n_pairs = tail_longer(sh.measured, 2)
    assert len(conv) == 1 and reps == 5 and (k_longer, n_pairs) == (4, 5)  # the recording the review read
    r = sh.measured.runs[sh.measured.runs["threads"] == 2].pivot_table(index="repetition", columns="kind",
                                                                         values="wait_p99_ns")
    assert list(r.index[r["spin_then_park"] <= r["fair"]]) == conv  # the exception is the convoy
    seldom = "barely exercises fairness"
    assert seldom in k["in_short"] and seldom in k["m_fair_sentence"]
    assert "a convoy formed in 1 of 5 repetitions" in k["in_short"] and "0.09%" in k["in_short"]
    why = "longer in 4 of 5 paired repetitions; the fifth is the repetition where the fair lock convoyed"
    assert why in k["m_conclusion_sentence"].replace("longer than the fair lock's in", "longer in")
    assert "longer in 4 of 5 paired repetitions (the fifth is the repetition where the fair lock convoyed)" \
        in k["in_short"]
    rows = claims.verdicts(sh).set_index("claim")
    assert why in rows.loc[claims.CLAIMS[3] + " (C model: fair lock against spin, back off, then park)",
                           "measured"]
    assert "the fair lock queued on only 0.09% of its records" in rows["measured"].iloc[0]


def test_a_barging_locks_rate_says_the_ratio_of_medians_and_the_median_of_paired_ratios():
    """Review: "7.16 million records per second: 1.1× (0.9–16.9) the fair lock's rate" while 7.16 / 7.44 is 0.96×.
    The sentence gives both: the ratio of the medians, and the median of the per-repetition ratios."""
    k = key_numbers(lf.load_shown(""))
    text = k["m_barging_sentence"]
    assert "7.16 million records per second, 0.96× the fair lock's median (median of the per-repetition ratios: 1.1×" \
        in text
    assert "7.94 million records per second, 1.07× the fair lock's median (median of the per-repetition ratios: 0.98×" \
        in text
    assert "(median of per-repetition ratios)" in k["in_short"]
