"""The "On your own server" queries, read from workloads/ghost-cleanup/diagnose/ so the page shows exactly the
files a test runs (PostgreSQL on the test cluster) and parses (T-SQL)."""
from __future__ import annotations

from pathlib import Path

from contention_book.harness.workloads import workload_dir

from .spec import CHAPTER

ENGINES = {"sqlserver": "tsql", "postgres": "sql"}


def query_files(engine: str) -> list[Path]:
    """The diagnose queries of one engine, in their numbered order."""
    folder = workload_dir(CHAPTER, "diagnose") / engine
    files = sorted(folder.glob("[0-9][0-9]-*.sql"))
    if not files:
        raise FileNotFoundError(f"{folder}: no diagnose queries (expected NN-name.sql files)")
    return files


def queries_markdown(engine: str) -> str:
    """Every query of ``engine`` as a fenced block a reader can copy, each under its title."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    parts = []
    for path in query_files(engine):
        title = path.stem.split("-", 1)[1].replace("-", " ")
        parts.append(f"**{title[0].upper() + title[1:]}**\n\n```{ENGINES[engine]}\n{path.read_text().strip()}\n```")
    return "\n\n".join(parts)
