"""contention_book.perftools.capture: failures never raise; a real capture where perf works."""

import subprocess
import sys
import time

import pytest

from contention_book.perftools import load, top_functions
from contention_book.perftools import capture
from contention_book.perftools.capture import StackRecorder, perf_available, record_stacks

BUSY = "import time\nt = time.time()\nwhile time.time() - t < 20: sum(range(1000))\n"


def test_perf_missing(tmp_path):
    with record_stacks([1], tmp_path, name="x", perf="/nonexistent/perf") as st:
        pass
    assert st.ok is False
    assert "perf not found" in st.why
    assert not (tmp_path / "x.folded.gz").exists()
    assert st.as_dict()["why"] == st.why
    assert perf_available("/nonexistent/perf").ok is False


def test_no_pids(tmp_path):
    with record_stacks([], tmp_path) as st:
        pass
    assert not st.ok and "no process ids" in st.why


def test_paranoid_refuses_non_root(tmp_path, monkeypatch):
    if not perf_available(probe=False).perf_version:
        pytest.skip("perf is not installed")
    level = tmp_path / "paranoid"
    level.write_text("3\n")
    monkeypatch.setattr(capture, "PARANOID", str(level))
    monkeypatch.setattr(capture.os, "geteuid", lambda: 1000)
    st = perf_available(probe=False)
    assert not st.ok and "perf_event_paranoid" in st.why and st.paranoid == 3


def test_fake_perf_that_fails(tmp_path):
    fake = tmp_path / "perf"
    fake.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'perf version 0.0'; exit 0; fi\n"
                    "echo 'Error: No permission to enable cpu-clock event.' >&2\nexit 255\n")
    fake.chmod(0o755)
    with record_stacks([1], tmp_path, perf=str(fake)) as st:
        time.sleep(0.1)
    assert not st.ok
    assert "exited with code 255" in st.why and "No permission" in st.why
    st2 = perf_available(str(fake))
    assert not st2.ok and "No permission" in st2.why


def test_body_exception_propagates_and_perf_is_stopped(tmp_path):
    rec = StackRecorder([1], tmp_path, perf="/nonexistent/perf")
    with pytest.raises(RuntimeError):
        with record_stacks([1], tmp_path, perf="/nonexistent/perf"):
            raise RuntimeError("workload failed")
    assert rec.stop().ok is False  # stop without start is harmless


def test_bad_pid(tmp_path):
    if not perf_available().ok:
        pytest.skip("perf cannot record here")
    with record_stacks([2**22 + 12345], tmp_path, name="gone") as st:
        time.sleep(0.2)
    assert st.ok is False and "perf record exited" in st.why


def test_real_capture_of_a_busy_loop(tmp_path):
    avail = perf_available()
    if not avail.ok:
        pytest.skip(f"perf cannot record here: {avail.why}")
    proc = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        time.sleep(0.2)
        with record_stacks([proc.pid], tmp_path, name="busy", frequency=499) as st:
            time.sleep(1.0)
    finally:
        proc.kill()
        proc.wait()
    assert st.ok, st.why
    assert st.samples > 50
    assert st.path == str(tmp_path / "busy.folded.gz")
    assert st.command[1:3] == ["record", "-g"] and st.started < st.ended
    p = load(st.path, process_root=True)
    assert p.total_weight == st.samples
    assert [q.endswith(f"({proc.pid})") for q in p.processes()] == [True]
    assert top_functions(p)["exclusive"].sum() == st.samples
