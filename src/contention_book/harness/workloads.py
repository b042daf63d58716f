"""Workload scripts: SQL files under workloads/<chapter>/<engine>/.

T-SQL files are split into batches on ``GO`` lines, as sqlcmd does.
PostgreSQL files are split into statements on top-level semicolons (outside
quotes, dollar-quoted bodies and comments).  Values enter as bound
parameters (``?``); the only text substituted is ``{{identifier}}``
placeholders, and only after :func:`check_identifier` accepted the value.
"""
from __future__ import annotations

import re
from pathlib import Path

from .recording import repo_root
from .targets import check_identifier

_GO = re.compile(r"^[ \t]*GO(?:[ \t]+(\d+))?[ \t]*(?:--.*)?$", re.IGNORECASE | re.MULTILINE)
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}")


class WorkloadError(ValueError):
    pass


def workload_dir(chapter: str, engine: str) -> Path:
    return repo_root() / "workloads" / chapter / engine


def script_path(chapter: str, engine: str, name: str) -> Path:
    path = workload_dir(chapter, engine) / (name if name.endswith(".sql") else f"{name}.sql")
    if not path.is_file():
        raise WorkloadError(f"workload script {path}: not found; expected workloads/{chapter}/{engine}/{name}.sql")
    return path


def split_tsql(text: str) -> list[str]:
    """Split on GO lines; ``GO n`` repeats the batch n times, as in sqlcmd."""
    batches: list[str] = []
    pos = 0
    for m in _GO.finditer(text):
        body = text[pos:m.start()].strip()
        if body:
            batches.extend([body] * int(m.group(1) or 1))
        pos = m.end()
    tail = text[pos:].strip()
    if tail:
        batches.append(tail)
    return batches


def split_postgres(text: str) -> list[str]:
    """Split on top-level ';', respecting quotes, $tag$ bodies and comments."""
    out, buf, i, n = [], [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            buf.append(text[i:j])
            i = j
        elif c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise WorkloadError("unterminated /* comment")
            buf.append(text[i:j + 2])
            i = j + 2
        elif c in ("'", '"'):
            j = i + 1
            while True:
                j = text.find(c, j)
                if j < 0:
                    raise WorkloadError(f"unterminated {c} quote starting at character {i}")
                if text.startswith(c * 2, j):
                    j += 2
                    continue
                break
            buf.append(text[i:j + 1])
            i = j + 1
        elif c == "$" and (m := re.match(r"\$[A-Za-z_]*\$", text[i:])):
            tag = m.group(0)
            j = text.find(tag, i + len(tag))
            if j < 0:
                raise WorkloadError(f"unterminated {tag} body starting at character {i}")
            buf.append(text[i:j + len(tag)])
            i = j + len(tag)
        elif c == ";":
            stmt = "".join(buf).strip()
            if stmt and not all(line.strip().startswith("--") or not line.strip() for line in stmt.splitlines()):
                out.append(stmt)
            buf = []
            i += 1
        else:
            buf.append(c)
            i += 1
    stmt = "".join(buf).strip()
    if stmt and not all(line.strip().startswith("--") or not line.strip() for line in stmt.splitlines()):
        out.append(stmt)
    return out


def render(text: str, identifiers: dict[str, str], where: str) -> str:
    def sub(m: re.Match) -> str:
        key = m.group(1)
        if key not in identifiers:
            raise WorkloadError(f"{where}: placeholder {{{{{key}}}}} has no value; expected one of {sorted(identifiers)}")
        return check_identifier(identifiers[key], key)
    return _PLACEHOLDER.sub(sub, text)


def load(chapter: str, engine: str, name: str, **identifiers: str) -> list[str]:
    """The batches (T-SQL) or statements (PostgreSQL) of one workload script."""
    path = script_path(chapter, engine, name)
    text = render(path.read_text(encoding="utf-8"), identifiers, str(path))
    return split_tsql(text) if engine == "sqlserver" else split_postgres(text)


def run_script(conn, chapter: str, engine: str, name: str, params: dict | None = None, **identifiers: str) -> None:
    """Execute a script's batches in order on ``conn``; ``params`` bind by batch index."""
    cur = conn.cursor()
    for idx, batch in enumerate(load(chapter, engine, name, **identifiers)):
        args = (params or {}).get(idx, ())
        cur.execute(batch, *args)
        while cur.nextset():
            pass
