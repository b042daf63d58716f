"""The PostgreSQL run: N sessions insert single rows, per variant and per N; samplers watch.

Each driver call inserts ``rows_per_call`` rows: 1 is one INSERT statement
per call (a client round trip per row), more runs the workload's server-side
loop (``insert_rows``: each row still its own transaction).  runs.csv keeps
``operations`` and ``throughput`` in rows, and the latency percentiles per
call, with ``rows_per_call``, ``calls`` and ``calls_per_s`` beside them.

The SQL Server run is :mod:`.run_sqlserver`; what one call runs is :mod:`.calls`.
"""
from __future__ import annotations

import contextlib
import os
import re
from typing import Any, Callable, Sequence

import pandas as pd

from contention_book.harness import pg_waits, workloads
from contention_book.harness.driver import RETRYABLE, RunResult, Statement, run_sessions
from contention_book.harness.load_record import driver_options, record
from contention_book.harness.live import finish_stacks, start_stacks
from contention_book.perftools.capture import POSTGRES_OFFCPU_CALL_GRAPH, finish_offcpu, start_offcpu
from contention_book.harness.recording import RecordingWriter
from contention_book.harness.schedule import interleaved
from contention_book.harness.targets import Target

from .run_common import calls_per_session, count_rows, insert_call, postgres_plan_cost, runs_row
from .spec import CHAPTER, FILES, PG_TABLE, RANGE_QUERY, deciding_sessions
from contention_book.harness.polling import PollingSampler


def _query(conn, script: str, engine: str = "postgres", params: Sequence[Any] = ()) -> pd.DataFrame:
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, engine, script)[-1], *params)
    cols = [d[0] for d in cur.description]
    return pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)


IDLE = "idle (waiting for the client)"


def wait_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """Samples per wait label of the client backends, idle ones kept (as ``IDLE``): (wait, samples, share).

    harness.pg_waits.shares leaves idle samples out; here they matter, since
    a backend idle between single-row inserts is waiting for its client.
    """
    counts = pg_waits.counts(frame[frame["backend_type"] == "client backend"])
    counts["wait"] = counts["wait"].replace("idle", IDLE)
    return counts


class PostgresRun:
    """One live PostgreSQL run: every variant, every session count."""

    def __init__(self, target: Target, database: str, writer: RecordingWriter, *, sessions: list[int],
                 rows_per_session: int, max_seconds: float, partitions: int, hz: float, pin_hz: float,
                 stacks: bool, log: Callable[[str], None], rows_per_call: int = 1,
                 load: dict[str, Any] | None = None, wait_source: str = "auto",
                 check: Callable[[pd.DataFrame], None] | None = None):
        self.t, self.db, self.w = target, database, writer
        self.sessions, self.rows, self.max_s = sessions, rows_per_session, max_seconds
        self.partitions, self.hz, self.pin_hz, self.stacks, self.log = partitions, hz, pin_hz, stacks, log
        self.per_call = rows_per_call
        self.load, self.wait_source = load or {}, wait_source
        self.insert, self.args = insert_call("postgres", rows_per_call)
        self.repetition = 0  # the round being run (harness.schedule)
        # pinned buffers are sampled where the page verdict is decided (the most sessions no higher than the CPUs)
        # and at the most sessions; every sampler costs the 2-CPU machine some CPU, so not at every point
        self.pin_points = {max(sessions), deciding_sessions(sessions, writer.manifest["host"].get("logical_cpus"))}
        self.check = check  # RunContext.check_balanced for runs.csv: a point whose rows do not balance fails the run

    def connect(self):
        return self.t.connect(self.db)

    def create(self, conn, variant: str) -> None:
        workloads.run_script(conn, CHAPTER, "postgres", "setup")
        params = {1: (self.partitions,)} if variant == "hash_partitioned" else None
        workloads.run_script(conn, CHAPTER, "postgres", f"create_{variant}", params)

    def point(self, variant: str, n: int) -> RunResult:
        pids: dict[int, int] = {}
        insert, args = self.insert, self.args
        waits = pg_waits.sampler(self.connect, self.db, hz=self.hz, source=self.wait_source,
                                 log=self.log if self.repetition == 0 and n == self.sessions[0] else None)
        deepest = n == max(self.sessions)
        pins = PollingSampler(self.connect, workloads.load(CHAPTER, "postgres", "pinned_buffers")[0],
                              hz=self.pin_hz, name="pin-sampler") if n in self.pin_points and self.pin_hz > 0 else None
        recorder = {"perf": None, "offcpu": None}
        counted = {}

        def setup(cur, i):
            workloads.run_script(cur.connection, CHAPTER, "postgres", "session")
            pids[i] = int(cur.execute(workloads.load(CHAPTER, "postgres", "backend_pid")[0]).fetchone()[0])

        def ready():
            # every session has warmed up and waits at the barrier: the rows now are the rows before the window
            with contextlib.closing(self.connect()) as conn:
                counted["before"] = count_rows(conn, "postgres")
            if deepest and self.stacks and self.repetition == 0:  # one profile per variant is enough
                recorder["perf"] = start_stacks(self.w, variant, sorted(pids.values()))
                # the same window, off the CPU: where the inserting backends sleep (stacks/<variant>.offcpu-folded.gz)
                if os.environ.get("OFFCPU", "1") != "0":  # OFFCPU=0 in the environment: off
                    recorder["offcpu"] = start_offcpu(self.w, variant, pids=sorted(pids.values()),
                                                      call_graph=POSTGRES_OFFCPU_CALL_GRAPH)
            if pins is not None:
                pins.start()
            # last: the sessions wait at the barrier (ClientRead) while perf starts, and that is not the window
            waits.start()

        done = False
        try:
            result = run_sessions(self.connect, Statement(insert, args), sessions=n,
                                  operations_per_session=calls_per_session(self.rows, self.per_call),
                                  duration_s=self.max_s, warmup_operations=max(2, 20 // self.per_call),
                                  setup_session=setup, on_ready=ready, retry_on=RETRYABLE, **self.load,
                                  progress=f"{variant}, {n} session(s), repetition {self.repetition + 1}")
            done = True
        finally:
            waits.stop()
            if pins is not None:
                pins.stop()
            # off-CPU first: its window then ends with the CPU capture's, not after that one's post-processing
            finish_offcpu(self.w, recorder["offcpu"], self.log, failed=not done, variant=variant, sessions=n,
                          repetition=self.repetition, threads="inserting backends")
            finish_stacks(self.w, variant, recorder["perf"], self.log)
        if result.errors:
            samples = "; ".join(s for st in result.per_session for s in st.error_samples[:1])
            raise RuntimeError(f"{variant}, {n} sessions: {result.errors} insert(s) failed: {samples}")
        with contextlib.closing(self.connect()) as conn:
            after = count_rows(conn, "postgres")
        row = pd.DataFrame([runs_row(
            result, self.per_call, rows_counted=after - counted["before"], variant=variant,
            repetition=self.repetition, partitions=self.partitions if variant == "hash_partitioned" else 1,
            wait_sampler_hz=round(waits.achieved_hz, 2))])
        if self.check is not None:
            self.check(row)
        self.w.append_csv(FILES["runs"], row)
        if waits.error:
            self.w.add_note(f"wait sampler, {variant} at {n} sessions: stopped early: {waits.error}")
        frame = waits.frame()
        record(self.w, result, log=self.log, sampler=waits, frame=frame, pids=set(pids.values()) or None,
               variant=variant, sessions=n, repetition=self.repetition)
        # only the inserting sessions: the run's own idle connection and the pin sampler's are not the workload
        shares = wait_counts(frame[frame["pid"].isin(set(pids.values()))] if pids else frame)
        if not shares.empty:
            self.w.append_csv(FILES["waits"], shares.assign(variant=variant, sessions=n, repetition=self.repetition)[
                ["variant", "sessions", "repetition", "wait", "samples", "share"]])
        if pins is not None:
            if pins.error:
                self.w.add_note(f"pinned-buffer sampler, {variant}: stopped early: {pins.error}")
            frame = pins.frame()
            if len(frame):
                grouped = frame.groupby(["relation", "block", "role"], as_index=False).agg(
                    pins=("pins", "sum"), last_block=("last_block", "max"))
                grouped.insert(0, "repetition", self.repetition)
                grouped.insert(0, "sessions", n)
                grouped.insert(0, "variant", variant)
                grouped["ticks"] = pins.ticks
                self.w.append_csv(FILES["pins"], grouped)
        self.log(f"[{CHAPTER}] {variant}, {n} session(s): {result.operations * self.per_call:,} rows in "
                 f"{result.elapsed_s:.2f} s = {result.throughput * self.per_call:,.0f} rows/s "
                 f"(p99 {result.latency['p99_ms']:.2f} ms per call of {self.per_call} row(s))")
        return result

    def index_stats(self, conn, variant: str) -> None:
        workloads.run_script(conn, CHAPTER, "postgres", "analyze")
        stats = _query(conn, "index_stats")
        stats.insert(0, "repetition", self.repetition)
        stats.insert(0, "variant", variant)
        self.w.append_csv(FILES["index"], stats)

    def read_cost(self, conn, variant: str) -> None:
        """Pages read by a point lookup and by the same 100 rows in each design.

        "The same 100 rows" are 100 inserted one after another (consecutive
        sequence numbers): a BETWEEN on the sequential and hash-partitioned
        keys, and the 100 hashed keys on the random-key design, whose
        consecutive key values hold about one row, not 100.
        """
        cur = conn.cursor()
        if variant == "random_key":
            seq = int(cur.execute("SELECT last_value / 2 FROM lpi_seq").fetchone()[0])
            key = f"hashint8extended({seq}, 0)"
            rows_where = f"id IN (SELECT hashint8extended(g, 0) FROM generate_series({seq}, {seq + 99}) g)"
        else:
            probe = _query(conn, "probe_ids")
            if probe.empty:
                return
            seq = int(probe.iloc[0, 0])
            key, rows_where = str(seq), f"id BETWEEN {seq} AND {seq + 99}"
        queries = [
            ("point lookup", f"SELECT id, payload FROM {PG_TABLE} WHERE id = {key}", True),
            ("point lookup, no partition pruning", f"SELECT id, payload FROM {PG_TABLE} WHERE id = {key}", False),
            (RANGE_QUERY, f"SELECT id, payload FROM {PG_TABLE} WHERE {rows_where}", True),
        ]
        rows = []
        for name, sql, pruning in queries:
            cur.execute(f"SET enable_partition_pruning = {'on' if pruning else 'off'}")
            cur.execute(sql)  # warm: the measured run should read from shared buffers
            cur.fetchall()
            plan = cur.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql).fetchone()[0]
            rows.append({"variant": variant, "repetition": self.repetition, "query": name,
                         **postgres_plan_cost(plan), "sql": sql})
        cur.execute("RESET enable_partition_pruning")
        self.w.append_csv(FILES["read_cost"], pd.DataFrame(rows))

    def variant(self, variant: str) -> None:
        with contextlib.closing(self.connect()) as conn:
            self.create(conn, variant)
            for n in self.sessions:
                self.point(variant, n)
            self.index_stats(conn, variant)
            self.read_cost(conn, variant)


def session_settings() -> dict[str, str]:
    """The settings the workload's session script (``session.sql``) sets in every inserting session, keyed as the
    manifests of the other chapters key a session override: ``{"synchronous_commit (sessions)": "off"}``."""
    out = {}
    for batch in workloads.load(CHAPTER, "postgres", "session"):
        for line in batch.splitlines():
            m = re.match(r"\s*SET\s+(\w+)\s*(?:=|TO)\s*'?([\w.]+)'?\s*;?\s*$", line, re.IGNORECASE)
            if m:
                out[f"{m.group(1).lower()} (sessions)"] = m.group(2)
    return out


def run_postgres(ctx) -> None:
    """Every variant at every session count on PostgreSQL, into ``ctx.writer``."""
    p, writer = ctx.params, ctx.writer
    with contextlib.closing(ctx.target.connect(ctx.database)) as conn:
        settings = dict(conn.cursor().execute(
            "SELECT name, setting FROM pg_settings WHERE name IN ('shared_buffers', 'block_size', "
            "'synchronous_commit', 'max_connections', 'wal_level')").fetchall())
    # the server's settings above are its defaults; the workload's session script overrides some of them in every
    # inserting session (synchronous_commit = off): the manifest names both, as the other chapters' runners do
    settings.update(session_settings())
    writer.update(engine={"settings": settings})
    run = PostgresRun(ctx.target, ctx.database, writer, sessions=p["sessions"],
                      rows_per_session=p["rows_per_session"] or 0, max_seconds=p["duration_s"],
                      partitions=p["partitions"], hz=p["wait_hz"], pin_hz=p["pin_hz"], stacks=p["capture_stacks"],
                      log=ctx.log, rows_per_call=p["rows_per_call"], load=driver_options(p),
                      wait_source=p["wait_source"], check=lambda rows: ctx.check_balanced("runs", rows))
    for run.repetition, variant in interleaved(ctx.variants, p["repetitions"]):
        run.variant(variant)
    with contextlib.closing(ctx.target.connect(ctx.database)) as conn:
        conn.cursor().execute(f"DROP TABLE IF EXISTS {PG_TABLE} CASCADE")
