"""Ctrl-C and SIGTERM to ``make chapter ... SOURCE=live`` mid-run leave nothing changed.

The run is logcache-spinlock on PostgreSQL with the walwriter pinned alone:
the one live run here that changes something outside its own database (the
walwriter's CPU affinity, and the harness's own).  The signal goes to make's
process group, as a terminal's Ctrl-C does.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from contention_book.harness.recording import repo_root

pytestmark = [pytest.mark.live, pytest.mark.slow,
              pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pinning needs two CPUs")]


def _postmaster(root: Path) -> int | None:
    pidfile = root / "data" / "postmaster.pid"
    if not pidfile.exists():
        return None
    pid = int(pidfile.read_text().splitlines()[0])
    return pid if Path(f"/proc/{pid}").exists() else None


def _walwriter(root: Path) -> int | None:
    pm = _postmaster(root)
    if pm is None:
        return None
    for child in subprocess.run(["pgrep", "-P", str(pm)], capture_output=True, text=True).stdout.split():
        try:
            if "walwriter" in Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace"):
                return int(child)
        except OSError:
            continue
    return None


def _run_processes(cluster_root: Path) -> list[str]:
    """This test's live runners (found by their cluster root), not other suites' on the same machine."""
    from conftest import processes_with_env

    return [line for line in processes_with_env("CONTENTION_BOOK_PG_ROOT", str(cluster_root))
            if "contention_book.run" in line]


def _make(env: dict, *params: str, record_to: Path) -> subprocess.Popen:
    """``make chapter ... SOURCE=live``, its page written beside the recording (PAGE=): a test's run never
    replaces the checkout's built chapter, which the browser tests may be reading.  Each point measures from its first
    call (warmup_s=0): what it measures is not what these tests check."""
    return subprocess.Popen(
        ["make", "--no-print-directory", "chapter", "CH=logcache-spinlock", "SOURCE=live", "ENGINE=postgres",
         f"RECORD_TO={record_to}", f"PARAMS={' '.join(params + ('warmup_s=0',))}",
         f"PAGE={record_to.parent / (record_to.name + '.ipynb')}"],
        cwd=repo_root(), env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_for_pin(proc: subprocess.Popen, root: Path, all_cpus: set[int], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the run ended before the walwriter was pinned:\n{proc.stdout.read()}"
        ww = _walwriter(root)
        try:
            if ww and set(os.sched_getaffinity(ww)) != all_cpus:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("the walwriter was never pinned")


@pytest.fixture
def cluster_root():
    """A cluster home the postgres OS user can reach (pytest's tmp_path is private to root)."""
    import shutil
    import tempfile

    from contention_book.harness.embedded_pg import EmbeddedPostgres

    home = Path(tempfile.mkdtemp(prefix="contention-book-signals-"))
    os.chmod(home, 0o755)
    root = home / "pg"
    yield root
    if (root / "data" / "PG_VERSION").exists():
        EmbeddedPostgres(root=root).stop()
    shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("sig, prestarted", [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_signal_mid_run_restores_everything(tmp_path, cluster_root, sig, prestarted):
    from contention_book.harness.embedded_pg import EmbeddedPostgres

    env = {**os.environ, "CONTENTION_BOOK_PG_ROOT": str(cluster_root), "CONTENTION_BOOK_PROGRESS_EVERY_S": "0.25"}
    all_cpus = set(os.sched_getaffinity(0))
    if prestarted:  # the cluster is not the run's: it must stay up, with its walwriter unpinned again
        EmbeddedPostgres(root=cluster_root).start()
        before = set(os.sched_getaffinity(_walwriter(cluster_root)))
    rec = tmp_path / "interrupted"
    proc = _make(env, "variants=walwriter_alone", "sessions=1,2", "duration_s=30", "capture_stacks=false",
                 record_to=rec)
    _wait_for_pin(proc, cluster_root, all_cpus)
    seen = []
    for line in proc.stdout:  # the first interval line of a pinned point: mid-run, in its measured window
        seen.append(line)
        if line.startswith("progress: walwriter_alone"):
            break
    assert proc.poll() is None, "".join(seen)
    os.killpg(proc.pid, sig)
    out, _ = proc.communicate(timeout=180)
    out = "".join(seen) + out
    assert proc.returncode != 0, out
    assert "restored" in out, out

    manifest = json.loads((rec / "manifest.json").read_text())
    assert manifest["status"]["state"] == "incomplete", manifest["status"]
    assert f"interrupted by {signal.Signals(sig).name}" in manifest["status"]["reason"]
    assert not _run_processes(cluster_root), _run_processes(cluster_root)
    if prestarted:
        assert _postmaster(cluster_root) is not None
        assert set(os.sched_getaffinity(_walwriter(cluster_root))) == before
    else:
        assert _postmaster(cluster_root) is None, "the run's own cluster was left running"

    again = tmp_path / "again"  # the next run needs no manual step
    proc = _make(env, "sessions=1", "duration_s=0.5", "capture_stacks=false", "repetitions=1", record_to=again)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert json.loads((again / "manifest.json").read_text())["status"] == {"state": "complete"}
    assert (tmp_path / "again.ipynb").exists(), "the page was not rendered where PAGE= said"


def test_after_sigkill_of_the_runner_the_next_run_repairs_everything(tmp_path, cluster_root):
    """SIGKILL cannot be caught: the cluster stays up with its walwriter pinned and a hidden partial recording
    is left.  The next run stops that cluster (its starter is gone), seals the partial recording as
    incomplete, and completes."""
    env = {**os.environ, "CONTENTION_BOOK_PG_ROOT": str(cluster_root)}
    all_cpus = set(os.sched_getaffinity(0))
    rec = tmp_path / "killed"
    # the default variant's point is written before the walwriter is pinned, so the killed run leaves data
    proc = _make(env, "variants=default,walwriter_alone", "sessions=1", "duration_s=5", "capture_stacks=false",
                 record_to=rec)
    _wait_for_pin(proc, cluster_root, all_cpus)
    runners = [int(line.split()[0]) for line in _run_processes(cluster_root)]
    assert runners
    for pid in runners:
        os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=120)
    assert _postmaster(cluster_root) is not None  # left behind by the killed run
    assert list(tmp_path.glob(".killed.*.partial"))

    again = tmp_path / "again"
    proc = _make(env, "sessions=1", "duration_s=0.5", "capture_stacks=false", "repetitions=1", record_to=again)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    assert "left running (that run was killed)" in out
    assert json.loads((again / "manifest.json").read_text())["status"] == {"state": "complete"}
    sealed = json.loads((rec / "manifest.json").read_text())
    assert sealed["status"]["state"] == "incomplete" and "killed" in sealed["status"]["reason"]
    assert _postmaster(cluster_root) is None and not _run_processes(cluster_root)
