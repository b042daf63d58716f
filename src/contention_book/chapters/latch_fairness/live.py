"""Live runs of the latch chapter: the native sweep, or the article's insert on a reader's SQL Server.

There is no PostgreSQL runner: PostgreSQL has no latch shared by the workers of one parallel insert.
"""
from __future__ import annotations


def native(ctx) -> None:
    from .run_native import run_native

    run_native(ctx)


def sqlserver(ctx) -> None:
    from .run_sqlserver import run_sqlserver

    run_sqlserver(ctx)


RUNNERS = {"native": native, "sqlserver": sqlserver}
