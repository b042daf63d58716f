"""Scheduler events in ``perf script`` text: ``sched:sched_switch``,
``sched:sched_wakeup`` and ``sched:sched_waking``, each with its stack.

The input of :mod:`perftools.offcpu` (off-CPU and wake-up stacks), from
``perf record -e sched:sched_switch -e sched:sched_waking -a -g`` then
``perf script``.  The sample shape is :mod:`.perf_script`'s (a header, frame
lines leaf first, a blank line; its header pattern and frame parser are
reused, not copied); what differs is the header's tail, the tracepoint's
payload, which this module reads in both spellings perf prints:

* ``prev_comm=a prev_pid=1 prev_prio=120 prev_state=S ==> next_comm=b next_pid=2 next_prio=120``
  (the kernel's format string, perf without libtraceevent's sched plugin);
* ``a:1 [120] S ==> b:2 [120]`` (the plugin's);
* ``comm=b pid=2 prio=120 [success=1] target_cpu=001`` or ``b:2 [120] [success=1] CPU:001`` (wake-ups).

Off-CPU time needs a time stamp on every event, so a header without one
is a bad line.  Bad lines follow ``perftools collapse``: skipped and counted
(the first three named in a warning) or, ``strict``, the first is a
:class:`FormatError` naming file, line and what was expected.  A capture
cut short (its last line has no newline) loses its last event, which is
named in a warning: its numbers or its stack may be cut.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

from ..builder import frame_name
from ..errors import FormatError
from ..sniff import PERF_HEADER_PATTERN
from ..source import display_name, open_text
from .perf_script import parse_frame

__all__ = ["SchedEvent", "read_events", "Problems", "HEADER_EXPECTED", "FRAME_EXPECTED", "SWITCH_EXPECTED",
           "WAKEUP_EXPECTED", "CUT_EXPECTED"]

# perf prints a thread it has no record of as ':-1 4333/-1': a tid of -1 is read here (the payload names the thread)
_HEADER = re.compile(PERF_HEADER_PATTERN.replace("(?P<pid>\\d+)", "(?P<pid>-?\\d+)")
                     .replace("(?P<tid>\\d+)", "(?P<tid>-?\\d+)"))
HEADER_EXPECTED = "an event header 'comm [pid/]tid [[cpu]] time: event: payload'"
TIME_EXPECTED = "an event header with a time stamp 'SECONDS.FRACTION:' (perf script -F ...,time)"
FRAME_EXPECTED = "a stack frame line 'ADDRESS SYMBOL+OFFSET (DSO)'"
SWITCH_EXPECTED = ("a sched_switch payload 'prev_comm=.. prev_pid=N prev_prio=N prev_state=S ==> "
                   "next_comm=.. next_pid=N next_prio=N'")
WAKEUP_EXPECTED = "a sched_wakeup/sched_waking payload 'comm=.. pid=N prio=N target_cpu=N'"
CUT_EXPECTED = "a complete last line (the capture ends mid-line, so its last event is dropped)"

_SWITCH = (
    re.compile(r"^prev_comm=(?P<prev_comm>.*) prev_pid=(?P<prev_pid>\d+) prev_prio=-?\d+ prev_state=(?P<state>\S+)"
               r" ==> next_comm=(?P<next_comm>.*) next_pid=(?P<next_pid>\d+) next_prio=-?\d+$"),
    re.compile(r"^(?P<prev_comm>.*):(?P<prev_pid>\d+) \[-?\d+\] (?P<state>\S+) ==> "
               r"(?P<next_comm>.*):(?P<next_pid>\d+) \[-?\d+\]$"),
)
_WAKEUP = (
    re.compile(r"^comm=(?P<comm>.*) pid=(?P<pid>\d+) prio=-?\d+(?: success=\d+)? target_cpu=\d+$"),
    re.compile(r"^(?P<comm>.*):(?P<pid>\d+) \[-?\d+\](?: success=\d+)? CPU:\d+$"),
)
SCHED_EVENTS = ("sched_switch", "sched_wakeup", "sched_waking", "sched_wakeup_new")


@dataclass(slots=True)
class SchedEvent:
    """One scheduler event.  ``kind``: sched_switch, sched_wakeup, sched_waking or sched_wakeup_new.
    sched_switch: ``prev_*``/``next_*`` and ``state``; wake-ups: ``target_comm``/``target_tid``.
    ``frames``: ``module!function`` names, leaf first (the stack of the thread in the header)."""

    line: int
    comm: str
    pid: int
    tid: int
    time_ns: int
    kind: str
    frames: tuple[str, ...] = ()
    state: str = ""
    prev_tid: int = -1
    next_comm: str = ""
    next_tid: int = -1
    target_comm: str = ""
    target_tid: int = -1


def time_ns(text: str) -> int:
    """``'420.886588'`` -> 420886588000, exactly (no float rounding)."""
    sec, _, frac = text.partition(".")
    return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])


class Problems:
    """Bad lines: counted and skipped, or (strict) the first raised; as ``perftools collapse`` reports them."""

    def __init__(self, name: str, strict: bool):
        self.name, self.strict = name, strict
        self.count = 0
        self.first: list[FormatError] = []

    def add(self, line: int, expected: str, found: str) -> None:
        err = FormatError(self.name, line, expected, found)
        if self.strict:
            raise err
        self.count += 1
        if len(self.first) < 3:
            self.first.append(err)

    def warning(self) -> str | None:
        if not self.count:
            return None
        where = ", ".join(str(e.line) for e in self.first) + (", ..." if self.count > 3 else "")
        e = self.first[0]
        return (f"{self.name}: skipped {self.count:,} malformed line(s), at line {where} "
                f"(line {e.line}: expected {e.expected}; found {e.found!r}); --strict makes this an error")


def _frame(ln: str) -> tuple[str, bool] | None:
    """``(name, unnamed)`` of one frame line, or None; ``unnamed``: a ``dso![unknown]`` frame."""
    if ln.endswith(" (deleted))"):  # a mapping of a deleted file: '(/memfd:x (deleted))'
        ln = ln[: -len(" (deleted))")] + ")"
    parsed = parse_frame(ln)
    return None if parsed is None else (frame_name(*parsed), parsed[1] == "[unknown]")


def _frames(lines: list[tuple[int, str]], bad: Problems, seen: dict[str, tuple[str, bool] | None]) -> tuple[str, ...]:
    """``seen``: the frame lines met so far (a capture repeats the same few thousand lines in every event)."""
    out: list[str] = []
    for n, ln in lines:
        try:
            frame = seen[ln]
        except KeyError:
            frame = seen[ln] = _frame(ln)
        if frame is None:
            bad.add(n, FRAME_EXPECTED, ln)
            continue
        name, unnamed = frame
        if unnamed and out and out[-1] == name:
            continue  # one dso![unknown] frame per run of unnamed frames in a dso, as perf_script folds them
        out.append(name)
    return tuple(out)


def _event(n: int, header: str, frames: list[tuple[int, str]], bad: Problems, other: dict,
           seen: dict) -> SchedEvent | None:
    m = _HEADER.match(header)
    if m is None:
        bad.add(n, HEADER_EXPECTED, header)
        return None
    event = m.group("event")
    kind = event.rpartition(":")[2]
    if kind not in SCHED_EVENTS:
        other[event] = other.get(event, 0) + 1
        return None
    if m.group("time") is None:
        bad.add(n, TIME_EXPECTED, header)
        return None
    tail = (m.group("tail") or "").strip()
    pid = int(m.group("pid"))
    tid = int(m.group("tid")) if m.group("tid") else pid
    ev = SchedEvent(n, m.group("comm"), pid, tid, time_ns(m.group("time")), kind)
    if kind == "sched_switch":
        p = next((r.match(tail) for r in _SWITCH if r.match(tail)), None)
        if p is None:
            bad.add(n, SWITCH_EXPECTED, header)
            return None
        ev.state, ev.prev_tid = p.group("state"), int(p.group("prev_pid"))
        ev.comm = p.group("prev_comm")  # the kernel's name of the thread (perf's header may say ':-1')
        ev.next_comm, ev.next_tid = p.group("next_comm"), int(p.group("next_pid"))
    else:
        p = next((r.match(tail) for r in _WAKEUP if r.match(tail)), None)
        if p is None:
            bad.add(n, WAKEUP_EXPECTED, header)
            return None
        ev.target_comm, ev.target_tid = p.group("comm"), int(p.group("pid"))
    ev.frames = _frames(frames, bad, seen)
    return ev


def read_events(path, bad: Problems, other: dict | None = None) -> Iterator[SchedEvent]:
    """The scheduler events of a ``perf script`` text (plain or gzip'd), in file order.

    Other events (cycles, ...) are counted into ``other`` by name and left
    out; ``#`` comment lines are skipped."""
    other = {} if other is None else other
    seen: dict[str, tuple[str, bool] | None] = {}  # frame line -> its frame (grows with distinct lines only)
    header: tuple[int, str] | None = None
    frames: list[tuple[int, str]] = []
    last = ""
    n = 0
    with open_text(path) as f:
        for n, raw in enumerate(f, 1):
            last = raw
            ln = raw.rstrip("\n")
            if not ln.strip():
                if header is not None:
                    ev = _event(*header, frames, bad, other, seen)
                    if ev is not None:
                        yield ev
                header, frames = None, []
                continue
            if ln[0] == "#":
                continue
            if ln[0] in " \t" and header is not None:
                frames.append((n, ln))
                continue
            if _HEADER.match(ln):
                if header is not None:  # no blank line between two events
                    ev = _event(*header, frames, bad, other, seen)
                    if ev is not None:
                        yield ev
                header, frames = (n, ln), []
                continue
            if header is not None:  # an unindented frame line (older perf)
                frames.append((n, ln))
                continue
            bad.add(n, HEADER_EXPECTED, ln)
    if last and not last.endswith("\n"):
        bad.add(n, CUT_EXPECTED, last)
        return
    if header is not None:
        ev = _event(*header, frames, bad, other, seen)
        if ev is not None:
            yield ev


def source_name(path) -> str:
    return display_name(path)
