"""Every chapter and engine that runs here, stopped mid-run by SIGINT, SIGTERM or SIGKILL.

After SIGINT or SIGTERM the runner itself must have restored everything and marked its recording
incomplete; after SIGKILL, which nothing can catch, the next run must repair what was left.  In every
case: no process of the run is left (runner, native program, the cluster it started), and the next
run of the same chapter completes with no manual step.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]

NATIVE_PROGRAMS = ("latch_convoy", "c2c_pingpong", "c2c_chase", "ctxswitch_pingpong", "logcache_spin",
                   "lmax_disruptor", "lmax_false_sharing")
# (chapter, engine, parameters of a run that lasts well past the signal, parameters of a short next run)
CASES = [
    ("latch-fairness", "native", ["sessions=1,2", "duration_s=3", "repetitions=2"],
     ["sessions=1", "duration_s=0.05", "repetitions=1", "variants=fair"]),
    ("logcache-spinlock", "native", ["sessions=1", "duration_s=4", "repetitions=3"],
     ["sessions=1", "duration_s=0.05", "repetitions=1", "c2c_batches=20", "ctx_batches=10", "chase_loads=20000"]),
    ("lmax-queue", "native", ["sessions=1,2", "messages_per_session=100000000", "repetitions=3"],
     ["sessions=1", "messages_per_session=10000", "queue_size=64", "repetitions=1", "increments=100000",
      "variants=ring"]),
    ("logcache-spinlock", "postgres", ["sessions=1,2", "duration_s=6", "capture_stacks=false", "warmup_s=0"],
     ["sessions=1", "duration_s=0.5", "capture_stacks=false", "variants=default", "repetitions=1", "warmup_s=0"]),
    ("ghost-cleanup", "postgres", ["updates=400000", "capture_stacks=false"],
     ["updates=500", "capture_stacks=false", "variants=baseline", "cleanup_wait_s=0", "repetitions=1"]),
    ("last-page-insert", "postgres", ["sessions=1,2", "duration_s=6", "capture_stacks=false", "warmup_s=0"],
     ["sessions=1", "duration_s=0.5", "capture_stacks=false", "variants=sequential", "repetitions=1", "warmup_s=0"]),
    ("lmax-queue", "postgres", ["sessions=1,2", "duration_s=6", "warmup_s=0"],
     ["sessions=1", "duration_s=0.5", "variants=ring", "repetitions=1", "warmup_s=0"]),
]
# The PostgreSQL runs start measuring at once (warmup_s=0): what they measure is not what these tests check.


@pytest.fixture
def home():
    where = Path(tempfile.mkdtemp(prefix="contention-book-faults-"))
    os.chmod(where, 0o755)
    yield where
    from contention_book.harness.embedded_pg import EmbeddedPostgres

    if (where / "pg" / "data" / "PG_VERSION").exists():
        EmbeddedPostgres(root=where / "pg").stop()
    shutil.rmtree(where, ignore_errors=True)


def _run(chapter, engine, params, dest, env, **kw):
    cmd = [sys.executable, "-m", "contention_book.run", chapter, "--engine", engine, "--record-to", str(dest)]
    cmd += [a for p in params for a in ("--param", p)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def _finish(proc: subprocess.Popen, timeout: float):
    """proc.communicate, but a run that outlives ``timeout`` is killed before the test fails: left running, it
    would hold its chapter's lock and refuse every later test's run of that chapter."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"the run did not end within {timeout:.0f} s; killed. Its output:\n{(out or '')[-3000:]}")


def _leftovers(home: Path) -> list[str]:
    """This test's runs and native programs still alive (found by the cluster root in their environment)."""
    from conftest import processes_with_env

    out = processes_with_env("CONTENTION_BOOK_PG_ROOT", str(home / "pg"))
    mine = [line for line in out if "contention_book.run" in line or any(f"build/{p}" in line for p in NATIVE_PROGRAMS)]
    pidfile = home / "pg" / "data" / "postmaster.pid"
    if pidfile.exists():
        pid = pidfile.read_text().split()[0]
        if Path(f"/proc/{pid}").exists():
            mine.append(f"postmaster {pid}")
    return mine


MOMENTS = ("setup", "mid-run", "sealing")


def _measuring(proc: subprocess.Popen, engine: str, home: Path, seen: list[str], timeout: float = 300) -> None:
    """Wait until the run measures: a native program of it runs, or (PostgreSQL) the driver's first interval line
    says a measured window is under way.  A state, not a guessed time: the machine may be busy."""
    deadline = time.monotonic() + timeout
    if engine == "native":
        from conftest import processes_with_env

        while not any(f"build/{p}" in line for line in processes_with_env("CONTENTION_BOOK_PG_ROOT", str(home / "pg"))
                      for p in NATIVE_PROGRAMS):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(seen)
            time.sleep(0.02)
        return
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("progress:") or time.monotonic() > deadline:
            return


@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
@pytest.mark.parametrize("chapter, engine, long, short", CASES, ids=[f"{c}-{e}" for c, e, _, _ in CASES])
def test_a_stopped_run_leaves_nothing_behind(home, chapter, engine, long, short, sig, moment):
    """setup: as soon as the run has opened its recording (the cluster may still be starting); mid-run: while
    it measures; sealing: after the workload, while the recording is being sealed."""
    env = {**os.environ, "CONTENTION_BOOK_PG_ROOT": str(home / "pg"), "CONTENTION_BOOK_PROGRESS_EVERY_S": "0.25"}
    if moment == "sealing":
        env["CONTENTION_BOOK_TEST_SEAL_PAUSE_S"] = "30"
        long = short  # reach the end quickly
    dest = home / "stopped"
    proc = _run(chapter, engine, long, dest, env)
    seen = []
    wanted = "[run] sealing the recording" if moment == "sealing" else "[run] recording:"
    deadline = time.monotonic() + 300
    for line in proc.stdout:
        seen.append(line)
        if line.startswith(wanted) or time.monotonic() > deadline:
            break
    if moment == "mid-run":
        _measuring(proc, engine, home, seen)
    assert proc.poll() is None, "".join(seen) + proc.stdout.read()
    proc.send_signal(sig)
    rest, _ = _finish(proc, 180)
    out = "".join(seen) + rest
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 128 + sig, out
        if dest.exists() or moment != "setup":  # at setup the recording may not have been opened yet
            manifest = json.loads((dest / "manifest.json").read_text())
            assert manifest["status"]["state"] == "incomplete", manifest["status"]
            assert f"interrupted by {sig.name}" in manifest["status"]["reason"]
        assert not list(home.glob(".stopped.*.partial")), "a hidden partial recording was left"
        assert not _leftovers(home), (_leftovers(home), out)

    again = home / "again"
    env.pop("CONTENTION_BOOK_TEST_SEAL_PAUSE_S", None)
    nxt = _run(chapter, engine, short, again, env)
    out2, _ = _finish(nxt, 600)
    assert nxt.returncode == 0, out2
    assert json.loads((again / "manifest.json").read_text())["status"] == {"state": "complete"}
    assert not _leftovers(home), _leftovers(home)
    if sig == signal.SIGKILL:  # the killed run's recording is sealed (or, when it held nothing, removed)
        assert not list(home.glob(".stopped.*.partial")), out2
        if dest.exists():
            assert json.loads((dest / "manifest.json").read_text())["status"]["state"] == "incomplete"


@pytest.mark.parametrize("chapter, engine, long, short", [CASES[4], CASES[0]], ids=["ghost-postgres", "latch-native"])
def test_a_second_run_started_alongside_is_refused_at_once(home, chapter, engine, long, short):
    """Refused within 2 s (stretched by the CPUs' oversubscription on a shared machine), before any work
    (tests/test_live_run_lock.py tries every chapter at three moments)."""
    from test_live_run_lock import _refused

    env = {**os.environ, "CONTENTION_BOOK_PG_ROOT": str(home / "pg"), "CONTENTION_BOOK_LOCK_DIR": str(home / "locks")}
    first = _run(chapter, engine, long, home / "first", env)
    try:
        for line in first.stdout:
            if line.startswith("[run] run lock taken"):
                break
        cmd = [sys.executable, "-m", "contention_book.run", chapter, "--engine", engine, "--record-to",
               str(home / "second"), *[a for p in short for a in ("--param", p)]]
        _refused(cmd, env, home / "second", first.pid, f"{chapter} on {engine}")
    finally:
        first.send_signal(signal.SIGINT)
        _finish(first, 180)
    assert not _leftovers(home)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_run_stopped_while_it_creates_the_cluster_leaves_a_usable_one(home, sig):  # noqa: D401
    """A signal during initdb or pg_ctl start lets that step finish: no half-made cluster, no stray postgres."""
    chapter, engine, long, short = CASES[4]
    env = {**os.environ, "CONTENTION_BOOK_PG_ROOT": str(home / "pg")}
    proc = _run(chapter, engine, long, home / "stopped", env)
    for line in proc.stdout:
        if line.startswith("[run] recording:"):
            break
    proc.send_signal(sig)
    out, _ = _finish(proc, 180)
    assert proc.returncode == 128 + sig, out
    assert not _leftovers(home), _leftovers(home)
    nxt = _run(chapter, engine, short, home / "again", env)
    out2, _ = _finish(nxt, 600)
    assert nxt.returncode == 0, out2
    assert not _leftovers(home)


def _psql_as_superuser(home: Path, sql: str) -> None:
    """Run SQL on the run's cluster through its own socket, as the postgres OS user (as root) or directly."""
    from contention_book.harness.embedded_pg import SUPERUSER, EmbeddedPostgres

    pg = EmbeddedPostgres(root=home / "pg")
    port = (home / "pg" / "data" / "postmaster.pid").read_text().splitlines()[3]
    cmd = [str(pg.bindir / "psql"), "-h", str(home / "pg"), "-p", port, "-U", SUPERUSER, "-d", "postgres", "-c", sql]
    env = {**os.environ, "PGPASSWORD": (home / "pg" / "password").read_text().strip()}
    subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=True)


@pytest.mark.parametrize("fault", ["terminate backends", "stop the server"])
def test_a_run_whose_server_goes_away_claims_nothing_false(home, fault):
    chapter, engine, long, short = CASES[3]  # the cache-line chapter on PostgreSQL
    env = {**os.environ, "CONTENTION_BOOK_PG_ROOT": str(home / "pg"), "CONTENTION_BOOK_PROGRESS_EVERY_S": "0.25"}
    dest = home / "faulted"
    proc = _run(chapter, engine, long, dest, env)
    for line in proc.stdout:  # the first interval line: the measured window is under way
        if line.startswith("progress:"):
            break
    if fault == "terminate backends":
        _psql_as_superuser(home, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                 "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
    else:
        from contention_book.harness.embedded_pg import EmbeddedPostgres

        EmbeddedPostgres(root=home / "pg").stop()
    out, _ = _finish(proc, 300)
    manifest = json.loads((dest / "manifest.json").read_text())
    if manifest["status"]["state"] == "complete":  # it carried on: the failed calls must be on the record
        from contention_book.chapters.logcache_spinlock import recordings

        view = recordings.load(dest)
        assert view.table("runs_set_aside") is not None or (view.runs.get("errors", 0) == 0).all(), out
    else:
        assert manifest["status"]["reason"], manifest
        assert proc.returncode == 1, out
    assert "Traceback" not in out
    assert not _leftovers(home), _leftovers(home)
    nxt = _run(chapter, engine, short, home / "again", env)
    out2, _ = _finish(nxt, 600)
    assert nxt.returncode == 0, out2
