"""The machine card: measured into a recording at its start and end, read back, checked against physics."""
from __future__ import annotations

import json
import sys

import pandas as pd
import pytest

from contention_book.harness import machine_card as mc
from contention_book.harness.recording import Recording, RecordingWriter

QUIET = {"cycle": (0.31, 0.30, 0.33, 0.30), "one_way_transfer": (200, 190, 210, 185),
         "futex_wake": (30000, 25000, 35000, 20000), "context_switch": (1800, 1700, 1900, 1600),
         "atomic_contended": (250, 230, 270, 220), "ops_per_transfer": (1.0, 1.0, 1.1, 1.0),
         "atomic_private": (6.0, 5.8, 6.3, 5.7), "plain_private": (1.2, 1.1, 1.3, 1.0)}



@pytest.fixture(autouse=True)
def card_on(monkeypatch):
    """tests/conftest.py turns the card off for every other test's live runs; these tests are about it."""
    monkeypatch.setenv(mc.SKIP_ENV, "1")

def fake_run(values, load=None):
    def run(program, args, timeout_s=None):
        assert program == "machine_card" and "--cpu-a=0" in args and "--cpu-b=1" in args
        return pd.DataFrame([{"quantity": q, "cpu_a": 0, "cpu_b": 1, "repetitions": 31, "median": m, "p10": lo,
                              "p90": hi, "min": mn, "unit": "ns"} for q, (m, lo, hi, mn) in values.items()])
    return run


def card(**changes):
    values = {**QUIET, **changes}
    c = mc.new_card(pair=[0, 1], cpus=[0, 1])
    mc.measure_into(c, "start", fake_run(values))
    mc.measure_into(c, "end", fake_run(values))
    return mc.validate(c, "test card")


def writer(tmp_path):
    return RecordingWriter(tmp_path / "r", chapter="latch-fairness", kind="measured",
                           engine={"name": "native", "version": "cc"},
                           host={"cpu_model": None, "sockets": 1, "cores": 2, "logical_cpus": 2, "numa_nodes": 1},
                           parameters={}, measured={"tool": "test", "tool_version": "0", "command": "pytest"})


def test_start_and_end_go_into_the_recording_and_read_back(tmp_path):
    lines = []
    w = writer(tmp_path)
    mc.at_start(w, lines.append, run=fake_run(QUIET))
    assert not (w.tmp / mc.CARD).exists()      # a card alone must not look like data the run wrote
    w.write_text("runs.csv", "a\n1\n")
    mc.at_end(w, lines.append, run=fake_run(QUIET))
    w.close()
    got = mc.load(Recording.open(tmp_path / "r"))
    assert set(got["phases"]) == {"start", "end"} and got["placement_moved"] == []
    assert got["topology"]["pair"] == [0, 1] and "hypervisor" in got["topology"]
    assert mc.cost(got, "one_way_transfer").median == 200
    assert "machine card at the start" in lines[0] and "transfer 200.0 ns" in lines[0]


def test_the_switch_skips_the_card(tmp_path, monkeypatch):
    monkeypatch.setenv(mc.SKIP_ENV, "0")
    w = writer(tmp_path)
    mc.at_start(w, run=fake_run(QUIET))
    w.write_text("runs.csv", "a\n1\n")
    mc.at_end(w, run=fake_run(QUIET))
    w.close()
    assert mc.load(Recording.open(tmp_path / "r")) is None


def test_a_recording_without_a_card_has_none(tmp_path):
    w = writer(tmp_path)
    w.write_text("runs.csv", "a\n1\n")
    w.close()
    assert mc.load(Recording.open(tmp_path / "r")) is None


def test_a_card_that_cannot_be_measured_says_why_and_the_run_goes_on(tmp_path):
    def broken(program, args, timeout_s=None):
        raise RuntimeError("no compiler here")
    c = mc.measure_into(mc.new_card(pair=[0, 1], cpus=[0, 1]), "start", broken)
    assert "no compiler here" in c["phases"]["start"]["error"] and mc.cost(c, "futex_wake") is None
    assert "not measured" in mc.summary(c, "start")


def test_start_and_end_that_disagree_say_the_placement_moved():
    c = mc.new_card(pair=[0, 1], cpus=[0, 1])
    mc.measure_into(c, "start", fake_run({**QUIET, "one_way_transfer": (26, 25, 27, 24)}))
    mc.measure_into(c, "end", fake_run(QUIET))
    assert mc.placement_moved(c) == ["one_way_transfer"]
    assert "**moved**" in mc.card_markdown(c, "x")
    c["phases"]["end"]["load_1min"] = c["topology"]["logical_cpus"] + 5.0
    assert "The machine was busy" in mc.card_markdown(c, "x")
    assert mc.placement_moved(card()) == []


def test_rule_batched_contended_atomic_cheaper_than_a_transfer():
    assert not mc.rule_batched(card()).broken
    broken = mc.rule_batched(card(atomic_contended=(15, 12, 18, 10), ops_per_transfer=(13, 10, 16, 9)))
    assert broken.broken and "13 increments per transfer" in broken.says
    assert "atomic_contended_per_transfer" in broken.bars


def test_rule_private_increment_below_one_cycle_is_code_generation():
    assert not mc.rule_private_cycle(card()).broken
    r = mc.rule_private_cycle(card(plain_private=(0.1, 0.09, 0.11, 0.09)))   # a third of a 0.3 ns cycle
    assert r.broken and r.bars == ("plain_private",) and "code generation" in r.says
    assert "plain_private" in mc.barred(card(plain_private=(0.1, 0.09, 0.11, 0.09)))


def test_rule_handoff_below_a_transfer_shared_a_core():
    assert not mc.rule_handoff(card()).broken
    assert mc.rule_handoff(card(futex_wake=(120, 110, 130, 100))).broken
    ring = mc.rule_handoff(card(), handoff_ns=128, what="ring hand-off")
    assert ring.broken and "shared a core or a cache" in ring.says and ring.bars == ("ring hand-off",)


def test_a_bad_card_names_its_field():
    c = card()
    c["phases"]["start"]["costs"]["futex_wake"]["median"] = "fast"
    with pytest.raises(mc.CardError, match=r"field 'phases/start/costs/futex_wake/median'"):
        mc.validate(c, "recording x: machine_card.json")


def test_add_to_a_sealed_recording_keeps_it_verifiable(tmp_path):
    w = writer(tmp_path)
    w.write_text("runs.csv", "a\n1\n")
    w.close()
    mc.add_to_recording(tmp_path / "r", log=lambda s: None, run=fake_run(QUIET))
    r = Recording.open(tmp_path / "r")
    got = mc.load(r)
    assert got["added_after_the_run"] and "added after the run" in mc.card_markdown(got, "x").lower()
    with pytest.raises(mc.CardError, match="already exists"):
        mc.add_to_recording(tmp_path / "r", log=lambda s: None, run=fake_run(QUIET))


def test_data_page_lists_every_measured_recording_with_or_without_a_card(tmp_path):
    (tmp_path / "ch" / "with").mkdir(parents=True)
    (tmp_path / "ch" / "without").mkdir(parents=True)
    (tmp_path / "ch" / "pub").mkdir(parents=True)
    for name, kind in (("with", "measured"), ("without", "measured"), ("pub", "published")):
        (tmp_path / "ch" / name / "manifest.json").write_text(json.dumps({"kind": kind}))
    (tmp_path / "ch" / "with" / mc.CARD).write_text(json.dumps(card()))
    md = mc.cards_markdown(tmp_path)
    assert "### ch / with" in md and "one-way cache-line transfer" in md
    assert "### ch / without\n\n*No machine card in this recording.*" in md and "pub" not in md


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the card's program is Linux-only")
def test_the_real_program_measures_every_quantity_with_sane_physics():
    import os
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU")
    phase = mc.measure_phase(cpus[:2], repetitions=10)
    assert "error" not in phase, phase
    costs = phase["costs"]
    assert set(costs) == set(mc.QUANTITIES)
    c = {"phases": {"start": phase}}
    # the private loops keep every increment: none below one cycle at the clock the chain measured
    assert not mc.rule_private_cycle(c).broken, mc.rule_private_cycle(c).says
    assert costs["futex_wake"]["median"] > costs["one_way_transfer"]["median"]


def test_a_card_started_before_the_run_is_not_marked_added_after(tmp_path):
    started = mc.measure_into(mc.new_card(pair=[0, 1], cpus=[0, 1]), "start",
                              fake_run({**QUIET, "one_way_transfer": (26, 25, 27, 24)}))
    w = writer(tmp_path)
    w.write_text("runs.csv", "a\n1\n")
    w.close()
    mc.add_to_recording(tmp_path / "r", log=lambda s: None, run=fake_run(QUIET), started=started)
    got = mc.load(Recording.open(tmp_path / "r"))
    assert "added_after_the_run" not in got and got["placement_moved"] == ["one_way_transfer"]


def test_around_measures_before_and_after_a_run_and_adds_the_card(tmp_path, monkeypatch):
    calls, real = [], mc.measure_phase

    def phase(pair, repetitions=31, run=None):
        calls.append(pair)
        return real(pair, run=fake_run(QUIET))
    monkeypatch.setattr(mc, "measure_phase", phase)
    monkeypatch.setattr(mc, "run_cpus", lambda: [0, 1])
    dest = tmp_path / "rec"
    script = ("from contention_book.harness.recording import RecordingWriter\n"
              f"w = RecordingWriter({str(dest)!r}, chapter='latch-fairness', kind='measured', "
              "engine={'name': 'native', 'version': 'cc'}, host={'cpu_model': None, 'sockets': 1, 'cores': 2, "
              "'logical_cpus': 2, 'numa_nodes': 1}, parameters={}, "
              "measured={'tool': 't', 'tool_version': '0', 'command': 'c'})\n"
              "w.write_text('runs.csv', 'a\\n1\\n')\nw.close()\n")
    assert mc.main(["around", str(dest), "--", sys.executable, "-c", script]) == 0
    got = mc.load(Recording.open(dest))
    assert calls == [[0, 1], [0, 1]] and set(got["phases"]) == {"start", "end"}
    assert "added_after_the_run" not in got
    assert mc.main(["around", str(tmp_path / "none"), "--", sys.executable, "-c", "raise SystemExit(3)"]) == 3


def test_a_live_native_run_carries_its_own_card(tmp_path):
    """The runner measures the card itself, at the run's start and end, on a run whose work is on this machine."""
    import os
    import subprocess
    import sys

    dest = tmp_path / "rec"
    env = dict(os.environ, CONTENTION_BOOK_MACHINE_CARD="1", CONTENTION_BOOK_QUIET_WAIT_S="0")
    out = subprocess.run([sys.executable, "-m", "contention_book.run", "latch-fairness", "--engine", "native",
                          "--param", "sessions=1,2", "--param", "variants=fair", "--param", "duration_s=0.1",
                          "--param", "repetitions=1", "--record-to", str(dest)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    assert "machine card at the start" in out.stdout and "machine card at the end" in out.stdout
    card = json.loads((dest / "machine_card.json").read_text())
    assert set(card["phases"]) == {"start", "end"}
    assert card["topology"]["pair"] and len(card["topology"]["pair"]) == 2
    r = Recording.open(dest)  # opening verifies every file the manifest lists against its checksum
    assert "machine_card.json" in {f["path"] for f in r.manifest["files"]}


def test_rule_batched_says_how_often_the_line_never_moved():
    """A repetition in which the line never moved reports every increment (the p90 at the cap): with the median
    there too, that is half of the repetitions or more, not a tenth."""
    tenth = mc.rule_batched(card(atomic_contended=(15, 12, 18, 10), ops_per_transfer=(13, 10, 1e6, 9)))
    half = mc.rule_batched(card(atomic_contended=(15, 12, 18, 10), ops_per_transfer=(1e6, 10, 1e6, 9)))
    assert "in at least a tenth of the repetitions" in tenth.says
    assert "in at least half of the repetitions" in half.says


def test_rule_batched_says_when_its_three_numbers_cannot_all_hold():
    """3.21 increments per 120 ns transfer is at least 37 ns an increment, not 7.71 ns: the card says so."""
    clash = mc.rule_batched(card(atomic_contended=(7.71, 7, 9, 1), one_way_transfer=(120, 100, 130, 90),
                                 ops_per_transfer=(3.21, 3, 4, 2)))
    assert clash.broken and "cannot all hold at once" in clash.says and "at least 37.4 ns" in clash.says
    fits = mc.rule_batched(card(atomic_contended=(15, 12, 18, 10), ops_per_transfer=(13, 10, 16, 9)))
    assert "cannot all hold" not in fits.says
