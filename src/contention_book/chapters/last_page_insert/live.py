"""Live runs: N sessions insert single rows, per variant and per N; samplers watch.

Each driver call inserts ``rows_per_call`` rows: 1 is one INSERT statement
per call (a client round trip per row), more runs the workload's server-side
loop (``insert_rows``: each row still its own transaction).  runs.csv keeps
``operations`` and ``throughput`` in rows, and the latency percentiles per
call, with ``rows_per_call``, ``calls`` and ``calls_per_s`` beside them.

``run_live`` is the notebook's entry point for both engines; the PostgreSQL
path is here, the SQL Server one in :mod:`.live_sqlserver`.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from contention_book.harness import pg_waits, workloads
from contention_book.harness.driver import RunResult, run_sessions
from contention_book.harness.live import default_destination, finish_stacks, invocation, live_target, measured_writer, start_stacks
from contention_book.harness.recording import RecordingWriter
from contention_book.harness.targets import Target, check_identifier, ensure_own_database

from .common import CHAPTER, FILES, NOTEBOOK, PG_TABLE, VARIANTS
from .readcost import postgres_plan_cost
from contention_book.harness.polling import PollingSampler


def parse_sessions(value: Any) -> list[int]:
    """``"1,2,4,8"``, ``[1, 2]`` or ``4`` -> a sorted list of distinct positive ints."""
    items = value.split(",") if isinstance(value, str) else (value if isinstance(value, (list, tuple)) else [value])
    try:
        out = sorted({int(str(v).strip()) for v in items if str(v).strip()})
    except ValueError:
        raise ValueError(f"sessions {value!r}: expected session counts such as '1,2,4,8'") from None
    if not out or out[0] < 1:
        raise ValueError(f"sessions {value!r}: expected at least one count, each 1 or more")
    return out


def parse_variants(value: Any, engine: str) -> list[str]:
    if engine not in VARIANTS:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(VARIANTS)}")
    items = value.split(",") if isinstance(value, str) else list(value or [])
    chosen = [v.strip() for v in items if v and v.strip()] or list(VARIANTS[engine])
    unknown = [v for v in chosen if v not in VARIANTS[engine]]
    if unknown:
        raise ValueError(f"variants {unknown}: expected some of {', '.join(VARIANTS[engine])} for {engine}")
    return chosen


def check_partitions(partitions: Any) -> int:
    try:
        p = int(partitions)
    except (TypeError, ValueError):
        raise ValueError(f"partitions {partitions!r}: expected a whole number from 2 to 64") from None
    if not 2 <= p <= 64:
        raise ValueError(f"partitions {p}: expected 2 to 64 (the article uses 4; the whitepaper up to 32)")
    return p


def check_rows_per_call(rows_per_call: Any) -> int:
    try:
        r = int(rows_per_call)
    except (TypeError, ValueError):
        raise ValueError(f"rows_per_call {rows_per_call!r}: expected a whole number from 1 to 10000") from None
    if not 1 <= r <= 10000:
        raise ValueError(f"rows_per_call {r}: expected 1 (one INSERT per call, a round trip per row) "
                         "to 10000 (rows per call of the server-side loop)")
    return r


def insert_call(engine: str, rows_per_call: int, **identifiers: str) -> tuple[str, tuple]:
    """The statement one driver call runs, and its parameters: one INSERT, or the server-side loop."""
    if rows_per_call == 1:
        return workloads.load(CHAPTER, engine, "insert", **identifiers)[-1], ()
    return workloads.load(CHAPTER, engine, "insert_rows", **identifiers)[-1 if engine == "postgres" else 0], \
        (rows_per_call,)


def calls_per_session(rows_per_session: int, rows_per_call: int) -> int | None:
    """Calls each session makes to insert ``rows_per_session`` rows (rounded up); None for no cap."""
    return -(-rows_per_session // rows_per_call) if rows_per_session else None


def runs_row(result: RunResult, rows_per_call: int, **extra: Any) -> dict[str, Any]:
    """One runs.csv row: operations and throughput in rows, latency percentiles per call."""
    row = result.row(**extra)
    row.update(rows_per_call=rows_per_call, calls=result.operations, calls_per_s=result.throughput,
               operations=result.operations * rows_per_call, throughput=result.throughput * rows_per_call)
    return row


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
    f = frame[frame["backend_type"] == "client backend"]
    labels = pg_waits.label(f).replace("idle", IDLE)
    counts = labels.value_counts().rename_axis("wait").reset_index(name="samples")
    counts["share"] = counts["samples"] / counts["samples"].sum() if len(counts) else []
    return counts


class PostgresRun:
    """One live PostgreSQL run: every variant, every session count."""

    def __init__(self, target: Target, database: str, writer: RecordingWriter, *, sessions: list[int],
                 rows_per_session: int, max_seconds: float, partitions: int, hz: float, pin_hz: float,
                 stacks: bool, log: Callable[[str], None], rows_per_call: int = 1):
        self.t, self.db, self.w = target, database, writer
        self.sessions, self.rows, self.max_s = sessions, rows_per_session, max_seconds
        self.partitions, self.hz, self.pin_hz, self.stacks, self.log = partitions, hz, pin_hz, stacks, log
        self.per_call = rows_per_call
        self.insert, self.args = insert_call("postgres", rows_per_call)

    def connect(self):
        return self.t.connect(self.db)

    def create(self, conn, variant: str) -> None:
        workloads.run_script(conn, CHAPTER, "postgres", "setup")
        params = {1: (self.partitions,)} if variant == "hash_partitioned" else None
        workloads.run_script(conn, CHAPTER, "postgres", f"create_{variant}", params)

    def point(self, variant: str, n: int) -> RunResult:
        pids: dict[int, int] = {}
        insert, args = self.insert, self.args
        waits = pg_waits.WaitSampler(self.connect, self.db, hz=self.hz)
        deepest = n == max(self.sessions)
        pins = PollingSampler(self.connect, workloads.load(CHAPTER, "postgres", "pinned_buffers")[0],
                              hz=self.pin_hz, name="pin-sampler") if deepest and self.pin_hz > 0 else None
        recorder = {"perf": None}

        def setup(cur, i):
            workloads.run_script(cur.connection, CHAPTER, "postgres", "session")
            pids[i] = int(cur.execute(workloads.load(CHAPTER, "postgres", "backend_pid")[0]).fetchone()[0])

        def ready():
            waits.start()
            if pins is not None:
                pins.start()
            if deepest and self.stacks:
                recorder["perf"] = start_stacks(self.w, variant, sorted(pids.values()))

        try:
            result = run_sessions(self.connect, lambda cur, _s, _op: cur.execute(insert, *args), sessions=n,
                                  operations_per_session=calls_per_session(self.rows, self.per_call),
                                  duration_s=self.max_s, warmup_operations=max(2, 20 // self.per_call),
                                  setup_session=setup, on_ready=ready, progress=f"{variant}, {n} session(s)")
        finally:
            waits.stop()
            if pins is not None:
                pins.stop()
            finish_stacks(self.w, variant, recorder["perf"], self.log)
        if result.errors:
            samples = "; ".join(s for st in result.per_session for s in st.error_samples[:1])
            raise RuntimeError(f"{variant}, {n} sessions: {result.errors} insert(s) failed: {samples}")
        self.w.append_csv(FILES["runs"], pd.DataFrame([runs_row(
            result, self.per_call, variant=variant, repetition=0,
            partitions=self.partitions if variant == "hash_partitioned" else 1,
            wait_sampler_hz=round(waits.achieved_hz, 2))]))
        if waits.error:
            self.w.add_note(f"wait sampler, {variant} at {n} sessions: stopped early: {waits.error}")
        frame = waits.frame()
        # only the inserting sessions: the run's own idle connection and the pin sampler's are not the workload
        shares = wait_counts(frame[frame["pid"].isin(set(pids.values()))] if pids else frame)
        if not shares.empty:
            self.w.append_csv(FILES["waits"], shares.assign(variant=variant, sessions=n)[
                ["variant", "sessions", "wait", "samples", "share"]])
        if pins is not None:
            if pins.error:
                self.w.add_note(f"pinned-buffer sampler, {variant}: stopped early: {pins.error}")
            frame = pins.frame()
            if len(frame):
                grouped = frame.groupby(["relation", "block", "role"], as_index=False).agg(
                    pins=("pins", "sum"), last_block=("last_block", "max"))
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
        stats.insert(0, "variant", variant)
        self.w.append_csv(FILES["index"], stats)

    def read_cost(self, conn, variant: str) -> None:
        probe = _query(conn, "probe_ids")
        if probe.empty:
            return
        key = int(probe.iloc[0, 0])
        queries = [
            ("point lookup", f"SELECT id, payload FROM {PG_TABLE} WHERE id = {key}", True),
            ("point lookup, no partition pruning", f"SELECT id, payload FROM {PG_TABLE} WHERE id = {key}", False),
            ("range of 100 keys", f"SELECT id, payload FROM {PG_TABLE} WHERE id BETWEEN {key} AND {key + 99}", True),
        ]
        rows = []
        cur = conn.cursor()
        for name, sql, pruning in queries:
            cur.execute(f"SET enable_partition_pruning = {'on' if pruning else 'off'}")
            cur.execute(sql)  # warm: the measured run should read from shared buffers
            cur.fetchall()
            plan = cur.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql).fetchone()[0]
            rows.append({"variant": variant, "query": name, **postgres_plan_cost(plan), "sql": sql})
        cur.execute("RESET enable_partition_pruning")
        self.w.append_csv(FILES["read_cost"], pd.DataFrame(rows))

    def variant(self, variant: str) -> None:
        with contextlib.closing(self.connect()) as conn:
            self.create(conn, variant)
            for n in self.sessions:
                self.point(variant, n)
            self.index_stats(conn, variant)
            self.read_cost(conn, variant)


def run_live(
    *,
    target: str | None = None,
    engine: str = "postgres",
    sessions: Any = "1,2,4,8",
    rows_per_session: int = 0,
    rows_per_call: int = 100,
    max_seconds: float = 7.0,
    partitions: int = 8,
    variants: Any = None,
    record_to: str | None = None,
    database: str = "contention_lab",
    hz: float = 20.0,
    pin_hz: float = 10.0,
    stacks: bool = True,
    allow_server_changes: bool = False,
    command: str | None = None,
    log: Callable[[str], None] = print,
) -> Path:
    """Run the chapter's variants against ``target``; return the new recording's path.

    Each (variant, sessions) point runs for ``max_seconds``, or until every
    session has inserted ``rows_per_session`` rows when that is above 0.
    Each call inserts ``rows_per_call`` rows (1: one INSERT per round trip;
    more: the server-side loop, so sessions stay inside the server).
    """
    chosen = parse_variants(variants, engine)
    counts = parse_sessions(sessions)
    p = check_partitions(partitions)
    per_call = check_rows_per_call(rows_per_call)
    if int(rows_per_session) < 0 or float(max_seconds) <= 0:
        raise ValueError(f"rows_per_session={rows_per_session}, max_seconds={max_seconds}: expected rows 0 (no cap) "
                         "or more and a positive number of seconds per point")
    check_identifier(database, "database")
    parameters = {"engine": engine, "sessions": counts, "rows_per_session": int(rows_per_session),
                  "rows_per_call": per_call,
                  "max_seconds": float(max_seconds), "partitions": p, "variants": chosen, "database": database,
                  "wait_sampler_hz": float(hz), "pin_sampler_hz": float(pin_hz)}
    with live_target(target, engine) as tgt:
        ensure_own_database(tgt, database, log=log)
        dest = default_destination(CHAPTER, record_to, engine)
        command = command or invocation(NOTEBOOK, {"source": "live", "engine": engine, "sessions": sessions,
                                                   "target": target or ""})
        writer = measured_writer(tgt, CHAPTER, parameters, command, dest,
                                 title="Last-page inserts: N sessions inserting single rows"
                                 + (f", {per_call} per call (server-side loop)" if per_call > 1 else ""))
        with writer:
            if engine == "postgres":
                with contextlib.closing(tgt.connect(database)) as conn:
                    settings = dict(conn.cursor().execute(
                        "SELECT name, setting FROM pg_settings WHERE name IN ('shared_buffers', 'block_size', "
                        "'synchronous_commit', 'max_connections', 'wal_level')").fetchall())
                writer.update(engine={"settings": settings})
                run = PostgresRun(tgt, database, writer, sessions=counts, rows_per_session=int(rows_per_session),
                                  max_seconds=float(max_seconds), partitions=p, hz=float(hz), pin_hz=float(pin_hz),
                                  stacks=bool(stacks), log=log, rows_per_call=per_call)
                for variant in chosen:
                    run.variant(variant)
                with contextlib.closing(tgt.connect(database)) as conn:
                    conn.cursor().execute(f"DROP TABLE IF EXISTS {PG_TABLE} CASCADE")
            else:
                from .live_sqlserver import SqlServerRun

                run = SqlServerRun(tgt, database, writer, sessions=counts, rows_per_session=int(rows_per_session),
                                   max_seconds=float(max_seconds), partitions=p, hz=float(hz),
                                   allow_server_changes=bool(allow_server_changes), log=log,
                                   rows_per_call=per_call)
                for variant in chosen:
                    run.variant(variant)
    log(f"[{CHAPTER}] recording written: {dest}")
    return dest
