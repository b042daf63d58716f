"""The SQL Server live path: the article's parallel insert, fair and (opt-in) unfair.

Nothing here runs without a reader's SQL Server; what can be checked without
one is: every statement parses, the guard's plans and restores, the version
gate, and the delta arithmetic (tests/chapters/test_latch_fairness*.py).

Per variant, inside a :class:`~harness.guard.StateGuard`:

1. the harness's own database goes to SIMPLE and then FULL recovery with no
   backup (full logging, yet a checkpoint can still truncate the log); the
   prior recovery model is restored afterwards;
2. ``unfair`` turns global trace flag 3933 on (server-wide, so only with
   ``allow_server_changes``); ``fair`` turns it *off* if someone left it on,
   which is just as much a server change;
3. runs interleaved (fair, unfair, fair, unfair, ...), each under its own
   guard; each run: reset (truncate, checkpoint, log space recorded), then a
   snapshot of the latch, spinlock and wait statistics, the insert with a 1 s
   performance-counter sampler running, and a second snapshot.  The recording
   holds the deltas.  Clearing the statistics server-wide is an opt-in
   (``clear_stats``), never the default.
"""
from __future__ import annotations

import contextlib
import math

import time
from typing import Any, Sequence

import pandas as pd

from contention_book.harness import recording as rec
from contention_book.harness import sqlserver_dmv as dmv
from contention_book.harness import workloads
from contention_book.harness.sqlserver_waits import WaitWatch
from contention_book.harness.guard import Change, ServerChangeNotAllowed, StateGuard
from contention_book.harness.schedule import interleaved
from contention_book.harness.targets import check_identifier, gate_version, major_version

from .spec import (CHAPTER, FILES, LATCH, LATCH_SPIN, SQL_VARIANTS, TRACE_FLAG, TRACE_FLAG_MIN_MAJOR)

ENGINE = "sqlserver"
# What the article watched in Performance Monitor, as sys.dm_os_performance_counters names it.
COUNTERS = [
    ("Resource Pool Stats", "CPU usage %"),
    ("Latches", "Latch Waits/sec"),
    ("Latches", "Average Latch Wait Time (ms)"),
    ("Databases", "Log Bytes Flushed/sec"),
    ("Access Methods", "Extents Allocated/sec"),
]
SQLSERVER_NAMES = {2019: 15, 2022: 16}


class UnsupportedVersion(RuntimeError):
    """The server is too old for what was asked."""


def version_gate(version: str, variants: Sequence[str]) -> None:
    """Refuse the unfair variant before SQL Server 2019, with a message that says why and what to do."""
    if "unfair" not in variants:
        return
    major = major_version(version)
    if major < TRACE_FLAG_MIN_MAJOR:
        raise UnsupportedVersion(
            f"variant 'unfair' needs trace flag {TRACE_FLAG}, which SQL Server added in 2019 (CTP 2.5; major "
            f"version {TRACE_FLAG_MIN_MAJOR}); this server is version {version} (major {major}), where the flag "
            "does not make nesting transaction latches unfair. Nothing was run. Use variants='fair' on this "
            "server, or a SQL Server 2019 or later instance for the comparison")


def check_maxdop(maxdop: int) -> int:
    if isinstance(maxdop, bool) or not isinstance(maxdop, (int, float)) or int(maxdop) != maxdop:
        raise ValueError(f"maxdop={maxdop!r}: expected a whole number")
    if not 1 <= int(maxdop) <= 1024:
        raise ValueError(f"maxdop={maxdop}: expected 1 to 1024")
    return int(maxdop)


def default_maxdop(schedulers: int) -> int:
    """The article's choice: one scheduler left for the parent task that drains the final exchange."""
    return max(1, int(schedulers) - 1)


def insert_batches(maxdop: int) -> list[str]:
    """The measured batch with MAXDOP written in (a query hint takes no variable); the row count stays bound."""
    path = workloads.script_path(CHAPTER, ENGINE, "insert")
    text = path.read_text(encoding="utf-8")
    if "{{maxdop}}" not in text:
        raise workloads.WorkloadError(f"{path}: expected a {{{{maxdop}}}} placeholder in OPTION (MAXDOP ...)")
    return workloads.split_tsql(text.replace("{{maxdop}}", str(check_maxdop(maxdop))))


# -- generated statements -------------------------------------------------------------
def _literal(text: str) -> str:
    return "N'" + str(text).replace("'", "''") + "'"


def file_layout_statements(database: str, files: pd.DataFrame, *, schedulers: int, data_mb: int,
                           log_mb: int) -> list[str]:
    """Grow the existing files and add data files until there is one per scheduler, all pre-allocated.

    ``data_mb`` is the data in all, split evenly over the PRIMARY filegroup's files (one per scheduler),
    where the insert's table lives.  ``files`` is ``database_files.sql``'s result (file_id, type_desc,
    name, physical_name, size_mb, filegroup); files of other filegroups (logcache-spinlock's
    FG_LOGCACHE, in the shared lab database) are not counted.  Only growth is generated (shrinking is
    never needed for the test), so running it twice changes nothing.
    """
    check_identifier(database, "database")
    if schedulers < 1 or data_mb < 1 or log_mb < 1:
        raise ValueError(f"schedulers={schedulers}, data_mb={data_mb}, log_mb={log_mb}: all must be positive")
    need = {"file_id", "type_desc", "name", "physical_name", "size_mb"}
    if missing := need - set(files.columns):
        raise ValueError(f"database files: missing column(s) {sorted(missing)}; expected {sorted(need)}")
    rows = files[files["type_desc"] == "ROWS"]
    if "filegroup" in files.columns:  # without it (an older caller), every data file counts
        rows = rows[rows["filegroup"].fillna("PRIMARY") == "PRIMARY"]
    rows = rows.sort_values("file_id")
    logs = files[files["type_desc"] == "LOG"]
    if rows.empty or logs.empty:
        raise ValueError(f"database {database}: expected at least one data file and one log file, "
                         f"found {len(rows)} and {len(logs)}")
    per_file = math.ceil(data_mb / schedulers)
    out = []
    for r in rows.itertuples():
        if int(r.size_mb) < per_file:
            out.append(f"ALTER DATABASE [{database}] MODIFY FILE (NAME = {_literal(r.name)}, SIZE = {per_file}MB)")
    first = str(rows.iloc[0]["physical_name"])
    cut = max(first.rfind("/"), first.rfind("\\"))
    folder, sep = (first[:cut], first[cut]) if cut >= 0 else ("", "")
    existing = set(rows["name"])
    n = len(rows)
    k = 1
    while n < schedulers:
        name = f"{database}_lf{k}"
        k += 1
        if name in existing:
            continue
        out.append(f"ALTER DATABASE [{database}] ADD FILE (NAME = {_literal(name)}, "
                   f"FILENAME = {_literal(folder + sep + name + '.ndf')}, SIZE = {per_file}MB) TO FILEGROUP [PRIMARY]")
        n += 1
    log_row = logs.iloc[0]
    if int(log_row["size_mb"]) < log_mb:
        out.append(f"ALTER DATABASE [{database}] MODIFY FILE (NAME = {_literal(log_row['name'])}, SIZE = {log_mb}MB)")
    return out


# -- changes the guard applies and restores --------------------------------------------
def recovery_change(database: str) -> Change:
    """SIMPLE then FULL with no backup: full logging, yet CHECKPOINT still truncates the log."""
    check_identifier(database, "database")

    def read(conn):
        cur = conn.cursor()
        cur.execute("SELECT recovery_model_desc FROM sys.databases WHERE name = ?", database)
        row = cur.fetchone()
        if not row:
            raise RuntimeError(f"database {database} not found in sys.databases")
        return str(row[0])

    def restore(prior: str) -> list[str]:
        if prior not in ("SIMPLE", "FULL", "BULK_LOGGED"):
            raise ValueError(f"recovery model {prior!r}: expected SIMPLE, FULL or BULK_LOGGED")
        return [f"ALTER DATABASE [{database}] SET RECOVERY {prior}"]

    return Change(
        description=f"database {database}: recovery SIMPLE, then FULL without a backup (full logging; checkpoints "
                    "still truncate the log)",
        scope="database", read=read,
        apply=lambda prior: [f"ALTER DATABASE [{database}] SET RECOVERY SIMPLE",
                             f"ALTER DATABASE [{database}] SET RECOVERY FULL"],
        restore=restore,
    )


def trace_flag_status(conn, flag: int = TRACE_FLAG) -> bool:
    """Is the trace flag on globally?  (DBCC TRACESTATUS columns: TraceFlag, Status, Global, Session.)"""
    return bool(dmv.trace_flag_change(flag).read(conn))


def trace_flag_off_change(flag: int = TRACE_FLAG) -> Change:
    """The fair variant on a server where the flag was left on: off for the run, back on after."""
    flag = int(flag)
    return Change(
        description=f"global trace flag {flag} off for the fair variant (it was on)",
        scope="server", read=lambda conn: trace_flag_status(conn, flag),
        apply=lambda prior: [f"DBCC TRACEOFF({flag}, -1)"] if prior else [],
        restore=lambda prior: [f"DBCC TRACEON({flag}, -1)"] if prior else [],
    )


def variant_changes(variant: str, database: str, *, flag_on_now: bool, clear_stats: bool = False) -> list[Change]:
    """What one variant changes, in the order the guard applies it (and restores it in reverse)."""
    if variant not in SQL_VARIANTS:
        raise ValueError(f"variant {variant!r}: expected one of {', '.join(SQL_VARIANTS)}")
    changes = [recovery_change(database)]
    if variant == "unfair":
        changes.append(dmv.trace_flag_change(TRACE_FLAG))
    elif flag_on_now:
        changes.append(trace_flag_off_change(TRACE_FLAG))
    if clear_stats:
        changes.append(dmv.clear_change())
    return changes


# -- reading results -----------------------------------------------------------------
def _frame(cur) -> pd.DataFrame:
    cols = [d[0] for d in cur.description]
    return pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)


def query(conn, script: str) -> pd.DataFrame:
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, ENGINE, script)[-1])
    return _frame(cur)


def log_space_row(frame: pd.DataFrame, database: str) -> dict[str, Any]:
    """The harness database's row of DBCC SQLPERF(LOGSPACE)."""
    if frame.shape[1] < 3:
        raise ValueError(f"DBCC SQLPERF(LOGSPACE): expected 4 columns, got {list(frame.columns)}")
    names = frame.iloc[:, 0].astype(str).str.strip()
    mine = frame[names == database]
    if mine.empty:
        raise ValueError(f"DBCC SQLPERF(LOGSPACE): no row for database {database}")
    return {"log_size_mb": float(mine.iloc[0, 1]), "log_used_pct": float(mine.iloc[0, 2])}


def run_insert(conn, batches: Sequence[str], rows: int) -> tuple[float, float | None]:
    """Execute the insert batch; (client seconds, server-measured ms or None)."""
    cur = conn.cursor()
    server_ms = None
    started = time.perf_counter()
    for i, batch in enumerate(batches):
        cur.execute(batch, int(rows)) if "?" in batch else cur.execute(batch)
        while True:
            if cur.description:
                row = cur.fetchone()
                if row is not None and cur.description[0][0] == "elapsed_ms":
                    server_ms = float(row[0])
            if not cur.nextset():
                break
    return time.perf_counter() - started, server_ms


def tag(frame: pd.DataFrame, variant: str, repetition: int) -> pd.DataFrame:
    out = frame.copy()
    out.insert(0, "repetition", repetition)
    out.insert(0, "variant", variant)
    return out


def run_sqlserver(ctx) -> None:
    """The parallel insert per variant and repetition on a reader's SQL Server, into ``ctx.writer``."""
    p, tgt, database, writer, log = ctx.params, ctx.target, ctx.database, ctx.writer, ctx.log
    variants = ctx.variants
    if p["clear_stats"] and not ctx.allow_server_changes:
        raise ServerChangeNotAllowed("clear_stats=true clears wait, latch and spinlock statistics server-wide: it "
                                     "needs allow_server_changes as well")
    version_gate(gate_version(writer.manifest["engine"]), variants)  # before anything is created or changed
    with contextlib.closing(tgt.connect(database)) as conn:
        schedulers = int(query(conn, "schedulers").iloc[0, 0])
        files = query(conn, "database_files")
    maxdop = check_maxdop(p["maxdop"]) if p["maxdop"] else default_maxdop(schedulers)
    writer.update(parameters={**writer.manifest["parameters"], "maxdop": maxdop, "schedulers": schedulers})
    layout = file_layout_statements(database, files, schedulers=schedulers, data_mb=p["data_mb"],
                                    log_mb=p["log_mb"])
    with contextlib.closing(tgt.connect(database)) as conn:
        cur = conn.cursor()
        for sql in layout:
            log(f"[{CHAPTER}] pre-allocating in the harness's own database: {sql}")
            cur.execute(sql)
    writer.update(engine={"settings": {"schedulers": schedulers, "files_added_or_grown": layout}})
    batches = insert_batches(maxdop)
    # variants interleaved round after round (fair, unfair, fair, unfair, ...): each run sets its trace flag
    # state through its own guard, which restores the prior state before the next run
    for repetition, variant in interleaved(variants, p["repetitions"]):
        with contextlib.closing(tgt.connect()) as conn:
            flag_on = trace_flag_status(conn)
        changes = variant_changes(variant, database, flag_on_now=flag_on, clear_stats=p["clear_stats"])
        with StateGuard(lambda db: tgt.connect(db), changes, allow_server_changes=ctx.allow_server_changes,
                        log=log), contextlib.closing(tgt.connect(database)) as conn:
            workloads.run_script(conn, CHAPTER, ENGINE, "setup")
            _one_run(tgt, conn, writer, database, variant, repetition, batches, p["rows"], maxdop,
                     p["sample_counters"], log)


def _one_run(tgt, conn, writer: rec.RecordingWriter, database: str, variant: str, repetition: int,
             batches: Sequence[str], rows: int, maxdop: int, sample_counters: bool, log) -> None:
    workloads.run_script(conn, CHAPTER, ENGINE, "reset")
    space = log_space_row(query(conn, "log_space"), database)
    writer.append_csv(FILES["log_space"], pd.DataFrame([{"variant": variant, "repetition": repetition, **space}]))
    before = {k: dmv.snapshot(conn, k) for k in ("latch", "spinlock", "wait")}
    sampler = dmv.CounterSampler(lambda: tgt.connect(database), COUNTERS) if sample_counters else None
    if sampler:
        sampler.start()
    watch = WaitWatch(lambda: tgt.connect(database)).start()
    try:
        elapsed_s, server_ms = run_insert(conn, batches, rows)
    finally:
        watch.stop()
        if sampler:
            sampler.stop()
    after = {k: dmv.snapshot(conn, k) for k in ("latch", "spinlock", "wait")}
    for kind in ("latch", "spinlock", "wait"):
        d = dmv.delta(before[kind], after[kind], kind)
        if kind == "latch":
            d = dmv.first(d, [LATCH])
        elif kind == "spinlock":
            d = dmv.first(d, [LATCH_SPIN])
        writer.append_csv(FILES[kind], tag(d, variant, repetition))
    watch.write(writer, {"variant": variant, "repetition": repetition}, before["wait"], after["wait"], elapsed_s,
                writer.manifest["host"].get("logical_cpus"))
    writer.append_csv(FILES["runs"], pd.DataFrame([{
        "variant": variant, "repetition": repetition, "sessions": maxdop, "elapsed_s": elapsed_s,
        "operations": rows, "throughput": rows / elapsed_s, "server_elapsed_ms": server_ms,
        "log_used_pct_before": space["log_used_pct"]}]))
    if sampler:
        series = sampler.series()
        series = series[(series["counter"] != "Log Bytes Flushed/sec") | (series["instance_name"] == database)]
        writer.append_csv(FILES["counters"], tag(series[["t_s", "counter", "instance_name", "value", "unit"]],
                                                  variant, repetition))
        if sampler.error:
            writer.add_note(f"counter sampling stopped early in {variant} repetition {repetition}: {sampler.error}")
    log(f"[{CHAPTER}] {variant} #{repetition}: {rows:,} rows in {elapsed_s:.2f} s at MAXDOP {maxdop}")


__all__ = ["UnsupportedVersion", "version_gate", "insert_batches", "file_layout_statements", "recovery_change",
           "trace_flag_off_change", "variant_changes", "run_sqlserver", "log_space_row", "default_maxdop"]
