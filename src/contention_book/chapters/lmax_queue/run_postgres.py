"""The PostgreSQL analogue, live: ring tables and queue tables under N producers and N consumers.

With ``pushes_per_call`` above 1 every call runs a server-side loop (workloads
``loops.sql``): one CALL pushes (or pops) that many messages, each in its own
transaction.  One message per call leaves the run bound by the client's round
trips, which hides the difference between queue designs on a small machine.
The ring always runs through the loops (with one message per call at
``pushes_per_call=1``): its producers must see a full ring and wait, which one
plain statement cannot do.  A loop that finds nothing to pop (or a full ring)
backs off inside the server (pg_sleep, the wait event Timeout:PgSleep) within a
short budget per call, so the backend does not sit idle waiting for its client
(Client:ClientRead) while the client sleeps; only the one-statement queue path
still backs off in the client.  Every point is checked against the chapter's
accounting identities (spec ``RUNS_IDENTITIES``) before it is recorded.
"""
from __future__ import annotations

import contextlib
import os
import time
from array import array
from typing import Callable

import numpy as np
import pandas as pd

from contention_book.harness import workloads
from contention_book.harness.driver import RETRYABLE, LatencyHistogram, SessionDone, Statement, run_sessions
from contention_book.harness.load_record import driver_options, record
from contention_book.harness.pg_waits import sampler as wait_sampler, shares
from contention_book.harness.recording import RecordingWriter
from contention_book.harness.schedule import interleaved
from contention_book.harness.targets import Target
from contention_book.perftools.capture import POSTGRES_OFFCPU_CALL_GRAPH, finish_offcpu, start_offcpu

from .spec import CHAPTER, FILES, PACED_VARIANTS

MESSAGE = "Hello World"
SETUP = {"ring": "setup_ring", "ring_durable": "setup_ring", "ring_unlogged": "setup_ring_unlogged",
         "naive": "setup_queue", "skip_locked": "setup_queue"}
# ring_durable is the ring with commits that wait for the WAL flush (synchronous_commit on): the twin that
# shows what taking durability off the commit path (the article's delayed durability) is worth
DURABLE = {"ring_durable"}
POP = {"naive": "pop_naive", "skip_locked": "pop_skip_locked"}
PUSH_LOOP = {"ring": "CALL lmax_push_ring_loop(?, ?, ?, ?, ?, NULL, NULL)",
             "queue": "CALL lmax_push_queue_loop(?, ?, ?, NULL)"}
# the same loops on a schedule (loops.sql's pacing): two more arguments, the interval and the first message's lead
PACED_PUSH_LOOP = {"ring": "CALL lmax_push_ring_loop(?, ?, ?, ?, ?, NULL, NULL, ?, ?)",
                   "queue": "CALL lmax_push_queue_loop(?, ?, ?, NULL, ?, ?)"}
# the slowest schedule a paced producer keeps: above this interval a call could not end near its budget
MIN_PUSH_RATE = 100.0
POP_LOOP = {"ring": "CALL lmax_pop_ring_loop(?, ?, ?, ?, NULL, NULL, NULL)",
            "queue": "CALL lmax_pop_loop(?, ?, ?, ?, NULL, NULL)"}
# The loops back off in the server: pg_sleep this long after a pop that found nothing (or a full ring), then look
# again.  pg_sleep waits whole milliseconds (it rounds its timeout up), so 1 ms is its shortest wait.
SERVER_BACKOFF_S = 0.001
# A loop's call ends once it has run this long (after its current message, or instead of its next wait), even short
# of pushes_per_call messages: a slow design's call (commits waiting for the WAL flush) ends soon after the window
# does, and a backend waits for its client about once per budget at most.
CALL_BUDGET_S = 0.05
# One statement per message (the queue designs at pushes_per_call=1): a pop that found nothing ends the call, and
# the client sleeps this long before the next one; its backend waits for the client (ClientRead) meanwhile.
BACKOFF_S = 0.0005


def parse_ages(text) -> list[float]:
    """The pop loop's comma-separated ages in seconds ('' or NULL when it took nothing)."""
    return [float(a) for a in str(text).split(",") if a.strip()] if text not in (None, "") else []


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


class QueueCalls:
    """One point's calls as a driver :class:`Statement`, and what they counted.

    Sessions ``0 .. producers-1`` push, the rest pop.  Counters are kept per
    session and each is touched only by its own session's calls, so the
    Statement counts the same whether the driver runs a thread per session or
    one event loop.  Warm-up calls (``op < 0``) count nothing: their messages
    are in the backlog the window starts with.
    """

    def __init__(self, variant: str, producers: int, consumers: int, per_call: int, queue_size: int,
                 cap: int | None = None, message: str = MESSAGE, push_rate: float = 0.0):
        self.variant, self.producers, self.consumers = variant, int(producers), int(consumers)
        self.per_call, self.queue_size = int(per_call), int(queue_size)
        self.ring = variant.startswith("ring")
        self.single = self.per_call == 1 and not self.ring  # one statement per message: the client backs off
        self.push_rate = float(push_rate)  # messages a second per producer on a schedule (0: as fast as it can)
        if self.push_rate and (self.single or self.push_rate < MIN_PUSH_RATE):
            raise ValueError(f"{variant}: a paced producer needs the server-side loops (pushes_per_call above 1, "
                             f"or a ring) and at least {MIN_PUSH_RATE:g} messages a second; got "
                             f"pushes_per_call={self.per_call}, push_rate={self.push_rate:g}")
        self.schedule_start: list[float | None] = [None] * self.producers  # perf_counter of the first due push
        self.sent = [0] * self.producers  # messages pushed since the schedule began
        self.in_window = [False] * self.producers
        if self.ring:  # the ring's loops at every per_call: a producer must be able to see a full ring and wait
            push = (PUSH_LOOP["ring"], (message, self.queue_size, self.per_call, SERVER_BACKOFF_S, CALL_BUDGET_S))
            pop = (POP_LOOP["ring"], (self.per_call, self.queue_size, SERVER_BACKOFF_S, CALL_BUDGET_S))
        elif self.single:  # one statement per call: a client round trip per message
            push = (_statement("push_queue"), (message,))
            pop = (_statement(POP[variant]), ())
        else:  # a server-side loop per call, each message its own transaction
            push = (PUSH_LOOP["queue"], (message, self.per_call, CALL_BUDGET_S))
            pop = (POP_LOOP["queue"], (self.per_call, variant == "skip_locked", SERVER_BACKOFF_S, CALL_BUDGET_S))
        if self.push_rate:
            push = (PACED_PUSH_LOOP["ring" if self.ring else "queue"], push[1])
        (self.push_sql, self.push_args), (self.pop_sql, self.pop_args) = push, pop
        self.calls_cap = -(-int(cap) // self.per_call) if cap else None  # calls a producer makes (None: no cap)
        self.pushed = [0] * self.producers
        self.full = [0] * self.producers  # looks at a full ring
        self.taken = [0] * self.consumers
        self.empty = [0] * self.consumers  # pops that found nothing
        self.lost = [0] * self.consumers
        self.ages = [array("q") for _ in range(self.consumers)]  # ns; a histogram is made once, in totals()

    def statement(self) -> Statement:
        return Statement(sql=(self.push_sql,) * self.producers + (self.pop_sql,) * self.consumers,
                         args=self.args, on_result=self.on_result)

    def args(self, session: int, op: int) -> tuple:
        if session < self.producers:
            if self.calls_cap is not None and op >= self.calls_cap:
                raise SessionDone(f"producer {session} pushed its {self.calls_cap} call(s)")
            if self.push_rate:  # the schedule: message k is due at start + k / rate, whatever came back when
                now = time.perf_counter()
                if self.schedule_start[session] is None or (op == 0 and not self.in_window[session]):
                    # begun at the first warm-up call, and again at the window's first: the wait at the start
                    # line is not owed as a burst
                    self.schedule_start[session], self.sent[session] = now, 0
                    self.in_window[session] = op >= 0
                due = self.schedule_start[session] + self.sent[session] / self.push_rate
                return (*self.push_args, 1.0 / self.push_rate, due - now)
            return self.push_args
        return self.pop_args

    def on_result(self, session: int, op: int, row) -> float | None:
        """Count one call's messages from its first row; the pause the client must take, if any."""
        if session < self.producers:
            if self.ring:  # (pushed, full_polls)
                n, full = int(row[0] or 0), int(row[1] or 0)
            elif self.single:  # one INSERT, no row
                n, full = 1, 0
            else:  # (pushed,): the queue is never full, but the budget may end a call early
                n, full = int(row[0] or 0), 0
            self.sent[session] += n
            if op >= 0:
                self.pushed[session] += n
                self.full[session] += full
            return None
        c = session - self.producers
        if self.single:  # the pop's RETURNING row, or none when nothing was deleted
            got, empty, gone = ([] if row is None else [float(row[0])]), int(row is None), 0
        else:  # (ages, empty_polls[, lost])
            got, empty = parse_ages(row[0]), int(row[1] or 0)
            gone = int(row[2] or 0) if self.ring else 0
        if op >= 0:
            self.empty[c] += empty
            self.taken[c] += len(got)
            self.lost[c] += gone
            self.ages[c].extend(int(a * 1e9) for a in got)
        return BACKOFF_S if self.single and empty else None

    def totals(self) -> dict:
        """The window's counts for the point's row."""
        age = LatencyHistogram().record_many(np.concatenate([np.frombuffer(a, dtype=np.int64) for a in self.ages]))
        return {"pushed": sum(self.pushed), "dequeued": sum(self.taken), "full_polls": sum(self.full),
                "empty_polls": sum(self.empty), "idle_consumers": sum(1 for n in self.taken if n == 0),
                "lost": sum(self.lost), "age_p50_ms": age.percentile_ms(50) if age.total else float("nan"),
                "age_p99_ms": age.percentile_ms(99) if age.total else float("nan")}


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
                 load: dict | None = None, wait_source: str = "auto",
                 check: Callable[[str, dict], None] | None = None):
        self.t, self.db, self.w = target, database, writer
        self.per_call = int(pushes_per_call)
        self.queue_size = int(queue_size)
        self.duration_s = float(duration_s)
        self.cap = int(messages_per_session) or None
        self.log = log
        self.load, self.wait_source, self.check = load or {}, wait_source, check
        self.sessions: list[int] = []  # the run's session counts: the off-CPU capture is at the most

    def connect(self):
        return self.t.connect(self.db)

    def prepare(self, variant: str) -> None:
        with contextlib.closing(self.connect()) as conn:
            workloads.run_script(conn, CHAPTER, "postgres", SETUP[variant])
            if variant.startswith("ring"):
                workloads.run_script(conn, CHAPTER, "postgres", "fill_ring", params={0: (self.queue_size,)})
            if self.per_call > 1 or variant.startswith("ring"):
                workloads.run_script(conn, CHAPTER, "postgres", "loops")

    def _paced(self, row: dict, push_rate: float) -> dict:
        """A paced point's row: balanced, then in results/paced.csv (its waits and load are not recorded)."""
        row = {**row, "push_rate": push_rate}
        if self.check is not None:
            self.check("paced", row)
        self.w.append_csv(FILES["paced"], pd.DataFrame([row]))
        self.log(f"[{CHAPTER}] {row['variant']} at {push_rate:,.0f} pushes/s scheduled, repetition "
                 f"{row['repetition'] + 1}: {row['throughput']:,.0f} pushed/s, {row['dequeue_per_s']:,.0f} popped/s, "
                 f"backlog {row['backlog_start']:,} -> {row['backlog']:,}, age p50 {row['age_p50_ms']:.2f} ms, "
                 f"p99 {row['age_p99_ms']:.2f} ms")
        return row

    def backlog(self, ring: bool) -> int:
        """Messages published and not yet taken off, read between runs of the sessions (none is in a call)."""
        with contextlib.closing(self.connect()) as conn:
            cur = conn.cursor()
            cur.execute(_statement("backlog_ring" if ring else "backlog_queue"))
            return int(cur.fetchone()[0])

    def point(self, variant: str, sessions: int, repetition: int = 0, push_rate: float = 0.0) -> dict:
        """One point: recorded in runs.csv with its waits, relation sizes and load; with ``push_rate`` (messages a
        second per producer, on a schedule), in results/paced.csv only."""
        self.prepare(variant)
        consumers = sessions  # every PostgreSQL design is measured with as many consumers as producers
        ring = variant.startswith("ring")
        calls = QueueCalls(variant, sessions, consumers, self.per_call, self.queue_size, self.cap,
                           push_rate=push_rate)
        start = {}
        pids: dict[int, int] = {}  # session -> its backend: the load check and the wait table count only these

        def setup(cur, i):
            workloads.run_script(cur.connection, CHAPTER, "postgres", "session")
            if variant in DURABLE:
                cur.execute("SET synchronous_commit = on")
            pids[i] = int(cur.execute("SELECT pg_backend_pid()").fetchone()[0])

        sampler = wait_sampler(self.connect, self.db, hz=20, source=self.wait_source)

        offcpu = {"rec": None}
        # the consumers' off-CPU time (pg_sleep back-off, lock waits, client reads), once per variant: at the
        # most producers, first repetition (stacks/<variant>.offcpu-folded.gz); OFFCPU=0 in the environment: off
        watch = (repetition == 0 and sessions == max(self.sessions or [sessions]) and not push_rate
                 and os.environ.get("OFFCPU", "1") != "0")

        def ready():  # every session warmed up and waiting at the start line: the backlog the window starts with
            start["backlog"] = self.backlog(ring)
            if watch:
                consumer_pids = sorted(pid for i, pid in pids.items() if i >= sessions)
                offcpu["rec"] = start_offcpu(self.w, variant, pids=consumer_pids,
                                             call_graph=POSTGRES_OFFCPU_CALL_GRAPH)
            sampler.start()

        done = False
        try:
            result = run_sessions(self.connect, calls.statement(), sessions=sessions + consumers,
                                  duration_s=self.duration_s, warmup_operations=5, setup_session=setup,
                                  on_ready=ready, retry_on=RETRYABLE, **self.load,
                                  progress=f"{variant} {sessions}P/{consumers}C"
                                           + (f" at {push_rate:,.0f} pushes/s" if push_rate else "")
                                           + f", repetition {repetition + 1}")
            done = True
        finally:  # perf never outlives a point, however it ends
            # the wait sampler first: it counts a session with no wait event as on CPU at every tick of its window,
            # so a window that ran on through the off-CPU capture's post-processing counted the ended sessions as
            # on CPU throughout it (4.6 to 13 times the samples of the point's other repetitions)
            sampler.stop()
            finish_offcpu(self.w, offcpu["rec"], self.log, failed=not done, variant=variant, sessions=sessions,
                          repetition=repetition, threads="consumers")
        producers = result.per_session[:sessions]
        error_count = result.errors
        errors = [e for s in result.per_session for e in s.error_samples]
        push_hist = LatencyHistogram()
        for s in producers:
            push_hist.merge(s.histogram)
        backlog = self.backlog(ring)
        time.sleep(1.0)  # let the sessions' statistics reach the cumulative views
        with contextlib.closing(self.connect()) as conn:
            stats = relation_stats(conn)
        elapsed = result.elapsed_s
        counts = calls.totals()
        row = {"variant": variant, "sessions": sessions, "consumers": consumers, "repetition": repetition,
               "elapsed_s": elapsed, "pushes_per_call": self.per_call, "queue_size": self.queue_size,
               "calls": sum(s.operations for s in producers), "operations": counts["pushed"],
               "pushed": counts["pushed"], "throughput": counts["pushed"] / elapsed, **push_hist.summary(),
               "dequeued": counts["dequeued"], "dequeue_per_s": counts["dequeued"] / elapsed,
               "full_polls": counts["full_polls"], "empty_polls": counts["empty_polls"],
               "idle_consumers": counts["idle_consumers"], "lost": counts["lost"],
               "backlog_start": start.get("backlog", 0), "backlog": backlog,
               "age_p50_ms": counts["age_p50_ms"], "age_p99_ms": counts["age_p99_ms"],
               "errors": error_count, "wait_sample_hz": sampler.achieved_hz}
        if push_rate:
            return self._paced(row, push_rate)
        if self.check is not None:
            self.check("runs", row)  # a point that does not balance fails the run here, before it is recorded
        if error_count:
            self.w.add_note(f"{variant} at {sessions} sessions: {error_count} failed call(s), e.g. "
                            f"{errors[0] if errors else 'no sample kept'}")
        if sampler.error:
            self.w.add_note(f"wait sampling for {variant} at {sessions} sessions stopped: {sampler.error}")
        self.w.append_csv(FILES["runs"], pd.DataFrame([row]))
        workload = set(pids.values())
        # a backend never seen waiting was on CPU throughout, if it was connected throughout: with no cap on the
        # producers, every session was (a capped producer ends its session early)
        frame = sampler.frame(alive=workload if self.cap is None else ())
        # only the producers' and consumers' backends: the run's own idle connection (its lock) would add its
        # whole window to ClientRead, and the sampler's and the backlog reader's are not the workload
        record(self.w, result, log=self.log, sampler=sampler, frame=frame, pids=workload or None, variant=variant,
               sessions=sessions, repetition=repetition)
        waits = shares(frame[frame["pid"].isin(workload)] if workload else frame)
        self.w.append_csv(FILES["waits"], waits.assign(variant=variant, sessions=sessions, repetition=repetition)[
            ["variant", "sessions", "repetition", "wait", "samples", "share"]])
        self.w.append_csv(FILES["relation"], stats.assign(variant=variant, sessions=sessions, repetition=repetition))
        top = waits.head(2)
        self.log(f"[{CHAPTER}] {variant} {sessions}P/{consumers}C, repetition {repetition + 1}: "
                 f"{row['pushed']:,} pushed ({self.per_call} per call), {row['throughput']:,.0f} pushed/s, "
                 f"{row['dequeue_per_s']:,.0f} popped/s, backlog {row['backlog_start']:,} -> {backlog:,}, "
                 f"{row['full_polls']:,} full, {row['empty_polls']:,} empty polls, lost {row['lost']:,}, "
                 f"p99 age {row['age_p99_ms']:.1f} ms; waits: "
                 + ", ".join(f"{w} {s:.0%}" for w, s in zip(top["wait"], top["share"])))
        return row


def run_postgres(ctx) -> None:
    """Every design at every session count on PostgreSQL, into ``ctx.writer``."""
    p, target, database, writer, log = ctx.params, ctx.target, ctx.database, ctx.writer, ctx.log
    variants, sessions, pushes_per_call = ctx.variants, sorted(p["sessions"]), p["pushes_per_call"]
    queue_size, duration_s, messages_per_session = p["queue_size"], p["duration_s"], p["messages_per_session"] or 0
    writer.update(parameters={**writer.manifest["parameters"],
                              "synchronous_commit": "off (session); on for ring_durable",
                              "fillfactor_ring": 50, "latency": "per call (of up to pushes_per_call messages, ending after call_budget_ms)",
                              "back_off": f"in the server (pg_sleep {SERVER_BACKOFF_S * 1e3:g} ms, then a new look) "
                                          f"in the loops; in the client ({BACKOFF_S * 1e3:g} ms) with one statement "
                                          "per message",
                              "call_budget_ms": CALL_BUDGET_S * 1e3,
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
                           check=ctx.check_balanced)
    run.sessions = [int(n) for n in sessions]
    rows = []
    for repetition, variant in interleaved(variants, p["repetitions"]):
        for n in sessions:
            rows.append(run.point(variant, int(n), repetition))
    rate = paced_rate(rows, p["paced_share"], pushes_per_call)
    if rate:
        paced = [v for v in variants if v in PACED_VARIANTS]
        log(f"[{CHAPTER}] the same designs on a schedule: {', '.join(paced)} at {rate:,.0f} pushes/s each "
            f"({p['paced_share']:.0%} of the slowest one's delivery at 1 producer and 1 consumer)")
        for repetition, variant in interleaved(paced, p["repetitions"]):
            run.point(variant, 1, repetition, push_rate=rate)


def paced_rate(rows: list[dict], share: float, pushes_per_call: int) -> float:
    """The one push rate the paced points share: ``share`` of the slowest compared design's median delivery at
    one producer and one consumer, rounded down to two significant figures; 0 when there is nothing to pace
    (no share, one statement per message, a design or the 1-session point missing, or a rate too slow)."""
    import math

    if not share or pushes_per_call <= 1:
        return 0.0
    frame = pd.DataFrame(rows)
    if frame.empty:
        return 0.0
    one = frame[(frame["sessions"] == 1) & frame["variant"].isin(PACED_VARIANTS)]
    if one["variant"].nunique() < 2:
        return 0.0
    slowest = float(one.groupby("variant")["dequeue_per_s"].median().min())
    rate = share * slowest
    if not math.isfinite(rate) or rate < MIN_PUSH_RATE:
        return 0.0
    step = 10 ** (math.floor(math.log10(rate)) - 1)
    return float(math.floor(rate / step) * step)
