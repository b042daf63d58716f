"""One package per chapter, all of the same shape.

Every ``chapters/<package>/`` has ``spec.py`` (the chapter as data),
``recordings.py`` (the views and ``load_shown``), ``live.py`` (``RUNNERS``,
one function per engine, each taking a :class:`~contention_book.harness.runner.RunContext`),
``run_<engine>.py`` files, ``tables.py`` (data frames and ``key_numbers``),
``claims.py`` (verdict rows as data), ``figures.py`` and ``published.py``
(the published recordings, regenerated from their sources' numbers).
"""
from __future__ import annotations

import importlib
from types import ModuleType

PACKAGES = {
    "latch-fairness": "latch_fairness",
    "logcache-spinlock": "logcache_spinlock",
    "ghost-cleanup": "ghost_cleanup",
    "last-page-insert": "last_page_insert",
    "lmax-queue": "lmax_queue",
}


def package(chapter: str, module: str | None = None) -> ModuleType:
    """The chapter's package (or one of its modules); a clear error for an unknown chapter."""
    if chapter not in PACKAGES:
        raise KeyError(f"unknown chapter {chapter!r}; expected one of: {', '.join(PACKAGES)}")
    name = f"{__name__}.{PACKAGES[chapter]}" + (f".{module}" if module else "")
    return importlib.import_module(name)
