"""The SQL Server path: the article's tables, N inserting sessions, waited-for pages, deltas, read cost.

Not run for this book (no SQL Server here); built for a reader's instance and
tested without one: the T-SQL parses, the guard's statements, the version
gates, the page resolution and the plan parsing have tests.
"""
from __future__ import annotations

import contextlib
from typing import Callable

import pandas as pd

from contention_book.harness import sqlserver_dmv as dmv
from contention_book.harness import workloads
from contention_book.harness.sqlserver_waits import WaitWatch
from contention_book.harness.sqlserver_xevents import XEventWatch, write_xevents
from contention_book.harness.driver import run_sessions
from contention_book.harness.guard import Change, StateGuard
from contention_book.harness.recording import RecordingWriter
from contention_book.harness.schedule import interleaved
from contention_book.harness.targets import Target, check_identifier, gate_version, major_version

from .spec import CHAPTER, FILES, OPTIMIZE_FOR_SEQUENTIAL_KEY_MAJOR, SQLSERVER_TABLES
from .run_common import (PlanError, calls_per_session, count_rows, distinct_pages, hot_pages, insert_call,
                         page_samples, resolution_query, runs_row, showplan_cost, statistics_io_reads)
from contention_book.harness.polling import PollingSampler

WAITS_OF_INTEREST = ("PAGELATCH_EX", "PAGELATCH_SH", "PAGELATCH_UP", "BTREE_INSERT_FLOW_CONTROL", "WRITELOG")
HASH_TABLE = SQLSERVER_TABLES["hash_partitioned"]


class VersionGateError(RuntimeError):
    """The variant needs a newer SQL Server than the target runs."""


def check_variant_version(variant: str, version: str) -> None:
    """OPTIMIZE_FOR_SEQUENTIAL_KEY arrived in SQL Server 2019 (15.x); say so plainly on older servers."""
    if variant == "sequential_optimized" and major_version(version) < OPTIMIZE_FOR_SEQUENTIAL_KEY_MAJOR:
        raise VersionGateError(
            f"variant sequential_optimized needs OPTIMIZE_FOR_SEQUENTIAL_KEY, which SQL Server has from 2019 "
            f"(15.x); this server is {version}. Leave the variant out, or run against SQL Server 2019 or later")


def hash_partition_batches(partitions: int) -> list[str]:
    """The article's scheme for ``partitions`` partitions: function, scheme, table, clustered index.

    RANGE LEFT with boundaries 0 .. partitions-2 gives exactly ``partitions``
    partitions for the tinyint HashID = ID % partitions.
    """
    p = int(partitions)
    if not 2 <= p <= 64:
        raise ValueError(f"partitions {partitions!r}: expected 2 to 64")
    bounds = ", ".join(str(i) for i in range(p - 1))
    return [
        f"CREATE PARTITION FUNCTION lpi_pf_hash (tinyint) AS RANGE LEFT FOR VALUES ({bounds});",
        "CREATE PARTITION SCHEME lpi_ps_hash AS PARTITION lpi_pf_hash ALL TO ([PRIMARY]);",
        f"CREATE TABLE dbo.{HASH_TABLE} (\n"
        "    ID     int IDENTITY(1, 1) NOT NULL,\n"
        "    col1   varchar(50) NOT NULL,\n"
        f"    HashID AS CAST(ABS(ID % {p}) AS tinyint) PERSISTED NOT NULL\n"
        ");",
        f"CREATE UNIQUE CLUSTERED INDEX CIX_{HASH_TABLE} ON dbo.{HASH_TABLE} (ID, HashID) ON lpi_ps_hash (HashID);",
    ]


def point_lookups(partitions: int) -> list[tuple[str, str]]:
    """(name, SELECT) pairs: by ID alone (every partition searched), and with the hash predicate (one)."""
    p = int(partitions)
    return [
        ("point lookup by ID", f"SELECT ID, col1 FROM dbo.{HASH_TABLE} WHERE ID = ?;"),
        ("point lookup by ID + hash predicate",
         f"SELECT ID, col1 FROM dbo.{HASH_TABLE} WHERE ID = ? AND HashID = CAST(ABS(? % {p}) AS tinyint);"),
    ]


def durability_change(db: str) -> Change:
    """Delayed durability FORCED in the harness's own database, so WRITELOG does not hide the latch."""
    check_identifier(db, "database")

    def read(conn):
        row = conn.cursor().execute("SELECT delayed_durability_desc FROM sys.databases WHERE name = ?", db).fetchone()
        return row[0]

    return Change(
        description=f"database {db}: DELAYED_DURABILITY = FORCED (commits do not wait for the log flush)",
        scope="database", read=read,
        apply=lambda prior: [f"ALTER DATABASE [{db}] SET DELAYED_DURABILITY = FORCED"],
        restore=lambda prior: [f"ALTER DATABASE [{db}] SET DELAYED_DURABILITY = {prior}"],
    )


def _frame(cur) -> pd.DataFrame:
    cols = [d[0] for d in cur.description]
    return pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)


class SqlServerRun:
    def __init__(self, target: Target, database: str, writer: RecordingWriter, *, sessions: list[int],
                 rows_per_session: int, max_seconds: float, partitions: int, hz: float,
                 allow_server_changes: bool, log: Callable[[str], None], rows_per_call: int = 1,
                 wait_source: str = "polling", check: Callable[[pd.DataFrame], None] | None = None):
        self.t, self.db, self.w = target, database, writer
        self.sessions, self.rows, self.max_s = sessions, rows_per_session, max_seconds
        self.partitions, self.hz, self.allow, self.log = partitions, hz, allow_server_changes, log
        self.version = gate_version(writer.manifest["engine"])
        self.per_call = rows_per_call
        self.xevents = wait_source == "xevents"
        self.repetition = 0  # the round being run (harness.schedule)
        self.check = check  # RunContext.check_balanced for runs.csv: a point whose rows do not balance fails the run

    def connect(self):
        return self.t.connect(self.db)

    def create(self, conn, variant: str) -> None:
        if variant == "hash_partitioned":
            workloads.run_script(conn, CHAPTER, "sqlserver", "drop_hash_partitioned")
            cur = conn.cursor()
            for sql in hash_partition_batches(self.partitions):
                cur.execute(sql)
        else:
            workloads.run_script(conn, CHAPTER, "sqlserver", f"create_{variant}")

    def point(self, conn, variant: str, n: int, db_id: int) -> pd.DataFrame:

        insert, args = insert_call("sqlserver", self.per_call, table=SQLSERVER_TABLES[variant])
        counted = {}

        def ready():
            # every session has warmed up and waits at the barrier: the rows now are the rows before the window
            counted["before"] = count_rows(conn, "sqlserver", table=SQLSERVER_TABLES[variant])
            sampler.start()
            xe.on_ready() if self.xevents else watch.start()
        sampler = PollingSampler(self.connect, workloads.load(CHAPTER, "sqlserver", "waiting_tasks")[0],
                                 params=[f"{db_id}:%"], hz=self.hz, name="waiting-tasks")
        before = {k: dmv.snapshot(conn, k) for k in ("wait", "latch")}
        watch = WaitWatch(self.connect)
        # wait_source=xevents replaces the DBA wait polling; the waiting-task sampler stays, since only it names
        # the page a PAGELATCH wait is on (wait_info carries no resource description).
        xe = XEventWatch(self.connect, lambda d: self.t.connect(d or self.db), self.log, self.allow)
        with xe:  # the event session is dropped on every way out of the point
            try:
                result = run_sessions(self.connect, lambda cur, _s, _op: cur.execute(insert, *args), sessions=n,
                                      operations_per_session=calls_per_session(self.rows, self.per_call),
                                      duration_s=self.max_s, warmup_operations=max(2, 20 // self.per_call),
                                      on_ready=ready,
                                      progress=f"{variant}, {n} session(s)")
            finally:
                sampler.stop()
                if not self.xevents:
                    watch.stop()
            xevents = xe.finish() if self.xevents else None
        after = {k: dmv.snapshot(conn, k) for k in ("wait", "latch")}
        rows_after = count_rows(conn, "sqlserver", table=SQLSERVER_TABLES[variant])
        row = pd.DataFrame([runs_row(
            result, self.per_call, rows_counted=rows_after - counted["before"], variant=variant,
            repetition=self.repetition, partitions=self.partitions if variant == "hash_partitioned" else 1,
            wait_sampler_hz=round(sampler.achieved_hz, 2))])
        if self.check is not None:
            self.check(row)
        self.w.append_csv(FILES["runs"], row)
        waits = dmv.first(dmv.delta(before["wait"], after["wait"], "wait"), WAITS_OF_INTEREST)
        named = waits[waits["name"].isin(WAITS_OF_INTEREST)]
        rest = waits[~waits["name"].isin(WAITS_OF_INTEREST)].head(10)
        self.w.append_csv(FILES["wait_deltas"], pd.concat([named, rest]).assign(variant=variant, sessions=n,
                                                                                     repetition=self.repetition))
        tags = {"variant": variant, "sessions": n, "repetition": self.repetition}
        if xevents is None:
            watch.write(self.w, tags, before["wait"], after["wait"], result.elapsed_s,
                        self.w.manifest["host"].get("logical_cpus"))
        else:
            write_xevents(self.w, xevents, tags, FILES["xevent_waits"], self.log, CHAPTER)
        latches = dmv.first(dmv.delta(before["latch"], after["latch"], "latch"), ["BUFFER"]).head(10)
        self.w.append_csv(FILES["latch_deltas"], latches.assign(variant=variant, sessions=n,
                                                                 repetition=self.repetition))
        if sampler.error:
            self.w.add_note(f"waiting-task sampler, {variant} at {n} sessions: stopped early: {sampler.error}")
        samples = sampler.frame()
        if len(samples):
            self.w.append_csv(FILES["waiting_tasks"], samples.assign(variant=variant, sessions=n,
                                                                      repetition=self.repetition))
        self.log(f"[{CHAPTER}] {variant}, {n} session(s): {result.throughput * self.per_call:,.0f} rows/s "
                 f"({self.per_call} per call), "
                 f"{len(samples)} PAGELATCH waiting-task samples")
        return samples.assign(variant=variant, sessions=n)

    def resolve(self, conn, variant: str, samples: pd.DataFrame) -> None:
        if samples.empty:
            self.w.add_note(f"{variant}: no PAGELATCH waiters were sampled, so there are no hot pages to rank")
            return
        rows, bad = page_samples(samples)
        if bad:
            self.w.add_note(f"{variant}: {bad} waiting-task rows had a resource_description that is not db:file:page")
        if rows.empty:
            self.w.add_note(f"{variant}: no waiting-task row named a page, so there are no hot pages to rank")
            return
        wanted = distinct_pages(rows)
        sql, params, method = resolution_query(self.version, wanted)
        resolved = _frame(conn.cursor().execute(sql, *params))
        ranking = hot_pages(rows, resolved, top=20).assign(method=method, repetition=self.repetition)
        self.w.append_csv(FILES["hot_pages"], ranking)

    def read_cost(self, conn) -> None:
        cur = conn.cursor()
        key = cur.execute(f"SELECT MAX(ID) / 2 FROM dbo.{HASH_TABLE}").fetchone()[0]
        if key is None:
            return
        out = []
        for name, sql in point_lookups(self.partitions):
            args = [key] * sql.count("?")
            cur.execute("SET STATISTICS XML ON")
            cur.execute("SET STATISTICS IO ON")
            try:
                cur.execute(sql, *args)
                cur.fetchall()
                plan_xml = None
                while cur.nextset():
                    if cur.description and "showplan" in str(cur.description[0][0]).lower():
                        plan_xml = cur.fetchone()[0]
                messages = [m[1] for m in getattr(cur, "messages", [])]
            finally:
                cur.execute("SET STATISTICS XML OFF")
                cur.execute("SET STATISTICS IO OFF")
            try:
                cost = showplan_cost(plan_xml) if plan_xml else {"partitions_touched": float("nan"),
                                                                 "logical_reads": float("nan")}
            except PlanError as exc:
                self.w.add_note(f"read cost, {name}: {exc}")
                cost = {"partitions_touched": float("nan"), "logical_reads": float("nan")}
            io = statistics_io_reads(messages).get(HASH_TABLE)
            if io is not None and pd.isna(cost["logical_reads"]):
                cost["logical_reads"] = float(io[1])
            out.append({"variant": "hash_partitioned", "repetition": self.repetition, "query": name, **cost,
                        "sql": sql})
        self.w.append_csv(FILES["read_cost"], pd.DataFrame(out))

    def variant(self, variant: str) -> None:
        try:
            check_variant_version(variant, self.version)
        except VersionGateError as exc:
            if self.repetition == 0:
                self.log(f"[{CHAPTER}] {variant}: skipped: {exc}")
                self.w.add_note(f"{variant} skipped: {exc}")
            return
        with StateGuard(lambda database: self.t.connect(database), [durability_change(self.db)],
                        allow_server_changes=self.allow, log=self.log), contextlib.closing(self.connect()) as conn:
            self.create(conn, variant)
            db_id = int(conn.cursor().execute(workloads.load(CHAPTER, "sqlserver", "database_id")[0]).fetchone()[0])
            samples = [self.point(conn, variant, n, db_id) for n in self.sessions]
            self.resolve(conn, variant, pd.concat(samples, ignore_index=True))
            if variant == "hash_partitioned":
                self.read_cost(conn)


def run_sqlserver(ctx) -> None:
    """Every variant at every session count on a reader's SQL Server, into ``ctx.writer``."""
    p = ctx.params
    run = SqlServerRun(ctx.target, ctx.database, ctx.writer, sessions=p["sessions"],
                       rows_per_session=p["rows_per_session"] or 0, max_seconds=p["duration_s"],
                       partitions=p["partitions"], hz=p["wait_hz"], allow_server_changes=ctx.allow_server_changes,
                       log=ctx.log, rows_per_call=p["rows_per_call"], wait_source=p["wait_source"],
                       check=lambda rows: ctx.check_balanced("runs", rows))
    for run.repetition, variant in interleaved(ctx.variants, p["repetitions"]):
        run.variant(variant)
