"""A live run is a plain process: ``python -m contention_book.run <chapter> --engine ...``.

It runs a chapter's workloads and writes a recording, and it owns what it
changes.  It prints its plan and its progress to the terminal.  On SIGINT or
SIGTERM (SIGBREAK on Windows) it stops the sessions, lets every guard restore
what it changed, marks the recording ``incomplete`` with the reason and exits
130 or 143.  A second signal while it is stopping is reported and ignored, so
it cannot cut a restore short.

    python -m contention_book.run logcache-spinlock --engine postgres --param sessions=1,2
    python -m contention_book.run ghost-cleanup --engine sqlserver --target MY_DSN --allow-server-changes
    python -m contention_book.run latch-fairness --engine native --help-params

Start-up goes: parameters, the run's locks (its chapter on this machine, in
CONTENTION_BOOK_LOCK_DIR or the checkout's .cache; the native benchmarks or
the embedded cluster), the target (within its connect timeout; SQL Server's
preflight), then the quiet-machine wait.  A session whose server goes away
tries to reconnect for CONTENTION_BOOK_RECONNECT_BUDGET_S (30 s), then the
run ends with its recording incomplete, naming the point.

Exit status: 0 complete; 1 the run failed (the recording says why);
2 refused before anything started (parameters, another run holding a lock,
target, an existing recording); 128 + the signal's number when interrupted.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from . import guard, interrupts
from .interrupts import RunInterrupted  # noqa: F401 (the runner's callers catch it here)
from .checkout import repo_root
from .guard import RestoreFailed, ServerChangeNotAllowed
from .ownership import check_connections, connections_needed, database_lock, local_lock
from .params import ParameterError, describe, parse, split_assignments
from .redaction import redact
from .targets import ENGINES, Target, TargetError, check_identifier, check_target_name, ensure_own_database

if TYPE_CHECKING:
    from . import recording as rec
    from .spec import ChapterSpec
# The recording machinery (pandas, jsonschema) and the chapters load after the run's locks are taken, so a second
# run is refused before it spends seconds importing them on a busy machine (main, hold_run_locks).

SEAL_PAUSE_ENV = "CONTENTION_BOOK_TEST_SEAL_PAUSE_S"  # tests only: seconds to wait just before sealing
EXIT_FAILED = 1
EXIT_REFUSED = 2
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK")
                     if hasattr(signal, name))


class RunFailed(RuntimeError):
    """Something went wrong after the run had started (a lost server, say): a failure, not a refusal."""


class RunLog:
    """Prints a run's lines (redacted) and keeps them for the recording's ``run.log``.

    Signal handlers log through :meth:`from_signal`, which never waits for the lock: a handler runs in
    the main thread between two bytecodes, possibly while that same thread is inside this log writing
    a line, and waiting there would wait forever (a second SIGTERM during the first one's line did).
    """

    def __init__(self, echo: Callable[[str], None] | None = None):
        self.echo = echo or (lambda line: print(line, flush=True))
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self._file = None
        self._pending: list[str] = []  # lines from signal handlers that found the log busy

    def attach(self, path: Path) -> None:
        """Write every line to ``path`` as it comes, so even a run killed by SIGKILL leaves its log."""
        with self._lock:
            self._file = open(path, "a", encoding="utf-8")
            self._file.write("".join(line + "\n" for line in self.lines))
            self._file.flush()

    def detach(self) -> None:
        with self._lock:
            self._emit()
            if self._file is not None:
                self._file.close()
                self._file = None

    def __call__(self, message: Any) -> None:
        line = redact(str(message))
        with self._lock:
            self._emit(line)

    def from_signal(self, message: Any) -> None:
        """Log from a signal handler: now if the log is free, else with the next line written."""
        line = redact(str(message))
        if self._lock.acquire(blocking=False):
            try:
                self._emit(line)
            finally:
                self._lock.release()
        else:
            self._pending.append(line)

    def _emit(self, line: str | None = None) -> None:
        """Keep, write and echo the pending lines and ``line`` (the caller holds the lock)."""
        lines, self._pending = self._pending, []
        if line is not None:
            lines.append(line)
        for one in lines:
            self.lines.append(one)
            if self._file is not None:
                self._file.write(one + "\n")
                self._file.flush()
            self.echo(one)

    def text(self) -> str:
        with self._lock:
            self._emit()
            return "\n".join(self.lines) + "\n"


@contextlib.contextmanager
def stop_signals(log: Callable[[str], None]) -> Iterator[dict]:
    """Turn the first stop signal into :class:`RunInterrupted`; later ones are only reported.

    Yields a dict whose ``"signum"`` is set once a signal arrived.  Only the
    main thread can install handlers; elsewhere (a test calling
    :func:`run_chapter` from a thread) this does nothing.
    """
    state: dict[str, Any] = {"signum": None}
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    log = getattr(log, "from_signal", log)

    def handler(signum, frame):  # noqa: ARG001 - the signal module's signature
        if state["signum"] is None:
            state["signum"] = signum
            interrupts.arrived(signum)  # raised again where the run waits, should this raise be dropped
            log(f"[run] {signal.Signals(signum).name} received: stopping the sessions and restoring what this "
                "run changed (a second signal will not cut that short)")
            raise RunInterrupted(signum)
        log(f"[run] {signal.Signals(signum).name} received again: still restoring, please wait")

    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    interrupts.clear()
    for s in STOP_SIGNALS:
        signal.signal(s, handler)
    if hasattr(signal, "pthread_sigmask"):  # harness.launch starts a run with them held: one that came meanwhile lands
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    try:
        yield state
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        interrupts.clear()


@dataclass
class RunContext:
    """Everything a chapter's runner gets; every runner takes exactly this."""

    spec: ChapterSpec
    engine: str
    params: dict[str, Any]
    writer: rec.RecordingWriter
    log: Callable[[str], None]
    target: Target | None = None
    allow_server_changes: bool = False
    command: str = ""

    @property
    def database(self) -> str | None:
        return self.params.get("database")

    @property
    def variants(self) -> list[str]:
        return list(self.params.get("variants") or self.spec.variants[self.engine])

    def check_balanced(self, key: str, rows) -> None:
        """Call at the end of each point with the rows just measured for layout table ``key``: a point that does
        not balance (messages lost, a consumer idle beside a full backlog, fewer updates than asked) fails the run
        here, naming the point and the identity, instead of landing in a recording."""
        import pandas as pd

        from .spec import Unbalanced, check_balanced

        frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows) if not isinstance(rows, dict)
                                                                          else [rows])
        try:
            check_balanced(self.spec.layout[key], frame, self.engine, where=self.spec.layout[key].path)
        except Unbalanced as exc:
            raise RunFailed(f"the point does not balance: {exc}") from None

    def progress(self, total: int | None, desc: str, unit: str = "op"):
        from .progress import progress

        return progress(total, desc, unit, log=self.log)


Runner = Callable[[RunContext], None]


def resolve_params(spec: ChapterSpec, engine: str, raw: Mapping[str, Any]) -> dict[str, Any]:
    """The run's typed parameters, checked before anything starts."""
    if engine not in spec.engines:
        raise ParameterError(f"engine {engine!r}: chapter {spec.chapter} runs on {', '.join(spec.engines)}")
    params = parse(spec.params, raw, engine)
    if params.get("database") is not None:
        check_identifier(params["database"], "database")
    return params


def check_destination(dest: Path) -> None:
    """Refuse a recording path this user cannot create, naming the folder and why, before anything starts.

    The nearest folder that exists must be a folder, and a directory must be creatable in it: that is tried
    (and removed at once), since permission bits say nothing for root or a read-only file system.
    """
    import tempfile

    where = dest.parent
    while not where.exists() and where.parent != where:
        where = where.parent
    if not where.is_dir():
        raise ParameterError(f"RECORD_TO (--record-to) {dest}: {where} is a file, not a folder; expected a folder this user "
                             "can write in")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".contention-book-probe-", dir=where))
    except OSError as exc:
        raise ParameterError(f"RECORD_TO (--record-to) {dest}: cannot write in {where} ({exc.strerror or exc}); expected a "
                             "folder this user can write in") from None


def check_request(spec: ChapterSpec, engine: str, raw: Mapping[str, Any], *, target: str | None = None,
                  record_to: str | None = None) -> tuple[dict[str, Any], Path]:
    """Everything a run refuses before it starts (target name, parameters, destination): typed parameters and
    the recording's path.  The book calls it too, so a refusal is the last thing ``make chapter`` prints."""
    from . import recording as rec
    from .live import default_destination

    check_target_name(target)
    check_environment()
    params = resolve_params(spec, engine, raw)
    dest = default_destination(spec.chapter, record_to, engine)
    if dest.exists():
        raise rec.RecordingExistsError(f"recording {dest} already exists; refusing to overwrite it")
    check_destination(dest)
    return params, dest


def check_environment() -> None:
    """The settings a run reads from the environment (the quiet-machine wait, the reconnect budget), checked
    before anything starts, so a typo is refused naming the variable instead of failing mid-run."""
    from .driver import reconnect_budget_s
    from .host import wait_limit
    from .progress import interval_lines

    for read in (wait_limit, reconnect_budget_s, interval_lines):
        try:
            read()
        except ValueError as exc:
            raise ParameterError(str(exc)) from None


OUTCOME_ENV = "CONTENTION_BOOK_RUN_OUTCOME"  # a file where the run leaves its last word when it did not complete


def leave_outcome(line: str) -> None:
    """Write why the run did not complete where the launcher asked for it (launch.run_live quotes it)."""
    path = os.environ.get(OUTCOME_ENV)
    if path:
        try:
            Path(path).write_text(" ".join(redact(line).split()) + "\n", encoding="utf-8")  # one line
        except OSError:
            pass


def command_line(argv: list[str] | None) -> str:
    """The command recorded in the manifest: the make line if make set it, else this one."""
    from .live import COMMAND_ENV

    if os.environ.get(COMMAND_ENV):
        return os.environ[COMMAND_ENV]
    return " ".join(["python -m contention_book.run", *(argv if argv is not None else sys.argv[1:])])


def _has_data(writer: rec.RecordingWriter) -> bool:
    from . import recording as rec

    return any(p.is_file() and p.name not in (rec.MANIFEST, rec.OWNER, "run.log") for p in writer.tmp.rglob("*"))


def run_chapter(spec: ChapterSpec, runners: Mapping[str, Runner], raw_params: Mapping[str, Any], *,
                engine: str, target: str | None = None, record_to: str | None = None,
                allow_server_changes: bool = False, command: str = "", log: RunLog | None = None) -> Path:
    """Validate, take the run's locks, reach the target, wait for a quiet machine, run, seal the recording.

    That order makes a run that cannot run say so at once: a second run is refused by the first's lock, and an
    unreachable target within its connect timeout, both before the quiet-machine wait (up to two minutes).
    The recording is ``complete`` only if the runner returned normally and wrote data; otherwise it is kept
    ``incomplete`` with the reason.
    """
    from . import recording as rec
    from .live import measured_writer

    log = log or RunLog()
    params, dest = check_request(spec, engine, raw_params, target=target, record_to=record_to)
    if not command:
        command = " ".join(["python -m contention_book.run", spec.chapter, "--engine", engine]
                           + (["--target", target] if target else [])
                           + [f"--param {k}={v}" for k, v in raw_params.items()])
    if engine not in runners:
        raise ParameterError(f"chapter {spec.chapter} has no live runner for engine {engine!r}")
    if engine == "native" and target:
        raise ParameterError("engine native runs on this machine: it takes no target")
    shown = {k: v for k, v in params.items() if v not in (None, "", [])}
    log(f"[run] {spec.chapter} on {engine}{f' (target {target})' if target else ''}")
    log(f"[run] parameters: {', '.join(f'{k}={v}' for k, v in shown.items())}")
    allowed = "allowed (each printed before it runs, restored after)" if allow_server_changes else "not allowed"
    log(f"[run] server-wide changes (opt-in: trace flags, affinity, statistics clearing): {allowed}")
    log(f"[run] recording: {dest}")
    title = spec.title(engine)
    with contextlib.ExitStack() as stack:
        stack.enter_context(hold_run_locks(spec.chapter, engine, target))
        log(f"[run] run lock taken: a second run of {spec.chapter}"
            f"{' or of any chapter on the embedded PostgreSQL' if engine == 'postgres' and not target else ''}"
            f"{' or of any native benchmark' if engine == 'native' else ''} is refused until this one ends")
        if engine == "native":
            from . import native

            quiet, started = _wait_for_quiet(log, remote=False)
            rec.repair_abandoned(dest.parent, log)
            writer = native.writer(dest, chapter=spec.chapter, parameters={"engine": engine, **params},
                                   command=command, title=title, programs=spec.native_programs)
            tgt = None
        else:
            tgt, params = _reach_target(stack, spec, engine, target, params, raw_params, allow_server_changes, log)
            quiet, started = _wait_for_quiet(log, remote=bool(target))
            rec.repair_abandoned(dest.parent, log)
            writer = measured_writer(tgt, spec.chapter, {"engine": engine, **params}, command, dest, title)
        with writer:
            _run(runners[engine], RunContext(spec, engine, params, writer, log, tgt, allow_server_changes, command),
                 quiet, card=engine == "native" or not target)
    log(f"[run] {spec.chapter} complete in {time.monotonic() - started:,.0f} s: {dest}")
    return dest


LOCK_DIR_ENV = "CONTENTION_BOOK_LOCK_DIR"  # where the chapters' and the native benchmarks' run locks live


def run_locks(chapter: str, engine: str, target: str | None) -> list[tuple[Path, str]]:
    """The run's local locks, taken first: its chapter on this machine, and the native benchmarks or the embedded
    cluster it would share with another run.  Each is an flock, freed by the kernel when its holder dies."""
    where = Path(os.environ.get(LOCK_DIR_ENV) or repo_root() / ".cache")
    locks = [(where / f"run-{chapter}.lock", f"chapter {chapter} on this machine")]
    if engine == "native":
        locks.append((where / "native.lock", "the native benchmarks on this machine"))
    elif not target:
        from .embedded_pg import EmbeddedPostgres

        locks.append((EmbeddedPostgres.default_root() / "run.lock", "the book's embedded PostgreSQL"))
    return locks


_HELD: set[Path] = set()  # the run locks this process holds (main takes them before the chapter loads)


@contextlib.contextmanager
def hold_run_locks(chapter: str, engine: str, target: str | None) -> Iterator[None]:
    """Hold :func:`run_locks` for the block (those this process does not hold already); refuse at once with
    :class:`~.ownership.RunBusy`, naming the holder's pid, chapter and start, if another run holds one."""
    with contextlib.ExitStack() as stack:
        for path, what in run_locks(chapter, engine, target):
            key = path.absolute()
            if key in _HELD:
                continue
            stack.enter_context(local_lock(path, what, holder=f"chapter {chapter} on {engine}"))
            _HELD.add(key)
            stack.callback(_HELD.discard, key)
        yield


def _reach_target(stack: contextlib.ExitStack, spec: ChapterSpec, engine: str, target: str | None,
                  params: dict[str, Any], raw_params: Mapping[str, Any], allow_server_changes: bool,
                  log: RunLog) -> tuple[Target, dict[str, Any]]:
    """Connect (within the connect timeout), preflight, own the lab database and repair what a killed run left:
    the target and the parameters the preflight settled."""
    needed = connections_needed(params, int(spec.extra.get("connections_per_session", {}).get(engine, 1)))
    from .live import live_target

    tgt = stack.enter_context(live_target(target, engine, log=log, connections=needed + 10))
    check_connections(tgt, needed)
    if params.get("database") and tgt.engine == "sqlserver":
        # its lock lives in master: taken first, so a run from another machine is refused before the preflight
        stack.enter_context(database_lock(tgt, params["database"], log=log))
    if engine == "sqlserver":  # before anything is created or changed: refuse now, or print the plan
        from .sqlserver_preflight import preflight

        params = preflight(spec, params, raw_params, tgt, allow_server_changes=allow_server_changes, log=log)
    if params.get("database"):
        ensure_own_database(tgt, params["database"], log=log)
        if tgt.engine != "sqlserver":  # PostgreSQL's advisory lock lives in the database itself
            stack.enter_context(database_lock(tgt, params["database"], log=log))
        # owning the database, first undo what a killed run on this target left changed
        stack.enter_context(guard.journal(guard.journal_path(tgt), tgt.connect, log=log))
    return tgt, params


def _wait_for_quiet(log: RunLog, remote: bool) -> tuple[dict, float]:
    """The load before the run, after waiting (a while at most) for other work on this machine to end, and the
    moment the run proper starts."""
    from .host import wait_for_quiet

    return wait_for_quiet(log, remote=remote), time.monotonic()


def _run(runner: Runner, ctx: RunContext, quiet: dict | None = None, card: bool = False) -> None:
    """Run with the log streaming into the recording; an empty run is not ``complete``.  ``quiet`` is the load
    before the run (host.wait_for_quiet); the load at its end joins it in the manifest.  ``card``: the work runs on
    this machine (native programs, the embedded PostgreSQL), so its machine card is measured at the start and the
    end (a remote server's CPUs are not this machine's: its recording gets no card)."""
    ctx.log.attach(ctx.writer.file_path("run.log"))
    if quiet:
        ctx.writer.update(load=dict(quiet))
    from .driver import take_lost_points

    take_lost_points()  # only this run's points
    if card:
        from . import machine_card

        machine_card.at_start(ctx.writer, ctx.log)
    try:
        try:
            runner(ctx)
        except (TargetError, ParameterError) as exc:
            raise RunFailed(f"{type(exc).__name__}: {redact(exc)}") from None
        if not _has_data(ctx.writer):
            raise RunFailed("the run wrote no data files")
        _check_balanced(ctx)
        if quiet:
            from .host import finish_load

            load, note = finish_load(quiet)
            ctx.writer.update(load=load)
            if note:
                ctx.writer.add_note(note)
            ctx.log(f"[run] 1-minute load average {load['before_1min']:.2f} at the start, "
                    f"{load['after_1min'] if load['after_1min'] is not None else '?'} at the end")
        if card:
            machine_card.at_end(ctx.writer, ctx.log)
        interrupts.raise_if_pending()  # a stop signal whose first raise was dropped: never sealed as complete
        ctx.log("[run] sealing the recording")
        pause = float(os.environ.get(SEAL_PAUSE_ENV) or 0)
        if pause:  # fault tests deliver their signal while a recording is being sealed
            time.sleep(pause)
    finally:
        _note_lost_points(ctx)
        ctx.log.detach()
        ctx.writer.write_text("run.log", ctx.log.text(), "what the live runner printed (redacted)")


def _note_lost_points(ctx: RunContext) -> None:
    """Name in the recording every point whose sessions lost their connections that the chapter did not record
    (it stopped first, say): the point, the error classes and counts."""
    from .driver import take_lost_points

    for label, result in take_lost_points():
        if not result.lost_noted:
            ctx.writer.add_note(f"point {label}: failed: {result.lost} call(s) lost their session's connection "
                                f"({result.lost_text()}; {result.reconnects} reconnect(s), {result.errors} error(s) "
                                f"in {result.attempts} call(s) tried); not a result")


def _check_balanced(ctx: RunContext) -> None:
    """The safety net behind the chapters' per-point checks: a recording whose rows break an accounting
    identity of its layout is never sealed ``complete``."""
    import pandas as pd

    from .spec import Unbalanced, check_balanced

    for table in ctx.spec.layout.values():
        path = ctx.writer.tmp / table.path
        if not table.identities or not path.is_file():
            continue
        try:
            check_balanced(table, pd.read_csv(path), ctx.engine, where=table.path)
        except Unbalanced as exc:
            raise RunFailed(f"the recording does not balance: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    from .chapter_registry import package, packages, runners

    ap = argparse.ArgumentParser(prog="python -m contention_book.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("chapter", choices=sorted(packages()))
    ap.add_argument("--engine", required=True, help="native, postgres or sqlserver")
    ap.add_argument("--target", default=None,
                    help="the NAME of an ODBC DSN or of an environment variable holding a connection string")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="a live-run parameter (repeatable); --help-params lists them")
    ap.add_argument("--record-to", default=None, help="the new recording's directory, or a folder to create it in")
    ap.add_argument("--allow-server-changes", action="store_true",
                    help="allow server-wide changes (trace flags, affinity); printed first, restored after")
    ap.add_argument("--help-params", action="store_true", help="list the chapter's parameters and exit")
    ap.add_argument("--debug", action="store_true", help="print a traceback when the run fails")
    args = ap.parse_args(argv)
    if args.help_params:
        spec = package(args.chapter, "spec").SPEC
        print(f"parameters of {args.chapter} on {args.engine}:\n{describe(spec.params, args.engine)}")
        return 0
    with contextlib.ExitStack() as held:
        try:  # what needs no chapter loaded, then the run's locks: a second run is refused before the imports
            raw = split_assignments(args.param)
            check_target_name(args.target)
            if args.engine not in ("native", *ENGINES):
                raise ParameterError(f"--engine {args.engine!r}: expected native, postgres or sqlserver")
            held.enter_context(hold_run_locks(args.chapter, args.engine, args.target))
        except (ParameterError, TargetError) as exc:
            print(f"[run] refused: {exc}", flush=True)
            leave_outcome(f"refused: {exc}")
            return EXIT_REFUSED
        return serve(package(args.chapter, "spec").SPEC, runners(args.chapter), raw,
                     engine=args.engine, target=args.target, record_to=args.record_to,
                     allow_server_changes=args.allow_server_changes, command=command_line(argv), debug=args.debug)


def serve(spec: ChapterSpec, runners: Mapping[str, Runner], raw_params: Mapping[str, Any], *,
          engine: str, target: str | None = None, record_to: str | None = None,
          allow_server_changes: bool = False, command: str = "", debug: bool = False) -> int:
    """Run a chapter with the stop signals handled; the process's exit status."""
    from . import recording as rec

    log = RunLog()
    with stop_signals(log):
        try:
            run_chapter(spec, runners, raw_params, engine=engine, target=target, record_to=record_to,
                        allow_server_changes=allow_server_changes, command=command, log=log)
        except RunInterrupted as exc:
            log(f"[run] stopped: {exc}; the recording (if one was opened) is marked incomplete")
            return 128 + exc.signum
        except (ParameterError, TargetError, ServerChangeNotAllowed, rec.RecordingExistsError) as exc:
            log(f"[run] refused: {exc}")
            leave_outcome(f"refused: {exc}")
            return EXIT_REFUSED
        except RestoreFailed as exc:
            log(f"[run] {exc}")
            leave_outcome(str(exc))
            return EXIT_FAILED
        except Exception as exc:  # noqa: BLE001 - reported in one line; --debug for the traceback
            if debug:
                traceback.print_exc()
            log(f"[run] failed: {type(exc).__name__}: {redact(exc)} (--debug prints the traceback)")
            leave_outcome(f"failed: {type(exc).__name__}: {exc}")
            return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
