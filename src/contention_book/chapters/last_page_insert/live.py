"""Live runs of the last-page chapter: one runner per engine, each taking the run's context."""
from __future__ import annotations


def postgres(ctx) -> None:
    from .run_postgres import run_postgres

    run_postgres(ctx)


def sqlserver(ctx) -> None:
    from .run_sqlserver import run_sqlserver

    run_sqlserver(ctx)


RUNNERS = {"postgres": postgres, "sqlserver": sqlserver}
