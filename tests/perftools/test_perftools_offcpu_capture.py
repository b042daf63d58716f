"""The off-CPU capture of live runs (perftools.capture.OffCpuRecorder) and the call-graph choice for CPU stacks."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import time

import pytest

from contention_book.perftools import offcpu_view
from contention_book.perftools.capture import OFFCPU_COLUMNS, OffCpuRecorder, call_graph_args, offcpu_row


def test_call_graph_modes_and_bad_ones_named(monkeypatch):
    monkeypatch.delenv("PERFTOOLS_CALL_GRAPH", raising=False)
    assert call_graph_args("fp") == ["-g"]
    assert call_graph_args("dwarf,16384") == ["--call-graph", "dwarf,16384"]
    assert call_graph_args("lbr") == ["--call-graph", "lbr"]
    monkeypatch.setenv("PERFTOOLS_CALL_GRAPH", "dwarf")
    assert call_graph_args(None) == ["--call-graph", "dwarf"]
    for bad in ("dwarf,100", "dwarf,x", "frame", "fp,8"):
        with pytest.raises(ValueError, match="expected fp, lbr, dwarf or dwarf,BYTES"):
            call_graph_args(bad)


def test_a_recorder_without_threads_or_perf_says_why_and_writes_nothing(tmp_path):
    st = OffCpuRecorder(tmp_path, name="x").start()
    assert not st.ok and st.why == "no process ids or names to record"
    rec = OffCpuRecorder(tmp_path, name="x", pids=[1], perf="/nonexistent/perf")
    assert "perf not found" in rec.start().why
    st = rec.stop()
    assert not st.ok and not list(tmp_path.iterdir())


def _can_trace() -> bool:
    return shutil.which("perf") is not None and os.geteuid() == 0


@pytest.mark.skipif(not _can_trace(), reason="system-wide scheduler tracing needs perf and root here")
def test_real_capture_of_a_sleeping_process(tmp_path):
    # a shell that sleeps 20 times for 50 ms: about a second off the CPU in nanosleep, state S
    rec = OffCpuRecorder(tmp_path, name="sleepy", comms=["sleep"])
    assert rec.start().why == "recording"  # perf confirmed its events are on before the workload starts
    proc = subprocess.Popen(["sh", "-c", "for i in $(seq 20); do sleep 0.05; done"])
    try:
        proc.wait(timeout=60)
        time.sleep(0.1)
        st = rec.stop()
    finally:
        proc.kill()
    assert st.ok, st.why
    assert st.events > 0 and st.intervals >= 10 and st.perf_cpu_s is not None and st.data_bytes > 0
    text = gzip.decompress((tmp_path / "sleepy.offcpu-folded.gz").read_bytes()).decode()
    assert "nanosleep" in text and "[state S sleeping]" in text
    assert 0.4e6 < st.blocked_us < 10e6
    row = offcpu_row(st, variant="sleepy", sessions=1, repetition=0, threads="sleep")
    assert tuple(row) == OFFCPU_COLUMNS and row["blocked_us"] == st.blocked_us
    table = offcpu_view.blocked_by(tmp_path / "sleepy.offcpu-folded.gz")
    assert table["state"].iloc[0] == "S" and table["share"].iloc[0] > 0.5


def test_flame_or_note(tmp_path):
    p = tmp_path / "a.offcpu-folded.gz"
    p.write_bytes(gzip.compress(b"bench (1);main;[kernel.kallsyms]!futex_wait;[state S sleeping] 1500\n"))
    fig = offcpu_view.flame(p, "bench")
    assert fig.title.startswith("bench (2 ms blocked in all)")
    assert "Not seen: CPU time" in fig.svg and "futex_wait" in fig.svg and "<rect" in fig.svg
    note = offcpu_view.flame(tmp_path / "missing.offcpu-folded.gz", "bench")
    assert "no off-CPU stacks" in note.title and "futex_wait" not in note.svg


@pytest.mark.skipif(not _can_trace(), reason="system-wide scheduler tracing needs perf and root here")
def test_a_cancelled_capture_stops_perf_and_keeps_nothing(tmp_path):
    rec = OffCpuRecorder(tmp_path, name="gone", comms=["sleep"])
    rec.start()
    proc = rec._proc
    st = rec.cancel("the point did not finish")
    assert not st.ok and st.why == "the point did not finish"
    assert proc is not None and proc.poll() is not None  # perf is gone
    assert not list(tmp_path.iterdir())
