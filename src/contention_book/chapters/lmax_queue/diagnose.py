"""The "On your own server" queries, read from their files so the page shows exactly what the tests run.

The files live in ``workloads/lmax-queue/diagnose/<engine>/NN-name.sql``; the
page shows each one's leading comment as its explanation and the whole file
in a code block a reader can copy.
"""
from __future__ import annotations

from pathlib import Path

from contention_book.harness.recording import repo_root

from .spec import CHAPTER

LANG = {"sqlserver": "tsql", "postgres": "postgresql"}  # Pygments lexers (plain "sql" stops at $$)


def folder(engine: str) -> Path:
    return repo_root() / "workloads" / CHAPTER / "diagnose" / engine


def files(engine: str) -> list[Path]:
    out = sorted(folder(engine).glob("[0-9][0-9]-*.sql"))
    if not out:
        raise FileNotFoundError(f"{folder(engine)}: no NN-name.sql files; expected the chapter's diagnose queries")
    return out


def purpose(path: Path) -> str:
    """The file's leading comment lines, joined into one paragraph."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("--"):
            break
        lines.append(line[2:].strip())
    if not lines:
        raise ValueError(f"{path}: line 1: expected a leading '--' comment saying what the query shows")
    return " ".join(lines)


def markdown(engine: str) -> str:
    """Every query of one engine: its purpose in a sentence, then the file in a code block."""
    parts = []
    for path in files(engine):
        said = purpose(path).replace("*", "\\*")  # LCK_M_* would open an emphasis
        parts.append(f"{said}\n\n```{LANG[engine]}\n{path.read_text(encoding='utf-8').rstrip()}\n```")
    return "\n\n".join(parts)
