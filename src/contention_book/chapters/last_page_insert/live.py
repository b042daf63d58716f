"""Live runs of this chapter: N sessions inserting on PostgreSQL or SQL Server.

Each engine's runner is ``run_<engine>.run_<engine>(ctx)``; :func:`~contention_book.harness.runner.run_chapter`
calls it with the run's context.
"""
from contention_book.harness.runner import engine_runners

RUNNERS = engine_runners(__package__, ("postgres", "sqlserver"))
