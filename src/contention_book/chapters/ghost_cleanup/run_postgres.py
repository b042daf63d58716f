"""The PostgreSQL analogue: what an idle transaction pins, and where the dead versions of a key update live.

Four variants: nothing held; nothing held with VACUUM after every chunk; an idle READ COMMITTED transaction
after one SELECT (the article's open RCSI transaction); an idle REPEATABLE READ transaction after one SELECT
(SNAPSHOT isolation's analogue).  Each run reads back the key (the updates done) and what the holder pins
(``pg_stat_activity``), and counts the heap's line pointers and the index's entries by state (pageinspect).
Wait events are sampled during each run (``harness.pg_waits``), for the load check: how much of the driven
session's time went to waiting for its client (ClientRead) rather than to the server's work.
"""
from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd

from contention_book.harness import pg_waits, workloads
from contention_book.harness.live import finish_stacks, start_stacks
from contention_book.harness.load_record import record
from contention_book.harness.schedule import interleaved

from .run_common import Run, query
from .spec import CHAPTER, FILES, HOLDER_COLUMNS, RELATION_COLUMNS

# holder variant -> (workload script, isolation level it sets)
HOLDERS = {"idle_read_committed": ("open_read_committed", "READ COMMITTED"),
           "open_snapshot": ("open_snapshot", "REPEATABLE READ")}
LINE_POINTER_COLUMNS = ("lp_normal", "lp_redirect", "lp_dead", "lp_unused", "lp_max_per_page")
INDEX_ENTRY_COLUMNS = ("index_entries", "entries_to_dead_pointers", "entries_to_stored_tuples",
                       "entries_to_unused_pointers", "entries_killed")
# Per run, on the heap's rows: how many times autovacuum and autoanalyze ran on the table between the loop's start
# and the reading (pg_stat_user_tables, read before and after), and the table's autovacuum_enabled option (1 where
# autovacuum may run on it, 0 where the run turned it off).
VACUUM_COUNT_COLUMNS = ("autovacuum_during_run", "autoanalyze_during_run", "autovacuum_enabled")
# The variant whose VACUUM is the experiment; every other one keeps autovacuum off its table.
VACUUM_CONTROL = "vacuum_each_chunk"


def vacuum_counts(conn) -> dict:
    """The test table's autovacuum and autoanalyze counts and its autovacuum_enabled option (None: not set)."""
    row = query(conn, "vacuum_counts", "postgres").iloc[0]
    return {"autovacuum_count": int(row["autovacuum_count"]), "autoanalyze_count": int(row["autoanalyze_count"]),
            "autovacuum_enabled": row["autovacuum_enabled"]}


def autovacuum_off(conn, variant: str) -> None:
    """Keep autovacuum off the loop's table in every variant but the VACUUM control: in the reference recording
    made before this, autovacuum reached the table mid-loop in some runs of the other variants and confounded their
    times and sizes.  ``ghost_test`` is the run's own object (setup.sql drops and re-creates it for every run, in
    the harness's own database), so the storage parameter goes with it: no server setting changes and nothing
    needs restoring."""
    if variant != VACUUM_CONTROL:
        workloads.run_script(conn, CHAPTER, "postgres", "autovacuum_off")


def _pg_stats(run: Run, conn, variant: str, phase: str, pages_inspected: bool, before: dict) -> pd.DataFrame:
    table = query(conn, "table_stats", "postgres").assign(relation="ghost_test", relation_kind="heap")
    now = vacuum_counts(conn)
    table = table.assign(autovacuum_during_run=now["autovacuum_count"] - before["autovacuum_count"],
                         autoanalyze_during_run=now["autoanalyze_count"] - before["autoanalyze_count"],
                         autovacuum_enabled=0 if str(now["autovacuum_enabled"]).lower() in ("off", "false") else 1)
    index = query(conn, "index_stats", "postgres").assign(relation="ghost_test_pkey", relation_kind="btree")
    if pages_inspected:
        table = pd.concat([table, query(conn, "line_pointers", "postgres")], axis=1)
        index = pd.concat([index, query(conn, "index_entries", "postgres")], axis=1)
    frame = pd.concat([table, index], ignore_index=True)
    frame.insert(0, "phase", phase)
    frame.insert(0, "repetition", run.repetition)
    frame.insert(0, "variant", variant)
    for col in (*RELATION_COLUMNS, *LINE_POINTER_COLUMNS, *INDEX_ENTRY_COLUMNS, *VACUUM_COUNT_COLUMNS):
        if col not in frame:
            frame[col] = np.nan
    return frame


def _holder_state(run: Run, conn, variant: str, pid: int, phase: str) -> dict:
    state = query(conn, "holder_state", "postgres", pid)
    if state.empty:
        raise RuntimeError(f"{variant}: the holding session (pid {pid}) is not in pg_stat_activity")
    row = state.iloc[0]
    age = row["xmin_age"]
    return {"variant": variant, "repetition": run.repetition, "phase": phase, "isolation": HOLDERS[variant][1],
            "state": str(row["state"]), "xmin_held": int(row["xmin_held"]), "xid_held": int(row["xid_held"]),
            "xmin_age": float(age) if age is not None else np.nan}


def _pageinspect(run: Run, conn) -> bool:
    """Whether raw pages can be read here (pageinspect needs a superuser); say so once when they cannot."""
    try:
        workloads.run_script(conn, CHAPTER, "postgres", "setup_pageinspect")
        return True
    except Exception as exc:  # noqa: BLE001 - any refusal means: go on without line-pointer counts
        if run.repetition == 0:
            run.w.add_note(f"line pointers and index entries not counted: pageinspect unavailable "
                           f"({type(exc).__name__})")
            run.log(f"[{CHAPTER}] pageinspect unavailable, line pointers not counted: {exc}")
        return False


def driven_pids(backend: dict) -> set[int]:
    """The backend pid(s) whose wait samples make the load check: the driven session's, recorded as it set up.

    Never empty: a run whose session never reported its pid would otherwise count every backend, the idle
    holder among them."""
    if "pid" not in backend:
        raise RuntimeError("the driven session never reported its backend pid, so its wait samples cannot be "
                           "told from the holder's")
    return {int(backend["pid"])}


def _run_postgres_variant(run: Run, variant: str, pages_inspected: bool) -> None:
    with contextlib.closing(run.connect()) as conn:
        holder = None
        capture = None
        backend = {}
        holder_rows = []
        try:
            workloads.run_script(conn, CHAPTER, "postgres", "setup")
            autovacuum_off(conn, variant)
            before = vacuum_counts(conn)
            if variant in HOLDERS:
                holder = run.connect(autocommit=False)
                workloads.run_script(holder, CHAPTER, "postgres", HOLDERS[variant][0])
                holder_pid = holder.cursor().execute("SELECT pg_backend_pid()").fetchone()[0]
                holder_rows.append(_holder_state(run, conn, variant, holder_pid, "before_run"))
                if variant == "open_snapshot" and not holder_rows[-1]["xmin_held"]:
                    raise RuntimeError("open_snapshot: the REPEATABLE READ holder shows no backend_xmin, so it pins "
                                       "nothing and the variant would measure nothing")
                pinned = "holds back the xmin horizon" if holder_rows[-1]["xmin_held"] else "pins nothing"
                run.log(f"[{CHAPTER}] {variant}: an idle {HOLDERS[variant][1]} transaction {pinned}")

            def session(cur, _i):
                workloads.run_script(cur.connection, CHAPTER, "postgres", "session")
                backend["pid"] = int(cur.execute("SELECT pg_backend_pid()").fetchone()[0])

            waits = pg_waits.sampler(run.connect, run.db, hz=run.ctx.params.get("wait_hz") or 20.0,
                                     source=run.ctx.params.get("wait_source") or "auto",
                                     log=run.log if run.repetition == 0 and variant == run.ctx.variants[0] else None)

            def before_window():
                nonlocal capture
                if run.stacks and run.repetition == 0:  # one profile per variant is enough
                    capture = start_stacks(run.w, variant, [backend["pid"]])
                # last, as the window opens: the session idles in ClientRead while perf starts (a quarter of a
                # one-second run's samples when the sampler started first)
                waits.start()

            after_chunk = workloads.load(CHAPTER, "postgres", "cleanup") if variant == VACUUM_CONTROL else ()
            try:
                result, curve = run.drive(variant, session, before_window, after_chunk=after_chunk)
            finally:
                waits.stop()
            finish_stacks(run.w, variant, capture, run.log)
            capture = None
            if holder is not None:
                holder_rows.append(_holder_state(run, conn, variant, holder_pid, "after_run"))
            run.record_run(variant, result, curve, query(conn, "row_state", "postgres"))
            if waits.error:
                run.w.add_note(f"wait sampler, {variant}, repetition {run.repetition + 1}: stopped early: "
                               f"{waits.error}")
            # Only the driven session's backend counts.  The holder sits idle in its transaction, waiting for its
            # client (ClientRead) on purpose: that wait is the experiment, not a client too slow to keep the
            # server busy; this run's own connection (conn) idles the same way between its queries.
            # The driven backend is connected through the window and often on CPU at every tick: pg_wait_sampling
            # keeps no row for a backend it never saw waiting, so it is named as alive (harness.pg_waits).
            pids = driven_pids(backend)
            record(run.w, result, log=run.log, sampler=waits, frame=waits.frame(alive=pids), pids=pids,
                   variant=variant, sessions=1, repetition=run.repetition)
            stats = [_pg_stats(run, conn, variant, "after_run", pages_inspected, before)]
            if stats[0]["autovacuum_during_run"].max() > 0:
                run.log(f"[{CHAPTER}] {variant}, repetition {run.repetition + 1}: autovacuum reached the table "
                        "during the loop")
        finally:
            if capture is not None:
                finish_stacks(run.w, variant, capture, run.log)
            if holder is not None:
                holder.rollback()
                holder.close()
        workloads.run_script(conn, CHAPTER, "postgres", "cleanup")
        stats.append(_pg_stats(run, conn, variant, "after_cleanup", pages_inspected, before))
    run.w.append_csv(FILES["relation"], pd.concat(stats, ignore_index=True))
    if holder_rows:
        run.w.append_csv(FILES["holder"], pd.DataFrame(holder_rows)[[HOLDER_COLUMNS[0], "repetition",
                                                                      *HOLDER_COLUMNS[1:]]])


def run_postgres(ctx) -> None:
    """Every variant on PostgreSQL, into ``ctx.writer``."""
    run = Run(ctx)
    with contextlib.closing(ctx.target.connect(ctx.database)) as conn:
        settings = dict(conn.cursor().execute(
            "SELECT name, setting FROM pg_settings WHERE name IN "
            "('autovacuum', 'autovacuum_naptime', 'shared_buffers', 'block_size', 'synchronous_commit')"
        ).fetchall())
        pages_inspected = _pageinspect(run, conn)
    ctx.writer.update(engine={"settings": settings})
    for run.repetition, variant in interleaved(ctx.variants, ctx.params["repetitions"]):
        _run_postgres_variant(run, variant, pages_inspected)
