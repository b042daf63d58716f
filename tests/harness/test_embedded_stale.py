"""A run killed while initdb made the embedded cluster leaves initdb's single-user bootstrap server running, which
pg_ctl cannot stop; the next run ends it and makes the cluster again (test_live_faults met it: SIGKILL at setup)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from contention_book.harness import embedded_pg


def test_a_half_made_cluster_is_ended_not_refused(monkeypatch, tmp_path):
    pg = embedded_pg.EmbeddedPostgres.__new__(embedded_pg.EmbeddedPostgres)
    pg.root, pg.data = tmp_path, tmp_path / "data"
    ended = []
    monkeypatch.setattr(embedded_pg, "_end_process", lambda pid, grace_s=5.0: ended.append(pid))
    monkeypatch.setattr(embedded_pg, "_processes_naming", lambda program, arg: [4242] if program == "initdb" else [])
    said = "pg_ctl: cannot stop server; single-user server is running (PID: 31337)\n"
    monkeypatch.setattr(pg, "_run", lambda *a, check=True: subprocess.CompletedProcess(a, 1, "", said))
    assert pg.stop_stale() is False and ended == [4242, 31337]   # initdb first, then its bootstrap server
    monkeypatch.setattr(pg, "_run", lambda *a, check=True: subprocess.CompletedProcess(a, 0, "server stopped", ""))
    assert pg.stop_stale() is True


def test_any_other_stop_failure_is_an_error_that_says_why(monkeypatch, tmp_path):
    pg = embedded_pg.EmbeddedPostgres.__new__(embedded_pg.EmbeddedPostgres)
    pg.root, pg.data = tmp_path, tmp_path / "data"
    monkeypatch.setattr(pg, "_run", lambda *a, check=True: subprocess.CompletedProcess(a, 1, "", "no such file"))
    with pytest.raises(embedded_pg.EmbeddedPostgresError, match="no such file"):
        pg.stop_stale()


def _running(pid: int) -> bool:
    """Alive and not a zombie (a stopped postmaster may wait for a parent that never reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_killed_sessions_temporary_folder_is_swept_and_a_live_ones_kept(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    for name, pid in (("sweeptest-dead", _dead_pid()), ("sweeptest-alive", None)):
        (tmp_path / name / "pg").mkdir(parents=True)
        (tmp_path / name / "pg" / "started_by_run").write_text(f"{pid or __import__('os').getpid()}\n")
    (tmp_path / "sweeptest-unclaimed" / "pg").mkdir(parents=True)  # no owner recorded: not ours to judge
    said = []
    swept = embedded_pg.sweep_killed("sweeptest-", log=said.append)
    assert [p.name for p in swept] == ["sweeptest-dead"] and "was killed" in said[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweeptest-alive", "sweeptest-unclaimed"]


def test_a_cluster_whose_process_died_without_stopping_it_is_stopped_and_removed(tmp_path):
    """A real cluster, started by a child that then exits with no teardown (as SIGKILL would leave it)."""
    import os
    import sys
    import tempfile
    import textwrap

    folder = Path(tempfile.mkdtemp(prefix="contention-book-sweeptest-"))
    os.chmod(folder, 0o755)
    code = textwrap.dedent(f"""
        import os
        from pathlib import Path
        from contention_book.harness import embedded_pg
        pg = embedded_pg.EmbeddedPostgres(root=Path({str(folder / 'pg')!r}))
        embedded_pg.claim_temporary(pg)
        pg.start()
        print(pg.data, flush=True)
        os._exit(0)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    try:
        assert out.returncode == 0, out.stderr[-800:]
        data = Path(out.stdout.split()[-1])
        assert (data / "postmaster.pid").exists()  # left running
        pid = int((data / "postmaster.pid").read_text().split()[0])
        swept = embedded_pg.sweep_killed("contention-book-sweeptest-", log=lambda *_: None)
        assert folder in swept and not folder.exists()
        assert not _running(pid)
    finally:
        if folder.exists():
            embedded_pg.EmbeddedPostgres(root=folder / "pg").destroy()
            shutil.rmtree(folder, ignore_errors=True)
