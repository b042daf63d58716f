"""The PostgreSQL analogue, live: ring tables and queue tables under N producers and N consumers.

With ``pushes_per_call`` above 1 every call runs a server-side loop (workloads
``loops.sql``): one CALL pushes (or pops) that many messages, each in its own
transaction.  One message per call leaves the run bound by the client's round
trips, which hides the difference between queue designs on a small machine.
The ring always runs through the loops (with one message per call at
``pushes_per_call=1``): its producers must see a full ring and stop, which one
plain statement cannot do.  Every point is checked against the chapter's
accounting identities (spec ``RUNS_IDENTITIES``) before it is recorded.
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
POP = {"naive": "pop_naive", "skip_locked": "pop_skip_locked"}
PUSH_LOOP = {"ring": "CALL lmax_push_ring_loop(?, ?, ?, NULL, NULL)", "queue": "CALL lmax_push_queue_loop(?, ?)"}
BACKOFF_S = 0.0005  # a producer facing a full ring, or a consumer an empty one, sleeps this long before trying again
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
    (enqueue to dequeue), the backlog at the start and the end of the window,
    how often a producer found the ring full or a consumer found nothing, and
    messages overwritten before anyone read them (lost: zero unless broken).
    """

    def __init__(self, target: Target, database: str, writer: RecordingWriter, queue_size: int,
                 duration_s: float, messages_per_session: int, log: Callable[[str], None], pushes_per_call: int = 1,
                 load: dict | None = None, wait_source: str = "auto", check: Callable[[dict], None] | None = None):
        self.t, self.db, self.w = target, database, writer
        self.per_call = int(pushes_per_call)
        self.queue_size = int(queue_size)
        self.duration_s = float(duration_s)
        self.cap = int(messages_per_session) or None
        self.log = log
        self.load, self.wait_source, self.check = load or {}, wait_source, check

    def connect(self):
        return self.t.connect(self.db)

    def prepare(self, variant: str) -> None:
        with contextlib.closing(self.connect()) as conn:
            workloads.run_script(conn, CHAPTER, "postgres", SETUP[variant])
            if variant.startswith("ring"):
                workloads.run_script(conn, CHAPTER, "postgres", "fill_ring", params={0: (self.queue_size,)})
            if self.per_call > 1 or variant.startswith("ring"):
                workloads.run_script(conn, CHAPTER, "postgres", "loops")

    def backlog(self, ring: bool) -> int:
        """Messages published and not yet taken off, read between runs of the sessions (none is in a call)."""
        with contextlib.closing(self.connect()) as conn:
            cur = conn.cursor()
            cur.execute(_statement("backlog_ring" if ring else "backlog_queue"))
            return int(cur.fetchone()[0])

    def point(self, variant: str, sessions: int, repetition: int = 0) -> dict:
        self.prepare(variant)
        consumers = sessions  # every PostgreSQL design is measured with as many consumers as producers
        ring = variant.startswith("ring")
        per_call = self.per_call
        if ring:  # the ring's loops at every per_call: a producer must be able to see a full ring and stop
            push_sql, push_args = PUSH_LOOP["ring"], (MESSAGE, self.queue_size, per_call)
            pop_sql, pop_args = POP_LOOP["ring"], (per_call, self.queue_size)
        elif per_call == 1:  # one statement per call: a client round trip per message
            push_sql, push_args = _statement("push_queue"), (MESSAGE,)
            pop_sql, pop_args = _statement(POP[variant]), ()
        else:  # a server-side loop per call, each message its own transaction
            push_sql, push_args = PUSH_LOOP["queue"], (MESSAGE, per_call)
            pop_sql, pop_args = POP_LOOP["queue"], (per_call, variant == "skip_locked")
        calls_cap = -(-self.cap // per_call) if self.cap is not None else None
        ages = [LatencyHistogram() for _ in range(consumers)]
        taken = [0] * consumers
        empty = [0] * consumers
        lost = [0] * consumers
        pushed = [0] * sessions
        full = [0] * sessions
        capped = [0] * sessions
        start = {}

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
                if ring:
                    row = cur.fetchone()
                    n, was_full = int(row[0] or 0), truthy(row[1])
                else:
                    n, was_full = per_call, False
                if op >= 0:  # warm-up pushes are in the backlog the window starts with
                    pushed[i] += n
                    full[i] += was_full
                if was_full:
                    time.sleep(BACKOFF_S)
                return
            c = i - sessions
            cur.execute(pop_sql, *pop_args)
            row = cur.fetchone() if cur.description else None  # psqlODBC: no result set when nothing was deleted
            if per_call == 1 and not ring:
                got, missed, gone = ([] if row is None else [float(row[0])]), row is None, 0
            else:
                got, missed = parse_ages(row[0]), truthy(row[1])
                gone = int(row[2] or 0) if ring else 0
            if op >= 0:  # warm-up pops are in the backlog the window starts with
                empty[c] += missed
                taken[c] += len(got)
                lost[c] += gone
                for age in got:
                    ages[c].record(int(age * 1e9))
            if missed:
                time.sleep(BACKOFF_S)

        sampler = wait_sampler(self.connect, self.db, hz=20, source=self.wait_source)

        def ready():  # every session warmed up and waiting at the start line: the backlog the window starts with
            start["backlog"] = self.backlog(ring)
            sampler.start()

        result = run_sessions(self.connect, operation, sessions=sessions + consumers, duration_s=self.duration_s,
                              warmup_operations=5, setup_session=setup, on_ready=ready,
                              retry_on=RETRYABLE, **self.load,
                              progress=f"{variant} {sessions}P/{consumers}C, repetition {repetition + 1}",
                              max_errors_per_session=10**9)
        sampler.stop()
        producers = result.per_session[:sessions]
        error_count = result.errors - sum(capped)
        real_errors = [e for s in result.per_session for e in s.error_samples if "producer done" not in e]
        calls = sum(s.operations for s in producers)
        push_hist = LatencyHistogram()
        for s in producers:
            push_hist.merge(s.histogram)
        age = LatencyHistogram()
        for h in ages:
            age.merge(h)
        backlog = self.backlog(ring)
        time.sleep(1.0)  # let the sessions' statistics reach the cumulative views
        with contextlib.closing(self.connect()) as conn:
            stats = relation_stats(conn)
        elapsed = result.elapsed_s
        row = {"variant": variant, "sessions": sessions, "consumers": consumers, "repetition": repetition,
               "elapsed_s": elapsed, "pushes_per_call": per_call, "queue_size": self.queue_size, "calls": calls,
               "operations": sum(pushed), "pushed": sum(pushed), "throughput": sum(pushed) / elapsed,
               **push_hist.summary(), "dequeued": sum(taken), "dequeue_per_s": sum(taken) / elapsed,
               "full_polls": sum(full), "empty_polls": sum(empty), "idle_consumers": sum(1 for n in taken if n == 0),
               "lost": sum(lost), "backlog_start": start.get("backlog", 0), "backlog": backlog,
               "age_p50_ms": age.percentile_ms(50) if age.total else float("nan"),
               "age_p99_ms": age.percentile_ms(99) if age.total else float("nan"),
               "errors": error_count, "wait_sample_hz": sampler.achieved_hz}
        if self.check is not None:
            self.check(row)  # a point that does not balance fails the run here, before it is recorded
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
                 f"{row['pushed']:,} pushed ({per_call} per call), {row['throughput']:,.0f} pushed/s, "
                 f"{row['dequeue_per_s']:,.0f} popped/s, backlog {row['backlog_start']:,} -> {backlog:,}, "
                 f"{row['full_polls']:,} full, lost {row['lost']:,}, p99 age {row['age_p99_ms']:.1f} ms; waits: "
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
    rings = [v for v in variants if v.startswith("ring")]
    if (pushes_per_call > 1 or rings) and version < 110000:
        raise ValueError(f"pushes_per_call={pushes_per_call}, variants {', '.join(rings) or 'none of the rings'}: the "
                         "ring and the server-side loops are procedures that COMMIT, which need PostgreSQL 11 or "
                         f"later (server_version_num is {version}); use pushes_per_call=1 and the queue variants")
    writer.update(engine={"settings": settings})
    run = PostgresQueueRun(target, database, writer, queue_size, duration_s, messages_per_session, log,
                           pushes_per_call=pushes_per_call, load=driver_options(p), wait_source=p["wait_source"],
                           check=lambda row: ctx.check_balanced("runs", row))
    for repetition, variant in interleaved(variants, p["repetitions"]):
        for n in sessions:
            run.point(variant, int(n), repetition)
