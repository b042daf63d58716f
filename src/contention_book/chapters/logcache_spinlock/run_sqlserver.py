"""The SQL Server workload: N sessions of singleton inserts, with and without the log writer's core.

Built for a reader's instance (no SQL Server exists where the book is
built); its statements parse, and its plans are tested with fake connections.

Per point of the sweep: reset and seed the table, snapshot spinlock and wait
statistics and the log counters, run N sessions that each call
``dbo.usp_logcache_insert`` repeatedly, snapshot again and store the deltas
(LOGCACHE_ACCESS and XDESMGR first).  Delayed durability is FORCED on the
harness's own database for the run (a database-scoped guarded change).

Variant ``no_logwriter_core`` removes the log writer's physical core (both
hyperthreads when hyper-threading is on) from the process affinity mask with
``ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = ...``: a server-wide
change, so only with ``allow_server_changes``, printed first, and restored to
the prior mask (``AUTO`` when it was automatic) on every exit path by
:class:`harness.guard.StateGuard`.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Sequence

import pandas as pd

from contention_book.harness import sqlserver_dmv as dmv
from contention_book.harness import workloads
from contention_book.harness.sqlserver_waits import WaitWatch
from contention_book.harness.sqlserver_xevents import XEventWatch, write_xevents
from contention_book.harness.driver import run_sessions
from contention_book.harness.guard import Change, ServerChangeNotAllowed, StateGuard
from contention_book.harness.recording import RecordingWriter
from contention_book.harness.schedule import interleaved
from contention_book.harness.targets import Target, check_identifier

from .spec import CHAPTER, FILES, SPINLOCKS_FIRST

LOG_COUNTERS = [("Databases", "Log Bytes Flushed/sec"), ("Databases", "Log Flushes/sec"),
                ("Databases", "Log Flush Waits/sec"), ("Databases", "Log Flush Wait Time"),
                ("Databases", "Transactions/sec")]
OFFSET_SPAN = 10**9  # keys per point within a session's @@SPID range


def _frame(conn, script: str, params: Sequence = (), **ids: str) -> pd.DataFrame:
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, "sqlserver", script, **ids)[-1], *params)
    cols = [d[0] for d in cur.description]
    return pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)


# -- the affinity plan -------------------------------------------------------------
def threads_per_core(sys_info: dict) -> int:
    """Logical CPUs per physical core from sys.dm_os_sys_info (1 when the columns are missing)."""
    cpus, sockets, cores = sys_info.get("cpu_count"), sys_info.get("socket_count"), sys_info.get("cores_per_socket")
    if cpus and sockets and cores:
        return max(1, int(cpus) // (int(sockets) * int(cores)))
    return 1


def core_siblings(cpu: int, per_core: int) -> list[int]:
    """The logical CPUs of ``cpu``'s physical core under Windows numbering (siblings adjacent: 0,1 | 2,3 ...)."""
    first = (cpu // per_core) * per_core
    return list(range(first, first + per_core))


def cpu_ranges(cpus: Sequence[int]) -> str:
    """[0,1,2,5,7,8] -> '0 TO 2, 5, 7 TO 8' (the syntax of PROCESS AFFINITY CPU = ...)."""
    cpus = sorted(set(int(c) for c in cpus))
    if not cpus:
        raise ValueError("an affinity list needs at least one CPU")
    parts, start, prev = [], cpus[0], cpus[0]
    for c in cpus[1:] + [None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        parts.append(str(start) if start == prev else f"{start} TO {prev}")
        if c is not None:
            start = prev = c
    return ", ".join(parts)


def affinity_statement(prior: dict) -> str:
    if prior["auto"]:
        return "ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = AUTO"
    return f"ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = {cpu_ranges(prior['cpus'])}"


AFFINITY_CONFIG = ("SELECT name, CAST(value_in_use AS bigint) AS value_in_use FROM sys.configurations "
                   "WHERE name IN (N'affinity mask', N'affinity64 mask')")


def mask_cpus(rows: Sequence[tuple]) -> list[int]:
    """CPUs of 'affinity mask' (0-31, a signed int) and 'affinity64 mask' (32-63); [] when both are 0 (AUTO)."""
    values = {str(name): int(v) for name, v in rows}
    mask = (values.get("affinity mask", 0) & 0xFFFFFFFF) | ((values.get("affinity64 mask", 0) & 0xFFFFFFFF) << 32)
    return [cpu for cpu in range(64) if mask >> cpu & 1]


def read_affinity(conn) -> dict:
    """The prior mask, to be restored exactly: AUTO, or the manual mask as it was set.

    A manual mask is read from sys.configurations, not rebuilt from the online schedulers: a CPU
    offline because the edition may not use it (Express: 4 cores, Standard: 24) is still in the mask
    the reader set, and must be in it again afterwards.
    """
    info = _frame(conn, "sys_info").iloc[0].to_dict()
    sched = _frame(conn, "schedulers")
    online = sorted(int(c) for c in sched.loc[sched["is_online"].astype(int) == 1, "cpu_id"])
    auto = str(info.get("affinity_type_desc", "")).upper() == "AUTO"
    cpus = online
    if not auto:
        cur = conn.cursor()
        cur.execute(AFFINITY_CONFIG)
        cpus = mask_cpus([tuple(r) for r in cur.fetchall()])
        if not cpus:
            raise RuntimeError("the process affinity is MANUAL but sys.configurations holds no affinity mask (more "
                               "than 64 CPUs, or a mask set another way): the prior mask cannot be restored exactly, "
                               "so the affinity is not changed. Set it to AUTO first, or leave no_logwriter_core out")
    return {"auto": auto, "cpus": cpus, "online": online, "all_cpus": sorted(int(c) for c in sched["cpu_id"]),
            "per_core": threads_per_core(info)}


def plan_without(prior: dict, logwriter_cpus: Sequence[int], exact: bool = False) -> list[int]:
    """Online CPUs minus the log writer's physical core(s).

    ``exact``: the CPUs were given by the reader (``logwriter_cpus``) and are removed as given, with no
    sibling guessing: on Linux the two hyperthreads of a core are often not numbered next to each other.
    """
    remove = set()
    for cpu in logwriter_cpus:
        remove.update([int(cpu)] if exact else core_siblings(int(cpu), prior["per_core"]))
    keep = [c for c in prior["cpus"] if c not in remove]
    if not set(keep) & set(prior.get("online", keep)):
        raise ValueError(f"removing CPUs {sorted(remove)} (the log writer's core) would leave no CPU for SQL Server")
    return keep


def affinity_change(logwriter_cpus: Callable[[Any], Sequence[int]] | Sequence[int], exact: bool = False) -> Change:
    """The server-wide change: the log writer's core out of the process affinity, restored afterwards.

    ``logwriter_cpus`` is a list, or a function of the connection that finds the log writer's CPU(s);
    with ``exact`` the list is the full set of CPUs to remove (see :func:`plan_without`).
    """
    def read(conn):
        prior = read_affinity(conn)
        lw = logwriter_cpus(conn) if callable(logwriter_cpus) else list(logwriter_cpus)
        if not lw:
            raise RuntimeError("no LOG WRITER request found in sys.dm_exec_requests; cannot tell which core to remove")
        prior["logwriter_cpus"] = sorted(int(c) for c in lw)
        prior["new_cpus"] = plan_without(prior, prior["logwriter_cpus"], exact=exact)
        return prior

    return Change(
        description="process affinity without the log writer's physical core (ALTER SERVER CONFIGURATION)",
        scope="server", read=read,
        apply=lambda prior: [f"ALTER SERVER CONFIGURATION SET PROCESS AFFINITY CPU = {cpu_ranges(prior['new_cpus'])}"],
        restore=lambda prior: [affinity_statement(prior)],
    )


def delayed_durability_change(database: str) -> Change:
    check_identifier(database, "database")

    def read(conn):
        row = conn.cursor().execute("SELECT delayed_durability_desc FROM sys.databases WHERE name = ?",
                                    database).fetchone()
        return row[0]

    return Change(description=f"database {database}: DELAYED_DURABILITY = FORCED", scope="database", read=read,
                  apply=lambda prior: [f"ALTER DATABASE [{database}] SET DELAYED_DURABILITY = FORCED"],
                  restore=lambda prior: [f"ALTER DATABASE [{database}] SET DELAYED_DURABILITY = {prior}"])


def log_writer_cpus(conn) -> list[int]:
    lw = _frame(conn, "log_writer")
    return sorted(int(c) for c in lw["cpu_id"]) if len(lw) else []


def trace_flags(conn) -> list[int]:
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, "sqlserver", "trace_flags")[0])
    rows = cur.fetchall() if cur.description else []
    return sorted(int(r[0]) for r in rows if int(r[2]) == 1)  # TraceFlag, Status, Global, Session


# -- the run -----------------------------------------------------------------------
class SqlServerRun:
    def __init__(self, target: Target, database: str, writer: RecordingWriter, *, sessions: Sequence[int],
                 rows_per_session: int, batch: int, duration_s: float, seed_rows: int, log: Callable[[str], None],
                 wait_source: str = "polling", allow_server_changes: bool = False):
        self.t, self.db, self.w = target, database, writer
        self.sessions = sorted(set(int(s) for s in sessions))
        self.rows_per_session, self.batch = int(rows_per_session), int(batch)
        self.duration_s, self.seed_rows, self.log = float(duration_s), int(seed_rows), log
        self.xevents, self.allow_server_changes = wait_source == "xevents", allow_server_changes
        self.point = 0
        self.repetition = 0  # the round being run (harness.schedule)

    def connect(self):
        return self.t.connect(self.db)

    def counters(self, conn) -> pd.DataFrame:
        sql, params = dmv.perf_counters_query(LOG_COUNTERS)
        cur = conn.cursor()
        cur.execute(sql, *params)
        cols = [d[0] for d in cur.description]
        f = pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)
        return f[f["instance_name"].isin([self.db, "_Total"])]

    def run_point(self, variant: str, n: int) -> None:
        call = workloads.load(CHAPTER, "sqlserver", "insert_call")[0]
        batch, point = self.batch, self.point
        with contextlib.closing(self.connect()) as conn:
            workloads.run_script(conn, CHAPTER, "sqlserver", "reset", params={1: (self.seed_rows,)})
            before = {k: dmv.snapshot(conn, k) for k in ("spinlock", "wait")}
            c_before = self.counters(conn)
            watch = WaitWatch(self.connect)
            xe = XEventWatch(self.connect, lambda d: self.t.connect(d or self.db), self.log, self.allow_server_changes)
            with xe:  # the event session (wait_source=xevents) is dropped on every way out of the point
                try:
                    result = run_sessions(
                        self.connect,
                        lambda cur, i, op: _drain(cur.execute(call, batch, point * OFFSET_SPAN + (op + 1) * batch)),
                        sessions=n, operations_per_session=max(1, self.rows_per_session // batch),
                        duration_s=self.duration_s, progress=f"{variant}, {n} session(s), repetition "
                        f"{self.repetition + 1}", on_ready=xe.on_ready if self.xevents else watch.start)
                finally:
                    if not self.xevents:
                        watch.stop()
                sampler = xe.finish() if self.xevents else None
            after = {k: dmv.snapshot(conn, k) for k in ("spinlock", "wait")}
            c_after = self.counters(conn)
            lw = _frame(conn, "log_writer").assign(variant=variant, sessions=n, repetition=self.repetition)
        rows = int(result.operations) * batch
        self.w.append_csv(FILES["runs"], pd.DataFrame([result.row(variant=variant, repetition=self.repetition, point=point,
                                                                  batch_rows=batch)]).assign(
            operations=rows, throughput=rows / result.elapsed_s))
        spins = dmv.first(dmv.delta(before["spinlock"], after["spinlock"], "spinlock"), SPINLOCKS_FIRST)
        tags = {"variant": variant, "sessions": n, "repetition": self.repetition}
        self.w.append_csv(FILES["spinlocks"], spins.assign(**tags, rows=rows))
        waits = dmv.delta(before["wait"], after["wait"], "wait")
        self.w.append_csv(FILES["waits"], waits.assign(**tags))
        if sampler is None:
            watch.write(self.w, tags, before["wait"], after["wait"], result.elapsed_s,
                        self.w.manifest["host"].get("logical_cpus"))
        else:
            write_xevents(self.w, sampler, tags, FILES["xevent_waits"], self.log, CHAPTER)
        self.w.append_csv(FILES["counters"], dmv.interpret(c_before, c_after, result.elapsed_s).assign(**tags))
        self.w.append_csv(FILES["log_writer"], lw)
        self.log(f"[{CHAPTER}] {variant}, {n} session(s): {rows:,} inserts in {result.elapsed_s:.2f} s "
                 f"({rows / result.elapsed_s:,.0f}/s)")
        self.point += 1


def _drain(cur) -> None:
    while cur.nextset():
        pass


def run_sqlserver(ctx) -> None:
    """The article's workload on a reader's SQL Server, into ``ctx.writer``."""
    target, database, writer, variants = ctx.target, ctx.database, ctx.writer, ctx.variants
    allow_server_changes, p = ctx.allow_server_changes, ctx.params
    stacks, logwriter_cpus = p["stacks"], p["logwriter_cpus"]
    if "no_logwriter_core" in variants and not allow_server_changes:
        raise ServerChangeNotAllowed(
            "variant no_logwriter_core changes the server's process affinity (restored afterwards), which is off by "
            "default. Re-run with allow_server_changes=True (ALLOW_SERVER_CHANGES=1), or with variants=default")
    run = SqlServerRun(target, database, writer, sessions=p["sessions"], rows_per_session=p["rows_per_session"],
                       batch=p["batch"], duration_s=p["duration_s"], seed_rows=p["seed_rows"], log=ctx.log,
                       wait_source=p["wait_source"], allow_server_changes=allow_server_changes)
    log = run.log
    with contextlib.closing(target.connect(database)) as conn:
        settings, sched, lw = server_facts(conn)
    flags = settings["trace_flags"]
    writer.update(engine={"settings": {**writer.manifest["engine"].get("settings", {}), **settings}})
    writer.write_csv(FILES["schedulers"], sched, "scheduler map at the start of the run")
    writer.write_csv(FILES["log_writer_start"], lw, "LOG WRITER location at the start")
    if 8015 in flags:
        writer.add_note("trace flag 8015 (NUMA detection off) was on at startup: this recording is labelled with it")
    db_changes = [delayed_durability_change(database)]
    with StateGuard(lambda d: target.connect(d or database), db_changes, log=log):
        with contextlib.closing(target.connect(database)) as conn:
            workloads.run_script(conn, CHAPTER, "sqlserver", "setup", database=database)
        # variants interleaved round after round; the affinity change is made and restored by its guard each time
        for run.repetition, variant in interleaved(variants, p["repetitions"]):
            changes = []
            if variant == "no_logwriter_core":
                changes = [affinity_change(list(logwriter_cpus), exact=True) if logwriter_cpus
                           else affinity_change(log_writer_cpus)]
            with StateGuard(lambda d: target.connect(d), changes, allow_server_changes=allow_server_changes, log=log):
                for n in run.sessions:
                    run.run_point(variant, n)
        with contextlib.closing(target.connect(database)) as conn:
            workloads.run_script(conn, CHAPTER, "sqlserver", "cleanup")
    if stacks:
        from ..shared.stacks import ingest

        for label, path in ingest(stacks, writer).items():
            log(f"[{CHAPTER}] stacks {label}: ingested from {path}")


def server_facts(conn) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """(manifest settings, scheduler map, LOG WRITER rows): trace flags, where each log writer runs
    (scheduler, CPU, NUMA node), the affinity type and threads per core."""
    flags = trace_flags(conn)
    lw = _frame(conn, "log_writer")
    sched = _frame(conn, "schedulers")
    info = _frame(conn, "sys_info").iloc[0].to_dict()
    where = lw.iloc[0].to_dict() if len(lw) else {}
    settings = {"trace_flags": flags, "log_writer": {k: _plain(v) for k, v in where.items()},
                "log_writers": [{k: _plain(v) for k, v in r.items()} for r in lw.to_dict("records")],
                "affinity_type": str(info.get("affinity_type_desc")), "threads_per_core": threads_per_core(info)}
    return settings, sched, lw


def _plain(v):
    return v.item() if hasattr(v, "item") else v
