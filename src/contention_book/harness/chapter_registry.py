"""The chapters the harness can run and render, found through the package's entry points.

The floors only look down (perftools <- harness <- chapters): the runner and the book builder need a chapter's
``spec`` and ``run_<engine>`` modules by name, so they learn where each chapter lives from the entry-point group
``contention_book.chapters`` that ``pyproject.toml`` declares, never by importing the chapters package.
"""
from __future__ import annotations

import importlib
from functools import lru_cache
from importlib.metadata import entry_points
from types import ModuleType

GROUP = "contention_book.chapters"


@lru_cache(maxsize=1)
def packages() -> dict[str, str]:
    """Chapter name -> the importable name of its package, as installed."""
    found = {ep.name: ep.value for ep in entry_points(group=GROUP)}
    if not found:
        raise RuntimeError(f"no chapters are registered (entry-point group {GROUP!r}): install the package first "
                           "(make setup, or pip install -e .)")
    return found


def package(chapter: str, module: str | None = None) -> ModuleType:
    """The chapter's package (or one of its modules); a clear error for an unknown chapter."""
    known = packages()
    if chapter not in known:
        raise KeyError(f"unknown chapter {chapter!r}; expected one of: {', '.join(sorted(known))}")
    return importlib.import_module(known[chapter] + (f".{module}" if module else ""))


def runners(chapter: str) -> dict:
    """The chapter's live runners, one per engine its spec names: ``run_<engine>.run_<engine>(ctx)`` in its package,
    imported when a run of that engine starts (so a chapter needs no module that only binds them)."""
    spec = package(chapter, "spec").SPEC
    return engine_runners(packages()[chapter], tuple(spec.engines))


def engine_runners(package: str, engines: tuple[str, ...]) -> dict:
    """``RUNNERS`` for a chapter: engine -> ``<package>.run_<engine>.run_<engine>(ctx)``, imported when it runs.

    Importing a chapter stays cheap (no pyodbc, no native build) until a run of that engine starts.
    """
    def runner(engine: str):
        def run(ctx) -> None:  # ctx: harness.runner.RunContext
            getattr(importlib.import_module(f"{package}.run_{engine}"), f"run_{engine}")(ctx)

        run.__name__ = f"run_{engine}"
        return run

    return {engine: runner(engine) for engine in engines}
