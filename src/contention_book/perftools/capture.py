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
<pid,pid> -o <tmp>/perf.data`` in its own session, stopped with SIGINT when
the block ends (however it ends), then ``perf script`` into a temporary
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

__all__ = ["CaptureStatus", "StackRecorder", "record_stacks", "perf_available"]

PARANOID = "/proc/sys/kernel/perf_event_paranoid"
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
    command: list[str] = field(default_factory=list)
    perf_version: str = ""
    paranoid: int | None = None
    started: float | None = None
    ended: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


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
    try:
        r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        status.why = f"perf could not run: {exc}"
        return False
    if r.returncode != 0:
        status.why = f"'perf --version' failed with code {r.returncode}: {_tail(r.stderr or r.stdout)}"
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


def perf_available(perf: str = "perf", *, probe: bool = True, timeout: float = 30.0) -> CaptureStatus:
    """Can we record stacks here?  ``probe`` runs a tiny real recording
    (``perf record -g -e cpu-clock -- true``) so permission problems show."""
    status = CaptureStatus()
    if not _precheck(perf, status):
        return status
    if probe:
        with tempfile.TemporaryDirectory(prefix="perftools-probe-") as tmp:
            cmd = [shutil.which(perf) or perf, "record", "-q", "-g", "-e", "cpu-clock", "-o", os.path.join(tmp, "probe.data"), "--", "true"]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            except (OSError, subprocess.TimeoutExpired) as exc:
                status.why = f"perf probe failed: {exc}"
                return status
            if r.returncode != 0:
                status.why = f"perf probe ({' '.join(cmd[1:])}) failed with code {r.returncode}: {_tail(r.stderr)}"
                return status
    status.ok = True
    return status


class StackRecorder:
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
    ):
        out = Path(out)
        path = out if out.name.endswith(".folded.gz") else out / f"{name}.folded.gz"
        self.status = CaptureStatus(pids=[int(p) for p in pids], frequency=int(frequency), event=event, path=str(path))
        self.perf, self.process_root = perf, process_root
        self._proc: subprocess.Popen | None = None
        self._tmp: str | None = None
        self._err = None

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
            st.command = [
                shutil.which(self.perf) or self.perf, "record", "-g", "-e", st.event, "-F", str(st.frequency),
                "--sample-cpu", "-p", ",".join(str(p) for p in st.pids), "-o", data,
            ]
            self._err = open(os.path.join(self._tmp, "record.err"), "w+")
            self._proc = subprocess.Popen(
                st.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._err, start_new_session=True
            )
        except OSError as exc:
            st.why = f"could not start perf: {exc}"
            self._proc = None
            return st
        st.started = time.time()
        # perf fails fast on a bad pid or missing permission; notice it now.
        for _ in range(10):
            if self._proc.poll() is not None:
                break
            time.sleep(0.03)
        return st

    def _stderr(self) -> str:
        if self._err is None:
            return ""
        self._err.flush()
        self._err.seek(0)
        return self._err.read()

    def stop(self) -> CaptureStatus:
        st = self.status
        try:
            self._stop(st)
        except Exception as exc:  # never let profiling break the caller
            st.ok = False
            st.why = f"stack capture failed: {type(exc).__name__}: {exc}"
        finally:
            if self._err is not None:
                self._err.close()
                self._err = None
            if self._tmp:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None
        return st

    def _stop(self, st: CaptureStatus) -> None:
        proc = self._proc
        if proc is None:
            return
        self._proc = None
        early = proc.poll() is not None
        if not early:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        st.ended = time.time()
        rc = proc.returncode
        if early and rc != 0:
            st.why = f"perf record exited with code {rc} at start: {_tail(self._stderr()) or 'no message'}"
            return
        if rc not in (0, -signal.SIGINT, 128 + signal.SIGINT) and not early:
            st.why = f"perf record exited with code {rc}: {_tail(self._stderr()) or 'no message'}"
            return
        data = os.path.join(self._tmp or "", "perf.data")
        if not os.path.exists(data) or os.path.getsize(data) == 0:
            st.why = f"perf record wrote no data: {_tail(self._stderr()) or 'no message'}"
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


@contextlib.contextmanager
def record_stacks(
    pids: Iterable[int],
    out,
    *,
    name: str = "stacks",
    frequency: int = 999,
    event: str = "cpu-clock",
    perf: str = "perf",
    process_root: bool = True,
) -> Iterator[CaptureStatus]:
    """Sample ``pids`` with perf while the block runs; see the module doc.

    ``out``: a directory (the file is ``<out>/<name>.folded.gz``) or a path
    ending in ``.folded.gz``.  Yields the :class:`CaptureStatus`, final once
    the block has exited.  Exceptions from the block propagate; perf's own
    problems never do.
    """
    rec = StackRecorder(pids, out, name=name, frequency=frequency, event=event, perf=perf, process_root=process_root)
    status = rec.start()
    try:
        yield status
    finally:
        rec.stop()
