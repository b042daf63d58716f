"""The "On your own server" queries, read from workloads/latch-fairness/diagnose/<engine>/NN-name.sql.

The page shows the files themselves, so the query a reader copies is the one the tests parse (T-SQL) or run
on the embedded cluster (PostgreSQL).  The file name gives the order and the heading.
"""
from __future__ import annotations

from pathlib import Path

from contention_book.harness.workloads import workload_dir

from .spec import CHAPTER

ENGINES = {"sqlserver": "SQL Server", "postgres": "PostgreSQL"}


def queries(engine: str, chapter: str = CHAPTER) -> list[tuple[str, str]]:
    """(heading, text) of the engine's diagnose queries, in file-name order; an error naming the folder if none."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    folder = workload_dir(chapter, f"diagnose/{engine}")
    paths = sorted(Path(folder).glob("*.sql"))
    if not paths:
        raise FileNotFoundError(f"{folder}: no NN-name.sql files; expected the chapter's {ENGINES[engine]} queries")
    out = []
    for path in paths:
        words = path.stem.split("-", 1)[-1].replace("-", " ")
        out.append((words[:1].upper() + words[1:], path.read_text(encoding="utf-8").strip()))
    return out


def markdown(engine: str, chapter: str = CHAPTER) -> str:
    """The queries as the page shows them: a small heading each, then a code block to copy."""
    lang = "sql" if engine == "postgres" else "tsql"
    return "\n\n".join(f"**{ENGINES[engine]}: {title.lower()}**\n\n```{lang}\n{text}\n```"
                       for title, text in queries(engine, chapter))
