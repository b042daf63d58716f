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
