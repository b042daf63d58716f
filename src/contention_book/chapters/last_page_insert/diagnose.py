"""The "On your own server" queries, read from workloads/last-page-insert/diagnose/<engine>/NN-name.sql.

The page shows the files themselves, so the query a reader copies is the one the tests parse (T-SQL) or run
on the embedded cluster (PostgreSQL).  The file name gives the order and the heading.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contention_book.harness.workloads import workload_dir

from .spec import CHAPTER

ENGINES = {"sqlserver": "SQL Server", "postgres": "PostgreSQL"}


@dataclass(frozen=True)
class Query:
    path: Path
    title: str   # "Waited page to index", from 02-waited-page-to-index.sql
    text: str


def _title(path: Path) -> str:
    words = path.stem.split("-", 1)[-1].replace("-", " ")
    return words[:1].upper() + words[1:]


def queries(engine: str) -> list[Query]:
    """The engine's diagnose queries, in file-name order; an error naming the folder when there are none."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    folder = workload_dir(CHAPTER, f"diagnose/{engine}")
    paths = sorted(folder.glob("*.sql"))
    if not paths:
        raise FileNotFoundError(f"{folder}: no NN-name.sql files; expected the chapter's {ENGINES[engine]} queries")
    return [Query(p, _title(p), p.read_text(encoding="utf-8").strip()) for p in paths]


def markdown(engine: str) -> str:
    """The queries as the page shows them: a small heading each, then a code block to copy."""
    lang = "sql" if engine == "postgres" else "tsql"
    return "\n\n".join(f"**{ENGINES[engine]}: {q.title.lower()}**\n\n```{lang}\n{q.text}\n```" for q in queries(engine))
