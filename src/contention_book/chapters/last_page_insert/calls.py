"""What one driver call runs and how its result is counted, for both engines' runs."""
from __future__ import annotations

from typing import Any

from contention_book.harness import workloads
from contention_book.harness.driver import RunResult

from .spec import CHAPTER


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
