"""Live runs of this chapter: PostgreSQL's held-back horizon, or the article's test on SQL Server.

Each engine's runner is ``run_<engine>.run_<engine>(ctx)``; :func:`~contention_book.harness.runner.run_chapter`
calls it with the run's context.
"""
from contention_book.harness.runner import engine_runners

RUNNERS = engine_runners(__package__, ("postgres", "sqlserver"))
