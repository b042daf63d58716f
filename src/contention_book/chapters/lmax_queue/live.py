"""Live runs of the LMAX-queue chapter: one runner per engine, each taking the run's context."""
from __future__ import annotations


def native(ctx) -> None:
    from .run_native import run_native

    run_native(ctx)


def postgres(ctx) -> None:
    from .run_postgres import run_postgres

    run_postgres(ctx)


def sqlserver(ctx) -> None:
    from .run_sqlserver import run_sqlserver

    run_sqlserver(ctx)


RUNNERS = {"native": native, "postgres": postgres, "sqlserver": sqlserver}
