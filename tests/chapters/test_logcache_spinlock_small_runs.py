"""Chapter 2 renders any recording a reader can make, and its recordings balance.

Small live runs (native, and PostgreSQL on the embedded cluster) with the smallest values --help-params allows and
subsets of the variants are recorded and the notebook executed on each.  Toy points whose bytes do not balance
are set aside on load and fail a live run; PostgreSQL points whose rows are not all in the table do too.
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest

from contention_book.chapters import logcache_spinlock as chapter
from contention_book.chapters.logcache_spinlock import recordings as lc, run_native, spec
from contention_book.harness.chapter_registry import runners
from contention_book.harness import book
from contention_book.harness.recording import RecordingWriter
from contention_book.harness.runner import RunFailed, RunLog, run_chapter
from contention_book.harness.spec import Unbalanced, check_balanced

RUNNERS = runners("logcache-spinlock")

SMALLEST_NATIVE = {"sessions": "1", "duration_s": "0.01", "repetitions": "1", "c2c_batches": "10",
                   "ctx_batches": "10", "chase_loads": "1000", "buffer_bytes": "1024"}
NATIVE = {"smallest": SMALLEST_NATIVE, "one-variant": {**SMALLEST_NATIVE, "sessions": "2", "variants": "writer_alone"}}

needs_two = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the native chapter needs 2 CPUs")


@needs_two
@pytest.mark.parametrize("name", list(NATIVE))
def test_a_small_native_run_renders(name, tmp_path):
    path = run_chapter(spec.SPEC, RUNNERS, NATIVE[name], engine="native", record_to=str(tmp_path / name),
                       log=RunLog(lambda line: None))
    g = lc.load(path)
    assert (g.runs["bytes_appended"] == g.runs["bytes_flushed"] + g.runs["bytes_left"]).all()
    assert (g.runs["bytes_flushed"] == g.runs["inline_bytes"] + g.runs["writer_bytes"]).all()
    assert (g.runs["buffer_bytes"] == 1024).all()  # the parameter reached the program
    out = book.execute("logcache-spinlock", {"recording": str(path)}, output=tmp_path / "out.ipynb")
    assert out.is_file()
    v = chapter.verdicts(lc.load_shown(str(path)))
    toy = v[v["claim"].str.contains("toy log cache")]
    if len(os.sched_getaffinity(0)) < spec.MIN_CPUS_FOR_ALONE:
        assert toy["verdict"].str.startswith("not testable here").all()


@pytest.mark.live
def test_a_small_postgres_run_renders(pg, tmp_path):
    from conftest import TEST_ENV_VAR

    path = run_chapter(spec.SPEC, RUNNERS, {"sessions": "1", "duration_s": "0.01", "repetitions": "1",
                                            "rows_per_session": "1", "batch": "1", "seed_rows": "0",
                                            "wait_hz": "0.1", "capture_stacks": "false", "variants": "default",
                                            "database": "contention_small"},
                       engine="postgres", target=TEST_ENV_VAR, record_to=str(tmp_path / "pg"),
                       log=RunLog(lambda line: None))
    g = lc.load(path)
    assert (g.runs["rows"] == g.runs["rows_counted"]).all() and (g.runs["rows"] >= 1).all()
    out = book.execute("logcache-spinlock", {"recording": str(path)}, output=tmp_path / "out.ipynb")
    assert out.is_file()
    v = chapter.verdicts(lc.load_shown(str(path)))
    pinned = v[v["claim"].str.contains("walwriter pinned")]
    assert pinned["verdict"].str.startswith("not testable with this recording").all()


# -- accounting identities ----------------------------------------------------------------------------------------

def _toy(change: dict | None = None, split: bool = True) -> pd.DataFrame:
    """Three balanced repetitions of both variants; ``split``: with the bytes each side flushed (recordings made
    before the program printed them lack the two columns)."""
    rows = []
    for rep in range(3):
        for variant in ("writer_shared", "writer_alone"):
            records = 1000 + rep
            rows.append({"variant": variant, "sessions": 2, "workers": 2, "repetition": rep, "records": records,
                         "record_bytes": 128, "throughput": records / 2.0, "spins_per_record": 0.5,
                         "backoffs_per_record": 0.0, "collisions_per_record": 0.1, "writer_flushes_per_s": 100.0,
                         "writer_wait_p50_ns": 100.0, "writer_wait_p99_ns": 1000.0, "elapsed_s": 2.0,
                         "worker_cpus": "0 1" if variant == "writer_shared" else "1 2", "writer_cpu": 0,
                         "bytes_appended": records * 128, "bytes_flushed": records * 128 - 256, "bytes_left": 256,
                         **({"inline_bytes": 1024, "writer_bytes": records * 128 - 256 - 1024} if split else {})})
    frame = pd.DataFrame(rows)
    for (variant, rep, col), value in (change or {}).items():
        frame.loc[(frame["variant"] == variant) & (frame["repetition"] == rep), col] = value
    return frame


def _write(tmp_path, runs, name="toy"):
    with RecordingWriter(tmp_path / name, chapter=spec.CHAPTER, kind="measured",
                         engine={"name": "native", "version": "cc 12"},
                         host={"cpu_model": "test CPU", "sockets": 1, "cores": 4, "logical_cpus": 4, "numa_nodes": 1},
                         parameters={}, measured={"tool": "t", "tool_version": "0", "command": "test"}) as w:
        w.write_csv("runs.csv", runs)
        w.write_csv(spec.FILES["c2c"], pd.DataFrame({"cpu_a": [0], "cpu_b": [1], "median_one_way_ns": [20.0]}))
        w.write_csv(spec.FILES["chase"], pd.DataFrame({"size_bytes": [16384, 2**28], "ns_per_load": [1.0, 120.0]}))
        w.write_csv(spec.FILES["ctxswitch"], pd.DataFrame({"method": ["futex"], "placement": ["same_cpu"],
                                                           "median_ns_per_handoff": [2000.0]}))
    return tmp_path / name


@pytest.mark.parametrize("split", [True, False])
def test_a_balanced_toy_loads_whole(tmp_path, split):
    g = lc.load(_write(tmp_path, _toy(split=split)))
    assert len(g.runs) == 6 and "runs_set_aside" not in g.tables


APPENDED = "bytes appended under the lock = records × record size = bytes flushed + bytes left"
SPLIT = "bytes flushed under the lock = bytes the workers flushed themselves + bytes the log writer flushed"


@pytest.mark.parametrize("col, value, identity", [("bytes_left", 255, APPENDED), ("bytes_appended", 1, APPENDED),
                                                  ("bytes_flushed", 0, APPENDED), ("writer_bytes", 0, SPLIT),
                                                  ("inline_bytes", 0, SPLIT)])
def test_an_unbalanced_toy_point_is_set_aside_and_named(tmp_path, col, value, identity):
    g = lc.load(_write(tmp_path, _toy({("writer_alone", 1, col): value})))
    assert len(g.runs) == 5 and len(g.tables["runs_set_aside"]) == 1
    note = next(n for n in g.notes if n.startswith("set aside"))
    assert "file runs.csv line" in note and "writer_alone" in note and "repetition 1" in note
    assert identity in note


def test_the_live_toy_run_passes_the_buffer_size(tmp_path, monkeypatch):
    seen = []

    def run(program, args=(), **kw):
        if program != "logcache_spin":
            return pd.DataFrame({"x": [1]})
        seen.append(list(args))
        variant = next(a.split("=", 1)[1] for a in args if a.startswith("--variant="))
        point = _toy().query("variant == @variant and repetition == 0").drop(columns=["sessions", "repetition"])
        return point.assign(writer_flushes=200)

    monkeypatch.setattr(run_native.native, "run", run)
    monkeypatch.setattr(run_native.native, "build", lambda *a, **k: Path("/bin/true"))
    monkeypatch.setattr(run_native.os, "sched_getaffinity", lambda pid: {0, 1})
    run_chapter(spec.SPEC, RUNNERS, {**SMALLEST_NATIVE, "sessions": "2", "buffer_bytes": "4096"}, engine="native",
                record_to=str(tmp_path / "ok"), log=RunLog(lambda line: None))
    assert len(seen) == 2 and all("--buffer-bytes=4096" in args for args in seen)


def test_the_live_toy_run_fails_on_a_point_that_does_not_balance(tmp_path, monkeypatch):
    bad = _toy({("writer_shared", 0, "bytes_left"): 0}).iloc[[0]].drop(columns=["sessions", "repetition"])
    monkeypatch.setattr(run_native.native, "run", lambda program, *a, **k: (
        bad.copy() if program == "logcache_spin" else pd.DataFrame({"x": [1]})))
    monkeypatch.setattr(run_native.native, "build", lambda *a, **k: Path("/bin/true"))
    monkeypatch.setattr(run_native.os, "sched_getaffinity", lambda pid: {0, 1})
    with pytest.raises(RunFailed, match=r"writer_shared at 2 sessions repetition 0 does not balance: bytes appended"):
        run_chapter(spec.SPEC, RUNNERS, {**SMALLEST_NATIVE, "sessions": "2"}, engine="native",
                    record_to=str(tmp_path / "bad"), log=RunLog(lambda line: None))


def test_a_postgres_point_whose_rows_are_not_in_the_table_does_not_balance():
    row = {"variant": "default", "sessions": 4, "repetition": 2, "rows": 1000, "rows_counted": 999, "errors": 0}
    with pytest.raises(Unbalanced, match=r"default at 4 sessions repetition 2 does not balance: rows the driver"):
        check_balanced(spec.LAYOUT["runs"], pd.DataFrame([row]), "postgres")
    check_balanced(spec.LAYOUT["runs"], pd.DataFrame([{**row, "rows_counted": 1000}]), "postgres")
    # a point with errors is set aside for its errors, not judged by its rows
    check_balanced(spec.LAYOUT["runs"], pd.DataFrame([{**row, "errors": 3}]), "postgres")


def test_a_word_in_a_numeric_column_is_named(tmp_path):
    from contention_book.harness.recording import RecordingError

    runs = _toy()
    runs["spins_per_record"] = runs["spins_per_record"].astype(object)
    runs.loc[2, "spins_per_record"] = "lots"
    with pytest.raises(RecordingError, match=r"runs.csv line 4 column spins_per_record: 'lots'; expected a finite"):
        lc.load(_write(tmp_path, runs))
