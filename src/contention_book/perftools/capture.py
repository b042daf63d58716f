"""Record CPU stacks of running processes with Linux ``perf`` for a recording.

The harness wraps a workload in :func:`record_stacks`; on exit the stacks
are stored as gzip'd folded text (``<name>.folded.gz``, the process as the
root frame), ready for :func:`perftools.load` and for the book's flame
graphs.  Profiling is an extra: when perf is missing, not permitted, or
fails, nothing raises; the status object says ``ok=False`` and ``why``, and
the caller writes that into the recording's manifest::

    from contention_book.perftools.capture import record_stacks, perf_available

    print(perf_available().as_dict())          # optional: check up front
    with record_stacks([backend_pid, walwriter_pid], "data/ch02/run-1/stacks",
                       name="variant-a", frequency=999) as status:
        run_the_workload()                     # perf samples meanwhile
    manifest["stacks"] = status.as_dict()      # ok, why, path, samples, command
    if status.ok:
        profile = perftools.load(status.path)  # folded, process as first frame
                                               # (pass process_root=True)

What it runs: ``perf record -g -e cpu-clock -F <frequency> --sample-cpu -p
<pid,pid> -o <tmp>/perf.data -D -1 --control fifo:<ctl>,<ack>`` in its own
session: started with its events off, and turned on through the control
fifo, so the block begins only once perf samples (a perf without
``--control`` fails at the start, and the status says so).  It is stopped
with SIGINT when the block ends (however it ends), then ``perf script`` into a temporary
file, parsed by :mod:`perftools.importers.perf_script`.  Root can attach
to processes of other users (postgres backends); others need
``perf_event_paranoid`` <= 1 or CAP_PERFMON and ptrace rights.  The
recording runs until the block ends; there is no time limit.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from .errors import FormatError
from .importers import folded, perf_script

__all__ = ["CaptureStatus", "StackRecorder", "record_stacks", "perf_available", "OffCpuRecorder", "OffCpuStatus",
           "call_graph_args", "DEFAULT_CALL_GRAPH", "POSTGRES_OFFCPU_CALL_GRAPH", "start_offcpu", "finish_offcpu",
           "offcpu_row", "OFFCPU_COLUMNS"]

PARANOID = "/proc/sys/kernel/perf_event_paranoid"
#: How perf unwinds user stacks unless told otherwise (``PERFTOOLS_CALL_GRAPH`` overrides it): "fp" (frame
#: pointers, perf's -g), "dwarf[,BYTES]" (perf copies BYTES of each sample's user stack and unwinds it from
#: .eh_frame afterwards) or "lbr".  See :func:`call_graph_args` and book/perftools.md for the measurements.
DEFAULT_CALL_GRAPH = "fp"
SCRIPT_FIELDS = "comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso"


@dataclass
class CaptureStatus:
    """Outcome of a capture (or of an availability check); manifest-ready."""

    ok: bool = False
    why: str = ""
    path: str | None = None
    samples: int = 0
    pids: list[int] = field(default_factory=list)
    frequency: int = 999
    event: str = "cpu-clock"
    call_graph: str = ""
    data_bytes: int = 0          # perf.data's size: what the capture wrote while it ran
    perf_cpu_s: float | None = None  # CPU seconds perf record itself used (the kernel's work in the sampled
    #                                  threads is not in it: a run's throughput with and without says that)
    command: list[str] = field(default_factory=list)
    perf_version: str = ""
    paranoid: int | None = None
    started: float | None = None
    ended: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def call_graph_args(mode: str | None) -> list[str]:
    """perf record's options for a call-graph mode: ``fp`` -> ``-g``; ``dwarf,16384`` -> ``--call-graph
    dwarf,16384``; ``lbr``; None -> ``PERFTOOLS_CALL_GRAPH`` or :data:`DEFAULT_CALL_GRAPH`."""
    mode = (mode or os.environ.get("PERFTOOLS_CALL_GRAPH") or DEFAULT_CALL_GRAPH).strip()
    kind, _, size = mode.partition(",")
    if kind == "fp" and not size:
        return ["-g"]
    if kind == "lbr" and not size:
        return ["--call-graph", "lbr"]
    if kind == "dwarf" and (not size or (size.isdigit() and 8 <= int(size) <= 65528 and int(size) % 8 == 0)):
        return ["--call-graph", mode]
    raise ValueError(f"call graph {mode!r}: expected fp, lbr, dwarf or dwarf,BYTES (a multiple of 8 up to 65528)")


def _paranoid() -> int | None:
    try:
        return int(Path(PARANOID).read_text().strip())
    except (OSError, ValueError):
        return None


def _tail(text: str, n: int = 400) -> str:
    text = " ".join(text.strip().split())
    return text if len(text) <= n else "\u2026" + text[-n:]


def _precheck(perf: str, status: CaptureStatus) -> bool:
    """Fill version/paranoid; False (with why) when perf cannot work at all."""
    exe = shutil.which(perf)
    if exe is None:
        status.why = f"perf not found ({perf!r} is not an executable on PATH; install linux-perf)"
        return False
    r = _run_perf([exe, "--version"], "'perf --version'", status, 20)
    if r is None:
        return False
    status.perf_version = r.stdout.strip()
    status.paranoid = _paranoid()
    if os.geteuid() != 0 and status.paranoid is not None and status.paranoid > 2:
        status.why = (
            f"kernel.perf_event_paranoid is {status.paranoid} ({PARANOID}) and we are not root: perf may not sample "
            "(lower it to 1, or run as root / with CAP_PERFMON)"
        )
        return False
    return True


def _run_perf(cmd: list[str], what: str, status: CaptureStatus, timeout: float):
    """Run one short perf command; its result, or None with why in ``status``."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        status.why = f"{what} could not run: {exc}"
        return None
    if r.returncode != 0:
        status.why = f"{what} failed with code {r.returncode}: {_tail(r.stderr or r.stdout)}"
        return None
    return r


def perf_available(perf: str = "perf", *, probe: bool = True, timeout: float = 30.0) -> CaptureStatus:
    """Can we record stacks here?  ``probe`` runs a tiny real recording
    (``perf record -g -e cpu-clock -- true``) so permission problems show."""
    status = CaptureStatus()
    if not _precheck(perf, status):
        return status
    if probe:
        with tempfile.TemporaryDirectory(prefix="perftools-probe-") as tmp:
            cmd = [shutil.which(perf) or perf, "record", "-q", "-g", "-e", "cpu-clock", "-o", os.path.join(tmp, "probe.data"), "--", "true"]
            if _run_perf(cmd, f"perf probe ({' '.join(cmd[1:])})", status, timeout) is None:
                return status
    status.ok = True
    return status


class _PerfRun:
    """What both recorders share: one ``perf record`` child with its stderr in a temporary folder, stopped by
    :meth:`stop`, which never raises (profiling must not break the caller) and always removes the folder."""

    FAILED = "capture failed"  # how stop() words an unexpected error

    def _init_run(self, perf: str) -> None:
        self.perf = perf
        self._proc: subprocess.Popen | None = None
        self._tmp: str | None = None
        self._err = None

    def _spawn(self, command: list[str]) -> None:
        """Start ``command`` in its own session, its stderr kept in the run's temporary folder."""
        self._err = open(os.path.join(self._tmp, "record.err"), "w+")
        self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=self._err, start_new_session=True)

    def _enable(self, ctl: str, ack: str, timeout: float = 30.0) -> bool:
        """Ask perf to start its events; True once it says it has (False: it did not answer in time)."""
        import select

        # O_RDWR: opening a fifo's end never blocks then, even before perf has opened its own
        cfd, afd = os.open(ctl, os.O_RDWR | os.O_NONBLOCK), os.open(ack, os.O_RDWR | os.O_NONBLOCK)
        try:
            os.write(cfd, b"enable\n")
            deadline = time.monotonic() + timeout
            got = b""
            while time.monotonic() < deadline and self._proc is not None and self._proc.poll() is None:
                ready, _, _ = select.select([afd], [], [], 0.1)
                if ready:
                    got += os.read(afd, 64)
                    if b"ack" in got:
                        return True
            return False
        finally:
            os.close(cfd)
            os.close(afd)

    def _perf_data(self, st, rc: int, early: bool) -> str | None:
        """perf.data once perf has ended as asked (SIGINT) and written something, else None with why in ``st``."""
        if early or rc not in (0, -signal.SIGINT, 128 + signal.SIGINT):
            st.why = f"perf record exited with code {rc}: {_tail(self._stderr()) or 'no message'}"
            return None
        data = os.path.join(self._tmp or "", "perf.data")
        if not os.path.exists(data) or os.path.getsize(data) == 0:
            st.why = f"perf record wrote no data: {_tail(self._stderr()) or 'no message'}"
            return None
        st.data_bytes = os.path.getsize(data)
        return data

    def _stderr(self) -> str:
        if self._err is None:
            return ""
        self._err.flush()
        self._err.seek(0)
        return self._err.read()

    def _cleanup(self) -> None:
        if self._err is not None:
            self._err.close()
            self._err = None
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def stop(self):
        st = self.status
        try:
            self._stop(st)
        except Exception as exc:  # never let profiling break the caller
            st.ok = False
            st.why = f"{self.FAILED}: {type(exc).__name__}: {exc}"
        finally:
            self._cleanup()
        return st


class StackRecorder(_PerfRun):
    """``perf record`` of some pids between :meth:`start` and :meth:`stop`.

    :func:`record_stacks` is the usual entry point; this class is for code
    that cannot use a ``with`` block.  Neither method raises for perf's
    problems; :meth:`stop` returns the final :class:`CaptureStatus`.
    """

    def __init__(
        self,
        pids: Iterable[int],
        out,
        *,
        name: str = "stacks",
        frequency: int = 999,
        event: str = "cpu-clock",
        perf: str = "perf",
        process_root: bool = True,
        call_graph: str | None = None,
    ):
        out = Path(out)
        path = out if out.name.endswith(".folded.gz") else out / f"{name}.folded.gz"
        self.status = CaptureStatus(pids=[int(p) for p in pids], frequency=int(frequency), event=event, path=str(path))
        self.status.call_graph = (call_graph or os.environ.get("PERFTOOLS_CALL_GRAPH") or DEFAULT_CALL_GRAPH).strip()
        self.process_root = process_root
        self._init_run(perf)

    def start(self) -> CaptureStatus:
        st = self.status
        st.why = "recording"
        if not st.pids:
            st.why = "no process ids to record"
            return st
        if not _precheck(self.perf, st):
            return st
        try:
            self._tmp = tempfile.mkdtemp(prefix="perftools-rec-")
            data = os.path.join(self._tmp, "perf.data")
            ctl, ack = os.path.join(self._tmp, "ctl"), os.path.join(self._tmp, "ack")
            os.mkfifo(ctl)
            os.mkfifo(ack)
            # started disabled and enabled through the control fifo, as the off-CPU recorder is: start() returns
            # once perf says it samples, so a variant of 0.1 s is not over before perf has attached (under three
            # test workers one was, and its stacks came back empty)
            st.command = [
                shutil.which(self.perf) or self.perf, "record", *call_graph_args(st.call_graph), "-e", st.event,
                "-F", str(st.frequency),
                "--sample-cpu", "-p", ",".join(str(p) for p in st.pids), "-o", data,
                "-D", "-1", "--control", f"fifo:{ctl},{ack}",
            ]
            self._spawn(st.command)
            self._enable(ctl, ack)  # perf fails fast on a bad pid or missing permission: stop() reports it then
        except (OSError, ValueError) as exc:
            st.why = f"could not start perf: {exc}"
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
            return st
        st.started = time.time()
        return st

    FAILED = "stack capture failed"

    def _stop(self, st: CaptureStatus) -> None:
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        early, rc = _end(proc, st)
        if early and rc != 0:
            st.why = f"perf record exited with code {rc} at start: {_tail(self._stderr()) or 'no message'}"
            return
        data = self._perf_data(st, rc, early=False)
        if data is None:
            return
        script = os.path.join(self._tmp or "", "script.txt")
        exe = st.command[0]
        for fields in (["-F", SCRIPT_FIELDS], []):
            with open(script, "w") as out:
                r = subprocess.run([exe, "script", "-i", data, *fields], stdout=out, stderr=subprocess.PIPE, text=True, timeout=3600)
            if r.returncode == 0:
                break
        else:
            st.why = f"perf script failed with code {r.returncode}: {_tail(r.stderr)}"
            return
        if os.path.getsize(script) == 0:
            st.why = "perf recorded no samples (were the processes idle or gone?)"
            return
        try:
            # Stored as sample counts: the recordings' folded stacks and the
            # chapters' prose count samples ("n of N samples").
            profile = perf_script.load(script, weight="samples")
        except FormatError as exc:
            st.why = f"could not parse perf script output: {exc}"
            return
        dest = Path(st.path or "stacks.folded.gz")
        dest.parent.mkdir(parents=True, exist_ok=True)
        folded.write(profile, dest, process_root=self.process_root)
        st.samples = int(len(profile.samples))
        st.ok, st.why = True, ""


def _end(proc: subprocess.Popen, st) -> tuple[bool, int]:
    """Stop perf record with SIGINT (it then writes its file), reap it with its CPU time; (ended early, code)."""
    early = proc.poll() is not None
    if not early:
        proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 60
    while True:
        try:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:  # already reaped by poll(): no rusage left to read
            proc.wait()
            break
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            st.perf_cpu_s = round(usage.ru_utime + usage.ru_stime, 3)
            break
        if time.monotonic() > deadline:
            proc.kill()
            deadline = float("inf")
        time.sleep(0.02)
    st.ended = time.time()
    return early, proc.returncode


@contextlib.contextmanager
def record_stacks(pids: Iterable[int], out, **options) -> Iterator[CaptureStatus]:
    """Sample ``pids`` with perf while the block runs; see the module doc.

    ``out``: a directory (the file is ``<out>/<name>.folded.gz``) or a path
    ending in ``.folded.gz``.  Yields the :class:`CaptureStatus`, final once
    the block has exited.  Exceptions from the block propagate; perf's own
    problems never do.  ``options`` are :class:`StackRecorder`'s (name, frequency, event, perf, process_root,
    call_graph).
    """
    rec = StackRecorder(pids, out, **options)
    status = rec.start()
    try:
        yield status
    finally:
        rec.stop()


@dataclass
class OffCpuStatus:
    """Outcome of an off-CPU capture (:class:`OffCpuRecorder`); manifest- and CSV-ready."""

    ok: bool = False
    why: str = ""
    offcpu_path: str | None = None
    wakeup_path: str | None = None
    pids: list[int] = field(default_factory=list)
    comms: list[str] = field(default_factory=list)
    call_graph: str = "fp"
    events: int = 0              # scheduler events perf recorded (after the kernel's filter)
    intervals: int = 0           # blocked intervals folded
    blocked_us: int = 0          # their total
    open_at_end: int = 0         # intervals still open at the end: dropped (perftools.offcpu)
    began_before: int = 0        # intervals that began before the capture: dropped
    wakeup_us: int = 0           # blocked time attributed to a waker's stack
    data_bytes: int = 0
    perf_cpu_s: float | None = None  # perf record's own CPU seconds
    window_s: float | None = None    # seconds it recorded
    fold_s: float | None = None      # seconds perf script and the folding took after the window (not in it)
    command: list[str] = field(default_factory=list)
    started: float | None = None
    ended: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def perf_cpu_per_s(self) -> float:
        """perf record's CPU seconds per second recorded (NaN when unknown)."""
        w = self.window_s or 0.0
        return self.perf_cpu_s / w if self.perf_cpu_s is not None and w > 0 else float("nan")


def _filters(pids: list[int], comms: list[str]) -> tuple[str, str]:
    """Kernel-side filters for sched_switch and sched_waking: only the watched threads' events reach perf."""
    if pids:
        switch = " || ".join([f"prev_pid == {p}" for p in pids] + [f"next_pid == {p}" for p in pids])
        waking = " || ".join(f"pid == {p}" for p in pids)
    else:
        switch = " || ".join([f'prev_comm == "{c[:15]}"' for c in comms] + [f'next_comm == "{c[:15]}"' for c in comms])
        waking = " || ".join(f'comm == "{c[:15]}"' for c in comms)
    return switch, waking


class OffCpuRecorder(_PerfRun):
    """Scheduler events of some threads between :meth:`start` and :meth:`stop`, stored folded.

    ``perf record -e sched:sched_switch --filter .. -e sched:sched_waking
    --filter .. -a -g``: system-wide, because a thread's switch-*in* is
    recorded in the context of the thread it replaces, which per-process
    recording would miss; the kernel's tracepoint filter keeps only the
    watched threads' events (by pid, or by name for a program's threads).
    On stop, :func:`perftools.offcpu.offcpu` and :func:`~perftools.offcpu.wakeup`
    fold them into ``<out>/<name>.offcpu-folded.gz`` and
    ``<name>.wakeup-folded.gz`` (µs blocked, the process as the root frame;
    not ``.folded.gz``, which a recording reads as a CPU profile).  Like
    :class:`StackRecorder`, nothing raises for perf's problems: the status
    says ``ok`` and ``why``.
    """

    def __init__(self, out, *, name: str, pids: Iterable[int] = (), comms: Iterable[str] = (), perf: str = "perf",
                 call_graph: str | None = "fp", threads_only: bool = False):
        out = Path(out)
        self.status = OffCpuStatus(pids=[int(p) for p in pids], comms=[str(c) for c in comms],
                                   offcpu_path=str(out / f"{name}.offcpu-folded.gz"),
                                   wakeup_path=str(out / f"{name}.wakeup-folded.gz"),
                                   call_graph=(call_graph or DEFAULT_CALL_GRAPH))
        self.threads_only = threads_only
        self._init_run(perf)
        self._t0 = 0.0

    def start(self) -> OffCpuStatus:
        st = self.status
        if not st.pids and not st.comms:
            st.why = "no process ids or names to record"
            return st
        probe = CaptureStatus()
        if not _precheck(self.perf, probe):
            st.why = probe.why
            return st
        try:
            self._tmp = tempfile.mkdtemp(prefix="perftools-offcpu-")
            switch, waking = _filters(st.pids, st.comms)
            ctl, ack = os.path.join(self._tmp, "ctl"), os.path.join(self._tmp, "ack")
            os.mkfifo(ctl)
            os.mkfifo(ack)
            # -D -1: the events start disabled; 'enable' on the control fifo turns them on and perf answers 'ack'
            # once they are, so the caller's workload never starts before the capture does (on a loaded
            # machine perf took 1.4 s to set up system-wide tracing)
            st.command = [shutil.which(self.perf) or self.perf, "record", "-a", *call_graph_args(st.call_graph),
                          "-e", "sched:sched_switch", "--filter", switch, "-e", "sched:sched_waking",
                          "--filter", waking, "-D", "-1", "--control", f"fifo:{ctl},{ack}",
                          "-o", os.path.join(self._tmp, "perf.data")]
            self._spawn(st.command)
            acked = self._enable(ctl, ack)
        except (OSError, ValueError) as exc:
            st.why = f"could not start perf: {exc}"
            if self._proc is not None and self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
            self._proc = None
            return st
        st.started, self._t0 = time.time(), time.monotonic()
        st.why = "recording" if acked else "recording (perf did not confirm it had started within 30 s)"
        return st

    FAILED = "off-CPU capture failed"

    def cancel(self, why: str) -> OffCpuStatus:
        """Stop perf and keep nothing (the workload failed or was stopped: no minutes of folding then)."""
        st = self.status
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        st.ok, st.why = False, why
        self._cleanup()
        return st

    def _stop(self, st: OffCpuStatus) -> None:
        from . import offcpu

        proc, self._proc = self._proc, None
        if proc is None:
            return
        early, rc = _end(proc, st)
        st.window_s = round(time.monotonic() - self._t0, 3)
        data = self._perf_data(st, rc, early)
        if data is None:
            return
        t0 = time.monotonic()
        script = os.path.join(self._tmp or "", "script.txt")
        with open(script, "w") as out:
            r = subprocess.run([st.command[0], "script", "-i", data, "-F",
                                "comm,pid,tid,cpu,time,event,trace,ip,sym,dso"],
                               stdout=out, stderr=subprocess.PIPE, text=True, timeout=3600)
        if r.returncode != 0:
            st.why = f"perf script failed with code {r.returncode}: {_tail(r.stderr)}"
            return
        who = {"tids": st.pids} if st.pids else {"comms": st.comms}
        who["threads_only"] = self.threads_only
        off, wake = offcpu.offcpu_and_wakeup(script, **who)
        st.events = sum(off.events.values())
        st.intervals, st.blocked_us = off.intervals, off.total_us
        st.open_at_end, st.began_before, st.wakeup_us = off.open_at_end, off.began_before, wake.total_us
        if not off.stacks:
            st.why = f"no blocked intervals of the watched threads in {st.events:,} scheduler events"
            return
        for result, dest in ((off, st.offcpu_path), (wake, st.wakeup_path)):
            Path(dest).parent.mkdir(parents=True, exist_ok=True)
            folded.write_lines(result.lines(), dest)
        st.fold_s = round(time.monotonic() - t0, 3)
        st.ok, st.why = True, ""


#: The columns of a recording's ``stacks/offcpu_captures.csv`` (declared in harness.spec as OFFCPU_CAPTURES).
OFFCPU_COLUMNS = ("variant", "sessions", "repetition", "threads", "call_graph", "window_s", "events", "intervals",
                  "blocked_us", "open_at_end", "began_before", "wakeup_us", "perf_cpu_s", "perf_cpu_per_s",
                  "data_bytes", "fold_s")


def offcpu_row(status: OffCpuStatus, **keys) -> dict:
    """One ``stacks/offcpu_captures.csv`` row: the point's keys, what the capture folded and what it cost."""
    d = status.as_dict()
    row = {**keys, **{c: d.get(c) for c in OFFCPU_COLUMNS if c in d}}
    row["perf_cpu_per_s"] = status.perf_cpu_per_s
    return {c: row.get(c) for c in OFFCPU_COLUMNS}


#: The off-CPU capture's call graph for a PostgreSQL server's backends.  Measured on the LMAX ring's consumers
#: (2 producers, 2 consumers, 5 s, a busy 2-CPU machine): with frame pointers a semaphore wait's stack ends at
#: libc's futex call (libc keeps no frame pointers), so an LWLock sleep cannot be told from any other; with
#: ``dwarf,8192`` it reads heap_lock_tuple > LWLockAcquire > PGSemaphoreLock > sem_wait.  Its price: perf.data
#: 53 MB instead of 1.9 MB, perf record 78 instead of 55 ms of CPU per second, and 97 s instead of 5 s of
#: perf script after the window (outside the measured window).
POSTGRES_OFFCPU_CALL_GRAPH = "dwarf,8192"


def start_offcpu(writer, name: str, *, pids=(), comms=(), perf: str | None = None,
                 threads_only: bool = False, call_graph: str = "fp") -> OffCpuRecorder:
    """An :class:`OffCpuRecorder` into ``writer``'s ``stacks/`` (a recording writer: ``file_path``,
    ``append_csv``, ``add_note``), started.  ``PERF`` names another perf binary, as for CPU stacks;
    ``PERFTOOLS_OFFCPU_CALL_GRAPH`` overrides ``call_graph`` (see :func:`call_graph_args`)."""
    rec = OffCpuRecorder(writer.file_path("stacks/offcpu_captures.csv").parent, name=name, pids=pids, comms=comms,
                         perf=perf or os.environ.get("PERF", "perf"), threads_only=threads_only,
                         call_graph=os.environ.get("PERFTOOLS_OFFCPU_CALL_GRAPH") or call_graph)
    rec.start()
    return rec


def finish_offcpu(writer, recorder: OffCpuRecorder | None, log=None, *, failed: bool = False,
                  **keys) -> OffCpuStatus | None:
    """Stop an off-CPU capture; keep its stacks and its row, or note why there are none (no partial files).
    ``failed``: the point did not finish (an exception is on its way): perf is stopped, nothing is kept."""
    if recorder is None:
        return None
    import pandas as pd

    st = recorder.cancel("the point did not finish") if failed else recorder.stop()
    name = Path(st.offcpu_path or "x").name.split(".")[0]
    if st.ok:
        writer.append_csv("stacks/offcpu_captures.csv", pd.DataFrame([offcpu_row(st, **keys)]))
        if log:
            log(f"[off-CPU] {name}: {st.intervals:,} blocked intervals, {st.blocked_us / 1e6:,.2f} s blocked in "
                f"{st.window_s:.1f} s; perf {st.perf_cpu_s} s CPU ({st.perf_cpu_per_s * 1e3:.0f} ms per s), "
                f"{st.data_bytes / 1e6:.1f} MB")
        return st
    writer.add_note(f"off-CPU stacks for {name}: not recorded: {st.why}")
    for p in (st.offcpu_path, st.wakeup_path):
        if p and Path(p).exists():
            Path(p).unlink()
    return st
