"""Start the live runner as a child process and wait for it, whatever signals arrive.

The book builder (``make chapter SOURCE=live``) and a notebook's live cell
both run a chapter this way, so the run never happens inside a notebook
kernel.  The child gets a process group of its own, so a terminal's Ctrl-C or
a killed kernel does not hit it directly: the parent forwards SIGINT and
SIGTERM to it and goes on waiting while the child restores what it changed.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, Mapping

from .live import default_destination
from .targets import check_target_name

FORWARDED = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


@contextlib.contextmanager
def held_for_the_child():
    """The forwarded signals blocked in this thread while the child is created, so that it starts with them
    blocked: one forwarded while Python is still loading the child stays pending until ``contention_book.run``
    has said what it does with it (until then Python's own SIGINT handler would print a KeyboardInterrupt
    traceback from inside whatever import it interrupted).  A signal that reached this process meanwhile is
    handled when the block is lifted, and forwarded to the child, which then exists."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


class LiveRunInterrupted(KeyboardInterrupt):
    """The run was stopped by a signal; the child finished restoring before this was raised."""

    def __init__(self, message: str, returncode: int):
        super().__init__(message)
        self.returncode = returncode


class LiveRunFailed(RuntimeError):
    """The live runner exited with an error or was interrupted; ``returncode`` says which."""

    def __init__(self, message: str, returncode: int, recording: Path | None):
        super().__init__(message)
        self.returncode = returncode
        self.recording = recording


def runner_command(chapter: str, engine: str, *, target: str | None, params: Mapping[str, str],
                   record_to: Path, allow_server_changes: bool) -> list[str]:
    cmd = [sys.executable, "-m", "contention_book.run", chapter, "--engine", engine, "--record-to", str(record_to)]
    if target:
        cmd += ["--target", target]
    if allow_server_changes:
        cmd.append("--allow-server-changes")
    for name, value in params.items():
        cmd += ["--param", f"{name}={value}"]
    return cmd


def run_live(chapter: str, engine: str, *, target: str | None = None, params: Mapping[str, str] | None = None,
             record_to: str | None = None, allow_server_changes: bool = False,
             relay: Callable[[str], None] | None = None) -> Path:
    """Run ``python -m contention_book.run`` and return the recording it wrote.

    ``relay`` receives the child's output line by line (a notebook cell); without it the child
    writes straight to this process's terminal.  Raises :class:`LiveRunFailed` on a non-zero exit;
    after an interruption, once the child has finished restoring, raises :class:`LiveRunInterrupted`.
    """
    check_target_name(target)  # before it could reach a command line
    dest = default_destination(chapter, record_to, engine)
    cmd = runner_command(chapter, engine, target=target, params=params or {}, record_to=dest,
                         allow_server_changes=allow_server_changes)
    import tempfile

    from .runner import OUTCOME_ENV

    handle, outcome = tempfile.mkstemp(prefix="contention-book-run-", suffix=".outcome")
    os.close(handle)
    popen_kw: dict = {"env": {**os.environ, "PYTHONUNBUFFERED": "1", OUTCOME_ENV: outcome}}
    if os.name == "nt":
        popen_kw["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
    else:
        popen_kw["process_group"] = 0
    if relay is not None:
        popen_kw.update(stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    received: list[int] = []
    holder: dict = {"child": None}

    def forward(signum, frame):  # noqa: ARG001
        received.append(signum)
        child = holder["child"]
        if child is not None and child.poll() is None:
            holder["forwarded"] = True
            if os.name == "nt":
                child.send_signal(signal.CTRL_BREAK_EVENT)
            else:
                child.send_signal(signum)

    # Handlers first, then the child: a signal that lands while the child is being started is forwarded to it
    # as soon as it exists, never lost (a default SIGTERM would end this process and leave the run going).
    in_main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.getsignal(s) for s in FORWARDED} if in_main else {}
    reader = None
    try:
        for s in previous:
            signal.signal(s, forward)
        if not received:
            with held_for_the_child():
                holder["child"] = subprocess.Popen(cmd, **popen_kw)
        child = holder["child"]
        if child is None:  # stopped before the run was started: nothing to wait for
            raise LiveRunInterrupted(f"live run of {chapter} stopped by {signal.Signals(received[0]).name} before "
                                     "it started; nothing was started or changed", 128 + received[0])
        if received and not holder.get("forwarded"):
            forward(received[-1], None)
        if relay is not None:
            def pump() -> None:
                for line in child.stdout:
                    relay(line.rstrip("\n"))

            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
        while True:
            try:
                child.wait()
                break
            except KeyboardInterrupt:  # a handler we did not install (e.g. a kernel's): forward, keep waiting
                forward(signal.SIGINT, None)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        if reader is not None:
            reader.join(timeout=10)
        if holder["child"] is None:
            Path(outcome).unlink(missing_ok=True)
    try:  # the runner's last word when it did not complete: why it refused or failed
        why = Path(outcome).read_text(encoding="utf-8", errors="replace").strip()
        why = why.removeprefix("refused: ").removeprefix("failed: ")
    except OSError:
        why = ""
    finally:
        Path(outcome).unlink(missing_ok=True)
    recording = dest if dest.exists() else None
    if received or child.returncode >= 128 or child.returncode < 0:
        raise LiveRunInterrupted(f"live run of {chapter} interrupted (runner exit {child.returncode}); "
                                 + (f"recording kept incomplete: {recording}" if recording else
                                    "no recording was opened"), child.returncode)
    if child.returncode != 0:
        raise LiveRunFailed(f"live run of {chapter} on {engine} "
                            + ("refused" if child.returncode == 2 else "failed") + f" (exit {child.returncode})"
                            + (f"; its incomplete recording is {recording}" if recording else "")
                            + (f": {why}" if why else ""), child.returncode, recording)
    return dest
