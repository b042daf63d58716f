"""Progress for long runs: a bar or a line a second on a terminal, a plain line every few seconds elsewhere.

A tqdm bar is the right thing on a terminal, but in a notebook cell, a log
file or a pipe it becomes a stream of carriage returns.  :func:`progress`
picks one by whether stderr is a terminal, so every run reports the same
way wherever it is watched.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Callable

PLAIN_EVERY_S = 10.0
EVERY_ENV = "CONTENTION_BOOK_PROGRESS_EVERY_S"  # seconds between the driver's interval lines, terminal or not


class PlainProgress:
    """tqdm's ``update``/``close`` surface, printing ``desc: n/total (rate/s)`` now and then."""

    def __init__(self, total: int | None, desc: str, unit: str, log: Callable[[str], None],
                 every_s: float = PLAIN_EVERY_S):
        self.total, self.desc, self.unit, self.log, self.every_s = total, desc, unit, log, every_s
        self.n = 0
        self.started = self.last = time.monotonic()

    def update(self, k: int = 1) -> None:
        self.n += k
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            self.log(self._line(now))

    def _line(self, now: float) -> str:
        rate = self.n / max(now - self.started, 1e-9)
        of = f"/{self.total:,}" if self.total else ""
        return f"[progress] {self.desc}: {self.n:,}{of} {self.unit} ({rate:,.0f} {self.unit}/s)"

    def close(self) -> None:
        pass


def progress(total: int | None, desc: str, unit: str = "op", log: Callable[[str], None] | None = None):
    """A tqdm bar when stderr is a terminal, else :class:`PlainProgress` through ``log``."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit=unit, leave=False, mininterval=0.5)
    return PlainProgress(total, desc, unit, log or (lambda line: print(line, file=sys.stderr, flush=True)))


def interval_lines(log: Callable[[str], None] | None = None) -> tuple[Callable[[str], None], float]:
    """(emit, seconds between lines) for the driver's interval lines (pgbench ``-P``).

    A line every second on a terminal; elsewhere (a notebook, a log file) one
    every PLAIN_EVERY_S, covering the whole time since the previous line; :data:`EVERY_ENV` sets another
    interval (the fault tests take the first line as the sign that the measured window is under way).
    """
    emit = log or (lambda line: print(line, file=sys.stderr, flush=True))
    raw = os.environ.get(EVERY_ENV, "").strip()
    if raw:
        try:
            every = float(raw)
        except ValueError:
            every = 0.0
        if not every > 0:
            raise ValueError(f"{EVERY_ENV}={raw!r}: expected a number of seconds above 0")
        return emit, every
    return emit, (1.0 if sys.stderr.isatty() else PLAIN_EVERY_S)
