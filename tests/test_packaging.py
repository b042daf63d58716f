"""`pip install .` gives a working `perftools` command, even beside PyPI's unrelated `perftools` package.

PyPI's `perftools` (an Android simpleperf helper) installs a top-level
`perftools` module and no console script; ours lives in
`contention_book.perftools`, so both import and our command works.
"""
import subprocess
import venv
from pathlib import Path

import pytest

from contention_book.harness.recording import repo_root

pytestmark = pytest.mark.slow
OFFLINE = ("Could not find a version", "Failed to establish a new connection", "Temporary failure in name resolution",
           "No matching distribution")


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory):
    where = tmp_path_factory.mktemp("pkg") / "venv"
    venv.EnvBuilder(with_pip=True).create(where)
    py = where / "bin" / "python"
    # --no-compile: byte-compiling pandas, matplotlib and the rest was most of this fixture's 106 s in CI, and
    # nothing here depends on .pyc files
    proc = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--no-compile", str(repo_root()),
                           "perftools==0.2.5"],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0 and any(s in proc.stderr for s in OFFLINE):
        pytest.skip(f"PyPI is not reachable from here: {proc.stderr.strip().splitlines()[-1]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return where


def test_perftools_command_works_beside_pypi_perftools(fresh_venv, tmp_path):
    bin_dir = fresh_venv / "bin"
    out = subprocess.run([str(bin_dir / "perftools"), "--help"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "Sampled CPU stacks" in out.stdout
    both = subprocess.run([str(bin_dir / "python"), "-c",
                           "import perftools, contention_book.perftools as ours; "
                           "print(perftools.__file__); print(ours.__file__)"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert both.returncode == 0, both.stderr
    theirs, ours = both.stdout.split()
    assert Path(theirs).parent.name == "perftools" and "contention_book" in ours


def test_a_folded_capture_summarises_from_the_installed_command(fresh_venv, tmp_path):
    capture = tmp_path / "tiny.folded"
    capture.write_text("main;work;spin 30\nmain;work;copy 10\nmain;idle 60\n")
    out = subprocess.run([str(fresh_venv / "bin" / "perftools"), "summary", str(capture), "--top", "2"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "idle" in out.stdout and "spin" in out.stdout


def test_the_installed_package_reads_a_recording(fresh_venv, tmp_path):
    """The schema travels with the package (package data), so a non-editable install opens recordings."""
    rec = repo_root() / "data" / "ghost-cleanup" / "published-white-2024-sql2019"
    code = ("import sys; from contention_book.harness.recording import Recording; "
            f"print(Recording.open({str(rec)!r}).kind)")
    out = subprocess.run([str(fresh_venv / "bin" / "python"), "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "published"
