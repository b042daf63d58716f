"""Live runs of this chapter: the native sweep, or the article's insert on a reader's SQL Server (PostgreSQL has no
latch shared by the workers of one parallel insert).

Each engine's runner is ``run_<engine>.run_<engine>(ctx)``; :func:`~contention_book.harness.runner.run_chapter`
calls it with the run's context.
"""
from contention_book.harness.runner import engine_runners

RUNNERS = engine_runners(__package__, ("native", "sqlserver"))
