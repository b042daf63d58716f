"""The guard: every change to server or database state is undone.

A :class:`Change` knows how to read the prior state, which statements apply
the change and which restore the prior state.  :class:`StateGuard` prints
the plan before anything runs, applies server-wide changes only when the
reader opted in (``allow_server_changes``), and restores the prior state on
every exit path: normal end, exception, KeyboardInterrupt, or a lost
connection (restoring always uses a fresh connection, retried a few times).
If even that fails, it prints the exact statements a person must run.

A run killed outright (SIGKILL, a power cut) cannot restore anything, so
each change's restore statements are written to a journal *before* the
change is applied (:func:`journal`), and removed once restored.  The next
run on the same target finds the entries of a process that is gone and
runs their restores first, so a killed run never leaves a trace flag or an
affinity mask behind for longer than it takes to start the next one.

Database-scoped changes (isolation options of the harness's *own* database)
need no opt-in, since that database exists only for the harness; they are
printed and restored all the same.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from .redaction import redact

JOURNAL_DIR_ENV = "CONTENTION_BOOK_GUARD_JOURNAL_DIR"
_active_journal: Path | None = None  # set by journal() for the StateGuards of one run
_STARTED = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")

SCOPES = ("database", "server")


class ServerChangeNotAllowed(PermissionError):
    """A server-wide change was needed but the reader did not opt in."""


class RestoreFailed(RuntimeError):
    """The prior state could not be restored; the message lists the statements to run by hand."""


@dataclass
class Change:
    """One reversible change.

    ``read`` returns the prior state (any value); ``apply`` and ``restore``
    map that prior state to the statements to run.  Statements are plain
    SQL strings: identifiers in them were validated by the caller.
    """

    description: str
    scope: str
    read: Callable[[Any], Any]
    apply: Callable[[Any], Sequence[str]]
    restore: Callable[[Any], Sequence[str]]
    database: str | None = None  # the database the statements run in (None: the default one)
    # The restore is harmless when the change never happened (IF EXISTS ... DROP): run it even when the apply
    # was cut short before the server answered (a signal mid-statement), since the server may have done it.
    restore_if_attempted: bool = False
    prior: Any = field(default=None, init=False)
    applied: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if self.scope not in SCOPES:
            raise ValueError(f"change {self.description!r}: scope {self.scope!r}, expected one of {SCOPES}")


def journal_path(target) -> Path:
    """The journal of one target: keyed by a hash of its connection string (never the string itself)."""
    key = hashlib.sha256(target.connection_string().encode()).hexdigest()[:16]
    base = Path(os.environ.get(JOURNAL_DIR_ENV) or Path.home() / ".cache" / "contention-book" / "guard")
    return base / f"{key}.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True


def _read_journal(path: Path) -> list[dict]:
    try:
        entries = json.loads(path.read_text(encoding="utf-8")).get("entries", [])
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as err:
        raise RestoreFailed(f"[guard] journal {path}: unreadable ({err}); expected the JSON this module writes. "
                            "Check the server's state by hand, then delete the file.") from None
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("restore"), list)]


def _write_journal(path: Path, entries: list[dict]) -> None:
    if not entries:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"entries": entries}, indent=1), encoding="utf-8")
    os.replace(tmp, path)


@contextlib.contextmanager
def journal(path: Path, connect: Callable[[str | None], Any], log: Callable[[str], None] = print) -> Iterator[None]:
    """For one run on one target: first restore what a killed run left (its journal entries whose process is
    gone), then have every StateGuard of this run write its restores to ``path`` before applying a change."""
    global _active_journal
    entries = _read_journal(path)
    stale = [e for e in entries if not _alive(int(e.get("pid", 0)))]
    if stale:
        runs = sorted({f"pid {e.get('pid')}, started {e.get('started', '?')}" for e in stale})
        log(f"[guard] a run that was killed ({'; '.join(runs)}) left {len(stale)} change(s) in place; "
            "restoring them first")
        repair = StateGuard(connect, [], log=log)
        for e in reversed(stale):
            change = Change(description=str(e.get("description", "a change")), scope="database",
                            read=lambda conn: None, apply=lambda prior: [],
                            restore=lambda prior, sql=list(e["restore"]): sql, database=e.get("database"))
            change.applied = True
            repair.changes.append(change)
        repair._restore_all()  # raises RestoreFailed, with the statements, when it cannot
        _write_journal(path, [e for e in entries if e not in stale])
    _active_journal = path
    try:
        yield
    finally:
        _active_journal = None


class StateGuard:
    """Context manager that applies :class:`Change` objects and always restores them."""

    def __init__(
        self,
        connect: Callable[[str | None], Any],
        changes: Sequence[Change],
        *,
        allow_server_changes: bool = False,
        log: Callable[[str], None] = print,
        retries: int = 3,
        retry_wait_s: float = 1.0,
    ):
        self.connect = connect
        self.changes = list(changes)
        self.allow_server_changes = allow_server_changes
        self.log = log
        self.retries = retries
        self.retry_wait_s = retry_wait_s
        self.restored: list[str] = []

    # -- planning ------------------------------------------------------------
    def plan(self) -> list[dict[str, Any]]:
        """Read prior states and return what would run, without changing anything."""
        out = []
        for change in self.changes:
            conn = self.connect(change.database)
            try:
                prior = change.read(conn)
            finally:
                conn.close()
            out.append({"change": change.description, "scope": change.scope, "prior": prior,
                        "apply": list(change.apply(prior)), "restore": list(change.restore(prior))})
        return out

    def _run(self, database: str | None, statements: Sequence[str]) -> None:
        conn = self.connect(database)
        try:
            cur = conn.cursor()
            for sql in statements:
                cur.execute(sql)
                while cur.nextset():  # drain informational result sets
                    pass
        finally:
            conn.close()

    def _apply(self, change: Change, statements: Sequence[str]) -> None:
        """Run the statements; the change counts as applied once one of them has succeeded.

        A change refused outright (no permission, say) changed nothing and needs no restore; one
        that failed halfway is restored like a whole one.  A stop signal during a statement counts as
        applied: the server may have run it before the signal landed (a SIGINT just after DBCC TRACEON
        returned left the flag on), and restoring a change that did not happen only writes the prior state.
        """
        conn = self.connect(change.database)
        change.applied = change.restore_if_attempted
        try:
            cur = conn.cursor()
            for sql in statements:
                try:
                    cur.execute(sql)
                    while cur.nextset():
                        pass
                except KeyboardInterrupt:
                    change.applied = True
                    raise
                change.applied = True
        finally:
            conn.close()

    # -- the journal a killed run leaves for the next one ---------------------------------
    def _entry(self, change: Change) -> dict:
        return {"pid": os.getpid(), "started": _STARTED, "description": change.description,
                "database": change.database, "restore": list(change.restore(change.prior))}

    def _journal_add(self, change: Change) -> None:
        if _active_journal is not None:
            _write_journal(_active_journal, [*_read_journal(_active_journal), self._entry(change)])

    def _journal_remove(self, change: Change) -> None:
        if _active_journal is not None:
            mine = self._entry(change)
            _write_journal(_active_journal, [e for e in _read_journal(_active_journal) if e != mine])

    # -- context -------------------------------------------------------------
    def __enter__(self) -> "StateGuard":
        blocked = [c for c in self.changes if c.scope == "server" and not self.allow_server_changes]
        if blocked:
            raise ServerChangeNotAllowed(
                "this run needs server-wide changes that are off by default: "
                + "; ".join(c.description for c in blocked)
                + ". Re-run with allow_server_changes=True (notebook parameter) to allow them; "
                "they are printed before they run and restored afterwards"
            )
        try:
            for change in self.changes:
                conn = self.connect(change.database)
                try:
                    change.prior = change.read(conn)
                finally:
                    conn.close()
                statements = list(change.apply(change.prior))
                self.log(f"[guard] {change.scope} change: {change.description}; prior state {change.prior!r}")
                for sql in statements:
                    self.log(f"[guard]   apply:   {sql}")
                for sql in change.restore(change.prior):
                    self.log(f"[guard]   restore: {sql}")
                self._journal_add(change)
                self._apply(change, statements)
                if not change.applied:  # refused outright: nothing to restore, now or after a kill
                    self._journal_remove(change)
        except BaseException:
            self._restore_all()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._restore_all()
        return False

    def _restore_all(self) -> None:
        failures: list[str] = []
        for change in reversed(self.changes):
            if not change.applied:
                continue
            statements = list(change.restore(change.prior))
            last_error: BaseException | None = None
            for attempt in range(1, self.retries + 1):
                try:
                    self._run(change.database, statements)
                    change.applied = False
                    self._journal_remove(change)
                    self.restored.append(change.description)
                    self.log(f"[guard] restored: {change.description}")
                    break
                except KeyboardInterrupt as err:  # finish restoring even if Ctrl-C is pressed again
                    last_error = err
                except Exception as err:  # noqa: BLE001 - retried, then reported
                    last_error = err
                    try:
                        time.sleep(self.retry_wait_s * attempt)
                    except KeyboardInterrupt:  # a Ctrl-C during the wait must not skip the other restores
                        pass
            else:
                where = f" in database {change.database}" if change.database else ""
                failures.append(
                    f"- {change.description}{where}: could not restore ({redact(last_error)}). Run by hand:\n"
                    + "\n".join(f"    {sql}" for sql in statements)
                )
        if failures:
            message = "[guard] RESTORE FAILED. The server is NOT in its prior state.\n" + "\n".join(failures)
            self.log(message)
            raise RestoreFailed(message)
