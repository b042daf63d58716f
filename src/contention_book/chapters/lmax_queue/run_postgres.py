"""The PostgreSQL analogue, live: ring tables and queue tables under N sessions.

With ``pushes_per_call`` above 1 every call runs a server-side loop (workloads
``loops.sql``): one CALL pushes (or pops) that many messages, each in its own
transaction.  One message per call leaves the run bound by the client's round
trips, which hides the difference between queue designs on a small machine.
Throughput is always messages per second; the latency percentiles are per call.
"""
from __future__ import annotations

import contextlib
import time
from typing import Callable

import pandas as pd

from contention_book.harness import workloads
from contention_book.harness.driver import RETRYABLE, LatencyHistogram, run_sessions
from contention_book.harness.load_record import driver_options, record
from contention_book.harness.pg_waits import sampler as wait_sampler, shares
from contention_book.harness.recording import RecordingWriter
from contention_book.harness.schedule import interleaved
from contention_book.harness.targets import Target

from .spec import CHAPTER, FILES

MESSAGE = "Hello World"
SETUP = {"ring": "setup_ring", "ring_durable": "setup_ring", "ring_unlogged": "setup_ring_unlogged",
         "naive": "setup_queue", "skip_locked": "setup_queue"}
# ring_durable is the ring with commits that wait for the WAL flush (synchronous_commit on): the twin that
# shows what taking durability off the commit path (the article's delayed durability) is worth
DURABLE = {"ring_durable"}
POP = {"naive": "pop_naive", "skip_locked": "pop_skip_locked", "ring": "pop_ring", "ring_durable": "pop_ring",
       "ring_unlogged": "pop_ring"}
PUSH_LOOP = {"ring": "CALL lmax_push_ring_loop(?, ?, ?)", "queue": "CALL lmax_push_queue_loop(?, ?)"}
POP_LOOP = {"ring": "CALL lmax_pop_ring_loop(?, ?, NULL, NULL, NULL)", "queue": "CALL lmax_pop_loop(?, ?, NULL, NULL)"}


def parse_ages(text) -> list[float]:
    """The pop loop's comma-separated ages in seconds ('' or NULL when it took nothing)."""
    return [float(a) for a in str(text).split(",") if a.strip()] if text not in (None, "") else []


def truthy(value) -> bool:
    """A boolean OUT parameter as the ODBC driver returns it (True, 1, '1', 't', 'true')."""
    return str(value).strip().lower() in ("1", "t", "true")


def _statement(name: str) -> str:
    return workloads.load(CHAPTER, "postgres", name)[-1]


def _frame(cur) -> pd.DataFrame:
    cols = [d[0] for d in cur.description]
    return pd.DataFrame.from_records([tuple(r) for r in cur.fetchall()], columns=cols)


def relation_stats(conn) -> pd.DataFrame:
    cur = conn.cursor()
    cur.execute(_statement("relation_stats"))
    out = _frame(cur)
    upd = out["n_tup_upd"].astype(float)
    out["hot_share"] = (out["n_tup_hot_upd"].astype(float) / upd).where(upd > 0)
    return out


class PostgresQueueRun:
    """One (variant, sessions) point: fresh tables, N producers and N consumers, waits sampled.

    Every design runs with consumers, so a design is judged on what it
    delivers: push and pop rates, the age of a message when it is taken off
    (enqueue to dequeue), the backlog left at the end and, for the rings,
    messages overwritten before anyone read them (lost).
    """

    def __init__(self, target: Target, database: str, writer: RecordingWriter, queue_size: int,
                 duration_s: float, messages_per_session: int, log: Callable[[str], None], pushes_per_call: int = 1,
                 load: dict | None = None, wait_source: str = "auto"):
        self.t, self.db, self.w = target, database, writer
        self.per_call = int(pushes_per_call)
        self.queue_size = int(queue_size)
        self.duration_s = float(duration_s)
        self.cap = int(messages_per_session) or None
        self.log = log
        self.load, self.wait_source = load or {}, wait_source

    def connect(self):
        return self.t.connect(self.db)

    def prepare(self, variant: str) -> None:
        with contextlib.closing(self.connect()) as conn:
            workloads.run_script(conn, CHAPTER, "postgres", SETUP[variant])
            if variant.startswith("ring"):
                workloads.run_script(conn, CHAPTER, "postgres", "fill_ring", params={0: (self.queue_size,)})
            if self.per_call > 1:
                workloads.run_script(conn, CHAPTER, "postgres", "loops")

    def point(self, variant: str, sessions: int, repetition: int = 0) -> dict:
        self.prepare(variant)
        consumers = sessions  # every PostgreSQL design is measured with as many consumers as producers
        ring = variant.startswith("ring")
        per_call = self.per_call
        if per_call == 1:  # one statement per call: a client round trip per message
            push_sql = _statement("push_ring" if ring else "push_queue")
            push_args = (MESSAGE, self.queue_size) if ring else (MESSAGE,)
            pop_sql, pop_args = _statement(POP[variant]), ((self.queue_size,) if ring else ())
        else:  # a server-side loop per call, each message its own transaction
            push_sql = PUSH_LOOP["ring" if ring else "queue"]
            push_args = (MESSAGE, self.queue_size, per_call) if ring else (MESSAGE, per_call)
            pop_sql = POP_LOOP["ring" if ring else "queue"]
            pop_args = (per_call, self.queue_size) if ring else (per_call, variant == "skip_locked")
        calls_cap = -(-self.cap // per_call) if self.cap is not None else None
        ages = [LatencyHistogram() for _ in range(consumers)]
        taken = [0] * consumers
        empty = [0] * consumers
        lost = [0] * consumers
        capped = [0] * sessions

        def setup(cur, _i):
            workloads.run_script(cur.connection, CHAPTER, "postgres", "session")
            if variant in DURABLE:
                cur.execute("SET synchronous_commit = on")

        def operation(cur, i, op):
            if i < sessions:
                if calls_cap is not None and op >= calls_cap:
                    capped[i] += 1
                    time.sleep(0.001)  # this producer is done; the window runs on for the others
                    raise _Done("producer done")
                cur.execute(push_sql, *push_args)
                return
            c = i - sessions
            cur.execute(pop_sql, *pop_args)
            row = cur.fetchone() if cur.description else None  # psqlODBC: no result set when nothing was deleted
            if per_call == 1:
                gone = row is not None and ring and truthy(row[1])
                got, missed = ([] if row is None or gone else [float(row[0])]), row is None
            else:
                got, missed = parse_ages(row[0]), truthy(row[1])
                gone = int(row[2] or 0) if ring else 0
            empty[c] += missed
            if op >= 0:  # warm-up calls are not counted
                taken[c] += len(got)
                lost[c] += int(gone)
                for age in got:
                    ages[c].record(int(age * 1e9))

        sampler = wait_sampler(self.connect, self.db, hz=20, source=self.wait_source)
        result = run_sessions(self.connect, operation, sessions=sessions + consumers, duration_s=self.duration_s,
                              warmup_operations=5, setup_session=setup, on_ready=sampler.start,
                              retry_on=RETRYABLE, **self.load,
                              progress=f"{variant} {sessions}P/{consumers}C, repetition {repetition + 1}",
                              max_errors_per_session=10**9)
        sampler.stop()
        producers = result.per_session[:sessions]
        error_count = result.errors - sum(capped)
        real_errors = [e for s in result.per_session for e in s.error_samples if "producer done" not in e]
        calls = sum(s.operations for s in producers)
        pushes = calls * per_call
        push_hist = LatencyHistogram()
        for s in producers:
            push_hist.merge(s.histogram)
        age = LatencyHistogram()
        for h in ages:
            age.merge(h)
        time.sleep(1.0)  # let the sessions' statistics reach the cumulative views
        with contextlib.closing(self.connect()) as conn:
            stats = relation_stats(conn)
            cur = conn.cursor()
            if ring:
                cur.execute(_statement("backlog_ring"), self.queue_size)
            else:
                cur.execute(_statement("backlog_queue"))
            backlog = int(cur.fetchone()[0])
        row = {"variant": variant, "sessions": sessions, "consumers": consumers, "repetition": repetition,
               "elapsed_s": result.elapsed_s, "pushes_per_call": per_call, "calls": calls, "operations": pushes,
               "throughput": pushes / result.elapsed_s,
               **push_hist.summary(), "dequeued": sum(taken), "dequeue_per_s": sum(taken) / result.elapsed_s,
               "empty_polls": sum(empty), "lost": sum(lost), "backlog": backlog,
               "age_p50_ms": age.percentile_ms(50) if age.total else float("nan"),
               "age_p99_ms": age.percentile_ms(99) if age.total else float("nan"),
               "errors": error_count, "wait_sample_hz": sampler.achieved_hz}
        if error_count:
            self.w.add_note(f"{variant} at {sessions} sessions: {error_count} failed call(s), e.g. "
                            f"{real_errors[0] if real_errors else 'no sample kept'}")
        if sampler.error:
            self.w.add_note(f"wait sampling for {variant} at {sessions} sessions stopped: {sampler.error}")
        self.w.append_csv(FILES["runs"], pd.DataFrame([row]))
        frame = sampler.frame()
        result.errors_by_code.pop("_Done", None)  # producers that reached their cap, not failures
        result.errors = error_count
        record(self.w, result, log=self.log, sampler=sampler, frame=frame, variant=variant, sessions=sessions,
               repetition=repetition)
        waits = shares(frame)
        self.w.append_csv(FILES["waits"], waits.assign(variant=variant, sessions=sessions, repetition=repetition)[
            ["variant", "sessions", "repetition", "wait", "samples", "share"]])
        self.w.append_csv(FILES["relation"], stats.assign(variant=variant, sessions=sessions, repetition=repetition))
        top = waits.head(2)
        self.log(f"[{CHAPTER}] {variant} {sessions}P/{consumers}C, repetition {repetition + 1}: "
                 f"{pushes:,} pushes ({per_call} per call), {row['throughput']:,.0f} pushed/s, "
                 f"{row['dequeue_per_s']:,.0f} popped/s, backlog {backlog:,}, "
                 f"lost {sum(lost):,}, p99 age {row['age_p99_ms']:.1f} ms; waits: "
                 + ", ".join(f"{w} {s:.0%}" for w, s in zip(top["wait"], top["share"])))
        return row


class _Done(Exception):
    """A producer that reached messages_per_session: counted as an error by the driver, dropped here."""


def run_postgres(ctx) -> None:
    """Every design at every session count on PostgreSQL, into ``ctx.writer``."""
    p, target, database, writer, log = ctx.params, ctx.target, ctx.database, ctx.writer, ctx.log
    variants, sessions, pushes_per_call = ctx.variants, sorted(p["sessions"]), p["pushes_per_call"]
    queue_size, duration_s, messages_per_session = p["queue_size"], p["duration_s"], p["messages_per_session"] or 0
    writer.update(parameters={**writer.manifest["parameters"],
                              "synchronous_commit": "off (session); on for ring_durable",
                              "fillfactor_ring": 50, "latency": "per call (of pushes_per_call messages)",
                              "throughput": "messages per second"})
    with contextlib.closing(target.connect(database)) as conn:
        settings = dict(conn.cursor().execute(
            "SELECT name, setting FROM pg_settings WHERE name IN ('autovacuum', 'autovacuum_naptime', "
            "'shared_buffers', 'max_connections', 'wal_level', 'synchronous_commit')").fetchall())
        version = int(conn.cursor().execute("SHOW server_version_num").fetchone()[0])
    if pushes_per_call > 1 and version < 110000:
        raise ValueError(f"pushes_per_call={pushes_per_call}: the server-side loops are procedures that COMMIT, "
                         f"which need PostgreSQL 11 or later (server_version_num is {version}); use pushes_per_call=1")
    writer.update(engine={"settings": settings})
    run = PostgresQueueRun(target, database, writer, queue_size, duration_s, messages_per_session, log,
                           pushes_per_call=pushes_per_call, load=driver_options(p), wait_source=p["wait_source"])
    for repetition, variant in interleaved(variants, p["repetitions"]):
        for n in sessions:
            run.point(variant, int(n), repetition)
