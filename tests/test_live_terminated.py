"""Sessions whose backends are terminated mid-point (pg_terminate_backend, SQLSTATE 57P01), on each PostgreSQL
chapter: the recording names the point, the error class and the count, and the point is never shown as a result.

Each run is as short as the chapter allows (one variant, one session count, one repetition).  The workload
sessions are found in pg_stat_activity by their statement once the measured window is under way, and only they
are terminated (the run's own connections are left alone), so the run goes on and must mark the point.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from contention_book.chapters import package

pytestmark = [pytest.mark.live, pytest.mark.slow]

# chapter, short parameters, the workload statement's words, its sessions, the point (variant, sessions)
CASES = [
    ("ghost-cleanup", ["updates=150000", "chunk=500", "capture_stacks=false", "variants=baseline", "repetitions=1",
                       "cleanup_wait_s=0"], "ghost_update_chunk", 1, ("baseline", 1)),
    ("last-page-insert", ["sessions=2", "duration_s=8", "warmup_s=0", "capture_stacks=false", "variants=sequential",
                          "repetitions=1", "pin_hz=0"], "CALL lpi_insert_rows", 2, ("sequential", 2)),
    ("logcache-spinlock", ["sessions=2", "duration_s=8", "warmup_s=0", "capture_stacks=false", "variants=default",
                           "repetitions=1"], "logcache_insert_rows", 2, ("default", 2)),
    ("lmax-queue", ["sessions=1", "duration_s=8", "warmup_s=0", "variants=ring", "repetitions=1"], "CALL lmax_p", 2,
     ("ring", 1)),
]


@pytest.fixture(scope="module")
def home():
    where = Path(tempfile.mkdtemp(prefix="contention-book-terminated-"))
    os.chmod(where, 0o755)  # the postgres OS user must reach the cluster under it
    yield where
    from contention_book.harness.embedded_pg import EmbeddedPostgres

    if (where / "pg" / "data" / "PG_VERSION").exists():
        EmbeddedPostgres(root=where / "pg").stop()
    shutil.rmtree(where, ignore_errors=True)


def _psql(root: Path, sql: str) -> list[str]:
    """Rows of ``sql`` on the run's cluster, through its socket, as its superuser ([] while it is not up)."""
    from contention_book.harness.embedded_pg import SUPERUSER, EmbeddedPostgres

    pidfile = root / "data" / "postmaster.pid"
    try:
        port = pidfile.read_text().splitlines()[3]
        password = (root / "password").read_text().strip()
    except (OSError, IndexError):
        return []
    cmd = [str(EmbeddedPostgres(root=root).bindir / "psql"), "-h", str(root), "-p", port, "-U", SUPERUSER,
           "-d", "postgres", "-At", "-c", sql]
    out = subprocess.run(cmd, env={**os.environ, "PGPASSWORD": password}, capture_output=True, text=True, timeout=30)
    return out.stdout.split() if out.returncode == 0 else []


def _workload_backends(root: Path, words: str, busy: bool = True) -> list[str]:
    """The client backends whose (last) statement holds ``words``; ``busy``: only those running it now."""
    return _psql(root, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' "
                       + ("AND state = 'active' " if busy else "")
                       + f"AND pid <> pg_backend_pid() AND query LIKE '%{words}%'")


@pytest.mark.parametrize("chapter, params, words, backends, point", CASES, ids=[c[0] for c in CASES])
def test_terminated_backends_mark_their_point_failed(home, chapter, params, words, backends, point):
    root, dest = home / "pg", home / f"{chapter}-terminated"
    env = {**os.environ, "CONTENTION_BOOK_PG_ROOT": str(root), "CONTENTION_BOOK_QUIET_WAIT_S": "0",
           "CONTENTION_BOOK_PROGRESS_EVERY_S": "0.25"}  # its first interval line: the window is under way
    cmd = [sys.executable, "-m", "contention_book.run", chapter, "--engine", "postgres", "--record-to", str(dest),
           *[a for p in params for a in ("--param", p)]]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    for line in proc.stdout:  # the driver's first interval line: past the warm-up calls, in the measured window
        seen.append(line)
        if line.startswith("progress:"):
            break
    assert proc.poll() is None, "".join(seen)
    pids = _workload_backends(root, words, busy=False)
    assert len(pids) >= backends, (pids, "".join(seen))
    terminated = _psql(root, f"SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             f"WHERE pid IN ({', '.join(pids)})) t")
    assert terminated == [str(len(pids))]
    out, _ = proc.communicate(timeout=300)
    out = "".join(seen) + out
    assert "Traceback" not in out, out

    manifest = json.loads((dest / "manifest.json").read_text())
    said = " ".join(manifest.get("notes", [])) + " " + str(manifest["status"].get("reason", ""))
    variant, sessions = point
    # which point, and why: 57P01 when the server's FATAL reached the client (psqlODBC may report it as 08S01; the
    # driver classes it by the server's words), else 08S01 when the client saw only the socket close
    assert re.search(r"(57P01 \(connection terminated by the administrator\)|08S01 \(connection\)) x\d+", said) \
        and variant in said, (said, out)
    assert "lost their session's connection" in said or "connection lost" in said, said
    if manifest["status"]["state"] == "complete":  # the run went on: the point must be set aside on load
        assert proc.returncode == 0, out
        from contention_book.harness.recording import RecordingError

        try:
            view = package(chapter, "recordings").load(dest)
        except RecordingError as exc:  # the point was the run's only one: set aside, nothing is left to show
            assert "has no rows" in str(exc), exc
            return
        shown = view.runs[(view.runs["variant"] == variant) & (view.runs["sessions"] == sessions)]
        assert shown.empty, shown
        aside = view.tables["runs_set_aside"]
        assert ((aside["variant"] == variant) & (aside["sessions"] == sessions)).any()
        assert any("lost their connection" in n for n in view.notes), view.notes
    else:  # the chapter's runner refused to record a point with failed calls: the run failed, saying why
        assert proc.returncode == 1, out
        runs = dest / "runs.csv"
        assert not runs.exists() or variant not in runs.read_text(), runs.read_text()
