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

__all__ = ["offcpu", "wakeup", "Folded", "state_frame", "STATE_NAMES"]

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


class _Open:
    """Threads off the CPU: tid -> (switch-out time, stack key without the state, state)."""

    def __init__(self):
        self.by_tid: dict[int, tuple[int, str, str]] = {}


def _process(comm: str, pid: int) -> str:
    return f"{_clean(comm)} ({pid})"


def _fold(path, *, strict: bool, process_root: bool, states: Iterable[str] | None, wake: bool,
          tids: Iterable[int] | None = None, comms: Iterable[str] | None = None,
          threads_only: bool = False) -> Folded:
    name = display_name(path)
    bad = Problems(name, strict)
    other: dict[str, int] = {}
    keep = None if states is None else {s.strip() for s in states}
    tids = None if tids is None else {int(t) for t in tids}
    comms = None if comms is None else {str(c)[:15] for c in comms}  # the kernel keeps 15 characters of a name

    mains: set[int] = set()  # threads_only: main threads seen (tid == pid), left out

    def watched(tid: int, comm: str) -> bool:
        return (tids is None or tid in tids) and (comms is None or comm in comms) and tid not in mains

    out = Folded({}, source=name)
    ns: dict[str, int] = defaultdict(int)
    wake_ns: dict[str, dict[str, int]] = {"sched_waking": defaultdict(int), "sched_wakeup": defaultdict(int)}
    opened: dict[int, tuple[int, str, str]] = {}
    last_ns = 0
    for ev in read_events(path, bad, other):
        out.events[ev.kind] = out.events.get(ev.kind, 0) + 1
        last_ns = max(last_ns, ev.time_ns)
        if ev.kind == "sched_switch":
            nxt = opened.pop(ev.next_tid, None) if ev.next_tid else None
            if nxt is not None:
                t0, key, state = nxt
                if ev.time_ns < t0:
                    out.backwards += 1
                elif not wake and (keep is None or state in keep or state[:1] in keep):
                    ns[f"{key};{state_frame(state)}" if key else state_frame(state)] += ev.time_ns - t0
                    out.intervals += 1
            elif ev.next_tid and watched(ev.next_tid, ev.next_comm):
                out.began_before += 1
            if threads_only and ev.prev_tid == ev.pid:
                mains.add(ev.prev_tid)
                opened.pop(ev.prev_tid, None)
            if ev.prev_tid and watched(ev.prev_tid, ev.comm):  # tid 0 is the idle task: never a waiter
                frames = ";".join(_clean(f) for f in reversed(ev.frames))
                root = _process(ev.comm, ev.pid) if process_root else ""
                key = ";".join(x for x in (root, frames) if x)
                opened[ev.prev_tid] = (ev.time_ns, key, ev.state)
        elif wake and ev.kind in wake_ns and watched(ev.target_tid, ev.target_comm):
            blocked = opened.get(ev.target_tid)
            if blocked is None:
                out.not_blocked += 1
                continue
            t0, _, state = blocked
            if ev.time_ns < t0:
                out.backwards += 1
                continue
            if keep is not None and state not in keep and state[:1] not in keep:
                continue
            parts = [f"{_clean(ev.target_comm)} ({ev.target_tid})"]
            parts += [_clean(f) for f in ev.frames]  # the waker's stack, leaf (the wake-up call) first
            parts.append(_process(ev.comm, ev.pid))
            wake_ns[ev.kind][";".join(parts)] += ev.time_ns - t0
    if wake:
        kind = "sched_waking" if out.events.get("sched_waking") else "sched_wakeup"
        ns = wake_ns[kind]
        out.intervals = sum(1 for _ in ns)  # distinct chains; the event count is in events
        if out.events.get("sched_waking") and out.events.get("sched_wakeup"):
            out.warnings.append(f"{name}: folded the {out.events['sched_waking']:,} sched_waking events; left out "
                                f"the {out.events['sched_wakeup']:,} sched_wakeup events (the same wake-ups again)")
        if not (out.events.get("sched_waking") or out.events.get("sched_wakeup")):
            out.warnings.append(f"{name}: no sched_waking or sched_wakeup events: record them "
                                "(perf record -e sched:sched_waking -e sched:sched_switch -a -g)")
    else:
        out.open_at_end = len(opened)
        out.open_at_end_us = round(sum(last_ns - t0 for t0, _, _ in opened.values()) / 1000)
        if not out.events.get("sched_switch"):
            out.warnings.append(f"{name}: no sched_switch events: record them "
                                "(perf record -e sched:sched_switch -a -g)")
    out.stacks = {k: round(v / 1000) for k, v in ns.items()}
    out.total_us = sum(v for v in out.stacks.values() if v > 0)
    out.skipped_lines = bad.count
    out.other_events = other
    if bad.warning():
        out.warnings.append(bad.warning())
    if other:
        listed = ", ".join(f"{k} ({v:,})" for k, v in sorted(other.items()))
        out.warnings.append(f"{name}: left out events that are not scheduler events: {listed}")
    if not wake and (out.open_at_end or out.began_before):
        out.warnings.append(
            f"{name}: dropped {out.open_at_end:,} interval(s) still open at the capture's end "
            f"({out.open_at_end_us:,} µs up to its last event) and {out.began_before:,} that began before it")
    if wake and out.not_blocked:
        out.warnings.append(f"{name}: dropped {out.not_blocked:,} wake-up(s) of threads not seen blocking "
                            "(blocked since before the capture, or woken while runnable)")
    return out


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
    return _fold(path, strict=strict, process_root=process_root, states=states, wake=False, tids=tids, comms=comms,
                 threads_only=threads_only)


def wakeup(path, *, strict: bool = False, states: Iterable[str] | None = None,
           tids: Iterable[int] | None = None, comms: Iterable[str] | None = None,
           threads_only: bool = False) -> Folded:
    """Wake-up stacks (woken thread; waker's stack leaf first; waker), in µs the woken thread was blocked;
    ``tids`` / ``comms`` select the woken threads."""
    return _fold(path, strict=strict, process_root=True, states=states, wake=True, tids=tids, comms=comms,
                 threads_only=threads_only)
