"""One package per chapter, all of the same shape.

Every ``chapters/<package>/`` has ``spec.py`` (the chapter as data: engines, variants, parameters, layout),
``recordings.py`` (the views and ``load_shown``), ``run_<engine>.py`` for each engine it runs on (the harness finds
``run_<engine>(ctx)`` through :func:`contention_book.harness.chapter_registry.runners`), ``tables.py`` (data frames
and numbers), ``claims.py`` (verdict rows as data), ``figures.py``, ``diagrams.py`` and ``published.py`` (the
published recordings, regenerated from their sources' numbers).  Its "On your own server" queries are
``diagnose = ChapterQueries(SPEC.chapter)`` in its ``__init__`` (the queries themselves are files under
``workloads/<chapter>/diagnose/``).

What each room may import: ``spec`` nothing of the chapter; ``recordings`` ``spec``; ``tables`` ``recordings`` and
``spec``; ``claims`` ``tables``; a chapter's opening (``finding.py`` where it has one) ``claims`` and ``tables``;
``figures`` ``tables``; all of them ``chapters.shared`` and the harness below, never another chapter.  The harness
learns the chapters from the ``contention_book.chapters`` entry points (``pyproject.toml``), never by importing
this package.
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
