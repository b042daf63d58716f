"""The machine's load around a live run: waited for when busy (up to a limit), kept in the manifest, noted.

The load average is faked: a list of readings the runner takes one after another, and a clock that moves
only when the runner sleeps.
"""
from __future__ import annotations

import json

import pytest

from contention_book.harness import host, runner
from contention_book.harness import params as P
from contention_book.harness.spec import ChapterSpec, Table


class FakeMachine:
    def __init__(self, readings):
        self.readings = list(readings)
        self.now = 0.0
        self.slept = []

    def loadavg(self):
        return self.readings.pop(0) if len(self.readings) > 1 else self.readings[0]

    def sleep(self, s):
        self.slept.append(s)
        self.now += s

    def clock(self):
        return self.now


def test_a_quiet_machine_is_not_waited_for():
    m, lines = FakeMachine([0.4]), []
    block = host.wait_for_quiet(lines.append, limit_s=120, loadavg=m.loadavg, sleep=m.sleep, clock=m.clock, cpus=2)
    assert block["before_1min"] == 0.4 and block["quiet"] and block["waited_s"] == 0 and m.slept == []
    assert not any("waiting" in line for line in lines)
    done, note = host.finish_load(block, loadavg=lambda: 1.7)
    assert done["after_1min"] == 1.7 and note == ""


def test_a_busy_machine_is_waited_for_until_it_quietens():
    m, lines = FakeMachine([3.0, 2.5, 1.4, 0.8]), []
    block = host.wait_for_quiet(lines.append, limit_s=120, every_s=5, loadavg=m.loadavg, sleep=m.sleep,
                                clock=m.clock, cpus=2)
    assert m.slept == [5, 5, 5] and block["waited_s"] == 15 and block["quiet"] and block["before_1min"] == 0.8
    assert "waiting up to 120 s" in lines[0] and "above 1" in lines[0]
    _, note = host.finish_load(block, loadavg=lambda: 1.1)
    assert "waited 15 s" in note and "0.80 when it started and 1.10 at its end" in note


def test_a_machine_that_stays_busy_is_waited_for_up_to_the_limit_then_noted():
    m, lines = FakeMachine([5.0]), []
    block = host.wait_for_quiet(lines.append, limit_s=12, every_s=5, loadavg=m.loadavg, sleep=m.sleep,
                                clock=m.clock, cpus=4)
    assert m.slept == [5, 5, 2] and block["waited_s"] == 12 and not block["quiet"] and block["threshold_1min"] == 2
    assert "starts anyway" in lines[-1]
    _, note = host.finish_load(block, loadavg=lambda: 4.0)
    assert note.startswith("the machine was busy") and "wait of 12 s" in note


def test_the_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(host.QUIET_WAIT_ENV, "7.5")
    assert host.wait_limit() == 7.5
    monkeypatch.setenv(host.QUIET_WAIT_ENV, "soon")
    with pytest.raises(ValueError, match="CONTENTION_BOOK_QUIET_WAIT_S='soon': expected a number of seconds"):
        host.wait_limit()
    monkeypatch.delenv(host.QUIET_WAIT_ENV)
    assert host.wait_limit() == host.QUIET_WAIT_S


def test_a_run_keeps_the_load_before_and_after_in_its_manifest(tmp_path, monkeypatch):
    machine = {"load": 9.0}  # busy throughout the wait; the run's end reads what the run left
    monkeypatch.setattr(host, "load_1min", lambda: machine["load"])
    monkeypatch.setattr(host.os, "cpu_count", lambda: 2)
    monkeypatch.setenv(host.QUIET_WAIT_ENV, "0.2")
    spec = ChapterSpec(chapter="toy", notebook="00-toy.ipynb", titles={"native": "toy"},
                       variants={"native": ("a",)}, labels={}, params=(P.duration_s(1.0),),
                       layout={"runs": Table("runs.csv", ("variant",))}, published=(), reference={})

    def run(ctx):
        ctx.writer.write_text("runs.csv", "variant\na\n")
        machine["load"] = 0.5

    lines = []
    dest = runner.run_chapter(spec, {"native": run}, {}, engine="native", record_to=str(tmp_path / "rec"),
                              command="toy", log=runner.RunLog(echo=lines.append))
    manifest = json.loads((dest / "manifest.json").read_text())
    load = manifest["load"]
    assert load["before_1min"] == 9.0 and load["after_1min"] == 0.5 and not load["quiet"]
    assert load["wait_limit_s"] == 0.2 and 0.2 <= load["waited_s"] < 5
    assert any(n.startswith("the machine was busy") for n in manifest["notes"])
    assert any("waiting up to 0.2 s" in line for line in lines), lines
    assert manifest["status"] == {"state": "complete"}


@pytest.mark.parametrize("remote", [True, False])
def test_the_wait_says_it_is_the_clients_load_when_the_server_is_elsewhere(remote):
    m, lines = FakeMachine([1.6, 0.5]), []
    host.wait_for_quiet(lines.append, limit_s=30, loadavg=m.loadavg, sleep=m.sleep, clock=m.clock, cpus=2,
                        remote=remote)
    said = [line for line in lines if "this machine's own load (the client's" in line]
    assert len(said) == (1 if remote else 0), lines
    if remote:  # said before the wait starts
        assert lines.index(said[0]) < next(i for i, line in enumerate(lines) if "waiting" in line)


def test_a_bad_environment_setting_is_refused_before_anything_starts(monkeypatch):
    monkeypatch.setenv(host.QUIET_WAIT_ENV, "two minutes")
    with pytest.raises(P.ParameterError, match=f"{host.QUIET_WAIT_ENV}='two minutes': expected a number"):
        runner.check_environment()
    monkeypatch.setenv(host.QUIET_WAIT_ENV, "0")
    monkeypatch.setenv("CONTENTION_BOOK_RECONNECT_BUDGET_S", "-3")
    with pytest.raises(P.ParameterError, match="CONTENTION_BOOK_RECONNECT_BUDGET_S='-3'"):
        runner.check_environment()
