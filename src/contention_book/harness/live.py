"""What every live chapter run shares: its target, its recording, its provenance.

``live_target`` turns a run's ``target``/``engine`` into a connected
:class:`~contention_book.harness.targets.Target` (starting the embedded
PostgreSQL when no target is named), and ``measured_writer`` opens a
recording whose manifest carries the tool version, the git commit and the
exact command.  :mod:`.runner` puts them together for every chapter.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping

from . import recording as rec
from .targets import Target, TargetError, resolve_target, server_host, server_version

COMMAND_ENV = "CONTENTION_BOOK_COMMAND"


@contextlib.contextmanager
def live_target(target: str | None, engine: str, log=print, connections: int = 100) -> Iterator[Target]:
    """Resolve ``target``; with none and engine postgres, use the embedded cluster."""
    if not target:
        if engine != "postgres":
            raise TargetError(
                f"engine {engine!r} needs a target: the name of an ODBC DSN or of an environment variable "
                "holding a connection string (see the book's page on running against your own instance)"
            )
        from .embedded_pg import embedded

        with embedded(log=log, max_connections=connections) as var:
            yield _checked(resolve_target(var, engine), engine)
        return
    yield _checked(resolve_target(target, engine), engine)


def _checked(target: Target, engine: str) -> Target:
    conn = target.connect()
    conn.close()
    if target.engine != engine:
        raise TargetError(f"target {target.name!r} is {target.engine}, but the chapter was asked for engine {engine!r}")
    return target


def git_commit() -> str | None:
    """The commit the run's code came from, "-dirty" when code differs from it.

    Recordings under data/ are the runs' output, not their code: a reference re-made after another one (which
    changed data/) comes from the same clean commit, so data/ does not count; untracked files elsewhere do.
    """
    root = str(rec.repo_root())
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"],
                              capture_output=True, text=True, timeout=10)
        changed = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", ".", ":(exclude)data"],
                                 capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = head.stdout.strip()
    if head.returncode != 0 or not commit:
        return None
    return commit + ("-dirty" if changed.returncode != 0 or changed.stdout.strip() else "")


def recording_id(engine: str, label: str = "") -> str:
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"measured-{engine}-{stamp}{'-' + label if label else ''}"


def default_destination(chapter: str, record_to: str | None, engine: str) -> Path:
    """``record_to`` may be a recording directory to create, or a folder to create it in."""
    if record_to:
        path = Path(record_to).expanduser()
        if path.exists() and path.is_dir() and not (path / rec.MANIFEST).exists():
            return path / recording_id(engine)
        return path
    return rec.data_root() / chapter / recording_id(engine)


def measured_writer(target: Target, chapter: str, parameters: Mapping[str, Any], command: str,
                    dest: Path, title: str) -> rec.RecordingWriter:
    conn = target.connect()
    try:
        engine = server_version(conn, target.engine)
        host = server_host(conn, target.engine)
        client = target.client_description(conn)  # which client ran: recordings made with each must say so
    finally:
        conn.close()
    return rec.RecordingWriter(dest, chapter=chapter, kind="measured", engine=engine, host=host,
                               parameters=dict(parameters), title=title,
                               measured={**provenance(command), "client": client})


def provenance(command: str) -> dict[str, Any]:
    """The manifest's ``measured`` block: which code, which commit, which command."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        tool_version = version("contention-book")
    except PackageNotFoundError:
        tool_version = "unknown"
    return {"tool": "contention-book harness", "tool_version": tool_version, "git_commit": git_commit(),
            "command": command, "python": f"{platform.python_implementation()} {sys.version.split()[0]}"}


def start_stacks(writer: rec.RecordingWriter, variant: str, pids: list[int]):
    """perf on ``pids`` into ``stacks/<variant>.folded.gz``; perf's own problems never stop a run.

    The PERF environment variable names another perf binary (or a missing one,
    which tests use to check that a run goes on without stacks).
    """
    from contention_book.perftools.capture import StackRecorder

    recorder = StackRecorder(pids, writer.file_path(f"stacks/{variant}.folded.gz"), perf=os.environ.get("PERF", "perf"))
    recorder.start()
    return recorder


def finish_stacks(writer: rec.RecordingWriter, variant: str, recorder, log, what: str = "") -> None:
    """Stop perf; keep the stacks, or leave a note saying why there are none and drop the partial file."""
    if recorder is None:
        return
    status = recorder.stop()
    if status.ok:
        log(f"[{writer.manifest['chapter']}] {variant}: {status.samples:,} stack samples{what or ' recorded'}")
        return
    writer.add_note(f"stacks for {variant}: not recorded: {status.why}")
    path = writer.file_path(f"stacks/{variant}.folded.gz")
    if path.exists():
        path.unlink()
