"""The benchmark's generated inputs have the shapes of real captures, are the same on every run, and take
the readers' fast paths (the C cores), which read them as the Python readers do."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from contention_book.perftools import load, native_build
from contention_book.perftools import native_collapse as N

sys.path.insert(0, str(Path(__file__).parents[2] / "benchmarks"))
import perftools_inputs as P  # noqa: E402

from test_perftools_native import python  # noqa: E402
from test_perftools_native_wpa import assert_same, core_reads  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def cores():
    assert native_build.library_path("collapse") is not None and native_build.library_path("wpa_csv") is not None


def test_generators_are_deterministic(tmp_path):
    for k in range(2):
        P.write_perf(str(tmp_path / f"{k}.perf"), 300_000, np.random.default_rng(7), stacks=600)
        P.write_wpa_csv(str(tmp_path / f"{k}.csv"), 300_000, np.random.default_rng(7), stacks=300)
        P.write_wpa_tree(str(tmp_path / f"{k}.tree.csv"), np.random.default_rng(7), stacks=50)
    for ext in ("perf", "csv", "tree.csv"):
        assert (tmp_path / f"0.{ext}").read_bytes() == (tmp_path / f"1.{ext}").read_bytes(), ext


def test_perf_capture_has_real_layouts_and_the_core_reads_it(tmp_path):
    path = tmp_path / "d.perf"
    info = P.write_perf(str(path), 2_000_000, np.random.default_rng(2), stacks=3000, damaged=0.01)
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    assert any(ln.startswith(b"\t    ") for ln in lines) and any(ln.startswith(b"\t7") for ln in lines)
    assert any(ln.startswith(b"        ") and b"\t" not in ln for ln in lines)  # perf 5.x spaces
    assert any(ln.startswith(b"          ") and b"\t" in ln for ln in lines)    # simpleperf
    assert any(b" cycles:      7f" in ln for ln in lines)                            # no -g: frame on the header
    assert b"\r\n" in raw and b"\n\n" in raw                                     # CRLF and LF captures
    assert info["damaged"] > 0 and b"THIS_IS_A_WEIRD_LINE" in raw or b"Warning:" in raw
    got = N.collapse(path)
    assert got is not None, "the C core stepped aside"
    assert got == python(path)
    assert got[1].get("skipped_lines", 0) > 0 or any("skipped" in w for w in got[1].get("warnings", []))


@pytest.mark.parametrize("shape", ["export", "de"])
def test_wpa_csv_has_real_shapes_and_the_core_reads_it(tmp_path, monkeypatch, shape):
    path = tmp_path / f"{shape}.csv"
    info = P.write_wpa_csv(str(path), 1_500_000, np.random.default_rng(3), stacks=800, shape=shape)
    text = path.read_bytes().decode("utf-8")
    if shape == "export":
        assert text.startswith('\ufeff"Line #"') and "\r\n" in text and "Weight" not in text.split("\r\n")[0][:-12]
        assert '"1,000.' in text and ',999.' in text  # time stamps before and past 1,000 s
    else:
        assert "\r\n" not in text and ";" in text.split("\n")[0] and "Weight (in view) (ms)" in text
    for frame in ("?!?", "<PDB_not_found>", '"n/a"', "std::vector<int, std::allocator<int> >"):
        assert frame in text, frame
    assert core_reads(path)
    assert_same(path, monkeypatch)
    p = load(path)
    assert p.n_stacks <= info["stacks"] and len(p.samples) == info["rows"]


def test_wpa_tree_reads_back_to_its_weights(tmp_path):
    path = tmp_path / "t.csv"
    info = P.write_wpa_tree(str(path), np.random.default_rng(5), stacks=120)
    p = load(path)
    assert p.meta["format"] == "wpa_tree"
    assert p.total_weight == pytest.approx(info["weight"])
    assert p.n_stacks == 120  # every generated stack is a leaf with its own weight


#: Runs the C core on one file in a fresh process, output to /dev/null, and prints the process's peak
#: resident set (VmHWM, kB): what `perftools collapse FILE` holds, less the command line's imports.
_PEAK = ("import os, sys\nfrom contention_book.perftools import native_collapse as N\n"
         "fd = os.open(os.devnull, os.O_WRONLY)\nassert N.write(sys.argv[1], fd) is not None, 'core stepped aside'\n"
         "print(next(ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM:')))\n")


def _peak_kb(path: Path) -> int:
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout.split()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is read from Linux's /proc")
@pytest.mark.parametrize("phased", [False, True], ids=["one phase", "two phases"])
def test_collapse_memory_is_flat_on_a_capture_repeated_three_times(tmp_path, phased):
    """Issue 35: peak RSS on a capture written three times over stays within 1.2x the single capture's
    (the same distinct stacks, three times the samples).

    A generated capture of real shapes, and one in two phases as real ones often are (one program, then
    another: the second half's frames and stacks are not the first's).  Reading a big file in two halves,
    each with tables of its own, held every stack twice on the threefold file (both halves had seen them
    all, where each half of the single file had seen only its own)."""
    one, three = tmp_path / "one.perf", tmp_path / "three.perf"
    P.write_perf(str(tmp_path / "a.perf"), 6_000_000 if phased else 12_000_000, np.random.default_rng(2), stacks=6000)
    text = (tmp_path / "a.perf").read_bytes()
    if phased:  # the same samples in another program's modules: other frames and stacks
        text += text.replace(b"(", b"(v2")
    one.write_bytes(text)
    three.write_bytes(text * 3)
    assert native_build.library_path("collapse") is not None
    peaks_one = [_peak_kb(one), _peak_kb(one)]
    peaks_three = [_peak_kb(three), _peak_kb(three)]
    ratio = max(peaks_three) / min(peaks_one)
    assert ratio <= 1.2, f"peak RSS {peaks_three} kB on the capture x3 against {peaks_one} kB on x1: {ratio:.2f}x"
