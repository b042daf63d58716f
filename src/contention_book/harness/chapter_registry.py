"""The chapters the harness can run and render, found through the package's entry points.

The floors only look down (perftools <- harness <- chapters): the runner and the book builder need a chapter's
``spec`` and ``live`` modules by name, so they learn where each chapter lives from the entry-point group
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
