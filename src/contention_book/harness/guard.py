"""The guard: every change to server or database state is undone.

A :class:`Change` knows how to read the prior state, which statements apply
the change and which restore the prior state.  :class:`StateGuard` prints
the plan before anything runs, applies server-wide changes only when the
reader opted in (``allow_server_changes``), and restores the prior state on
every exit path: normal end, exception, KeyboardInterrupt, or a lost
connection (restoring always uses a fresh connection, retried a few times).
If even that fails, it prints the exact statements a person must run.

Database-scoped changes (isolation options of the harness's *own* database)
need no opt-in, since that database exists only for the harness; they are
printed and restored all the same.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from .redaction import redact

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
        that failed halfway is restored like a whole one.
        """
        conn = self.connect(change.database)
        change.applied = change.restore_if_attempted
        try:
            cur = conn.cursor()
            for sql in statements:
                cur.execute(sql)
                while cur.nextset():
                    pass
                change.applied = True
        finally:
            conn.close()

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
                self._apply(change, statements)
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
