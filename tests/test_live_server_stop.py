"""A run whose server goes away for good ends (issue 36): ``pg_ctl stop -m immediate`` in the measured window of
each PostgreSQL chapter.

The sessions lose their connections and try to get them back for the reconnect budget
(CONTENTION_BOOK_RECONNECT_BUDGET_S, 3 s here); then the run must end within 30 s more, with its recording
marked incomplete and naming the point, and nothing of it left running.  The next run on the same cluster
starts it again, repairs what the stopped run left (its guard journal) and completes.  Before the budget,
ghost-cleanup (a run counted in calls, with no window to end it) kept trying for good.

The stop comes when the run's first interval line says the measured window is under way (a line every 0.5 s
here), not after a guessed time.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]

BUDGET_S = 3.0
ENDS_WITHIN_S = BUDGET_S + 30.0
# chapter, parameters of a run that would last well past the stop, parameters of a short next run
CASES = [
    ("ghost-cleanup", ["updates=400000", "chunk=500", "capture_stacks=false", "variants=baseline", "repetitions=1",
                       "cleanup_wait_s=0"],
     ["updates=500", "capture_stacks=false", "variants=baseline", "cleanup_wait_s=0", "repetitions=1"]),
    ("last-page-insert", ["sessions=2", "duration_s=60", "warmup_s=0", "capture_stacks=false",
                          "variants=sequential", "repetitions=1"],
     ["sessions=1", "duration_s=0.5", "capture_stacks=false", "variants=sequential", "repetitions=1"]),
    ("lmax-queue", ["sessions=1", "duration_s=60", "warmup_s=0", "variants=ring", "repetitions=1"],
     ["sessions=1", "duration_s=0.5", "variants=ring", "repetitions=1"]),
    ("logcache-spinlock", ["sessions=2", "duration_s=60", "warmup_s=0", "capture_stacks=false", "variants=default",
                           "repetitions=1"],
     ["sessions=1", "duration_s=0.5", "capture_stacks=false", "variants=default", "repetitions=1"]),
]


@pytest.fixture
def home():
    where = Path(tempfile.mkdtemp(prefix="contention-book-stop-"))
    os.chmod(where, 0o755)  # the postgres OS user must reach the cluster under it
    yield where
    from contention_book.harness.embedded_pg import EmbeddedPostgres

    if (where / "pg" / "data" / "PG_VERSION").exists():
        EmbeddedPostgres(root=where / "pg").stop()
    shutil.rmtree(where, ignore_errors=True)


def _cmd(chapter: str, params: list[str], dest: Path) -> list[str]:
    return [sys.executable, "-m", "contention_book.run", chapter, "--engine", "postgres", "--record-to", str(dest),
            *[a for p in params for a in ("--param", p)]]


def _leftovers(home: Path) -> list[str]:
    from conftest import processes_with_env

    out = [line for line in processes_with_env("CONTENTION_BOOK_PG_ROOT", str(home / "pg"))
           if "contention_book.run" in line]
    pidfile = home / "pg" / "data" / "postmaster.pid"
    if pidfile.exists() and Path(f"/proc/{pidfile.read_text().split()[0]}").exists():
        out.append("postmaster")
    return out


@pytest.mark.parametrize("chapter, long, short", CASES, ids=[c for c, _, _ in CASES])
def test_an_immediate_server_stop_ends_the_run_within_its_reconnect_budget(home, chapter, long, short):
    from contention_book.harness.embedded_pg import EmbeddedPostgres

    env = {**os.environ, "CONTENTION_BOOK_PG_ROOT": str(home / "pg"), "CONTENTION_BOOK_LOCK_DIR": str(home / "locks"),
           "CONTENTION_BOOK_RECONNECT_BUDGET_S": str(BUDGET_S), "CONTENTION_BOOK_PROGRESS_EVERY_S": "0.5",
           "CONTENTION_BOOK_QUIET_WAIT_S": "0"}
    dest = home / "stopped"
    proc = subprocess.Popen(_cmd(chapter, long, dest), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    seen = []
    for line in proc.stdout:  # the first interval line: the measured window is under way
        seen.append(line)
        if line.startswith("progress:"):
            break
    assert proc.poll() is None, "".join(seen)
    stopped = EmbeddedPostgres(root=home / "pg")._run("pg_ctl", "stop", "-D", str(home / "pg" / "data"),
                                                      "-m", "immediate", "-w")
    assert stopped.returncode == 0, stopped.stderr
    t0 = time.monotonic()
    try:
        rest, _ = proc.communicate(timeout=ENDS_WITHIN_S + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = time.monotonic() - t0
    out = "".join(seen) + rest
    print(f"{chapter}: ended {took:.1f} s after the immediate stop (budget {BUDGET_S:g} s)")
    assert took < ENDS_WITHIN_S, f"ended {took:.1f} s after the stop:\n{out}"
    assert proc.returncode == 1, out
    assert "Traceback" not in out, out
    manifest = json.loads((dest / "manifest.json").read_text())
    assert manifest["status"]["state"] == "incomplete", manifest["status"]
    said = " ".join(manifest.get("notes", [])) + " " + manifest["status"]["reason"]
    variant = next(p.split("=")[1] for p in long if p.startswith("variants="))
    assert f"point {variant}" in said and "lost their session's connection" in said, said  # names the point
    assert not list(home.glob(".stopped.*.partial")), "a hidden partial recording was left"
    assert not _leftovers(home), (_leftovers(home), out)

    again = home / "again"  # the server comes back: the next run starts it, repairs, and completes
    nxt = subprocess.run(_cmd(chapter, short, again), env=env, capture_output=True, text=True, timeout=600)
    assert nxt.returncode == 0, nxt.stdout + nxt.stderr
    assert json.loads((again / "manifest.json").read_text())["status"] == {"state": "complete"}
    assert not _leftovers(home), _leftovers(home)
