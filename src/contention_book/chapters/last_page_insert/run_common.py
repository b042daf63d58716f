"""What the chapter's PostgreSQL and SQL Server runs share: what one driver call runs and how its result is
counted, the waited-for page resolved to its index (SQL Server), and the read cost of a lookup (both engines' plans)."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any, Sequence

import numpy as np
import pandas as pd

from contention_book.harness import workloads
from contention_book.harness.driver import RunResult
from contention_book.harness.targets import major_version

from .spec import CHAPTER, PAGE_INFO_MAJOR


def insert_call(engine: str, rows_per_call: int, **identifiers: str) -> tuple[str, tuple]:
    """The statement one driver call runs, and its parameters: one INSERT, or the server-side loop."""
    if rows_per_call == 1:
        return workloads.load(CHAPTER, engine, "insert", **identifiers)[-1], ()
    return workloads.load(CHAPTER, engine, "insert_rows", **identifiers)[-1 if engine == "postgres" else 0], \
        (rows_per_call,)


def calls_per_session(rows_per_session: int, rows_per_call: int) -> int | None:
    """Calls each session makes to insert ``rows_per_session`` rows (rounded up); None for no cap."""
    return -(-rows_per_session // rows_per_call) if rows_per_session else None


def runs_row(result: RunResult, rows_per_call: int, rows_counted: int | None = None, **extra: Any) -> dict[str, Any]:
    """One runs.csv row: operations and throughput in rows, latency percentiles per call, and the accounting:
    rows the calls inserted beside ``rows_counted``, the rows that appeared in the table over the point."""
    row = result.row(**extra)
    row.update(rows_per_call=rows_per_call, calls=result.operations, calls_per_s=result.throughput,
               operations=result.operations * rows_per_call, throughput=result.throughput * rows_per_call,
               rows_inserted=result.operations * rows_per_call)
    if rows_counted is not None:
        row["rows_counted"] = int(rows_counted)
    return row


def count_rows(conn, engine: str, **identifiers: str) -> int:
    """The test table's rows now (every partition), read before and after a point's measured window."""
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, engine, "count_rows", **identifiers)[-1])
    return int(cur.fetchone()[0])


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
    """SQL Server 2019+: sys.dm_db_page_info per page; an index's leaf (index_id above 0, a DATA_PAGE or
    INDEX_PAGE) with no right neighbour is the last page (heap and allocation pages have no right neighbour either).

    Run it in the database that owns the pages (the names come from that
    database's catalog views).
    """
    rows, params = _values(pages)
    sql = (
        "SELECT r.database_id, r.file_id, r.page_id, s.name AS schema_name, o.name AS object_name, "
        "i.name AS index_name, p.partition_number, pi.page_level, pi.next_page_page_id, "
        "CASE WHEN pi.index_id > 0 AND pi.page_type_desc IN (N'DATA_PAGE', N'INDEX_PAGE') AND pi.page_level = 0 "
        "AND pi.next_page_page_id = 0 THEN 1 ELSE 0 END AS is_last_page\n"
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


SHOWPLAN_NS = "{http://schemas.microsoft.com/sqlserver/2004/07/showplan}"


class PlanError(ValueError):
    pass


def postgres_plan_cost(plan_json: Any) -> dict[str, float]:
    """Partitions touched, shared blocks read (hit + read), rows returned and execution ms from an EXPLAIN
    JSON plan."""
    try:
        doc = json.loads(plan_json) if isinstance(plan_json, str) else plan_json
        top = doc[0]
        plan = top["Plan"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise PlanError(f"EXPLAIN output: expected a JSON list holding one object with a 'Plan' ({exc})") from None
    touched: set[str] = set()

    def walk(node: dict) -> None:
        if "Relation Name" in node and node.get("Actual Loops", 0) > 0:
            touched.add(node["Relation Name"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    return {"partitions_touched": float(len(touched)),
            "logical_reads": float(plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0)),
            "rows_returned": float(plan.get("Actual Rows", float("nan"))),
            "execution_ms": float(top.get("Execution Time", float("nan")))}


def showplan_cost(xml_text: str) -> dict[str, float]:
    """Partitions accessed and logical reads from an actual execution plan (showplan XML)."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise PlanError(f"showplan XML: not well-formed ({exc})") from None
    partitions = [int(e.get("PartitionCount", 0)) for e in root.iter(f"{SHOWPLAN_NS}PartitionsAccessed")]
    reads = [int(e.get("ActualLogicalReads")) for e in root.iter(f"{SHOWPLAN_NS}RunTimeCountersPerThread")
             if e.get("ActualLogicalReads") is not None]
    if not any(True for _ in root.iter(f"{SHOWPLAN_NS}RelOp")):
        raise PlanError("showplan XML: no RelOp element; expected an actual execution plan")
    return {"partitions_touched": float(max(partitions)) if partitions else 1.0,
            "logical_reads": float(sum(reads)) if reads else float("nan")}


_STATS_IO = re.compile(r"Table '([^']+)'\. Scan count (\d+), logical reads (\d+)", re.I)


def statistics_io_reads(messages: list[str] | str) -> dict[str, tuple[int, int]]:
    """``Table 'x'. Scan count 4, logical reads 8, ...`` -> {table: (scan count, logical reads)}."""
    text = messages if isinstance(messages, str) else "\n".join(str(m) for m in messages)
    out: dict[str, tuple[int, int]] = {}
    for table, scans, reads in _STATS_IO.findall(text):
        s, r = out.get(table, (0, 0))
        out[table] = (s + int(scans), r + int(reads))
    return out
