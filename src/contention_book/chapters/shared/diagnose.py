"""The "On your own server" queries, read from ``workloads/<chapter>/diagnose/<engine>/NN-name.sql``.

The page shows the files themselves, so the query a reader copies is the one
the tests parse (T-SQL) or run on the embedded cluster (PostgreSQL).  The file
name gives the order and the heading; the file's leading ``--`` comment, when
it has one, is shown once, as the paragraph that says what the query is for,
and the code block keeps the comment's sources and the query.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contention_book.harness.workloads import workload_dir

ENGINES = {"sqlserver": "SQL Server", "postgres": "PostgreSQL"}
LANG = {"sqlserver": "tsql", "postgres": "postgresql"}  # Pygments lexers (plain "sql" stops at $$)


@dataclass(frozen=True)
class Query:
    path: Path
    title: str    # "Waited page to index", from 02-waited-page-to-index.sql
    purpose: str  # the leading comment, one paragraph ("" when the file has none)
    text: str     # the whole file (what the tests parse or run)

    @property
    def shown(self) -> str:
        """The code block on the page: the file without the leading comment the paragraph above it says."""
        return _code(self.text)


def _title(path: Path) -> str:
    words = path.stem.split("-", 1)[-1].replace("-", " ")
    return words[:1].upper() + words[1:]


def _leading_comment(text: str) -> list[tuple[str, bool]]:
    """The file's leading ``--`` lines, each with whether it belongs to a "Source" block (a line that starts
    "Source", and the indented or address lines after it)."""
    out, in_source = [], False
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        said = line[2:].strip()
        if said.startswith("Source"):
            in_source = True
        elif not (in_source and (line.startswith("--  ") or said.startswith(("http", "and http")))):
            in_source = False
        out.append((line, in_source))
    return out


def _purpose(text: str) -> str:
    """The leading comment without its "Source" block (the page shows that once, in the code to copy)."""
    return " ".join(line[2:].strip() for line, source in _leading_comment(text) if not source)


def _code(text: str) -> str:
    """The file as the page shows it to copy: its "Source" block and the query, without the rest of the leading
    comment, which the paragraph above the code already says."""
    head = _leading_comment(text)
    kept = [line for line, source in head if source]
    return "\n".join([*kept, *text.splitlines()[len(head):]]).strip()


def folder(chapter: str, engine: str) -> Path:
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    return Path(workload_dir(chapter, f"diagnose/{engine}"))


def queries(chapter: str, engine: str) -> list[Query]:
    """The engine's diagnose queries, in file-name order; an error naming the folder when there are none."""
    where = folder(chapter, engine)
    paths = sorted(where.glob("[0-9][0-9]-*.sql"))
    if not paths:
        raise FileNotFoundError(f"{where}: no NN-name.sql files; expected the chapter's {ENGINES[engine]} queries")
    out = []
    for p in paths:
        text = p.read_text(encoding="utf-8").strip()
        out.append(Query(p, _title(p), _purpose(text), text))
    return out


MAIN_QUERIES = 2  # per engine on a chapter's main page: what is happening now, and where; the rest on its details
# said once above the SQL Server queries on every main page: no SQL Server was available where the book was made
SQLSERVER_UNRUN = ("*Checked against Microsoft's documentation and against the book's simulator (a test program that "
                   "answers these queries as the documentation describes), not run on a SQL Server for this book.*")


def markdown(chapter: str, engine: str, part: str = "all") -> str:
    """The queries as the page shows them: a small heading each, what it is for, then a code block to copy.
    ``part``: "main", the first :data:`MAIN_QUERIES` (the files are numbered in the order to run them) and a line
    saying where the others are; "more", the others; "all", every one."""
    if part not in ("all", "main", "more"):
        raise ValueError(f"part={part!r}: expected 'all', 'main' or 'more'")
    found = queries(chapter, engine)
    chosen = found[:MAIN_QUERIES] if part == "main" else found[MAIN_QUERIES:] if part == "more" else found
    parts = []
    if engine == "sqlserver" and part == "main" and chosen:
        parts.append(SQLSERVER_UNRUN)
    if part == "more" and chosen:
        parts.append(f"**More {ENGINES[engine]} queries**, after the ones on the chapter's main page:")
    for q in chosen:
        said = q.purpose.replace("*", "\\*")  # LCK_M_* would open an emphasis
        head = f"**{ENGINES[engine]}: {q.title.lower()}**"
        parts.append(f"{head}\n\n{said}\n\n```{LANG[engine]}\n{q.shown}\n```" if said else
                     f"{head}\n\n```{LANG[engine]}\n{q.shown}\n```")
    rest = len(found) - MAIN_QUERIES
    if part == "main" and rest > 0:
        parts.append(f"{rest} more {ENGINES[engine]} quer{'y' if rest == 1 else 'ies'} for this problem "
                     f"{'is' if rest == 1 else 'are'} on the chapter's details page.")
    return "\n\n".join(parts)


class ChapterQueries:
    """One chapter's queries, as ``chapter.diagnose``: what is the same in every chapter is written once, here, and
    a chapter only names itself (``diagnose = ChapterQueries(SPEC.chapter)`` in its package)."""

    ENGINES, LANG = ENGINES, LANG

    def __init__(self, chapter: str) -> None:
        self.chapter = chapter

    def queries(self, engine: str) -> list[Query]:
        return queries(self.chapter, engine)

    def files(self, engine: str) -> list[Path]:
        return [q.path for q in self.queries(engine)]

    def markdown(self, engine: str, part: str = "all") -> str:
        return markdown(self.chapter, engine, part)
