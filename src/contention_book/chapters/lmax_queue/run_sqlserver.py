"""The article's workload on a reader's SQL Server: In-Memory OLTP ring pushes v1-v3 and disk baselines.

Nothing here has run against a SQL Server while the book was written (none
was available); the T-SQL parses in the tests, and the guard plans, version
gates and delta arithmetic are tested with fake connections.
"""
from __future__ import annotations

import contextlib
import math
from typing import Sequence

import pandas as pd

from contention_book.harness import sqlserver_dmv as dmv
from contention_book.harness import workloads
from contention_book.harness.sqlserver_waits import WaitWatch
from contention_book.harness.sqlserver_xevents import XEventWatch, write_xevents
from contention_book.harness.driver import LatencyHistogram, run_sessions
from contention_book.harness.guard import Change, StateGuard
from contention_book.harness.schedule import interleaved
from contention_book.harness.targets import check_identifier, gate_version, major_version

from .spec import CHAPTER, CONSUMING, FILES, SINGLE_SESSION, SPINLOCKS_FIRST

LOOP = {"imoltp_v1": "lmax_loop_v1", "imoltp_v2": "lmax_loop_v2", "imoltp_v3": "lmax_loop_v3",
        "disk_naive": "lmax_disk_push_loop", "disk_ring_sequence": "lmax_disk_ring_loop"}
IMOLTP_MIN_MAJOR = 13  # natively compiled WHILE/IF, EXEC of native procs, DROP ... IF EXISTS: SQL Server 2016
DISK_MIN_MAJOR = 13    # DROP ... IF EXISTS, DATEDIFF_BIG


def delayed_durability_change(db: str) -> Change:
    """DELAYED_DURABILITY = FORCED on the harness's own database (the article's setting), restored after."""
    check_identifier(db, "database")

    def read(conn):
        row = conn.cursor().execute("SELECT delayed_durability_desc FROM sys.databases WHERE name = ?", db).fetchone()
        if row is None:
            raise RuntimeError(f"database {db!r} not found in sys.databases")
        return row[0]

    return Change(description=f"database {db}: DELAYED_DURABILITY = FORCED (commits do not wait for the log flush)",
                  scope="database", read=read,
                  apply=lambda prior: [f"ALTER DATABASE [{db}] SET DELAYED_DURABILITY = FORCED"],
                  restore=lambda prior: [f"ALTER DATABASE [{db}] SET DELAYED_DURABILITY = {prior}"])


def runnable(variants: Sequence[str], version: str) -> tuple[list[str], list[str]]:
    """(variants this server can run, notes on the ones it cannot)."""
    major = major_version(version)
    keep, notes = [], []
    for v in variants:
        need = IMOLTP_MIN_MAJOR if v.startswith("imoltp") else DISK_MIN_MAJOR
        if major < need:
            notes.append(f"{v} skipped: server is {version}; it needs SQL Server {need}.x (2016) or later")
        else:
            keep.append(v)
    return keep, notes


def sessions_for(variant: str, sessions: Sequence[int]) -> list[int]:
    """v3 runs in one session only: its atomic loop cannot retry a conflict."""
    return [1] if variant in SINGLE_SESSION else [int(n) for n in sessions]


def chunks(messages_per_session: int, chunk: int) -> tuple[int, int]:
    """(calls per session, pushes per call): every session pushes ``messages_per_session`` in calls of ``chunk``."""
    if messages_per_session < 1 or chunk < 1:
        raise ValueError(f"messages_per_session={messages_per_session} and push_chunk={chunk}: expected positive")
    chunk = min(chunk, messages_per_session)
    return math.ceil(messages_per_session / chunk), chunk


def queue_size_for(variant: str, queue_size: int, sessions: int, messages_per_session: int) -> int:
    """The ring must hold every push of a run (the article pushes 2,000,000 into 2,000,000 slots)."""
    need = sessions * messages_per_session
    if variant in ("imoltp_v1", "imoltp_v2", "imoltp_v3", "disk_ring_sequence") and queue_size < need:
        raise ValueError(f"queue_size={queue_size:,} is smaller than the {need:,} pushes of {variant} at {sessions} "
                         "sessions: the ring would fill and the loops stop early; raise queue_size or lower "
                         "messages_per_session")
    return queue_size


def parameter_batch(script: str) -> int:
    """The index of the one batch of ``script`` that takes the queue size as its ``?`` parameter."""
    batches = workloads.load(CHAPTER, "sqlserver", script)
    found = [i for i, b in enumerate(batches) if "?" in b]
    if len(found) != 1:
        raise ValueError(f"workloads/{CHAPTER}/sqlserver/{script}.sql: expected exactly one batch with a ? "
                         f"parameter (the queue size), found {len(found)}")
    return found[0]


def stats_deltas(before: dict, after: dict) -> dict[str, pd.DataFrame]:
    out = {kind: dmv.delta(before[kind], after[kind], kind) for kind in ("wait", "latch", "spinlock")}
    out["spinlock"] = dmv.first(out["spinlock"], SPINLOCKS_FIRST)
    return out


def run_sqlserver(ctx) -> None:
    """The In-Memory OLTP versions and the disk baselines on a reader's SQL Server, into ``ctx.writer``."""
    p, target, database, writer, log = ctx.params, ctx.target, ctx.database, ctx.writer, ctx.log
    version, variants, sessions = gate_version(writer.manifest["engine"]), ctx.variants, sorted(p["sessions"])
    queue_size, messages_per_session, push_chunk = p["queue_size"], p["messages_per_session"], p["push_chunk"]
    duration_s = p["duration_s"]
    xevents = p["wait_source"] == "xevents"
    writer.update(parameters={**writer.manifest["parameters"], "delayed_durability": "FORCED (guarded, restored after)"})
    keep, notes = runnable(variants, version)
    for n in notes:
        writer.add_note(n)
        log(f"[{CHAPTER}] {n}")
    calls, chunk = chunks(messages_per_session, push_chunk)

    def connect(db=None):
        return target.connect(db)

    with StateGuard(connect, [delayed_durability_change(database)], log=log):
        with contextlib.closing(target.connect(database)) as conn:
            if any(v.startswith("imoltp") for v in keep):
                workloads.run_script(conn, CHAPTER, "sqlserver", "memory_optimized_filegroup", database=database)
                workloads.run_script(conn, CHAPTER, "sqlserver", "setup_imoltp", params={parameter_batch("setup_imoltp"): (queue_size,)})
            if any(v.startswith("disk") for v in keep):
                workloads.run_script(conn, CHAPTER, "sqlserver", "setup_disk", params={parameter_batch("setup_disk"): (queue_size,)})
            pop_sql = workloads.load(CHAPTER, "sqlserver", "pop_disk_naive")[0]
            for repetition, variant in interleaved(keep, p["repetitions"]):
                push_sql = workloads.load(CHAPTER, "sqlserver", "push_call", procedure=LOOP[variant])[0]
                for n in sessions_for(variant, sessions):
                    queue_size_for(variant, queue_size, n, messages_per_session)
                    workloads.run_script(conn, CHAPTER, "sqlserver",
                                         "reset_imoltp" if variant.startswith("imoltp") else "reset_disk")
                    consumers = n if variant in CONSUMING else 0
                    ages = [LatencyHistogram() for _ in range(consumers)]

                    def operation(cur, i, op, push_sql=push_sql, n=n, ages=ages):
                        if i < n:
                            cur.execute(push_sql, chunk, queue_size)
                            while cur.nextset():
                                pass
                            return
                        row = cur.execute(pop_sql).fetchone()
                        if row is not None and op >= 0:
                            ages[i - n].record(int(row[0]) * 1000)

                    before = {k: dmv.snapshot(conn, k) for k in ("wait", "latch", "spinlock")}
                    watch = WaitWatch(lambda: target.connect(database))
                    xe = XEventWatch(lambda: target.connect(database), lambda d: target.connect(d or database), log,
                                     ctx.allow_server_changes)
                    with xe:  # the event session (wait_source=xevents) is dropped on every way out of the point
                        try:
                            result = run_sessions(lambda: target.connect(database), operation,
                                                  sessions=n + consumers,
                                                  on_ready=xe.on_ready if xevents else watch.start,
                                                  operations_per_session=calls if not consumers else None,
                                                  duration_s=duration_s if consumers else None,
                                                  progress=f"{variant} x{n}, repetition {repetition + 1}")
                        finally:
                            if not xevents:
                                watch.stop()
                        sampler = xe.finish() if xevents else None
                    after = {k: dmv.snapshot(conn, k) for k in ("wait", "latch", "spinlock")}
                    pushes = sum(s.operations for s in result.per_session[:n]) * chunk
                    hist = LatencyHistogram()
                    for s in result.per_session[:n]:
                        hist.merge(s.histogram)
                    age = LatencyHistogram()
                    for h in ages:
                        age.merge(h)
                    row = {"variant": variant, "sessions": n, "consumers": consumers, "repetition": repetition,
                           "elapsed_s": result.elapsed_s, "operations": pushes,
                           "throughput": pushes / result.elapsed_s, "pushes_per_call": chunk, **hist.summary(),
                           "age_p50_ms": age.percentile_ms(50), "age_p99_ms": age.percentile_ms(99),
                           "errors": result.errors}
                    writer.append_csv(FILES["runs"], pd.DataFrame([row]))
                    d = stats_deltas(before, after)
                    tags = {"variant": variant, "sessions": n, "repetition": repetition}
                    writer.append_csv(FILES["spinlocks"], d["spinlock"].assign(**tags))
                    writer.append_csv(FILES["latches"], d["latch"].assign(**tags))
                    writer.append_csv(FILES["sqlwaits"], d["wait"].assign(**tags))
                    if sampler is None:
                        watch.write(writer, tags, before["wait"], after["wait"], result.elapsed_s,
                                    writer.manifest["host"].get("logical_cpus"))
                    else:
                        write_xevents(writer, sampler, tags, FILES["xevent_waits"], log, CHAPTER)
                    log(f"[{CHAPTER}] {variant} x{n}: {pushes:,} pushes, {row['throughput']:,.0f}/s")
