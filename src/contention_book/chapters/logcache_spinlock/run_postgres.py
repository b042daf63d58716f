"""The PostgreSQL analogue: N sessions of singleton inserts with synchronous_commit off.

LOGCACHE_ACCESS's nearest PostgreSQL relative is WAL insertion: a backend
reserves space under the ``insertpos_lck`` spinlock and copies its record
while holding one of 8 WAL insertion locks, each padded to a cache line; the
walwriter flushes in the background.  ``synchronous_commit = off`` plays
delayed durability: commits do not wait for the flush.

Per point of the sweep: the table is emptied and seeded, N sessions call a
procedure that commits one insert at a time, wait events are sampled from
pg_stat_activity, and pg_stat_wal is read before and after.  Variant
``walwriter_alone`` pins the walwriter to one CPU and the backends (and this
harness's own threads) to the others, then restores every affinity it
changed.  Stacks of the backends and the walwriter are sampled with perf at
the largest N of each variant.
"""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from contention_book.harness import pg_waits, workloads
from contention_book.harness.live import finish_stacks, start_stacks
from contention_book.harness.driver import RETRYABLE, Statement, run_sessions
from contention_book.harness.load_record import driver_options, record
from contention_book.harness.recording import RecordingWriter
from contention_book.harness.schedule import interleaved
from contention_book.harness.targets import Target, major_version

from .spec import CHAPTER, FILES

KEY_SPAN = 10**12  # each session's keys: (session + 1) * KEY_SPAN + ...


class PinError(RuntimeError):
    pass


def cpu_split(cpus: Sequence[int]) -> tuple[list[int], list[int]]:
    """(walwriter's CPUs, everyone else's): the first CPU alone, the rest for the others."""
    cpus = sorted(set(cpus))
    if len(cpus) < 2:
        raise PinError(f"pinning the walwriter alone needs at least 2 CPUs; the server may use {cpus}")
    return [cpus[0]], cpus[1:]


class Pinning:
    """Set CPU affinities of processes (what ``taskset -p -c`` does) and put every one back afterwards.

    ``setaffinity``/``getaffinity`` default to os.sched_*; tests pass fakes.
    """

    def __init__(self, log: Callable[[str], None] = print, getaffinity=os.sched_getaffinity,
                 setaffinity=os.sched_setaffinity):
        self.prior: dict[int, set[int]] = {}
        self.log = log
        self.get, self.set = getaffinity, setaffinity

    def pin(self, pid: int, cpus: Sequence[int], what: str) -> None:
        if pid not in self.prior:
            self.prior[pid] = set(self.get(pid))
        self.log(f"[{CHAPTER}] taskset -p -c {','.join(map(str, cpus))} {pid}   # {what}")
        self.set(pid, set(cpus))

    def restore(self) -> list[str]:
        """Put back every affinity changed; returns problems (a process that ended is not one)."""
        problems = []
        for pid, cpus in reversed(list(self.prior.items())):
            try:
                self.set(pid, cpus)
            except ProcessLookupError:
                continue
            except OSError as exc:
                problems.append(f"pid {pid}: could not restore CPUs {sorted(cpus)}: {exc}")
        if self.prior:
            self.log(f"[{CHAPTER}] affinity restored for {len(self.prior)} process(es)/thread(s)")
        self.prior.clear()
        return problems

    def __enter__(self) -> "Pinning":
        return self

    def __exit__(self, *exc) -> bool:
        for p in self.restore():
            self.log(f"[{CHAPTER}] WARNING: {p}")
        return False


def _scalar(conn, script: str):
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, "postgres", script)[0])
    row = cur.fetchone()
    return row[0] if row else None


def walwriter_pid(conn) -> int | None:
    pid = _scalar(conn, "walwriter")
    return int(pid) if pid is not None else None


def is_local(pid: int | None) -> bool:
    return pid is not None and Path(f"/proc/{pid}").exists()


def rows_done(result, batch: int) -> int:
    return int(result.operations) * int(batch)


def rows_counted(conn, batch: int) -> int:
    """The rows the measured calls left in the table (count_measured.sql), for the accounting identity."""
    cur = conn.cursor()
    cur.execute(workloads.load(CHAPTER, "postgres", "count_measured")[0], KEY_SPAN, KEY_SPAN, 2 * int(batch),
                KEY_SPAN, KEY_SPAN // 2)
    return int(cur.fetchone()[0])


class PostgresRun:
    def __init__(self, target: Target, database: str, writer: RecordingWriter, *, sessions: Sequence[int],
                 rows_per_session: int, batch: int, duration_s: float, seed_rows: int, capture_stacks: bool,
                 wait_hz: float, log: Callable[[str], None], load: dict[str, Any] | None = None,
                 wait_source: str = "auto", check: Callable[[str, pd.DataFrame], None] | None = None):
        self.t, self.db, self.w = target, database, writer
        self.sessions = sorted(set(int(s) for s in sessions))
        self.rows_per_session, self.batch = int(rows_per_session), int(batch)
        self.duration_s, self.seed_rows = float(duration_s), int(seed_rows)
        self.capture_stacks, self.wait_hz, self.log = capture_stacks, float(wait_hz), log
        self.load, self.wait_source = load or {}, wait_source
        self.check = check  # RunContext.check_balanced: a point that does not balance fails the run
        self.point = 0
        self.repetition = 0  # the round being run (harness.schedule)

    def connect(self):
        return self.t.connect(self.db)

    def setup(self) -> dict[str, Any]:
        with contextlib.closing(self.connect()) as conn:
            workloads.run_script(conn, CHAPTER, "postgres", "setup")
            cur = conn.cursor()
            cur.execute(workloads.load(CHAPTER, "postgres", "settings")[0])
            settings = {str(k): str(v) for k, v in cur.fetchall()}
        settings["synchronous_commit (sessions)"] = "off"
        return settings

    def reset(self, conn) -> None:
        workloads.run_script(conn, CHAPTER, "postgres", "reset", params={1: (self.seed_rows,)})
        try:
            conn.cursor().execute("CHECKPOINT")
        except Exception as exc:  # noqa: BLE001 - not every role may checkpoint; the run goes on
            if self.point == 0:
                self.w.add_note(f"CHECKPOINT before each point was not allowed ({type(exc).__name__}); "
                                "points may start with different amounts of dirty data")

    def run_point(self, variant: str, n: int, *, stacks: bool, pin_cpus: tuple[list[int], list[int]] | None) -> None:
        call = workloads.load(CHAPTER, "postgres", "insert_call")[0]
        batch = self.batch
        backends: dict[int, int] = {}
        holder: dict[str, Any] = {"recorder": None, "sampler": None}
        with contextlib.closing(self.connect()) as conn, Pinning(self.log) as pins:
            self.reset(conn)
            has_wal = major_version(self.w.manifest["engine"]["version"]) >= 14
            before = pg_waits.wal_snapshot(conn.cursor()) if has_wal else None
            ww = walwriter_pid(conn)
            if pin_cpus is not None:
                pins.pin(0, pin_cpus[1], "this harness's threads (the client) off the walwriter's CPU")

            def session(cur, i):
                workloads.run_script(cur.connection, CHAPTER, "postgres", "session")
                backends[i] = int(cur.execute("SELECT pg_backend_pid()").fetchone()[0])

            def ready():
                if pin_cpus is not None:
                    pins.pin(ww, pin_cpus[0], "walwriter alone")
                    for pid in backends.values():
                        pins.pin(pid, pin_cpus[1], "backend")
                if stacks:
                    pids = sorted(backends.values()) + ([ww] if ww else [])
                    holder["recorder"] = start_stacks(self.w, variant, pids)
                # last: the sessions wait at the barrier (ClientRead) while perf starts, and that is not the window
                sampler = pg_waits.sampler(self.connect, self.db, hz=self.wait_hz, source=self.wait_source,
                                           log=self.log if self.point == 0 else None)
                holder["sampler"] = sampler.start()

            # warm-up ops are -1: still inside the session's range
            insert = Statement(call, args=lambda i, op: ((i + 1) * KEY_SPAN + (op + 2) * batch, batch))

            try:
                result = run_sessions(self.connect, insert, sessions=n,
                                      operations_per_session=max(1, self.rows_per_session // batch),
                                      duration_s=self.duration_s, warmup_operations=1, setup_session=session,
                                      on_ready=ready, retry_on=RETRYABLE, **self.load,
                                      progress=f"{variant}, {n} session(s), repetition {self.repetition + 1}")
            finally:
                if holder["sampler"] is not None:
                    holder["sampler"].stop()
                if holder["recorder"] is not None:
                    finish_stacks(self.w, variant, holder["recorder"], self.log, " (backends and walwriter)")
            time.sleep(0.7)  # backends publish their WAL counters when they exit
            after = pg_waits.wal_snapshot(conn.cursor()) if has_wal else None
            counted = rows_counted(conn, batch)
        sampler = holder["sampler"]
        rows = rows_done(result, batch)
        row = pd.DataFrame([result.row(
            variant=variant, repetition=self.repetition, point=self.point, batch_rows=batch, rows=rows,
            rows_counted=counted, pinned=pin_cpus is not None, wait_samples_hz=round(sampler.achieved_hz, 2))]).assign(
            operations=rows, throughput=rows / result.elapsed_s)
        self.w.append_csv(FILES["runs"], row)
        if self.check is not None:
            self.check("runs", row)
        frame = sampler.frame()
        record(self.w, result, log=self.log, sampler=sampler, frame=frame, pids=set(backends.values()) or None,
               variant=variant, sessions=n, repetition=self.repetition)
        shares = [pg_waits.shares(frame, bt).assign(backend_type=bt) for bt in ("client backend", "walwriter")]
        self.w.append_csv(FILES["pg_waits"], pd.concat(shares, ignore_index=True).assign(variant=variant, sessions=n,
                                                                                    repetition=self.repetition))
        if sampler.error:
            self.w.add_note(f"wait sampler, {variant} with {n} sessions: {sampler.error}")
        if has_wal:
            d = pg_waits.delta(before, after)
            self.w.append_csv(FILES["pg_wal"], pd.DataFrame([{"variant": variant, "sessions": n,
                                                               "repetition": self.repetition, **d,
                                                               "elapsed_s": result.elapsed_s, "rows": rows}]))
        self.log(f"[{CHAPTER}] {variant}, {n} session(s): {rows:,} inserts in {result.elapsed_s:.2f} s "
                 f"({rows / result.elapsed_s:,.0f}/s)")
        self.point += 1

    def run(self, variants: Sequence[str], repetitions: int = 1) -> None:
        """Every variant at every session count, variants interleaved round after round."""
        for self.repetition, variant in interleaved(variants, repetitions):
            pin_cpus = None
            if variant == "walwriter_alone":
                with contextlib.closing(self.connect()) as conn:
                    ww = walwriter_pid(conn)
                if not is_local(ww):
                    if self.repetition > 0:
                        continue
                    self.w.add_note("walwriter_alone skipped: the walwriter's process is not on this machine "
                                    "(a remote server cannot be pinned from here)")
                    self.log(f"[{CHAPTER}] walwriter_alone skipped: the server is not local")
                    continue
                try:
                    pin_cpus = cpu_split(os.sched_getaffinity(ww))
                except PinError as exc:
                    if self.repetition == 0:
                        self.w.add_note(f"walwriter_alone skipped: {exc}")
                    continue
                self.w.update(engine={"settings": {**self.w.manifest["engine"].get("settings", {}),
                                                   "walwriter_cpus": pin_cpus[0], "backend_cpus": pin_cpus[1]}})
            for n in self.sessions:
                self.run_point(variant, n, stacks=self.capture_stacks and n == self.sessions[-1] and self.repetition == 0,
                               pin_cpus=pin_cpus)


def parent_pid(pid: int) -> int | None:
    """A local process's parent, from /proc (field 4 of stat, after the parenthesised command name)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def unpin_leftover(conn, log, getaffinity=os.sched_getaffinity, setaffinity=os.sched_setaffinity) -> bool:
    """Give a walwriter that a killed run left pinned its postmaster's CPUs back; True if it had to."""
    ww = walwriter_pid(conn)
    if not is_local(ww):
        return False
    pm = parent_pid(ww)  # the postmaster
    if pm is None:
        return False
    want = set(getaffinity(pm))
    if set(getaffinity(ww)) == want:
        return False
    log(f"[{CHAPTER}] the walwriter (pid {ww}) runs on CPUs {sorted(getaffinity(ww))}, not its postmaster's "
        f"{sorted(want)}: a killed run left it pinned; restoring it")
    setaffinity(ww, want)
    return True


def run_postgres(ctx) -> None:
    """The WAL analogue: every variant at every session count, into ``ctx.writer``."""
    p = ctx.params
    with contextlib.closing(ctx.target.connect(ctx.database)) as conn:
        if unpin_leftover(conn, ctx.log):
            ctx.writer.add_note("the walwriter was found pinned by an earlier, killed run and was unpinned first")
    run = PostgresRun(ctx.target, ctx.database, ctx.writer, sessions=p["sessions"],
                      rows_per_session=p["rows_per_session"], batch=p["batch"], duration_s=p["duration_s"],
                      seed_rows=p["seed_rows"], capture_stacks=p["capture_stacks"], wait_hz=p["wait_hz"], log=ctx.log,
                      load=driver_options(p), wait_source=p["wait_source"], check=ctx.check_balanced)
    settings = run.setup()
    ctx.writer.update(engine={"settings": settings})
    try:
        run.run(ctx.variants, p["repetitions"])
    finally:
        with contextlib.closing(run.connect()) as conn:
            workloads.run_script(conn, CHAPTER, "postgres", "cleanup")
