"""Read cost of partitioning: how many partitions a lookup touches and how many pages it reads.

PostgreSQL: ``EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)``; a partition counts
as touched when a scan node on it ran at least once.  SQL Server: the
actual plan from ``SET STATISTICS XML ON`` (partitions accessed, logical
reads per operator) and, where the plan lacks reads, the ``STATISTICS IO``
messages.
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Any

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
