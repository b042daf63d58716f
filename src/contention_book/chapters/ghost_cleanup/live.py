"""Live runs of the ghost-cleanup variants on SQL Server or PostgreSQL, written as a recording."""
from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from contention_book.harness import recording as rec
from contention_book.harness import workloads
from contention_book.harness.driver import run_sessions
from contention_book.harness.guard import Change, StateGuard
from contention_book.harness.live import default_destination, finish_stacks, invocation, live_target, measured_writer, start_stacks
from contention_book.harness.targets import Target, check_identifier, ensure_own_database, major_version
from contention_book.harness.sqlserver_dmv import trace_flag_change

from .common import CHAPTER, FILES, INDEX_COLUMNS, NOTEBOOK, RELATION_COLUMNS, VARIANTS


def chunk_sizes(updates: int, chunk: int) -> list[int]:
    """Split ``updates`` into chunks of ``chunk`` (the last one shorter)."""
    if updates < 1 or chunk < 1:
        raise ValueError(f"updates and chunk must be positive, got updates={updates}, chunk={chunk}")
    full, rest = divmod(updates, chunk)
    return [chunk] * full + ([rest] if rest else [])


def curve_from_timeline(variant: str, timeline: pd.DataFrame, chunks: Sequence[int]) -> pd.DataFrame:
    """Per-chunk rows of the slowdown curve: when it ended, and µs per update in it."""
    tl = timeline.sort_values("op").reset_index(drop=True)
    sizes = np.asarray([chunks[int(op)] for op in tl["op"]], dtype=float)
    return pd.DataFrame({
        "variant": variant,
        "chunk": tl["op"].astype(int),
        "updates_done": np.cumsum(sizes).astype(int),
        "elapsed_s": tl["end_s"],
        "chunk_s": tl["latency_s"],
        "us_per_update": tl["latency_s"] / sizes * 1e6,
        "updates_per_s": sizes / tl["latency_s"],
    })


def _query(conn, chapter_script: str, engine: str, **ids: str) -> pd.DataFrame:
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, engine, chapter_script, **ids)[-1])
    cols = [d[0] for d in cur.description]
    return pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)


class _Run:
    """State shared by the variants of one live run."""

    def __init__(self, target: Target, database: str, writer: rec.RecordingWriter, updates: int, chunk: int,
                 cleanup_wait_s: float, stacks: bool, allow_server_changes: bool, log: Callable[[str], None]):
        self.t, self.db, self.w = target, database, writer
        self.chunks = chunk_sizes(updates, chunk)
        self.cleanup_wait_s = cleanup_wait_s
        self.stacks = stacks
        self.allow_server_changes = allow_server_changes
        self.log = log
        self.engine = target.engine

    def connect(self, autocommit: bool = True):
        return self.t.connect(self.db, autocommit=autocommit)

    def drive(self, variant: str, setup_session, before_window=None):
        """Run the chunks in one session; return (RunResult, curve frame)."""
        call = workloads.load(CHAPTER, self.engine, "update_chunk")[0]
        chunks = self.chunks
        result = run_sessions(
            lambda: self.connect(),
            lambda cur, _s, op: _drain(cur.execute(call, chunks[op])),
            sessions=1, operations_per_session=len(chunks), setup_session=setup_session,
            keep_timeline=True, progress=f"{variant} ({sum(chunks):,} updates)", on_ready=before_window,
        )
        if result.errors:
            raise RuntimeError(f"variant {variant}: {result.errors} chunk(s) failed: "
                               f"{result.per_session[0].error_samples}")
        return result, curve_from_timeline(variant, result.timeline(), chunks)

    def record_run(self, variant: str, result, curve: pd.DataFrame) -> None:
        updates = int(sum(self.chunks))
        self.w.append_csv(FILES["runs"], pd.DataFrame([{
            "variant": variant, "repetition": 0, "sessions": 1, "elapsed_s": result.elapsed_s,
            "operations": updates, "throughput": updates / result.elapsed_s, "chunks": len(self.chunks),
            "errors": result.errors,
        }]))
        self.w.append_csv(FILES["curve"], curve)
        self.log(f"[{CHAPTER}] {variant}: {updates:,} updates in {result.elapsed_s:.2f} s "
                 f"({updates / result.elapsed_s:,.0f}/s)")


def _drain(cur) -> None:
    while cur.nextset():
        pass


# -- PostgreSQL -----------------------------------------------------------------
def _pg_stats(run: _Run, conn, variant: str, phase: str) -> pd.DataFrame:
    table = _query(conn, "table_stats", "postgres").assign(relation="ghost_test", relation_kind="heap")
    index = _query(conn, "index_stats", "postgres").assign(relation="ghost_test_pkey", relation_kind="btree")
    frame = pd.concat([table, index], ignore_index=True)
    frame.insert(0, "phase", phase)
    frame.insert(0, "variant", variant)
    for col in RELATION_COLUMNS:
        if col not in frame:
            frame[col] = np.nan
    return frame


def _run_postgres_variant(run: _Run, variant: str) -> None:
    with contextlib.closing(run.connect()) as conn:
        holder = None
        capture = None
        backend = {}
        try:
            workloads.run_script(conn, CHAPTER, "postgres", "setup")
            if variant == "open_snapshot":
                holder = run.connect(autocommit=False)
                workloads.run_script(holder, CHAPTER, "postgres", "open_snapshot")
                if _query(conn, "open_snapshot_check", "postgres").iloc[0, 0] < 1:
                    raise RuntimeError("open_snapshot: the holding transaction does not show a backend_xmin")
                run.log(f"[{CHAPTER}] open_snapshot: a REPEATABLE READ transaction holds the xmin horizon")

            def session(cur, _i):
                workloads.run_script(cur.connection, CHAPTER, "postgres", "session")
                backend["pid"] = cur.execute("SELECT pg_backend_pid()").fetchone()[0]

            def start_capture():
                nonlocal capture
                if run.stacks:
                    capture = start_stacks(run.w, variant, [backend["pid"]])

            result, curve = run.drive(variant, session, start_capture)
            finish_stacks(run.w, variant, capture, run.log)
            capture = None
            run.record_run(variant, result, curve)
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
def _database_options_change(db: str, version: str, rcsi: bool) -> Change:
    """Recovery, delayed durability, ADR, SI and RCSI of the harness's own database."""
    check_identifier(db, "database")
    has_adr = major_version(version) >= 15

    def read(conn):
        cols = ("recovery_model_desc, delayed_durability_desc, is_read_committed_snapshot_on, "
                "snapshot_isolation_state_desc" + (", is_accelerated_database_recovery_on" if has_adr else ""))
        row = conn.cursor().execute(f"SELECT {cols} FROM sys.databases WHERE name = ?", db).fetchone()
        return {"recovery": row[0], "delayed_durability": row[1], "rcsi": bool(row[2]),
                "snapshot": row[3], "adr": bool(row[4]) if has_adr else None}

    def statements(state: dict) -> list[str]:
        out = [f"ALTER DATABASE [{db}] SET RECOVERY {state['recovery']}",
               f"ALTER DATABASE [{db}] SET DELAYED_DURABILITY = {state['delayed_durability']}",
               f"ALTER DATABASE [{db}] SET ALLOW_SNAPSHOT_ISOLATION {'ON' if state['snapshot'] == 'ON' else 'OFF'}",
               f"ALTER DATABASE [{db}] SET READ_COMMITTED_SNAPSHOT {'ON' if state['rcsi'] else 'OFF'} "
               "WITH ROLLBACK IMMEDIATE"]
        if state.get("adr") is not None:
            out.append(f"ALTER DATABASE [{db}] SET ACCELERATED_DATABASE_RECOVERY = {'ON' if state['adr'] else 'OFF'}")
        return out

    wanted = {"recovery": "SIMPLE", "delayed_durability": "ALLOWED", "snapshot": "OFF", "rcsi": rcsi,
              "adr": False if has_adr else None}
    return Change(
        description=f"database {db}: SIMPLE recovery, delayed durability ALLOWED, ADR and snapshot isolation OFF, "
                    f"READ_COMMITTED_SNAPSHOT {'ON' if rcsi else 'OFF'}",
        scope="database", read=read, apply=lambda prior: statements(wanted), restore=statements,
    )


def sqlserver_changes(variant: str, db: str, version: str) -> list[Change]:
    changes = [_database_options_change(db, version, rcsi=variant != "read_committed")]
    if variant == "rcsi_open_txn_tf7006":
        changes.append(trace_flag_change(7006))
    return changes


def _counters(conn) -> pd.DataFrame:
    return _query(conn, "perf_counters", "sqlserver")


def counter_rates(before: pd.DataFrame, after: pd.DataFrame, seconds: float) -> pd.DataFrame:
    """Per-second rates from two reads of cumulative counters (type 272696576); raw values as they are."""
    key = ["object_name", "counter_name", "instance_name"]
    both = before.merge(after, on=key + ["cntr_type"], suffixes=("_before", "_after"))
    per_second = both["cntr_type"] == 272696576
    delta = (both["cntr_value_after"] - both["cntr_value_before"]).clip(lower=0)  # a reset reads as 0, not negative
    both["delta"] = np.where(per_second, delta, np.nan)
    both["per_second"] = np.where(per_second, delta / seconds, np.nan)
    both["value"] = np.where(per_second, np.nan, both["cntr_value_after"])
    both["counter"] = both["counter_name"]
    return both[["counter", "object_name", "instance_name", "cntr_type", "delta", "per_second", "value"]]


def _run_sqlserver_variant(run: _Run, variant: str, version: str) -> None:
    if variant == "rcsi_open_txn_tf7006" and major_version(version) < 16:
        run.log(f"[{CHAPTER}] {variant}: skipped, trace flag 7006 matters only on SQL Server 2022 (16.x) or later")
        run.w.add_note(f"{variant} skipped: server is {version}, the variant needs 16.x or later")
        return
    changes = sqlserver_changes(variant, run.db, version)
    with StateGuard(lambda database: run.t.connect(database), changes,
                    allow_server_changes=run.allow_server_changes, log=run.log), \
            contextlib.closing(run.connect()) as conn:
        holder = None
        try:
            workloads.run_script(conn, CHAPTER, "sqlserver", "setup")
            if variant.startswith("rcsi_open_txn"):
                holder = run.connect()
                workloads.run_script(holder, CHAPTER, "sqlserver", "open_transaction")
                if _query(conn, "open_transaction_check", "sqlserver").iloc[0, 0] < 1:
                    raise RuntimeError(f"{variant}: the open transaction is not in "
                                       "sys.dm_tran_active_snapshot_database_transactions")
            before = _counters(conn)
            result, curve = run.drive(variant, None)
            after = _counters(conn)
            run.record_run(variant, result, curve)
            stats = [_query(conn, "index_stats", "sqlserver").assign(phase="after_run")]
            rates = counter_rates(before, after, result.elapsed_s)
            if rates.empty:
                run.w.add_note("performance counters for skipped ghosts and lock requests not found")
            run.w.append_csv(FILES["counters"], rates.assign(variant=variant))
        finally:
            if holder is not None:
                holder.cursor().execute("IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION")
                holder.close()
        run.log(f"[{CHAPTER}] {variant}: waiting {run.cleanup_wait_s:.0f} s for the ghost cleanup task")
        time.sleep(run.cleanup_wait_s)
        stats.append(_query(conn, "index_stats", "sqlserver").assign(phase="after_cleanup"))
    frame = pd.concat(stats, ignore_index=True)
    frame.insert(0, "variant", variant)
    run.w.append_csv(FILES["index"], frame[list(INDEX_COLUMNS)])


def run_live(
    *,
    target: str | None = None,
    engine: str = "postgres",
    updates: int = 123_456,
    chunk: int | None = None,
    variants: Sequence[str] | None = None,
    allow_server_changes: bool = False,
    record_to: str | None = None,
    database: str = "contention_lab",
    cleanup_wait_s: float = 10.0,
    stacks: bool = True,
    command: str | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Run the chapter's variants against ``target`` and return the new recording's path."""
    if engine not in VARIANTS:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(VARIANTS)}")
    variants = list(variants or VARIANTS[engine])
    unknown = [v for v in variants if v not in VARIANTS[engine]]
    if unknown:
        raise ValueError(f"variants {unknown}: expected some of {', '.join(VARIANTS[engine])} for {engine}")
    chunk = int(chunk or max(1, math.ceil(updates / 100)))
    parameters = {"engine": engine, "updates": int(updates), "chunk": chunk, "variants": variants,
                  "database": database, "cleanup_wait_s": cleanup_wait_s}
    check_identifier(database, "database")
    with live_target(target, engine) as tgt:
        ensure_own_database(tgt, database, log=log)
        dest = default_destination(CHAPTER, record_to, engine)
        command = command or invocation(NOTEBOOK, {"source": "live", "engine": engine, "updates": updates,
                                                   "target": target or ""})
        writer = measured_writer(tgt, CHAPTER, parameters, command, dest,
                                 title="Ghost cleanup: one row, its key updated over and over")
        with writer:
            run = _Run(tgt, database, writer, updates, chunk, cleanup_wait_s, stacks, allow_server_changes, log)
            version = writer.manifest["engine"]["version"]  # read once, by measured_writer
            if engine == "postgres":
                with contextlib.closing(tgt.connect(database)) as conn:
                    settings = dict(conn.cursor().execute(
                        "SELECT name, setting FROM pg_settings WHERE name IN "
                        "('autovacuum', 'autovacuum_naptime', 'shared_buffers', 'block_size', 'synchronous_commit')"
                    ).fetchall())
                writer.update(engine={"settings": settings})
            for variant in variants:
                if engine == "postgres":
                    _run_postgres_variant(run, variant)
                else:
                    _run_sqlserver_variant(run, variant, version)
    log(f"[{CHAPTER}] recording written: {dest}")
    return dest
