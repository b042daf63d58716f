"""From a waited-for page to the index it belongs to (SQL Server).

``sys.dm_os_waiting_tasks`` names the page a PAGELATCH waiter wants in its
``resource_description`` as ``<database_id>:<file_id>:<page_id>``.  The
sampler keeps those rows as they come; afterwards each distinct page is
resolved to schema, object, index and partition:

- on SQL Server 2019 (15.x) and later with ``sys.dm_db_page_info``, which
  also gives the page's level and its right-hand neighbour, so a leaf page
  with no right neighbour is *the last page* of its B-tree;
- on older builds with ``sys.dm_os_buffer_descriptors`` joined to the
  allocation units, as the SQLCAT article does; that path cannot tell
  whether a page is the last one, and says so.

Everything below except the two query builders is plain pandas, tested on a
fixture of waiting-task rows.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np
import pandas as pd

from contention_book.harness.targets import major_version

from .spec import PAGE_INFO_MAJOR

# 2019 and earlier print 'db:file:page'; 2022 appends the latch, e.g. '6:3:749442168 (LATCH 0x...: Class: BUFFER ...)'.
_RESOURCE = re.compile(r"^\s*(\d+):(\d+):(\d+)(?:\s+\(.*\))?\s*$")
SAMPLE_COLUMNS = ("session_id", "wait_type", "wait_duration_ms", "resource_description")
RESOLVED_COLUMNS = ("database_id", "file_id", "page_id", "schema_name", "object_name", "index_name",
                    "partition_number", "page_level", "next_page_page_id", "is_last_page")
MAX_PAGES = 400  # distinct pages resolved per query (3 parameters each; SQL Server allows 2,100)


class PageResolutionError(ValueError):
    pass


def parse_resource(description: str) -> tuple[int, int, int]:
    """``'7:1:12345'`` (or 2022's ``'7:1:12345 (LATCH ...)'``) -> (7, 1, 12345); else an error saying what was expected."""
    m = _RESOURCE.match(str(description))
    if not m:
        raise PageResolutionError(
            f"resource_description {description!r}: expected <database_id>:<file_id>:<page_id>, e.g. '7:1:12345'")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def page_samples(samples: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """PAGELATCH rows with database/file/page split out; returns (rows, rows that did not parse)."""
    missing = [c for c in SAMPLE_COLUMNS if c not in samples.columns]
    if missing:
        raise PageResolutionError(f"waiting-task samples lack column(s) {missing}; expected {list(SAMPLE_COLUMNS)}")
    latch = samples[samples["wait_type"].astype(str).str.startswith("PAGELATCH_")].copy()
    parsed = latch["resource_description"].astype(str).str.extract(_RESOURCE.pattern)
    bad = int(parsed[0].isna().sum())
    latch = latch[parsed[0].notna()].copy()
    parsed = parsed.dropna().astype(np.int64)
    latch["database_id"], latch["file_id"], latch["page_id"] = parsed[0], parsed[1], parsed[2]
    latch["page"] = (latch["database_id"].astype(str) + ":" + latch["file_id"].astype(str) + ":"
                     + latch["page_id"].astype(str))
    return latch.reset_index(drop=True), bad


def distinct_pages(rows: pd.DataFrame, limit: int = MAX_PAGES) -> list[tuple[int, int, int]]:
    """The most-waited-for pages first, at most ``limit``."""
    counts = rows.groupby(["database_id", "file_id", "page_id"]).size().sort_values(ascending=False)
    return [tuple(int(x) for x in key) for key in counts.index[:limit]]


def _values(pages: Sequence[tuple[int, int, int]]) -> tuple[str, list[int]]:
    if not pages:
        raise PageResolutionError("no pages to resolve")
    if len(pages) > MAX_PAGES:
        raise PageResolutionError(f"{len(pages)} pages: resolve at most {MAX_PAGES} per query")
    rows = ", ".join("(?, ?, ?)" for _ in pages)
    return rows, [int(v) for p in pages for v in p]


def page_info_query(pages: Sequence[tuple[int, int, int]]) -> tuple[str, list[int]]:
    """SQL Server 2019+: sys.dm_db_page_info per page; a leaf with no right neighbour is the last page.

    Run it in the database that owns the pages (the names come from that
    database's catalog views).
    """
    rows, params = _values(pages)
    sql = (
        "SELECT r.database_id, r.file_id, r.page_id, s.name AS schema_name, o.name AS object_name, "
        "i.name AS index_name, p.partition_number, pi.page_level, pi.next_page_page_id, "
        "CASE WHEN pi.page_level = 0 AND pi.next_page_page_id = 0 THEN 1 ELSE 0 END AS is_last_page\n"
        f"FROM (VALUES {rows}) AS r (database_id, file_id, page_id)\n"
        "CROSS APPLY sys.dm_db_page_info(r.database_id, r.file_id, r.page_id, 'DETAILED') AS pi\n"
        "LEFT JOIN sys.partitions AS p ON p.partition_id = pi.partition_id\n"
        "LEFT JOIN sys.indexes AS i ON i.object_id = pi.object_id AND i.index_id = pi.index_id\n"
        "LEFT JOIN sys.objects AS o ON o.object_id = pi.object_id\n"
        "LEFT JOIN sys.schemas AS s ON s.schema_id = o.schema_id"
    )
    return sql, params


def buffer_descriptor_query(pages: Sequence[tuple[int, int, int]]) -> tuple[str, list[int]]:
    """Before 2019: the page's buffer descriptor, its allocation unit and the partition that owns it.

    A buffer descriptor does not say whether the page has a right
    neighbour, so ``is_last_page`` is NULL on this path.
    """
    rows, params = _values(pages)
    sql = (
        "SELECT r.database_id, r.file_id, r.page_id, s.name AS schema_name, o.name AS object_name, "
        "i.name AS index_name, p.partition_number, bd.page_level, CAST(NULL AS int) AS next_page_page_id, "
        "CAST(NULL AS int) AS is_last_page\n"
        f"FROM (VALUES {rows}) AS r (database_id, file_id, page_id)\n"
        "JOIN sys.dm_os_buffer_descriptors AS bd\n"
        "  ON bd.database_id = r.database_id AND bd.file_id = r.file_id AND bd.page_id = r.page_id\n"
        "JOIN sys.allocation_units AS au ON au.allocation_unit_id = bd.allocation_unit_id\n"
        "JOIN sys.partitions AS p ON p.hobt_id = au.container_id AND au.type IN (1, 3)\n"
        "JOIN sys.indexes AS i ON i.object_id = p.object_id AND i.index_id = p.index_id\n"
        "JOIN sys.objects AS o ON o.object_id = p.object_id\n"
        "JOIN sys.schemas AS s ON s.schema_id = o.schema_id"
    )
    return sql, params


def resolution_query(version: str, pages: Sequence[tuple[int, int, int]]) -> tuple[str, list[int], str]:
    """The right query for the server's version: (sql, params, method)."""
    if major_version(version) >= PAGE_INFO_MAJOR:
        return (*page_info_query(pages), "sys.dm_db_page_info")
    return (*buffer_descriptor_query(pages), "sys.dm_os_buffer_descriptors")


def hot_pages(rows: pd.DataFrame, resolved: pd.DataFrame, top: int | None = None) -> pd.DataFrame:
    """Pages ranked by waiting-task samples, with their owner and whether each is a last page.

    ``rows`` come from :func:`page_samples`; ``resolved`` from one of the
    resolution queries.  Pages the query could not resolve (evicted, or in
    another database) stay in the ranking as ``(unresolved)``.
    """
    missing = [c for c in RESOLVED_COLUMNS if c not in resolved.columns]
    if missing:
        raise PageResolutionError(f"resolved pages lack column(s) {missing}; expected {list(RESOLVED_COLUMNS)}")
    keys = ["database_id", "file_id", "page_id"]
    group = [c for c in ("variant", "sessions") if c in rows.columns]
    counts = rows.groupby(group + keys + ["page"]).size().rename("samples").reset_index()
    res = resolved.drop_duplicates(keys).copy()
    for k in keys:
        res[k] = res[k].astype(np.int64)
    out = counts.merge(res, on=keys, how="left")
    out["object"] = (out["schema_name"].fillna("?") + "." + out["object_name"].fillna("(unresolved)")).where(
        out["object_name"].notna(), "(unresolved)")
    out["index"] = out["index_name"].fillna("")
    total = out.groupby(group)["samples"].transform("sum") if group else out["samples"].sum()
    out["share"] = out["samples"] / total
    out = out.sort_values(group + ["samples"], ascending=[True] * len(group) + [False]).reset_index(drop=True)
    if top is not None:
        out = out.groupby(group, sort=False).head(top) if group else out.head(top)
    cols = [*group, "page", "object", "index", "partition_number", "page_level", "samples", "share", "is_last_page"]
    return out[cols].reset_index(drop=True)


def last_page_share(ranking: pd.DataFrame) -> float:
    """Share of page-latch samples on a last page; NaN when the resolution could not tell."""
    known = ranking["is_last_page"].notna()
    if not known.any():
        return float("nan")
    total = ranking["samples"].sum()
    return float(ranking.loc[known & (ranking["is_last_page"].astype(float) == 1), "samples"].sum() / total)
