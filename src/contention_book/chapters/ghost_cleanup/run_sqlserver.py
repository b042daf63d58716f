"""The article's test on a reader's SQL Server: RC, RCSI, RCSI with an open transaction, and TF 7006."""
from __future__ import annotations

import contextlib
import time

import numpy as np
import pandas as pd

from contention_book.harness import workloads
from contention_book.harness.guard import Change, StateGuard
from contention_book.harness.schedule import interleaved
from contention_book.harness.sqlserver_dmv import trace_flag_change
from contention_book.harness.targets import check_identifier, gate_version, major_version

from .run_common import Run, query
from .spec import CHAPTER, FILES, INDEX_COLUMNS


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
            # ADR changes need an exclusive database lock (ADR management page,
            # https://learn.microsoft.com/sql/relational-databases/accelerated-database-recovery-management): the
            # termination clause of its own, not the RCSI statement's before it (issue 33, defect 7)
            out.append(f"ALTER DATABASE [{db}] SET ACCELERATED_DATABASE_RECOVERY = {'ON' if state['adr'] else 'OFF'} "
                       "WITH ROLLBACK IMMEDIATE")
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
    return query(conn, "perf_counters", "sqlserver")


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


def _run_sqlserver_variant(run: Run, variant: str, version: str) -> None:
    if variant == "rcsi_open_txn_tf7006" and major_version(version) < 16:
        if run.repetition == 0:
            run.log(f"[{CHAPTER}] {variant}: skipped, trace flag 7006 matters only on SQL Server 2022 (16.x) or "
                    "later")
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
                if query(conn, "open_transaction_check", "sqlserver").iloc[0, 0] < 1:
                    raise RuntimeError(f"{variant}: the open transaction is not in "
                                       "sys.dm_tran_active_snapshot_database_transactions")
            before = _counters(conn)
            result, curve = run.drive(variant, None)
            after = _counters(conn)
            run.record_run(variant, result, curve, query(conn, "row_state", "sqlserver"))
            stats = [query(conn, "index_stats", "sqlserver").assign(phase="after_run")]
            rates = counter_rates(before, after, result.elapsed_s)
            if rates.empty:
                run.w.add_note("performance counters for skipped ghosts and lock requests not found")
            run.w.append_csv(FILES["counters"], rates.assign(variant=variant, repetition=run.repetition))
        finally:
            if holder is not None:
                holder.cursor().execute("IF @@TRANCOUNT > 0 ROLLBACK TRANSACTION")
                holder.close()
        run.log(f"[{CHAPTER}] {variant}: waiting {run.cleanup_wait_s:.0f} s for the ghost cleanup task")
        time.sleep(run.cleanup_wait_s)
        stats.append(query(conn, "index_stats", "sqlserver").assign(phase="after_cleanup"))
    frame = pd.concat(stats, ignore_index=True)
    frame.insert(0, "variant", variant)
    frame.insert(1, "repetition", run.repetition)
    run.w.append_csv(FILES["index"], frame[[INDEX_COLUMNS[0], "repetition", *INDEX_COLUMNS[1:]]])


def run_sqlserver(ctx) -> None:
    """Every variant on a reader's SQL Server, into ``ctx.writer``."""
    run = Run(ctx)
    version = gate_version(ctx.writer.manifest["engine"])
    # variants interleaved round after round; each variant's database options (and TF 7006) are set and
    # restored by its guard on every run
    for run.repetition, variant in interleaved(ctx.variants, ctx.params["repetitions"]):
        _run_sqlserver_variant(run, variant, version)
