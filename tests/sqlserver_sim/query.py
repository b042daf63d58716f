"""Resolve a batch's system objects and columns against the documented catalogue, then check their permission.

Every batch the simulator is sent goes through :func:`resolve` before it is answered: each ``sys.<name>`` it
names must be in ``catalogue.json`` (the documented system views and DMVs, per version and platform), each
``alias.column`` on such an object must be one of that object's documented columns, and the login must hold the
object's permission for the version.  What fails is the server's error: Msg 208 (invalid object name), Msg 207
(invalid column name), Msg 300 (permission).  A batch no answer recognises is parsed with sqlfluff's tsql
grammar (tests/tsql_parse.py): a parse error is Msg 102 (incorrect syntax), as on a server.

The catalogue is data, built from the pages of the MicrosoftDocs/sql-docs repository (each entry keeps its page
and, where it was read, its ``ms.date``); see docs/sqlserver-simulator.md.
"""
from __future__ import annotations

import functools
import json
import re
from pathlib import Path

CATALOGUE = Path(__file__).resolve().parent / "catalogue.json"
PLATFORM = {"sqldb": "sqldb", "mi": "mi"}
KEYWORDS = {"AS", "ON", "JOIN", "WHERE", "CROSS", "OUTER", "INNER", "LEFT", "RIGHT", "APPLY", "ORDER", "GROUP",
            "WITH", "UNION", "HAVING", "OPTION", "FULL", "SELECT", "AND", "OR", "SET", "WHEN", "THEN", "INTO"}


@functools.lru_cache(maxsize=1)
def catalogue() -> dict:
    return json.loads(CATALOGUE.read_text(encoding="utf-8"))


def _blank(sql: str) -> str:
    """String literals and comments blanked, so names inside them are not taken for references."""
    sql = re.sub(r"--[^\n]*", " ", sql)
    sql = re.sub(r"/\*.*?\*/", " ", sql, flags=re.S)
    return re.sub(r"N?'(?:[^']|'')*'", "''", sql)


def _exists(entry: dict, major: int, platform: str | None) -> bool:
    if platform:
        return platform in entry.get("platforms", ["sqlserver", "mi", "sqldb"])
    return "sqlserver" in entry.get("platforms", ["sqlserver", "mi", "sqldb"]) and major >= entry.get("since", 0)


def references(sql: str) -> tuple[list[str], dict[str, str], list[tuple[str, str]]]:
    """(objects named, alias -> object, (alias, column) pairs) of the ``sys.`` objects in ``sql``."""
    text = _blank(sql)
    objects, aliases = [], {}
    for m in re.finditer(r"(?:\[?\w+\]?\.)?\bsys\.(\w+)(\s*\((?:[^()]|\([^()]*\))*\))?(?:\s+(?:AS\s+)?(\w+)(?![.\w]))?",
                         text, re.I):
        name = "sys." + m.group(1).lower()
        objects.append(name)
        alias = m.group(3)
        if alias and alias.upper() not in KEYWORDS and alias.lower() != "sys":
            aliases[alias.lower()] = name
    cols = [(a.lower(), c) for a, c in re.findall(r"\b(\w+)\.(\w+)\b", text) if a.lower() in aliases]
    return objects, aliases, cols


def resolve(state: dict, session, sql: str, major: int, sql_error, check_permission) -> None:
    """Raise the server's error for the first unknown object (208), unknown column (207) or permission (300)."""
    cat = catalogue()["objects"]
    platform = PLATFORM.get(state["version"])
    objects, aliases, cols = references(sql)
    for name in objects:
        entry = cat.get(name)
        if entry is None or entry.get("kind") == "procedure":
            if entry is None:
                raise sql_error(208, f"Invalid object name '{name}'.")
            continue
        if not _exists(entry, major, platform):
            raise sql_error(208, f"Invalid object name '{name}'.")
    for alias, col in cols:
        entry = cat[aliases[alias]]
        c = entry["columns"].get(col.lower())
        if c is None or (not platform and major < c.get("since", 0)):
            raise sql_error(207, f"Invalid column name '{col}'.")
    if len(set(objects)) == 1 and not aliases:  # SELECT col, col AS x FROM sys.<one object>: bare columns
        entry = cat[objects[0]]
        for m in re.finditer(r"\bSELECT\s+(?:TOP\s*\(\d+\)\s+)?(.+?)\s+FROM\s+(?:\[?\w+\]?\.)?sys\.\w+\b",
                             _blank(sql), re.I | re.S):
            for item in _split(m.group(1)):
                bare = re.fullmatch(r"(\w+)(?:\s+(?:AS\s+)?\w+)?", item.strip(), re.I)
                if bare and not bare.group(1).isdigit() and entry["columns"] and \
                        bare.group(1).lower() not in entry["columns"]:
                    raise sql_error(207, f"Invalid column name '{bare.group(1)}'.")
        for m in re.finditer(r"\b(?:WHERE|AND|OR)\s+\(?\s*(\w+)\s*(?:=|<>|!=|<|>|\bLIKE\b|\bIN\b|\bIS\b)",
                             _blank(sql), re.I):
            name = m.group(1)
            if entry["columns"] and not name.isdigit() and name.upper() not in KEYWORDS and \
                    name.lower() not in entry["columns"]:
                raise sql_error(207, f"Invalid column name '{name}'.")
    for name in dict.fromkeys(objects):
        entry = cat[name]
        if entry.get("permission_check") == "error":
            check_permission(name)


def _split(select_list: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in select_list:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return out + [cur]


@functools.lru_cache(maxsize=256)
def syntax_error(sql: str) -> str | None:
    """The first parse error sqlfluff's tsql grammar reports, or None (only for batches no answer recognised)."""
    import sys

    tests = str(Path(__file__).resolve().parents[1])
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from tsql_parse import problems

    found = problems(sql if sql.rstrip().endswith(";") else sql + ";")
    return found[0] if found else None
