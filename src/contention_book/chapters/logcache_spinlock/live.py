"""Live runs of this chapter: the native programs, the PostgreSQL WAL analogue, or the article's workload.

Each engine's runner is ``run_<engine>.run_<engine>(ctx)``; :func:`~contention_book.harness.runner.run_chapter`
calls it with the run's context.
"""
from contention_book.harness.runner import engine_runners

RUNNERS = engine_runners(__package__, ("native", "postgres", "sqlserver"))
