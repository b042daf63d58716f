"""The guard without a server: a refused change needs no restore; a Ctrl-C while retrying skips nothing."""
import pytest

from contention_book.harness import guard as G


class Conn:
    def __init__(self, log, fail):
        self.log, self.fail = log, fail

    def cursor(self):
        return self

    def execute(self, sql):
        if any(f in sql for f in self.fail):
            raise PermissionError(f"refused: {sql}")
        self.log.append(sql)
        return self

    def nextset(self):
        return False

    def close(self):
        pass


def change(name, apply=None, restore=None):
    return G.Change(f"change {name}", "database", read=lambda conn: "prior",
                    apply=lambda prior: apply or [f"APPLY {name}"], restore=lambda prior: restore or [f"RESTORE {name}"])


def test_a_change_refused_outright_is_not_restored_and_not_reported_as_a_failed_restore():
    log, fail = [], ["APPLY b"]
    g = G.StateGuard(lambda db: Conn(log, fail), [change("a"), change("b")], log=lambda *_: None)
    with pytest.raises(PermissionError, match="refused: APPLY b"):
        with g:
            pass
    assert log == ["APPLY a", "RESTORE a"]  # b changed nothing, so nothing of b is restored


def test_a_change_that_failed_halfway_is_restored():
    log, fail = [], ["APPLY b2"]
    g = G.StateGuard(lambda db: Conn(log, fail), [change("b", apply=["APPLY b1", "APPLY b2"])],
                     log=lambda *_: None)
    with pytest.raises(PermissionError):
        with g:
            pass
    assert log == ["APPLY b1", "RESTORE b"]


def test_ctrl_c_during_a_retry_wait_does_not_skip_the_other_restores(monkeypatch):
    log, fail = [], ["RESTORE b"]
    sleeps = []

    def sleep(s):
        sleeps.append(s)
        raise KeyboardInterrupt

    monkeypatch.setattr(G.time, "sleep", sleep)
    g = G.StateGuard(lambda db: Conn(log, fail), [change("a"), change("b")], log=lambda *_: None, retries=2)
    with pytest.raises(G.RestoreFailed, match="change b"):
        with g:
            pass
    assert "RESTORE a" in log and sleeps  # b's retries were interrupted, a was still restored


# -- the journal a killed run leaves ----------------------------------------------------------------------
def dead_pid():
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_changes_are_journaled_before_they_apply_and_dropped_once_restored(tmp_path):
    path, log, seen = tmp_path / "j.json", [], []

    class Watching(Conn):
        def execute(self, sql):
            if sql.startswith("APPLY"):
                seen.append(G._read_journal(path))  # what a SIGKILL right now would leave for the next run
            return super().execute(sql)

    with G.journal(path, lambda db: Watching(log, []), log=lambda *_: None):
        with G.StateGuard(lambda db: Watching(log, []), [change("a"), change("b")], log=lambda *_: None):
            assert [e["restore"] for e in G._read_journal(path)] == [["RESTORE a"], ["RESTORE b"]]
    assert [[e["restore"] for e in s] for s in seen] == [[["RESTORE a"]], [["RESTORE a"], ["RESTORE b"]]]
    assert not path.exists()  # all restored: nothing for a next run to do


def test_the_next_run_restores_what_a_dead_run_left_and_nothing_of_a_live_one(tmp_path):
    import os

    path, log, said = tmp_path / "j.json", [], []
    G._write_journal(path, [
        {"pid": dead_pid(), "started": "t0", "description": "trace flag 3933", "database": None,
         "restore": ["DBCC TRACEOFF(3933, -1)"]},
        {"pid": os.getpid(), "started": "t1", "description": "a live run's change", "database": None,
         "restore": ["RESTORE live"]}])
    with G.journal(path, lambda db: Conn(log, []), log=said.append):
        pass
    assert log == ["DBCC TRACEOFF(3933, -1)"]  # the live run's change is its own to restore
    assert "a run that was killed (pid " in said[0] and "restoring them first" in said[0]
    assert [e["description"] for e in G._read_journal(path)] == ["a live run's change"]


def test_a_repair_that_fails_keeps_the_entry_and_names_the_statements(tmp_path, monkeypatch):
    monkeypatch.setattr(G.time, "sleep", lambda s: None)
    path = tmp_path / "j.json"
    G._write_journal(path, [{"pid": dead_pid(), "started": "t0", "description": "trace flag 7006", "database": None,
                             "restore": ["DBCC TRACEOFF(7006, -1)"]}])
    with pytest.raises(G.RestoreFailed, match=r"DBCC TRACEOFF\(7006, -1\)"):
        with G.journal(path, lambda db: Conn([], ["TRACEOFF"]), log=lambda *_: None):
            pass
    assert len(G._read_journal(path)) == 1  # the next run tries again


def test_an_unreadable_journal_is_named(tmp_path):
    path = tmp_path / "j.json"
    path.write_text("{not json")
    with pytest.raises(G.RestoreFailed, match=f"journal {path}: unreadable"):
        with G.journal(path, lambda db: Conn([], []), log=lambda *_: None):
            pass


class SignalledAfterRunning(Conn):
    """The server runs the statement; the stop signal lands before the client has marked it applied."""

    def execute(self, sql):
        super().execute(sql)
        if sql.startswith("APPLY"):
            raise KeyboardInterrupt("SIGINT just after the statement ran")
        return self


def test_a_stop_signal_landing_just_after_a_change_ran_still_restores_it():
    """The flaky SIGINT fault test (issue 36): DBCC TRACEON had run on the server, the signal arrived before the
    guard counted the change as applied, and the trace flag was left on."""
    log = []
    g = G.StateGuard(lambda db: Conn(log, []) if log else SignalledAfterRunning(log, []), [change("a")],
                     log=lambda *_: None)
    with pytest.raises(KeyboardInterrupt):
        with g:
            pass
    assert log == ["APPLY a", "RESTORE a"]
