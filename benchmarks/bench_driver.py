"""Is the sessions driver the bottleneck?  It against pgbench, on the same single-row insert.

    make bench-driver            (or: .venv/bin/python benchmarks/bench_driver.py [--seconds 5])

One embedded PostgreSQL (CONTENTION_BOOK_PG_ROOT, else a temporary one), one
table (the chapter's sequential-key table), one statement:
INSERT INTO lpi_insert (payload) VALUES (...), each its own transaction,
synchronous_commit = off everywhere.  For 1, 2, 4 and 8 sessions it runs:

- pgbench with a custom script (the C load generator; simple protocol);
- the ODBC floor: a C loop over psqlODBC (benchmarks/odbc_floor.c, built here
  with cc against unixODBC; a prepared statement with a bound parameter), the
  fastest any client on that driver can go;
- the sessions driver (harness.driver.run_sessions) three ways: a thread per
  session with pyodbc over psqlODBC (CONTENTION_BOOK_PG_CLIENT=odbc) and
  with psycopg over libpq (harness.pg_client), and the event loop
  (harness.pg_loop: a Statement on libpq, non-blocking connections on
  min(sessions, CPUs) threads), which is what the PostgreSQL chapters run
  and what the goals are judged on;
- the process-per-session driver (harness.procdriver);
- a server-side loop: the driver calls a procedure that inserts 100 rows,
  each committed on its own (the same per-row work, no round trip per row).

pgbench, the floor and both clients run interleaved (their order rotating
per repetition).  It prints inserts/s for each and the ratio to pgbench
(goal: >= 0.9 at every point), client CPU per call, a profile of where one
session's time goes with each client, and the observer
effect of the 20 Hz wait-event sampler (goal <= 2% lost): the same run with
it on and off, and the sampler's own CPU time counted directly, since on a
small shared machine the A/B spread is larger than the effect.

Open loop: at 50% and 90% of pgbench -M prepared's closed-loop rate at
--open-sessions sessions, ``pgbench -R -M prepared`` (per-transaction log,
latency from each transaction's scheduled start; prepared, as the driver's
statements are) against the driver's ``rate`` (Poisson, the same
definition), with each client: the loop's window as the chapters run it (in
C, native/pg_openloop.c) and, as ``loop-py``, in Python.  Both warm up for
0.5 s and are judged on a window of --seconds (pgbench has no warm-up, so it
runs that much longer and its log's first 0.5 s is left out).  The goal
(p99 ratio <= 1.2 at both loads) is judged on the p99 of every call of
--open-repeats interleaved pairs pooled (harness.tail_ratio), with a 90%
bootstrap interval over the pairs: one pair's ratio on a small shared
machine swings by three times either way, set by a few scheduler stalls.
The median of the pairs' ratios, the schedule lag (scheduled start to send)
apart from the service time (send to end), which of the two carries any
excess, and each client's CPU per call stand beside it; the figures go to
benchmarks/results/bench-driver-open.json.  ``--open-only`` runs just this
part (one closed-loop pgbench run for the rate, then the points; with
``--seconds 3`` about six minutes).  Last, each
wait sampler (pg_wait_sampling in the server, polling pg_stat_activity at
20 Hz) with its observer cost in CPU per second of run.  These are figures
for a reader, not timed unit tests.
"""
from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import math
import os
import pstats
import resource
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from contention_book.harness import workloads
from contention_book.harness.driver import Statement, run_sessions
from contention_book.harness.embedded_pg import EmbeddedPostgres
from contention_book.harness import embedded_pg, native_window, pg_loop, pg_waits, redaction
from contention_book.harness.pg_waits import WaitSampler
from contention_book.harness.tail_ratio import pooled_ratio
from contention_book.harness.targets import ensure_own_database, resolve_target

from contention_book.chapters.last_page_insert.spec import CHAPTER
from contention_book.harness.procdriver import run_processes

DATABASE = "contention_bench"
ENV_VAR = "CONTENTION_BOOK_BENCH_PG"
SESSIONS = (1, 2, 4, 8)
LOOP_ROWS = 100
PYTHON_WINDOW = "-py"  # a client's name with this suffix: its open-loop window in Python, not in C
OPEN_WARMUP_S = 0.5  # each open-loop run's warm-up before its window (pgbench's log: the same share left out)
GOAL_CLIENT = "loop"  # the goals are the chapters' driver's: a Statement on libpq, run by the event loop


def pgbench_path(bindir: Path) -> Path:
    """pgbench beside pg_ctl (as embedded_pg finds the server), else on PATH."""
    for candidate in (bindir / "pgbench", Path(shutil.which("pgbench") or "/nonexistent")):
        if candidate.exists():
            return candidate
    raise SystemExit("bench-driver: pgbench not found beside pg_ctl or on PATH; install postgresql-contrib "
                     "or the server package that ships it")


def pgbench(pg: EmbeddedPostgres, exe: Path, script: Path, clients: int, seconds: float, mode: str = "simple") -> float:
    """pgbench's tps; ``mode`` "prepared" is the fair baseline for clients that prepare (the floor, psycopg)."""
    env = dict(os.environ, PGPASSWORD=pg.password, PGOPTIONS="-c synchronous_commit=off")  # the child's env only
    cmd = [str(exe), "-h", "127.0.0.1", "-p", str(pg.port), "-U", "book", "-n", "-M", mode, "-f", str(script),
           "-c", str(clients), "-j", str(min(clients, os.cpu_count() or 1)), "-T", str(int(round(seconds))), DATABASE]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 120)
    m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", proc.stdout)
    if proc.returncode != 0 or not m:
        tail = (proc.stderr or proc.stdout)[-400:].replace(pg.password, "***")
        raise SystemExit(f"bench-driver: pgbench failed (exit {proc.returncode}): {tail}")
    return float(m.group(1))


def build_floor(workdir: Path) -> Path:
    """Compile benchmarks/odbc_floor.c against unixODBC (package unixodbc-dev on Debian/Ubuntu)."""
    src = Path(__file__).with_name("odbc_floor.c")
    exe = workdir / "odbc_floor"
    cc = os.environ.get("CC", "cc")
    proc = subprocess.run([cc, "-O2", "-o", str(exe), str(src), "-lodbc", "-lpthread"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"bench-driver: could not build {src.name} with {cc} (needs the unixODBC headers: "
                         f"apt-get install unixodbc-dev): {proc.stderr[-600:]}")
    return exe


def odbc_floor(exe: Path, conn_str: str, statement: str, setup: str, clients: int, seconds: float) -> tuple[float, float]:
    """(calls/s, client CPU s per call) of the C loop over psqlODBC: a prepared statement, a bound parameter."""
    env = dict(os.environ, ODBC_FLOOR_CONN=conn_str)  # the child's env only: never argv, never printed
    proc = subprocess.run([str(exe), f"{seconds:g}", str(clients), statement, setup], env=env, capture_output=True,
                          text=True, timeout=seconds + 120)
    m = re.search(r"calls=(\d+) seconds=([\d.]+) cpu_us_per_call=([\d.]+) errors=(\d+)", proc.stdout)
    if proc.returncode != 0 or not m or int(m.group(4)):
        raise SystemExit(f"bench-driver: odbc_floor failed (exit {proc.returncode}): "
                         f"{redaction.redact(proc.stderr[-400:] or proc.stdout[-400:])}")
    return int(m.group(1)) / float(m.group(2)), float(m.group(3)) / 1e6


def client_cpu_s() -> float:
    """CPU seconds of this process and of its waited-for children (the native open-loop window is one)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ru.ru_utime + ru.ru_stime


@dataclasses.dataclass
class OpenRun:
    """One open-loop run's calls in its measured window: latency from the scheduled start, and the schedule lag
    (scheduled start to send), both in ns; service = latency - lag."""

    lat: np.ndarray
    lag: np.ndarray

    @classmethod
    def of_driver(cls, result) -> "OpenRun":
        return cls(np.concatenate([np.frombuffer(s.latencies, dtype=np.int64) for s in result.per_session]),
                   np.concatenate([np.frombuffer(s.lags, dtype=np.int64) for s in result.per_session]))

    @property
    def svc(self):
        return self.lat - self.lag

    def ms(self, part: str, q: float) -> float:
        return float(np.percentile(getattr(self, part), q) / 1e6)


def summary(run: OpenRun) -> dict:
    """The figures a reader compares, in ms (to the µs), and the calls they were taken on."""
    return {"p50_ms": round(run.ms("lat", 50), 3), "p99_ms": round(run.ms("lat", 99), 3),
            "lag_p99_ms": round(run.ms("lag", 99), 3), "service_p99_ms": round(run.ms("svc", 99), 3),
            "calls": int(run.lat.size)}


class _NoConnection:
    """A connection whose cursor is never used: the driver's loop with nothing inside its call."""

    def cursor(self):
        return None

    def close(self):
        pass


def pgbench_rate(pg: EmbeddedPostgres, exe: Path, script: Path, clients: int, seconds: float, rate: float,
                 workdir: Path, warmup_s: float) -> OpenRun:
    """``pgbench -R rate`` with a per-transaction log: the transactions scheduled in [warmup_s, warmup_s + seconds).

    pgbench has no warm-up: its first transactions prepare the statement and meet cold caches, and its first
    100 ms were among a run's worst (5-25% of its p99 here).  The driver warms up for ``warmup_s`` before its
    window, so pgbench runs that much longer and the same share of its log is left out: both are judged on a
    steady window of the same length.
    """
    env = dict(os.environ, PGPASSWORD=pg.password, PGOPTIONS="-c synchronous_commit=off")
    for old in workdir.glob("rate_log*"):
        old.unlink()
    cmd = [str(exe), "-h", "127.0.0.1", "-p", str(pg.port), "-U", "book", "-n", "-M", "prepared", "-f", str(script),
           "-c", str(clients), "-j", str(min(clients, os.cpu_count() or 1)), "-T", str(math.ceil(warmup_s + seconds)),
           "-R", f"{rate:.0f}", "-l", "--log-prefix", str(workdir / "rate_log"), DATABASE]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=seconds + 120, cwd=workdir)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout)[-400:].replace(pg.password, "***")
        raise SystemExit(f"bench-driver: pgbench -R failed (exit {proc.returncode}): {tail}")
    rows = []
    for log in sorted(workdir.glob("rate_log*")):
        # client_id transaction_no time_us script_no epoch epoch_us schedule_lag_us: time runs from the scheduled start
        for n, line in enumerate(log.read_text().splitlines(), 1):
            f = line.split()
            if len(f) != 7:
                raise SystemExit(f"bench-driver: {log.name} line {n}: expected pgbench -R's 7 log fields, got {line!r}")
            rows.append([int(x) for x in f])
    if not rows:
        raise SystemExit("bench-driver: pgbench -R wrote no transaction log")
    a = np.array(rows, dtype=np.int64)
    scheduled = a[:, 4] * 1_000_000 + a[:, 5] - a[:, 2]  # end (epoch µs) minus latency from the scheduled start
    since = scheduled - scheduled.min()
    keep = (since >= warmup_s * 1e6) & (since < (warmup_s + seconds) * 1e6)
    return OpenRun(a[keep, 2] * 1000, a[keep, 6] * 1000)


def sampler_cpu(conn, connect, seconds: float) -> dict[str, float]:
    """CPU the 20 Hz wait sampler costs, counted rather than inferred from throughput.

    An A/B throughput comparison on a small shared machine has a run-to-run
    spread far above 2%; the sampler's own CPU time (this process, and the
    server backend that answers it) bounds what it can take from the workload.
    """
    backends = "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend'"
    before = {r[0] for r in conn.cursor().execute(backends).fetchall()}
    sampler = WaitSampler(connect, DATABASE, hz=20).start()
    time.sleep(0.3)
    new = [r[0] for r in conn.cursor().execute(backends).fetchall() if r[0] not in before]
    if len(new) != 1:
        sampler.stop()
        raise SystemExit(f"bench-driver: expected one new backend for the sampler, found {new}")
    s0, c0, t0 = pg_waits.process_cpu_s(new[0]), time.process_time(), sampler.ticks
    time.sleep(seconds)
    s1, c1, t1 = pg_waits.process_cpu_s(new[0]), time.process_time(), sampler.ticks
    sampler.stop()
    samples = max(t1 - t0, 1)
    per_sample = (c1 - c0 + s1 - s0) / samples
    return {"hz": samples / seconds, "seconds": seconds, "client_ms": (c1 - c0) / samples * 1e3,
            "server_ms": (s1 - s0) / samples * 1e3,
            "machine_pct": per_sample * 20 / (os.cpu_count() or 1) * 100}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0, help="seconds per measurement (default 5)")
    ap.add_argument("--sessions", default=",".join(map(str, SESSIONS)))
    ap.add_argument("--observer-repeats", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="alternating pgbench/driver runs per session count")
    ap.add_argument("--open-sessions", type=int, default=4, help="sessions of the open-loop comparison (default 4)")
    ap.add_argument("--open-only", action="store_true",
                    help="only the open-loop comparison (one closed-loop pgbench run for its rate, then the -R points;"
                         " clients default to loop): a quick check, e.g. --open-only --seconds 3")
    ap.add_argument("--open-repeats", type=int, default=12,
                    help="interleaved pgbench -R / driver pairs per open-loop load (default 12)")
    ap.add_argument("--json", type=Path, default=Path(__file__).resolve().parent / "results" / "bench-driver-open.json",
                    help="where the open-loop figures are written (default benchmarks/results/bench-driver-open.json)")
    ap.add_argument("--shares", default="0.5,0.9", help="open-loop loads as shares of pgbench's closed-loop rate")
    ap.add_argument("--clients", default="pyodbc,psycopg,loop",
                    help="driver clients to compare (default pyodbc,psycopg,loop): pyodbc over psqlODBC and psycopg "
                         "(harness.pg_client over libpq) run a thread per session; loop is psycopg on the event loop "
                         "(harness.pg_loop), what the PostgreSQL chapters run")
    args = ap.parse_args(argv)
    if args.open_only and "--clients" not in " ".join(argv if argv is not None else sys.argv):
        args.clients = GOAL_CLIENT
    shares = [float(x) for x in args.shares.split(",") if x.strip()]
    counts = [int(x) for x in args.sessions.split(",") if x.strip()]
    secs = args.seconds

    temp_root = None
    root = os.environ.get("CONTENTION_BOOK_PG_ROOT")
    if not root:
        embedded_pg.sweep_killed("bench-driver-pg-", log=lambda m: print(m.replace("[harness]", "[bench-driver]")))
        temp_root = Path(tempfile.mkdtemp(prefix="bench-driver-pg-"))
        os.chmod(temp_root, 0o755)
        root = str(temp_root / "pg")
    pg = EmbeddedPostgres(root=Path(root))
    if temp_root is not None:
        embedded_pg.claim_temporary(pg)  # a killed run's cluster is swept by the next run
    was_running = (pg.data / "PG_VERSION").exists() and pg.running()
    pg.start()
    print(f"[bench-driver] PostgreSQL on 127.0.0.1:{pg.port} ({pg.root}); {os.cpu_count()} logical CPUs; "
          f"{secs:.0f} s per measurement", flush=True)
    try:
        pg.export(ENV_VAR)
        target = resolve_target(ENV_VAR, "postgres")
        ensure_own_database(target, DATABASE, log=lambda *_: None)
        os.environ[ENV_VAR] = target.connection_string(DATABASE)  # the children connect to the bench database
        conn = target.connect(DATABASE)
        workloads.run_script(conn, CHAPTER, "postgres", "setup")
        workloads.run_script(conn, CHAPTER, "postgres", "create_sequential")
        # no autovacuum worker wakes inside a measured window (the table is truncated before every run, and an
        # insert-triggered VACUUM or ANALYZE on 2 CPUs stalls whichever client happens to be running)
        conn.cursor().execute("ALTER TABLE lpi_insert SET (autovacuum_enabled = off)")
        insert = workloads.load(CHAPTER, "postgres", "insert")[0]
        loop = workloads.load(CHAPTER, "postgres", "insert_rows")[0]
        session_sql = workloads.load(CHAPTER, "postgres", "session")
        script_dir = Path(tempfile.mkdtemp(prefix="bench-driver-"))
        os.chmod(script_dir, 0o755)
        script = script_dir / "insert.sql"
        script.write_text(insert + ";\n")
        os.chmod(script, 0o644)
        exe = pgbench_path(pg.bindir)

        def truncate():
            conn.cursor().execute("TRUNCATE lpi_insert")
            conn.cursor().execute("CHECKPOINT")

        libpq = dataclasses.replace(target, client="psycopg")
        targets = {"pyodbc": dataclasses.replace(target, client="odbc"), "psycopg": libpq, "loop": libpq}

        def op_for(client, sql, *values):
            """The call: a Statement for "loop" (the event loop the chapters use on libpq), else a function
            (a thread per session)."""
            if client == "loop":
                return Statement(sql, values)
            return lambda cur, _s, _o: cur.execute(sql, *values)
        clients = [c for c in args.clients.split(",") if c]
        floor_exe = build_floor(script_dir)
        floor_sql = re.sub(r"'[^']*'", "?", insert, count=1)  # the same INSERT, its payload a bound parameter
        floor_conn = target.connection_string(DATABASE)

        def connector(client="pyodbc"):
            def connect():
                c = targets[client].connect(DATABASE)
                for s in session_sql:
                    c.cursor().execute(s)
                return c
            return connect

        connect = connector()

        def threads(n, sql=insert, arg=None, sampler=False, client="pyodbc"):
            w = WaitSampler(lambda: target.connect(DATABASE), DATABASE, hz=20) if sampler else None
            op = op_for(client, sql, *([arg] if arg is not None else []))
            r = run_sessions(connector(client), op, sessions=n, duration_s=secs, warmup_operations=20, progress=False,
                             on_ready=w.start if w else None)
            if w:
                w.stop()
            return r, w

        kinds = ["pgbench", "floor", *clients, "pgb-prep"]
        rows, cpu_rows = [], []
        if not args.open_only:
            for n in counts:
                thr = {k: [] for k in kinds}
                cpu = {k: [] for k in kinds}
                for rep in range(args.repeats):  # every kind once per repetition, the order rotating, so drift hits all
                    order = kinds[rep % len(kinds):] + kinds[:rep % len(kinds)]
                    for which in order:
                        truncate()
                        if which in ("pgbench", "pgb-prep"):
                            ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                            thr[which].append(pgbench(pg, exe, script, n, secs,
                                                      "prepared" if which == "pgb-prep" else "simple"))
                            ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                            cpu[which].append((ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime)
                                              / max(thr[which][-1] * secs, 1))
                        elif which == "floor":
                            rate, per_call = odbc_floor(floor_exe, floor_conn, floor_sql, session_sql[0], n, secs)
                            thr[which].append(rate)
                            cpu[which].append(per_call)
                        else:
                            cpu0 = time.process_time()
                            res = threads(n, client=which)[0]
                            cpu[which].append((time.process_time() - cpu0) / max(res.operations, 1))
                            thr[which].append(res.throughput)
                ratios = {k: [t / b for t, b in zip(thr[k], thr["pgbench"])] for k in kinds[1:]}
                cpu_rows.append((n, {k: statistics.median(v) for k, v in cpu.items()}))
                truncate()
                proc = run_processes(ENV_VAR, insert, sessions=n, duration_s=secs, setup=session_sql).throughput
                truncate()
                srv = threads(n, loop, LOOP_ROWS)[0].throughput * LOOP_ROWS
                rows.append((n, {k: statistics.median(v) for k, v in thr.items()}, ratios, proc, srv, thr))
                print(f"[bench-driver] {n} session(s): " + "; ".join(
                    f"{k} {', '.join(f'{x:,.0f}' for x in thr[k])}/s" for k in kinds)
                    + f"; processes {proc:,.0f}/s, server loop {srv:,.0f} rows/s", flush=True)

            print(f"\nSingle-row INSERT, inserts per second, medians of {args.repeats} interleaved runs "
                  "(ratio = x / pgbench, the median of the paired ratios and their range; goal for the driver >= 0.90). "
                  "pgbench runs the simple protocol (the goal's baseline); the floor and psycopg prepare, so the server "
                  "parses and plans less for them: pgb-prep (pgbench -M prepared) shows what that alone is worth")
            print(f"{'sessions':>8} {'pgbench':>9} " + " ".join(f"{k:>9} {'ratio':>5} {'range':>9}" for k in kinds[1:])
                  + f" {'processes':>9} {'ratio':>5} {'srv loop':>9} {'ratio':>5}")
            for n, med, ratios, proc, srv, _runs in rows:
                base = med["pgbench"]
                print(f"{n:>8} {base:>9,.0f} " + " ".join(
                    f"{med[k]:>9,.0f} {statistics.median(ratios[k]):>5.2f} {min(ratios[k]):>4.2f}-{max(ratios[k]):<4.2f}"
                    for k in kinds[1:]) + f" {proc:>9,.0f} {proc / base:>5.2f} {srv:>9,.0f} {srv / base:>5.2f}")
            print("\nWhere the time goes: client CPU per insert, µs (on this machine the client and the server share the "
                  "CPUs, so every µs the client spends is taken from the server); floor = C over psqlODBC, prepared")
            print(f"{'sessions':>8} " + " ".join(f"{k:>9}" for k in kinds))
            for n, med in cpu_rows:
                print(f"{n:>8} " + " ".join(f"{med[k] * 1e6:>9.1f}" for k in kinds))
            for k in kinds[1:]:
                worst = min(statistics.median(r[2][k]) for r in rows)
                goal = (f"{'meets' if worst >= 0.9 else 'misses'} the 0.90 goal" if k == GOAL_CLIENT
                        else "for reference")
                print(f"worst median {k}/pgbench ratio at {','.join(map(str, counts))} sessions: {worst:.2f} ({goal})")
            for k in clients:
                fair = [statistics.median([t / b for t, b in zip(thr_k, thr_p)]) for thr_k, thr_p in
                        ((r[5][k], r[5]["pgb-prep"]) for r in rows)]
                print(f"{k}/pgb-prep (pgbench -M prepared), median per session count: {', '.join(f'{x:.2f}' for x in fair)}")
            print("the server-side loop is not a client driver and is shown for where the loop belongs")

            # -- where one session's time goes, with each client ------------------------------
            for client in clients:
                truncate()
                if client == "loop":  # the event loop's own time: its serving threads, each under its own profiler
                    profs, serve = [], pg_loop.serve

                    def profiled(*a, **k):
                        prof = cProfile.Profile()
                        profs.append(prof)
                        prof.enable()
                        try:
                            return serve(*a, **k)
                        finally:
                            prof.disable()
                    pg_loop.serve = profiled
                    try:
                        r = run_sessions(connector(client), op_for(client, insert), sessions=max(counts),
                                         duration_s=min(secs, 3), progress=False)
                    finally:
                        pg_loop.serve = serve
                    stats = pstats.Stats(*profs)
                    print(f"\nloop: {max(counts)} sessions under cProfile ({r.driver}): {r.throughput:,.0f} calls/s; the "
                          "serving threads' top functions by own time (select is the wait for the server):")
                    stats.sort_stats("tottime").print_stats(8)
                    continue
                c = connector(client)()
                cur = c.cursor()
                n_calls, in_exec = 0, 0.0
                prof = cProfile.Profile()
                prof.enable()
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < min(secs, 3):
                    a = time.perf_counter()
                    cur.execute(insert)
                    in_exec += time.perf_counter() - a
                    n_calls += 1
                total = time.perf_counter() - t0
                prof.disable()
                c.close()
                r = run_sessions(connector(client), lambda cu, _s, _o: cu.execute(insert), sessions=1,
                                 duration_s=min(secs, 3), progress=False)
                print(f"\n{client}: one session, bare loop (under cProfile): {n_calls / total:,.0f} calls/s, "
                      f"{total / n_calls * 1e6:.1f} µs per call, of which {in_exec / n_calls * 1e6:.1f} µs inside execute "
                      f"(client library, network and server) and {(total - in_exec) / n_calls * 1e6:.1f} µs of Python "
                      f"around it; the sessions driver at 1 session: {r.throughput:,.0f}/s ({1e6 / r.throughput:.1f} µs "
                      "per call)")
                print(f"cProfile of that bare loop ({client}), top functions by own time:")
                pstats.Stats(prof).sort_stats("tottime").print_stats(6)
                if client == "psycopg":  # the adapter's own share: its execute against libpq's PQexecPrepared alone
                    c = connector(client)()
                    cur, raw = c.cursor(), c.pgconn
                    raw.prepare(b"bench_raw", insert.encode(), None)
                    costs = {}
                    for label, call in (("libpq PQexecPrepared", lambda: raw.exec_prepared(b"bench_raw", None, None)),
                                        ("pg_client execute", lambda: cur.execute(insert))) * 2:
                        for _ in range(100):
                            call()
                        c0, n_cpu = time.process_time(), 3000
                        for _ in range(n_cpu):
                            call()
                        costs[label] = (time.process_time() - c0) / n_cpu * 1e6
                    c.close()
                    print("psycopg client CPU per insert, one session, no driver: "
                          + ", ".join(f"{k} {v:.1f} µs" for k, v in costs.items())
                          + " (the rest of a call's client CPU is libpq and the kernel's socket work)")
            # the driver's own cost per call: the same loop, bookkeeping and all, around a call that does nothing
            for n in (1, max(counts)):
                idle = run_sessions(lambda: _NoConnection(), lambda _c, _s, _o: None, sessions=n, duration_s=1.0,
                                    progress=False)
                print(f"The driver alone (a call that does nothing), {n} session(s): {idle.throughput:,.0f} calls/s, "
                      f"{n / idle.throughput * 1e6:.2f} µs of driver time per call per session")

            # -- observer effect of the wait-event sampler ------------------------------------
            n_obs = max(c for c in counts if c <= 4)
            on, off = [], []
            for i in range(args.observer_repeats):
                for flag, bucket in ((False, off), (True, on)) if i % 2 == 0 else ((True, on), (False, off)):
                    truncate()
                    r, w = threads(n_obs, sampler=flag)
                    bucket.append(r.throughput)
                    if w is not None:
                        achieved = w.achieved_hz
            m_on, m_off = statistics.median(on), statistics.median(off)
            loss = (m_off - m_on) / m_off * 100
            print(f"\nObserver effect, {n_obs} sessions, {args.observer_repeats} alternating runs each: sampler off "
                  f"{m_off:,.0f}/s (runs {', '.join(f'{x:,.0f}' for x in off)}), 20 Hz sampler on {m_on:,.0f}/s "
                  f"(runs {', '.join(f'{x:,.0f}' for x in on)}; achieved {achieved:.1f} Hz): {loss:+.1f}% lost "
                  f"({'within' if loss <= 2 else 'above'} the 2% goal; run-to-run spread "
                  f"{(max(off) - min(off)) / m_off * 100:.1f}% with the sampler off)")
            cost = sampler_cpu(conn, lambda: target.connect(DATABASE), seconds=min(secs, 5))
            print(f"The sampler's own CPU, measured directly (it alone, {cost['hz']:.1f} Hz for {cost['seconds']:.0f} s): "
                  f"{cost['client_ms']:.2f} ms in this process and {cost['server_ms']:.2f} ms in its backend per sample, "
                  f"{cost['machine_pct']:.2f}% of this machine's {os.cpu_count()} CPUs at 20 Hz (goal: at most 2% lost)")
        # -- open loop: the driver's rate against pgbench -R, with each client ----------------
        n_open = args.open_sessions
        # pgbench prepares here, as the driver does: with -M simple the server parses every call, and a driver
        # that prepares would be compared with a server doing more work per call (-M simple's p99 at 90% of its
        # own rate was 382 ms against the C window's 45 ms)
        known = [r[1]["pgb-prep"] for r in rows if r[0] == n_open]
        if known:
            top = known[0]
        else:
            truncate()
            top = pgbench(pg, exe, script, n_open, secs, "prepared")
        reps = args.open_repeats
        print(f"\nOpen loop at {n_open} sessions, Poisson arrivals, latency from the scheduled start "
              f"(pgbench -M prepared's closed-loop maximum here: {top:,.0f}/s); {reps} interleaved pairs of "
              f"{secs:g} s windows, each client warmed up {OPEN_WARMUP_S:g} s first. The goal (<= 1.2 at each load) is "
              "judged on the p99 of every call of every pair pooled, driver over pgbench -R, with a 90% bootstrap "
              "interval over the pairs; the median of the pairs' own ratios and their range stand beside it. "
              "p50/p99 in ms, pooled; lag = scheduled start to send, service = send to end (p99, ms, pooled); "
              "pgb/s, drv/s = calls completed per second of window (below the rate: that client fell behind its "
              "schedule); cpu = the client's CPU per call (µs; pgbench's whole run, the driver's window): on 2 CPUs "
              "it is taken from the server")
        print(f"{'load':>5} {'rate/s':>7} {'client':>8} {'pgb p50':>8} {'pgb p99':>8} {'drv p50':>8} {'drv p99':>8} "
              f"{'ratio':>6} {'90% int.':>10} {'pair md':>7} {'range':>11} {'pgb/s':>7} {'drv/s':>7} "
              f"{'pgb lag':>8} {'drv lag':>8} {'pgb svc':>8} {'drv svc':>8} {'pgb cpu':>7} {'drv cpu':>7}")
        open_rows, record = {}, []
        # each client's window as the chapters run it (for the loop: in C, native/pg_openloop.c), and the loop's
        # Python window beside it for reference (CONTENTION_BOOK_OPEN_LOOP=python)
        open_clients = [*clients, *([GOAL_CLIENT + PYTHON_WINDOW] if GOAL_CLIENT in clients else [])]
        for share in shares:
            rate = top * share
            kinds_open = ["pgbench", *open_clients]
            refs, runs, done = [], {c: [] for c in open_clients}, {c: [] for c in open_clients}
            cpu_open = {k: [] for k in kinds_open}  # client CPU per call (s)
            for rep in range(reps):
                for which in kinds_open[rep % len(kinds_open):] + kinds_open[:rep % len(kinds_open)]:
                    truncate()
                    if which == "pgbench":
                        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                        refs.append(pgbench_rate(pg, exe, script, n_open, secs, rate, script_dir, OPEN_WARMUP_S))
                        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                        calls = refs[-1].lat.size * (math.ceil(OPEN_WARMUP_S + secs) / secs)  # the whole run's
                        cpu_open[which].append((ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime)
                                               / max(calls, 1))
                    else:
                        # from the window's start (the warm-up's closed-loop calls are not counted): this process
                        # and its children, which hold the native window's program
                        cpu0 = []
                        client = which.removesuffix(PYTHON_WINDOW)
                        window = os.environ.get(native_window.ENV)
                        os.environ[native_window.ENV] = "python" if which.endswith(PYTHON_WINDOW) else "native"
                        try:
                            r = run_sessions(
                                connector(client), op_for(client, insert), sessions=n_open,
                                duration_s=secs, warmup_s=OPEN_WARMUP_S, rate=rate, arrival="poisson", seed=rep,
                                progress=False, on_ready=lambda: cpu0.append(client_cpu_s()))
                        finally:
                            if window is None:
                                os.environ.pop(native_window.ENV, None)
                            else:
                                os.environ[native_window.ENV] = window
                        cpu_open[which].append((client_cpu_s() - cpu0[0]) / max(r.operations, 1))
                        runs[which].append(OpenRun.of_driver(r))
                        done[which].append(r.throughput)
                print(f"[bench-driver] {share:.0%} load, pair {rep + 1} of {reps}: pgbench p99 "
                      f"{refs[-1].ms('lat', 99):.2f} ms; " + "; ".join(
                          f"{c} {runs[c][-1].ms('lat', 99):.2f} ms" for c in open_clients), flush=True)
            m = statistics.median
            ref = OpenRun(np.concatenate([h.lat for h in refs]), np.concatenate([h.lag for h in refs]))
            for client in open_clients:
                rs = runs[client]
                drv = OpenRun(np.concatenate([r.lat for r in rs]), np.concatenate([r.lag for r in rs]))
                tail = pooled_ratio([r.lat for r in rs], [h.lat for h in refs])
                pairs = [r.ms("lat", 99) / h.ms("lat", 99) for r, h in zip(rs, refs)]
                lag, svc = drv.ms("lag", 99) / ref.ms("lag", 99), drv.ms("svc", 99) / ref.ms("svc", 99)
                open_rows[(share, client)] = (tail, pairs, lag, svc, ref.lat.size / (reps * secs) / rate)
                record.append({
                    "load": share, "rate_per_s": round(rate), "client": client, "pairs": reps, "seconds": secs,
                    "warmup_s": OPEN_WARMUP_S, "p99_ratio_pooled": round(tail.ratio, 3),
                    "p99_ratio_interval_90": [round(tail.low, 3), round(tail.high, 3)],
                    "p99_ratio_pairs": [round(x, 3) for x in pairs],
                    "done_per_s": {"pgbench": round(ref.lat.size / (reps * secs)), "driver": round(m(done[client]))},
                    "pgbench": summary(ref), "driver": summary(drv),
                    "lag_p99_ratio": round(lag, 3), "service_p99_ratio": round(svc, 3),
                    "cpu_us_per_call": {"pgbench": round(m(cpu_open["pgbench"]) * 1e6, 1),
                                        "driver": round(m(cpu_open[client]) * 1e6, 1)},
                    "goal": 1.2 if client == GOAL_CLIENT else None,
                    "meets_goal": (tail.ratio <= 1.2) if client == GOAL_CLIENT else None})
                print(f"{share:>5.0%} {rate:>7,.0f} {client:>8} {ref.ms('lat', 50):>8.3f} {ref.ms('lat', 99):>8.3f} "
                      f"{drv.ms('lat', 50):>8.3f} {drv.ms('lat', 99):>8.3f} {tail.ratio:>6.2f} "
                      f"{tail.low:>4.2f}-{tail.high:<5.2f} {m(pairs):>7.2f} {min(pairs):>5.2f}-{max(pairs):<5.2f} "
                      f"{ref.lat.size / (reps * secs):>7,.0f} {m(done[client]):>7,.0f} "
                      f"{ref.ms('lag', 99):>8.3f} {drv.ms('lag', 99):>8.3f} "
                      f"{ref.ms('svc', 99):>8.3f} {drv.ms('svc', 99):>8.3f} "
                      f"{m(cpu_open['pgbench']) * 1e6:>7.1f} {m(cpu_open[client]) * 1e6:>7.1f}", flush=True)
        for client in open_clients:
            for share in shares:
                tail, pairs, lag, svc, kept = open_rows[(share, client)]
                goal = (f"{'meets' if tail.ratio <= 1.2 else 'misses'} the 1.2 goal"
                        + (f"; its interval reaches {tail.high:.2f}" if tail.ratio <= 1.2 < tail.high else "")
                        if client == GOAL_CLIENT else "for reference")
                carrier = ("neither: both at or below pgbench's" if max(lag, svc) <= 1 else
                           "lag (schedule to send)" if lag > svc else "service (send to result)")
                print(f"{client}: open-loop p99 ratio at {share:.0%} load, pooled: {tail.text()} ({goal}); the pairs' "
                      f"own ratios: median {m(pairs):.2f}, {min(pairs):.2f}-{max(pairs):.2f}; p99 lag ratio {lag:.2f}, "
                      f"p99 service ratio {svc:.2f} (the excess is in: {carrier})"
                      + (f"; pgbench completed only {kept:.0%} of its schedule, so its tail is its own backlog"
                         if kept < 0.97 else ""))
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({
                "what": "bench-driver open loop: the sessions driver against pgbench -R -M prepared",
                "cpus": os.cpu_count(), "sessions": n_open, "closed_loop_max_per_s": round(top),
                "command": " ".join(["benchmarks/bench_driver.py", *(argv if argv is not None else sys.argv[1:])]),
                "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "points": record}, indent=1) + "\n")
            print(f"[bench-driver] open-loop figures written to {args.json}")

        if not args.open_only:
            # -- each wait sampler's observer cost, and how client-bound each client leaves the backends --------
            print(f"\nWait samplers at {n_obs} sessions, closed loop: throughput, observer cost (CPU s per s of run), and "
                  "the workload backends' samples in the server or waiting for the client (ClientRead); this script's "
                  "own idle connection is left out")
            own = {int(conn.cursor().execute("SELECT pg_backend_pid()").fetchone()[0])}
            for source, client in [(s, c) for s in ("pg_wait_sampling", "polling") for c in ["pgbench", *clients]]:
                try:
                    w = pg_waits.sampler(lambda: target.connect(DATABASE), DATABASE, hz=20, source=source)
                except RuntimeError as exc:
                    print(f"  {source}: not available ({exc})")
                    break
                truncate()
                if client == "pgbench":
                    w.start()
                    try:
                        throughput = pgbench(pg, exe, script, n_obs, secs)
                    finally:
                        w.stop()
                else:
                    r = run_sessions(connector(client), op_for(client, insert), sessions=n_obs,
                                     duration_s=secs, warmup_s=0.5, progress=False, on_ready=w.start)
                    w.stop()
                    throughput = r.throughput
                frame = w.frame()
                cb = pg_waits.client_bound(frame[~frame["pid"].isin(own)])
                print(f"  {source:<17} {client:<8} {throughput:>9,.0f}/s  {w.cpu_per_s * 1e3:7.2f} ms CPU per s "
                      f"({w.cpu_per_s / (os.cpu_count() or 1) * 100:.2f}% of {os.cpu_count()} CPUs) at "
                      f"{w.achieved_hz:.0f} Hz; backends in the server {cb['server_share']:.0%}, waiting for the "
                      f"client {cb['client_share']:.0%}", flush=True)
        conn.close()
        shutil.rmtree(script_dir, ignore_errors=True)
    finally:
        if not was_running:
            pg.stop()
        if temp_root is not None:
            shutil.rmtree(temp_root, ignore_errors=True)
    if not args.open_only:
        reference_client_read()
    return 0


def reference_client_read(data: Path = Path(__file__).resolve().parent.parent / "data") -> None:
    """The goal "ClientRead under 20% of samples in each chapter's load check at its default parameters", read
    off the measured PostgreSQL references (made at the chapters' defaults): every point's share, worst first."""
    import pandas as pd

    print("\nClientRead in each chapter's load check (data/<chapter>/measured-postgres-reference, default "
          "parameters): the workload backends' wait samples in Client:ClientRead, per point (variant, sessions, "
          "repetition); goal: under 20% at every point")
    for points in sorted(data.glob("*/measured-postgres-reference/results/load_points.csv")):
        chapter = points.parents[2].name
        frame = pd.read_csv(points)
        if "client_share" not in frame or frame["client_share"].isna().all():
            print(f"  {chapter:<18} no wait samples in its load check: not judged")
            continue
        share = frame["client_share"].dropna()
        worst = frame.loc[share.idxmax()]
        ways = sorted({str(d).split(":")[0] for d in frame["driver"].dropna()}) if "driver" in frame else []
        driver = " and ".join(ways) or "thread per session (made before the driver was recorded)"
        n = int(worst["sessions"])
        print(f"  {chapter:<18} worst {share.max():.1%} ({worst['variant']}, {n} session{'s' * (n != 1)}), "
              f"median {share.median():.1%} over {len(share)} points "
              f"({'meets' if share.max() < 0.2 else 'misses'} the goal); sessions run by: {driver}")




if __name__ == "__main__":
    sys.exit(main())
