"""A stop signal that was raised where Python drops exceptions still stops the run.

The runner turns the first SIGINT or SIGTERM into an exception in the main thread (runner.stop_signals).  Python
runs a signal handler between bytecodes, and some places swallow what it raises: a signal that lands while
``subprocess.Popen`` forks runs the handler inside an at-fork callback, whose exception is printed ("Exception
ignored in ...") and dropped, and the run went on to seal a complete recording (seen once in the fault tests).  So
the handler also leaves the signal here, and the places that wait (a native program, the end of a run) raise it
again with :func:`raise_if_pending`.  A module of its own, below the runner, so those places need not import it.
"""
from __future__ import annotations

import signal

_pending: dict[str, int | None] = {"signum": None}


class RunInterrupted(KeyboardInterrupt):
    """A stop signal arrived; raised in the main thread, so every ``finally`` and guard runs."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")


def arrived(signum: int) -> None:
    _pending["signum"] = signum


def clear() -> None:
    _pending["signum"] = None


def raise_if_pending() -> None:
    """Raise :class:`RunInterrupted` if a stop signal arrived in this run (again, if its first raise was lost)."""
    if _pending["signum"] is not None:
        raise RunInterrupted(_pending["signum"])
