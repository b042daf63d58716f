"""Chapter 1: latch fairness and convoys (document 000, Paul White 2022).

Parallel workers of one data-changing plan add their log records to the
parent transaction under one latch, NESTING_TRANSACTION_FULL.  By default the
latch is *fair*: a releaser hands it to the longest waiter and wakes it, so
every acquisition under contention pays for a wake-up and a context switch.
Trace flag 3933 (SQL Server 2019+) makes it *unfair*: the latch is released,
a running thread may take it, and waiters spin before they sleep.

The package is split by concern:

- :mod:`.recordings` reads any recording of this chapter (published, measured
  on SQL Server, or measured by the native microbenchmark);
- :mod:`.native_sweep` runs ``native/latch_convoy.c`` over lock kinds and
  thread counts and records the sweep;
- :mod:`.live_sqlserver` runs the article's parallel insert on a reader's
  SQL Server, fair and (opt-in, trace flag 3933) unfair;
- :mod:`.analysis` turns recordings into tables, glued numbers and verdicts;
- :mod:`.figures` draws them.
"""
from .common import CHAPTER, DEFAULT_MEASURED, ENGINES, NOTEBOOK, PUBLISHED  # noqa: F401
from .recordings import LatchRecording, load, load_published  # noqa: F401


def run_live(*, engine: str = "native", **kwargs):
    """Run the chapter live on ``engine`` ("native" or "sqlserver") and return the new recording's path."""
    if engine == "native":
        from .native_sweep import run_native

        return run_native(**kwargs)
    if engine == "sqlserver":
        from .live_sqlserver import run_sqlserver

        return run_sqlserver(**kwargs)
    raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)} "
                     "(there is no faithful PostgreSQL analogue of this latch; see the chapter)")
