"""Off-CPU and wake-up stacks from scheduler events: where threads wait, and who wakes them.

A CPU profile samples running threads, so a thread asleep on a lock, a
semaphore or a socket is not in it.  Brendan Gregg's off-CPU analysis
(``offcputime`` and ``wakeuptime`` in bcc; brendangregg.com's "Off-CPU
Analysis" and "Off-CPU Flame Graphs") weighs each stack by the time its
thread spent *off* the CPU.  This module does the same from a ``perf
script`` text of ``sched:sched_switch`` and ``sched:sched_waking`` (or
``sched_wakeup``) events recorded with ``-g``
(:mod:`.importers.perf_sched`), and writes folded stacks that
inferno-flamegraph, flamegraph.pl and speedscope read.

Off-CPU (:func:`offcpu`): a thread's interval runs from its switch-out
(a sched_switch whose prev is the thread: the event's stack is the
thread's stack as it left the CPU) to its next switch-in (a sched_switch
whose next is the thread).  It is weighed in microseconds and folded as
``[process;]root;...;leaf;[state X]``: the blocking state (``prev_state``:
S sleeping, D uninterruptible, R preempted while runnable, ...) is the top
frame, so one code path's sleeps and preemptions sit side by side.  Like
offcputime, R intervals (time on a run queue) are included; ``states``
keeps only some.

Intervals the capture does not close are **dropped and counted**, as
offcputime drops them (it writes an interval only at the switch-in): a
thread still off the CPU at the capture's end (its wait has no end, and
closing it at the last event would call the capture's length a wait), and
a thread first seen switching *in* (its wait began before the capture).
Both are in the statistics (count and, for the first, the time up to the
last event) and in a warning.

Wake-ups (:func:`wakeup`): each wake-up event runs in the waker's context
with the waker's stack (``sched_waking`` always; ``sched_wakeup`` only when
the kernel did not queue the wake-up to the target's CPU, where the stack is
then an interrupt's), and names the woken thread.  It is weighed by the
time the woken thread had been blocked (switch-out to this wake-up, as
wakeuptime weighs it) and folded as in Gregg's wake-up flame graphs: the
woken thread at the root, then the waker's stack from its leaf (the
wake-up call) down to its root, then the waker's name on top.  When a
capture has sched_waking events, sched_wakeup events are left out (each
wake-up would count twice).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Iterable

from .importers.perf_sched import Problems, SchedEvent, read_events
from .source import display_name

__all__ = ["offcpu", "wakeup", "offcpu_and_wakeup", "Folded", "state_frame", "STATE_NAMES"]

STATE_NAMES = {"S": "sleeping", "D": "uninterruptible", "R": "preempted", "I": "idle", "T": "stopped",
               "t": "traced", "X": "dead", "Z": "zombie", "P": "parked"}


def state_frame(state: str) -> str:
    """The frame that names a blocking state: ``[state S sleeping]``, ``[state R+ preempted]``."""
    what = STATE_NAMES.get(state[:1], "")
    return f"[state {state} {what}]" if what else f"[state {state}]"


@dataclass
class Folded:
    """Folded stacks (``{stack: microseconds}``) and what was counted on the way."""

    stacks: dict[str, int]
    source: str = ""
    events: dict[str, int] = field(default_factory=dict)
    other_events: dict[str, int] = field(default_factory=dict)
    intervals: int = 0
    total_us: int = 0
    open_at_end: int = 0          # threads still off the CPU when the capture ended: dropped
    open_at_end_us: int = 0       # their time from switch-out to the capture's last event
    began_before: int = 0         # switch-ins of threads never seen switching out: dropped
    not_blocked: int = 0          # wake-ups of threads not seen blocked (wakeup only): dropped
    backwards: int = 0            # intervals that end before they begin (events out of order): dropped
    skipped_lines: int = 0
    warnings: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Folded lines, sorted, one per stack, whole microseconds (a stack under 0.5 µs in all is left out)."""
        return [f"{k} {v}" for k, v in sorted(self.stacks.items()) if v > 0]

    def stats(self) -> dict:
        d = asdict(self)
        d.pop("stacks")
        return d


def _clean(name: str) -> str:
    return name.replace(";", ":").replace("\n", " ")


def _process(comm: str, pid: int) -> str:
    return f"{_clean(comm)} ({pid})"


def _fold(path, *, strict: bool, process_root: bool, states: Iterable[str] | None, off: bool, wake: bool,
          tids: Iterable[int] | None = None, comms: Iterable[str] | None = None,
          threads_only: bool = False) -> tuple[Folded | None, Folded | None]:
    """The off-CPU and wake-up folds (``off``, ``wake``: which to make) in one reading of the events: parsing
    them is nearly all the time, and a capture wants both."""
    name = display_name(path)
    bad = Problems(name, strict)
    other: dict[str, int] = {}
    keep = None if states is None else {s.strip() for s in states}
    tids = None if tids is None else {int(t) for t in tids}
    comms = None if comms is None else {str(c)[:15] for c in comms}  # the kernel keeps 15 characters of a name

    mains: set[int] = set()  # threads_only: main threads seen (tid == pid), left out

    def watched(tid: int, comm: str) -> bool:
        return (tids is None or tid in tids) and (comms is None or comm in comms) and tid not in mains

    def kept(state: str) -> bool:
        return keep is None or state in keep or state[:1] in keep

    events: dict[str, int] = {}
    ns: dict[str, int] = defaultdict(int)
    wake_ns: dict[str, dict[str, int]] = {"sched_waking": defaultdict(int), "sched_wakeup": defaultdict(int)}
    opened: dict[int, tuple[int, str, str]] = {}
    last_ns = intervals = switch_backwards = wake_backwards = began_before = not_blocked = 0
    for ev in read_events(path, bad, other):
        events[ev.kind] = events.get(ev.kind, 0) + 1
        last_ns = max(last_ns, ev.time_ns)
        if ev.kind == "sched_switch":
            nxt = opened.pop(ev.next_tid, None) if ev.next_tid else None
            if nxt is not None:
                t0, key, state = nxt
                if ev.time_ns < t0:
                    switch_backwards += 1
                elif off and kept(state):
                    ns[f"{key};{state_frame(state)}" if key else state_frame(state)] += ev.time_ns - t0
                    intervals += 1
            elif ev.next_tid and watched(ev.next_tid, ev.next_comm):
                began_before += 1
            if threads_only and ev.prev_tid == ev.pid:
                mains.add(ev.prev_tid)
                opened.pop(ev.prev_tid, None)
            if ev.prev_tid and watched(ev.prev_tid, ev.comm):  # tid 0 is the idle task: never a waiter
                key = ""
                if off:  # the wake-up fold needs only the time and the state
                    frames = ";".join(_clean(f) for f in reversed(ev.frames))
                    root = _process(ev.comm, ev.pid) if process_root else ""
                    key = ";".join(x for x in (root, frames) if x)
                opened[ev.prev_tid] = (ev.time_ns, key, ev.state)
        elif wake and ev.kind in wake_ns and watched(ev.target_tid, ev.target_comm):
            blocked = opened.get(ev.target_tid)
            if blocked is None:
                not_blocked += 1
                continue
            t0, _, state = blocked
            if ev.time_ns < t0:
                wake_backwards += 1
                continue
            if not kept(state):
                continue
            parts = [f"{_clean(ev.target_comm)} ({ev.target_tid})"]
            parts += [_clean(f) for f in ev.frames]  # the waker's stack, leaf (the wake-up call) first
            parts.append(_process(ev.comm, ev.pid))
            wake_ns[ev.kind][";".join(parts)] += ev.time_ns - t0

    def finish(out: Folded, folded: dict[str, int]) -> Folded:
        out.events = dict(events)
        out.began_before = began_before
        out.stacks = {k: round(v / 1000) for k, v in folded.items()}
        out.total_us = sum(v for v in out.stacks.values() if v > 0)
        out.skipped_lines = bad.count
        out.other_events = dict(other)
        if bad.warning():
            out.warnings.append(bad.warning())
        if other:
            listed = ", ".join(f"{k} ({v:,})" for k, v in sorted(other.items()))
            out.warnings.append(f"{name}: left out events that are not scheduler events: {listed}")
        return out

    off_out = wake_out = None
    if off:
        off_out = Folded({}, source=name, intervals=intervals, backwards=switch_backwards, open_at_end=len(opened),
                         open_at_end_us=round(sum(last_ns - t0 for t0, _, _ in opened.values()) / 1000))
        if not events.get("sched_switch"):
            off_out.warnings.append(f"{name}: no sched_switch events: record them "
                                    "(perf record -e sched:sched_switch -a -g)")
        finish(off_out, ns)
        if off_out.open_at_end or off_out.began_before:
            off_out.warnings.append(
                f"{name}: dropped {off_out.open_at_end:,} interval(s) still open at the capture's end "
                f"({off_out.open_at_end_us:,} µs up to its last event) and {off_out.began_before:,} that began "
                "before it")
    if wake:
        kind = "sched_waking" if events.get("sched_waking") else "sched_wakeup"
        wake_out = Folded({}, source=name, intervals=len(wake_ns[kind]),  # distinct chains; the count is in events
                          backwards=switch_backwards + wake_backwards, not_blocked=not_blocked)
        if events.get("sched_waking") and events.get("sched_wakeup"):
            wake_out.warnings.append(f"{name}: folded the {events['sched_waking']:,} sched_waking events; left out "
                                     f"the {events['sched_wakeup']:,} sched_wakeup events (the same wake-ups again)")
        if not (events.get("sched_waking") or events.get("sched_wakeup")):
            wake_out.warnings.append(f"{name}: no sched_waking or sched_wakeup events: record them "
                                     "(perf record -e sched:sched_waking -e sched:sched_switch -a -g)")
        finish(wake_out, wake_ns[kind])
        if wake_out.not_blocked:
            wake_out.warnings.append(f"{name}: dropped {wake_out.not_blocked:,} wake-up(s) of threads not seen "
                                     "blocking (blocked since before the capture, or woken while runnable)")
    return off_out, wake_out


def offcpu(path, *, strict: bool = False, process_root: bool = True, states: Iterable[str] | None = None,
           tids: Iterable[int] | None = None, comms: Iterable[str] | None = None,
           threads_only: bool = False) -> Folded:
    """Off-CPU stacks of a ``perf script`` text of sched_switch events, in µs blocked; see the module doc.

    ``states``: keep only intervals in these states (``"S"``, ``"D"``; a
    one-letter state also keeps its variants, ``R`` keeps ``R+``).
    ``tids`` / ``comms``: fold only these threads (ids, or names as the
    kernel keeps them); a capture filtered to some threads also holds the
    switch-outs of the threads that ran before them, which are not theirs.
    ``threads_only``: leave out each process's main thread (tid = pid; needs
    headers with ``pid/tid``), which in a benchmark only sleeps while its
    workers run."""
    return _fold(path, strict=strict, process_root=process_root, states=states, off=True, wake=False, tids=tids,
                 comms=comms, threads_only=threads_only)[0]


def wakeup(path, *, strict: bool = False, states: Iterable[str] | None = None,
           tids: Iterable[int] | None = None, comms: Iterable[str] | None = None,
           threads_only: bool = False) -> Folded:
    """Wake-up stacks (woken thread; waker's stack leaf first; waker), in µs the woken thread was blocked;
    ``tids`` / ``comms`` select the woken threads."""
    return _fold(path, strict=strict, process_root=True, states=states, off=False, wake=True, tids=tids, comms=comms,
                 threads_only=threads_only)[1]


def offcpu_and_wakeup(path, *, strict: bool = False, process_root: bool = True, states: Iterable[str] | None = None,
                      tids: Iterable[int] | None = None, comms: Iterable[str] | None = None,
                      threads_only: bool = False) -> tuple[Folded, Folded]:
    """:func:`offcpu` and :func:`wakeup` of one capture, from one reading of its events (half the time of the
    two calls, as parsing is nearly all of it)."""
    return _fold(path, strict=strict, process_root=process_root, states=states, off=True, wake=True, tids=tids,
                 comms=comms, threads_only=threads_only)
