"""A run killed while initdb made the embedded cluster leaves initdb's single-user bootstrap server running, which
pg_ctl cannot stop; the next run ends it and makes the cluster again (test_live_faults met it: SIGKILL at setup)."""
from __future__ import annotations

import subprocess

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
    import pytest

    pg = embedded_pg.EmbeddedPostgres.__new__(embedded_pg.EmbeddedPostgres)
    pg.root, pg.data = tmp_path, tmp_path / "data"
    monkeypatch.setattr(pg, "_run", lambda *a, check=True: subprocess.CompletedProcess(a, 1, "", "no such file"))
    with pytest.raises(embedded_pg.EmbeddedPostgresError, match="no such file"):
        pg.stop_stale()
