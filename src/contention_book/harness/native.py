"""Build and run the C microbenchmarks in ``native/``, and record what they print.

Each program is one file, ``native/<name>.c``, built by ``make native`` into
``native/build/<name>``.  A program prints CSV on stdout (a header, then
rows) and progress on stderr; :func:`run` passes stderr through so long
sweeps show their progress, and parses stdout into a DataFrame.  The
recording's engine block names the compiler, and its host block comes from
this machine's lscpu.
"""
from __future__ import annotations

import io
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from . import interrupts
from . import recording as rec
from .host import local_host
from .live import provenance


class NativeError(RuntimeError):
    pass


def native_dir() -> Path:
    return rec.repo_root() / "native"


def build(program: str) -> Path:
    """``make native/build/<program>``; a clear error when there is no compiler or make."""
    source = native_dir() / f"{program}.c"
    if not source.exists():
        known = sorted(p.stem for p in native_dir().glob("*.c"))
        raise NativeError(f"no native program {program!r} ({source} does not exist); expected one of: {', '.join(known)}")
    for tool in ("make", "cc"):
        if shutil.which(tool) is None:
            raise NativeError(f"building {source.name} needs `{tool}` on PATH: install a C toolchain "
                              "(Debian: apt-get install build-essential)")
    proc = subprocess.run(["make", "--no-print-directory", f"native/build/{program}"], cwd=rec.repo_root(),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise NativeError(f"building native/{program}.c failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return native_dir() / "build" / program


def compiler() -> str:
    """The compiler's first --version line, for the manifest."""
    try:
        out = subprocess.run(["cc", "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown compiler"
    return out.splitlines()[0].strip() if out else "unknown compiler"


def run(program: str, args: Sequence[str] = (), *, timeout_s: float | None = None,
        pin: Sequence[int] | None = None) -> pd.DataFrame:
    """Build (if needed) and run ``program``; its CSV stdout as a DataFrame.

    ``pin`` runs it under ``taskset -c`` on those CPUs.  stderr goes to ours
    as it arrives, so a notebook or a terminal shows the program's progress.
    """
    exe = build(program)
    cmd = [str(exe), *map(str, args)]
    if pin:
        if shutil.which("taskset") is None:
            raise NativeError("pinning needs `taskset` (util-linux)")
        cmd = ["taskset", "-c", ",".join(map(str, pin)), *cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=die_with_parent if sys.platform == "linux" else None)
    tail: list[str] = []

    def relay() -> None:  # progress lines reach the reader as they come
        for line in proc.stderr:
            sys.stderr.write(line)
            sys.stderr.flush()
            tail.append(line)
            del tail[:-20]

    chunks: list[str] = []
    readers = [threading.Thread(target=relay, daemon=True),
               threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)]
    for t in readers:
        t.start()
    try:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:  # in slices, so a stop signal whose raise was dropped (at the fork) still stops the wait
            interrupts.raise_if_pending()
            left = None if deadline is None else deadline - time.monotonic()
            try:
                proc.wait(timeout=0.2 if left is None else max(0.0, min(0.2, left)))
                break
            except subprocess.TimeoutExpired:
                if left is not None and left <= 0.2:
                    raise
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        proc.wait()
        raise NativeError(f"{program} ran past {timeout_s} s: {' '.join(cmd)}") from exc
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    for t in readers:
        t.join(timeout=5)
    out = "".join(chunks)
    if proc.returncode != 0:
        raise NativeError(f"{' '.join(cmd)} failed (exit {proc.returncode}): {''.join(tail).strip()[-2000:]}")
    return parse_csv(out, where=f"stdout of {' '.join(cmd)}")


def die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGKILL it if the run that started it dies, even by SIGKILL."""
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def parse_csv(text: str, *, where: str) -> pd.DataFrame:
    """The programs' CSV; an error that says where when it is empty or ragged."""
    if not text.strip():
        raise NativeError(f"{where}: expected CSV (a header and rows), got nothing")
    try:
        return pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise NativeError(f"{where}: not the expected CSV: {exc}") from exc


def writer(dest: Path, *, chapter: str, parameters: Mapping[str, Any], command: str, title: str,
           programs: Sequence[str] = ()) -> rec.RecordingWriter:
    """A measured recording whose engine is ``native`` (the compiler) on this machine."""
    engine = {"name": "native", "version": compiler(), "build": None, "edition": None,
              "settings": {"programs": list(programs)} if programs else {}}
    host = local_host()
    host["source"] = "lscpu on the machine that ran the native programs"
    return rec.RecordingWriter(dest, chapter=chapter, kind="measured", engine=engine, host=host,
                               parameters=dict(parameters), title=title, measured=provenance(command))
