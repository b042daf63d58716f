"""The PostgreSQL analogue: dead tuples a held-back xmin horizon keeps from being pruned."""
from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd

from contention_book.harness import workloads
from contention_book.harness.live import finish_stacks, start_stacks
from contention_book.harness.load_record import record
from contention_book.harness.schedule import interleaved

from .run_common import Run, query
from .spec import CHAPTER, FILES, RELATION_COLUMNS


def _pg_stats(run: Run, conn, variant: str, phase: str) -> pd.DataFrame:
    table = query(conn, "table_stats", "postgres").assign(relation="ghost_test", relation_kind="heap")
    index = query(conn, "index_stats", "postgres").assign(relation="ghost_test_pkey", relation_kind="btree")
    frame = pd.concat([table, index], ignore_index=True)
    frame.insert(0, "phase", phase)
    frame.insert(0, "repetition", run.repetition)
    frame.insert(0, "variant", variant)
    for col in RELATION_COLUMNS:
        if col not in frame:
            frame[col] = np.nan
    return frame


def _run_postgres_variant(run: Run, variant: str) -> None:
    with contextlib.closing(run.connect()) as conn:
        holder = None
        capture = None
        backend = {}
        try:
            workloads.run_script(conn, CHAPTER, "postgres", "setup")
            if variant == "open_snapshot":
                holder = run.connect(autocommit=False)
                workloads.run_script(holder, CHAPTER, "postgres", "open_snapshot")
                if query(conn, "open_snapshot_check", "postgres").iloc[0, 0] < 1:
                    raise RuntimeError("open_snapshot: the holding transaction does not show a backend_xmin")
                run.log(f"[{CHAPTER}] open_snapshot: a REPEATABLE READ transaction holds the xmin horizon")

            def session(cur, _i):
                workloads.run_script(cur.connection, CHAPTER, "postgres", "session")
                backend["pid"] = cur.execute("SELECT pg_backend_pid()").fetchone()[0]

            def start_capture():
                nonlocal capture
                if run.stacks and run.repetition == 0:  # one profile per variant is enough
                    capture = start_stacks(run.w, variant, [backend["pid"]])

            result, curve = run.drive(variant, session, start_capture)
            finish_stacks(run.w, variant, capture, run.log)
            capture = None
            run.record_run(variant, result, curve)
            record(run.w, result, variant=variant, sessions=1, repetition=run.repetition)
            stats = [_pg_stats(run, conn, variant, "after_run")]
        finally:
            if capture is not None:
                finish_stacks(run.w, variant, capture, run.log)
            if holder is not None:
                holder.rollback()
                holder.close()
        workloads.run_script(conn, CHAPTER, "postgres", "cleanup")
        stats.append(_pg_stats(run, conn, variant, "after_cleanup"))
    run.w.append_csv(FILES["relation"], pd.concat(stats, ignore_index=True))


# -- SQL Server -----------------------------------------------------------------


def run_postgres(ctx) -> None:
    """Every variant on PostgreSQL, into ``ctx.writer``."""
    run = Run(ctx)
    with contextlib.closing(ctx.target.connect(ctx.database)) as conn:
        settings = dict(conn.cursor().execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('autovacuum', 'autovacuum_naptime', 'shared_buffers', 'block_size', 'synchronous_commit')"
        ).fetchall())
    ctx.writer.update(engine={"settings": settings})
    for run.repetition, variant in interleaved(ctx.variants, ctx.params["repetitions"]):
        _run_postgres_variant(run, variant)
