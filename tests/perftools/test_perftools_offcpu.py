"""perftools offcpu / wakeup: scheduler events folded into off-CPU and wake-up stacks, on small captures made
here by hand in perf script's two payload spellings (a real capture's shape: tests/perftools' own look-alike)."""

from __future__ import annotations

import gzip
import subprocess
import sys

import pytest

from contention_book.perftools import offcpu
from contention_book.perftools.__main__ import main
from contention_book.perftools.errors import FormatError

K = "([kernel.kallsyms])"


def _switch(comm, tid, t, state, nxt, ntid, frames=(), cpu=0):
    head = (f"{comm} {tid}/{tid} [{cpu:03d}] {t}: sched:sched_switch: prev_comm={comm} prev_pid={tid} prev_prio=120 "
            f"prev_state={state} ==> next_comm={nxt} next_pid={ntid} next_prio=120")
    return head + "".join(f"\n\t{0xffff0000 + i:x} {f}" for i, f in enumerate(frames)) + "\n\n"


def _waking(comm, tid, t, target, ttid, frames=(), event="sched_waking"):
    head = f"{comm} {tid}/{tid} [000] {t}: sched:{event}: comm={target} pid={ttid} prio=120 target_cpu=001"
    return head + "".join(f"\n\t{0xffff0000 + i:x} {f}" for i, f in enumerate(frames)) + "\n\n"


FUTEX = (f"__schedule+0x618 {K}", f"futex_wait+0x20 {K}", "__lll_lock_wait+0x1d (/usr/lib/libc.so.6)",
         "worker (/opt/bench)")
WAKER = (f"try_to_wake_up+0x267 {K}", f"futex_wake+0x10 {K}", "__lll_unlock_wake (/usr/lib/libc.so.6)",
         "worker (/opt/bench)")


def _capture(tmp_path, text, name="cap.txt"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_blocked_interval_is_switch_out_to_next_switch_in_in_microseconds(tmp_path):
    text = (_switch("bench", 11, "100.000000", "S", "bench", 12, FUTEX)
            + _waking("bench", 12, "100.000300", "bench", 11, WAKER)
            + _switch("bench", 12, "100.000450", "S", "bench", 11, FUTEX)   # 11 back in after 450 µs
            + _switch("bench", 11, "100.001000", "R+", "bench", 12, FUTEX)  # 12 back in after 550 µs, 11 preempted
            + _switch("bench", 12, "100.001100", "S", "bench", 11, FUTEX))  # 11 back in after 100 µs
    got = offcpu.offcpu(_capture(tmp_path, text))
    stack = "bench (11);bench!worker;libc.so.6!__lll_lock_wait;[kernel.kallsyms]!futex_wait;[kernel.kallsyms]!__schedule"
    other = stack.replace("(11)", "(12)")
    assert got.stacks == {f"{stack};[state S sleeping]": 450, f"{other};[state S sleeping]": 550,
                          f"{stack};[state R+ preempted]": 100}
    assert got.intervals == 3 and got.total_us == 1100
    # 12 is still off the CPU at the end: dropped and counted, with its time up to the last event (0 µs here)
    assert got.open_at_end == 1 and got.began_before == 1  # 12 is first seen switching in
    only_s = offcpu.offcpu(_capture(tmp_path, text), states=["S"])
    assert set(only_s.stacks) == {f"{stack};[state S sleeping]", f"{other};[state S sleeping]"}
    assert set(offcpu.offcpu(_capture(tmp_path, text), states=["R"]).stacks) == {f"{stack};[state R+ preempted]"}


def test_thread_that_never_switches_back_in_is_dropped_and_counted(tmp_path):
    text = (_switch("bench", 11, "5.000000", "S", "swapper/0", 0, FUTEX)
            + _switch("pg", 21, "5.100000", "D", "swapper/0", 0, FUTEX)
            + _switch("swapper/0", 0, "5.200000", "R", "pg", 21)   # pg back after 100 ms; bench never
            + _switch("other", 31, "5.300000", "R", "bench2", 41))  # bench2 began blocked before the capture
    got = offcpu.offcpu(_capture(tmp_path, text))
    assert list(got.stacks.values()) == [100_000] and got.intervals == 1
    # open at the end: bench (5.0 -> 5.3 s, the last event) and other (5.3 -> 5.3): 300 ms not counted
    assert got.open_at_end == 2 and got.open_at_end_us == 300_000
    assert got.began_before == 1
    assert any("dropped 2 interval(s) still open at the capture's end (300,000 µs" in w for w in got.warnings)


def test_plugin_spelling_and_no_stacks_give_the_same_intervals(tmp_path):
    text = ("a 7 [000] 1.000000: sched:sched_switch: a:7 [120] S ==> b:8 [120]\n\n"
            "b 8 [000] 1.000250: sched:sched_switch: b:8 [120] D ==> a:7 [120]\n\n")
    got = offcpu.offcpu(_capture(tmp_path, text))
    assert got.stacks == {"a (7);[state S sleeping]": 250}
    assert offcpu.offcpu(_capture(tmp_path, text), process_root=False).stacks == {"[state S sleeping]": 250}


def test_wakeup_folds_woken_then_wakers_stack_leaf_first_then_waker(tmp_path):
    text = (_switch("bench", 11, "100.000000", "S", "bench", 12, FUTEX)
            + _waking("bench", 12, "100.000300", "bench", 11, WAKER)
            + _waking("bench", 12, "100.000310", "bench", 11, WAKER, event="sched_wakeup")
            + _switch("bench", 12, "100.000450", "S", "bench", 11, FUTEX)
            + _waking("irq", 99, "100.000500", "bench", 12, (f"try_to_wake_up {K}", f"hrtimer_wakeup {K}"))
            + _waking("x", 98, "100.000600", "never", 55))  # 55 never seen blocking: dropped, counted
    got = offcpu.wakeup(_capture(tmp_path, text))
    assert got.stacks == {
        "bench (11);[kernel.kallsyms]!try_to_wake_up;[kernel.kallsyms]!futex_wake;libc.so.6!__lll_unlock_wake;"
        "bench!worker;bench (12)": 300,
        "bench (12);[kernel.kallsyms]!try_to_wake_up;[kernel.kallsyms]!hrtimer_wakeup;irq (99)": 50}
    assert got.not_blocked == 1
    assert any("left out the 1 sched_wakeup" in w for w in got.warnings)
    # without sched_waking, sched_wakeup's are folded (here: the same wake-up 10 µs later)
    only_wakeup = text.replace("sched:sched_waking", "sched:sched_other_kind")
    got2 = offcpu.wakeup(_capture(tmp_path, only_wakeup, "w.txt"))
    assert list(got2.stacks.values()) == [310]
    assert got2.other_events == {"sched:sched_other_kind": 3}


def test_capture_cut_mid_event_drops_the_cut_event_and_names_the_line(tmp_path):
    whole = (_switch("bench", 11, "1.000000", "S", "bench", 12, FUTEX)
             + _switch("bench", 12, "1.000100", "S", "bench", 11, FUTEX))
    cut = whole[: whole.rindex("next_prio=120") + len("next_pr")]  # cut inside the last header
    p = _capture(tmp_path, cut)
    got = offcpu.offcpu(p)
    assert got.stacks == {} and got.skipped_lines == 1
    assert any(f"{p}: skipped 1 malformed line(s), at line 7" in w and "ends mid-line" in w for w in got.warnings)
    with pytest.raises(FormatError) as e:
        offcpu.offcpu(p, strict=True)
    assert e.value.line == 7 and "ends mid-line" in str(e.value)
    # cut inside a frame line of the last event: that event is dropped too, the earlier one kept
    cut2 = whole.rstrip("\n")[:-12]
    got2 = offcpu.offcpu(_capture(tmp_path, cut2, "cut2.txt"))
    assert got2.stacks == {} and got2.open_at_end == 1 and got2.skipped_lines == 1


def test_bad_lines_are_named_or_skipped_and_counted(tmp_path):
    text = (_switch("bench", 11, "1.000000", "S", "bench", 12, FUTEX)
            + "bench 12/12 [000] 1.000100: sched:sched_switch: prev_comm=bench prev_pid=x\n\n"  # bad payload, line 7
            + "this is not perf\n\n"                                                          # line 9
            + "bench 12 [000] sched:sched_switch: prev_comm=a prev_pid=1 prev_prio=1 prev_state=S ==> "
              "next_comm=b next_pid=2 next_prio=1\n\n"                                        # no time, line 11
            + _switch("bench", 12, "1.000200", "S", "bench", 11, ("garbage frame",)))         # bad frame, line 14
    p = _capture(tmp_path, text)
    got = offcpu.offcpu(p)
    assert got.skipped_lines == 4 and got.intervals == 1
    w = [x for x in got.warnings if "malformed" in x][0]
    assert "at line 7, 9, 11, ..." in w and "sched_switch payload" in w
    with pytest.raises(FormatError) as e:
        offcpu.offcpu(p, strict=True)
    assert (e.value.path, e.value.line) == (str(p), 7)


def test_cli_reads_files_gzip_and_stdin_and_names_bad_input(tmp_path, capsys):
    text = (_switch("bench", 11, "1.000000", "S", "bench", 12, FUTEX)
            + _waking("bench", 12, "1.000050", "bench", 11, WAKER)
            + _switch("bench", 12, "1.000100", "S", "bench", 11, FUTEX))
    p = _capture(tmp_path, text)
    assert main(["offcpu", str(p)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["bench (11);bench!worker;libc.so.6!__lll_lock_wait;[kernel.kallsyms]!futex_wait;"
                   "[kernel.kallsyms]!__schedule;[state S sleeping] 100"]
    gz = tmp_path / "cap.txt.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert main(["wakeup", str(gz), "-o", str(tmp_path / "w.folded")]) == 0
    assert (tmp_path / "w.folded").read_text().endswith(";bench (12) 50\n")
    r = subprocess.run([sys.executable, "-m", "contention_book.perftools", "offcpu", "-", "--strict"],
                       input=text[:-30], capture_output=True, text=True)
    assert r.returncode == 2 and "perftools: error: <stdin>, line" in r.stderr and "ends mid-line" in r.stderr
    r = subprocess.run([sys.executable, "-m", "contention_book.perftools", "offcpu", "-"],
                       input=text, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.splitlines() == out
    bad = tmp_path / "bad.gz"
    bad.write_bytes(gzip.compress(text.encode())[:40])
    assert main(["offcpu", str(bad)]) == 2
    assert f"{bad}: expected a complete gzip stream" in capsys.readouterr().err


def test_threads_only_leaves_out_the_main_thread_and_tids_select_threads(tmp_path):
    text = (_switch("bench", 10, "1.000000", "S", "bench", 11, FUTEX).replace("bench 10/10", "bench 10/10")
            + _switch("bench", 11, "1.000100", "S", "bench", 12, FUTEX).replace("bench 11/11", "bench 10/11")
            + _switch("bench", 12, "1.000300", "S", "bench", 11, FUTEX).replace("bench 12/12", "bench 10/12")
            + _switch("bench", 11, "1.000400", "S", "bench", 10, FUTEX).replace("bench 11/11", "bench 10/11"))
    p = _capture(tmp_path, text)
    assert sum(offcpu.offcpu(p).stacks.values()) == 400 + 200  # main (10) 400 µs, worker 11 200 µs
    workers = offcpu.offcpu(p, threads_only=True)
    assert list(workers.stacks.values()) == [200] and all("(10)" in k for k in workers.stacks)
    assert sum(offcpu.offcpu(p, tids=[10]).stacks.values()) == 400


def test_blocked_under_sums_a_function_s_sleeps_by_its_caller(tmp_path):
    from contention_book.perftools.offcpu_view import blocked_under

    p = tmp_path / "x.offcpu-folded"
    p.write_text("postgres (1);postgres!_bt_search;postgres!_bt_relandgetbuf;postgres!LWLockAcquire;[state S] 30\n"
                 "postgres (1);postgres!nextval;postgres!read_seq_tuple;postgres!LWLockAcquire;[state S] 10\n"
                 "postgres (2);postgres!secure_read;libc.so.6!epoll_wait;[state S] 60\n")
    callers, total = blocked_under(p, "LWLockAcquire")
    assert total == 100 and callers == {"postgres!_bt_relandgetbuf": 30, "postgres!read_seq_tuple": 10}


@pytest.mark.parametrize("kw", [{}, {"states": ["S"]}, {"tids": [11]}, {"threads_only": True}, {"process_root": False}])
def test_one_reading_folds_the_same_as_offcpu_and_wakeup_apart(tmp_path, kw):
    """The capture's single pass (offcpu_and_wakeup) gives what the two calls give, counts and warnings included."""
    text = (_switch("bench", 10, "1.000000", "S", "bench", 11, FUTEX)
            + _switch("bench", 11, "1.000100", "S", "bench", 12, FUTEX).replace("bench 11/11", "bench 10/11")
            + _waking("bench", 12, "1.000250", "bench", 11, WAKER).replace("bench 12/12", "bench 10/12")
            + _switch("bench", 12, "1.000300", "R+", "bench", 11, FUTEX).replace("bench 12/12", "bench 10/12")
            + _waking("irq", 99, "1.000350", "bench", 12, (f"try_to_wake_up {K}",))
            + _waking("x", 98, "1.000360", "never", 55)
            + "not a header line\n\n"
            + _switch("bench", 11, "1.000400", "D", "bench", 10, FUTEX).replace("bench 11/11", "bench 10/11")
            + _switch("bench", 13, "1.000500", "S", "bench", 12, FUTEX)
            + _switch("bench", 12, "1.000450", "S", "bench", 13, FUTEX)  # out of order: 13 in before it left
            + _waking("irq", 99, "1.000420", "bench", 12, (f"try_to_wake_up {K}",)))  # and woken before it slept
    p = _capture(tmp_path, text)
    wake_kw = {k: v for k, v in kw.items() if k != "process_root"}
    off, wake = offcpu.offcpu_and_wakeup(p, **kw)
    assert off == offcpu.offcpu(p, **kw)
    assert wake == offcpu.wakeup(p, **wake_kw)
    assert off.stacks and (wake.stacks or kw), "the capture has intervals and wake-ups to compare"
    if not kw:
        assert off.backwards == 1 and wake.backwards == 2 and off.skipped_lines == 1 and wake.not_blocked == 1
