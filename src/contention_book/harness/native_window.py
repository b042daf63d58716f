"""An open-loop window run by C (``native/pg_openloop.c``) on the sessions Python opened and warmed up.

Why: an open-loop call's latency counts from its scheduled start, so every
microsecond the client spends between the timer and the send is latency.
In Python that client time was 54 µs per call against pgbench's 32 µs, on
the same two CPUs as the server, and at 90% of pgbench's rate the driver's
p99 was several times ``pgbench -R``'s (bench-driver).  Here Python keeps
everything but the window: connecting, each session's setup, the warm-up,
preparing the statement and computing every call's values; C then runs the
schedule, the sends and the reads on the same sockets, the way pgbench's
threads do, and hands the connections back idle.

It runs when the call is a :class:`~.driver.Statement` with no ``on_result``
(nothing to decide per row), its values a function of (session, op) alone,
the loop open, and every connection a plain libpq one (:mod:`.pg_client`, in
autocommit, without TLS: C writes to the socket itself).  Anything else, or
``CONTENTION_BOOK_OPEN_LOOP=python``, runs the Python window.  What C does not
do: reconnect.  A session whose connection is lost counts that call as lost
(by class, as the Python window does) and ends.
"""
from __future__ import annotations

import math
import os
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import interrupts
from .redaction import redact
from .session_rules import REFUSED, SessionDone

ENV = "CONTENTION_BOOK_OPEN_LOOP"  # "python": never the native window
PROGRAM = "pg_openloop"
RECORD = np.dtype([("origin", "<i8"), ("start", "<i8"), ("end", "<i8"), ("session", "<i4"), ("op", "<i4"),
                   ("kind", "<i4"), ("pad", "<i4"), ("code", "S8")])  # struct rec in pg_openloop.c
OK, ERROR, RETRY, LOST, OUT_OF_VALUES = range(5)
VALUES_CAP = 2_000_000  # value sets computed ahead over all sessions; beyond it the Python window runs


class NativeWindowError(RuntimeError):
    pass


def wanted(operation: Any, rate: float | None) -> str:
    """'' when the native window may run this call, else why not (for the run's driver line)."""
    from .driver import Statement

    if not rate:
        return "closed loop"
    if os.environ.get(ENV, "").strip().lower() == "python":
        return f"{ENV}=python"
    if not isinstance(operation, Statement):
        return "the call is a Python function"
    if operation.on_result is not None:
        return "the call reads its result"
    return ""


def connection_problem(conn: Any) -> str:
    """'' when C can take this connection over, else why not."""
    from . import pg_client

    if not isinstance(conn, pg_client.Connection):
        return "not a libpq connection"
    if conn.closed or not conn.autocommit:
        return "closed, or not in autocommit"
    pg = conn.pgconn
    if getattr(pg, "ssl_in_use", False):
        return "the connection uses TLS"
    if pg.transaction_status != conn._pq.TransactionStatus.IDLE:
        return "the connection is not idle"
    return ""


class NativeWindow:
    """The hand-over between the sessions' threads (each hands its connections after the start barrier) and the
    main thread, which runs C on all of them and lets the threads go on when it has finished."""

    def __init__(self, statement, sessions: int, threads: int, *, rate: float, arrival: str, seed: int | None,
                 duration_s: float | None, operations_per_session: int | None, retry_on, max_retries: int,
                 max_errors_per_session: int):
        self.statement, self.sessions, self.threads = statement, sessions, threads
        self.rate, self.poisson, self.seed = float(rate), arrival == "poisson", seed
        self.duration_s, self.cap = duration_s, operations_per_session
        self.retry_on, self.max_retries, self.max_errors = sorted(retry_on), max_retries, max_errors_per_session
        self.conns: dict[int, Any] = {}
        self.lock = threading.Lock()
        self.all_handed = threading.Event()
        self.finished = threading.Event()
        self.used = False  # C ran the window: the threads skip theirs
        self.declined = ""  # why the Python window runs instead
        self.values: list[tuple[list, bool]] | None = None  # per session: its value sets, and whether they ended
        self.constant = not callable(statement.args)  # one set of values for every call

    # -- before the window, in the main thread --------------------------------------------------------------------
    def compute_values(self) -> None:
        """Every call's values, before the window: a list per session (one entry when they never change)."""
        st = self.statement
        if not callable(st.args):
            self.values = [([st.values(i, 0)], True) for i in range(self.sessions)]
            return
        expected = self.rate * (self.duration_s if self.duration_s is not None else 3600.0)
        per_session = math.ceil(1.5 * expected / self.threads) + 100  # a thread's whole share may go to one session
        if self.cap is not None:
            per_session = min(per_session, self.cap)
        if per_session * self.sessions > VALUES_CAP:
            self.declined = f"{per_session * self.sessions:,} value sets to compute ahead (more than {VALUES_CAP:,})"
            return
        out = []
        for i in range(self.sessions):
            sets, done = [], False
            for op in range(per_session):
                try:
                    sets.append(st.values(i, op))
                except SessionDone:
                    done = True
                    break
            out.append((sets, done))
        self.values = out

    # -- from each session's thread ---------------------------------------------------------------------------------
    def hand(self, sessions: list[tuple[int, Any]]) -> bool:
        """Give a thread's sessions' connections (session, connection) to the window; True once C has run it,
        False when the Python window runs instead."""
        with self.lock:
            for i, conn in sessions:
                problem = self.declined or connection_problem(conn)
                if problem and not self.declined:
                    self.declined = f"session {i}: {problem}"
                self.conns[i] = conn
            if len(self.conns) == self.sessions:
                self.all_handed.set()
        if self.declined:
            self.all_handed.set()
        self.finished.wait()
        return self.used

    def withdraw(self, why: str) -> None:
        """A session cannot hand its connection (it ended in the warm-up): the Python window runs."""
        with self.lock:
            self.declined = self.declined or why
        self.all_handed.set()

    # -- the window, in the main thread -----------------------------------------------------------------------------
    def run(self, on_tick: Callable[[float], None] | None, tick_s: float, stop: threading.Event) -> dict | None:
        """Run C once every session has handed its connection; None when the Python window must run instead."""
        try:
            while not self.all_handed.wait(tick_s):
                if stop.is_set():
                    self.declined = self.declined or "stopped"
                    break
            if self.declined or self.values is None:
                return None
            from . import native

            try:
                exe = native.build(PROGRAM)
            except native.NativeError as exc:
                self.declined = f"native/{PROGRAM}.c could not be built: {exc}"
                return None
            self.used = True
            return self._run(exe, on_tick, tick_s)
        finally:
            self.finished.set()

    def _spec(self) -> tuple[bytes, list[int]]:
        from . import pg_client

        b = [b"OLSPEC1\0", struct.pack("<6i", self.sessions, self.threads, self.max_retries, self.max_errors,
                                        -1 if self.cap is None else int(self.cap), int(self.poisson)),
             struct.pack("<ddQ", self.rate, self.duration_s if self.duration_s is not None else 1e9,
                         (self.seed if self.seed is not None else time.perf_counter_ns()) & (2**64 - 1))]
        codes = [c for c in self.retry_on if len(c) == 5]
        b.append(struct.pack("<i", len(codes)) + b"".join(c.encode() for c in codes))
        refused = sorted(c for c in REFUSED if len(c) == 5)
        b.append(struct.pack("<i", len(refused)) + b"".join(c.encode() for c in refused))
        fds = []
        for i in range(self.sessions):
            conn = self.conns[i]
            sets, done = self.values[i]
            name = conn.prepared(self.statement.text(i), sets[0]) if sets else b""  # no sets: no call to prepare
            fd = conn.pgconn.socket
            fds.append(fd)
            b.append(struct.pack("<ii", fd, len(name)) + name + struct.pack(
                "<iiii", len(sets[0]) if sets else 0, len(sets), int(self.constant), int(done)))
            for values in sets:
                for v in pg_client.dump(values) or []:
                    b.append(struct.pack("<i", -1) if v is None else struct.pack("<i", len(v)) + v)
        return b"".join(b), fds

    def _run(self, exe: Path, on_tick, tick_s: float) -> dict:
        from .native import die_with_parent

        spec, fds = self._spec()
        with tempfile.TemporaryDirectory(prefix="pg-openloop-") as tmp:
            spec_path, out_path = Path(tmp) / "spec", Path(tmp) / "out"
            spec_path.write_bytes(spec)
            proc = subprocess.Popen([str(exe), str(spec_path), str(out_path)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, pass_fds=fds,
                                    preexec_fn=die_with_parent if sys.platform == "linux" else None)
            t0 = time.perf_counter_ns() / 1e9
            try:
                while True:
                    interrupts.raise_if_pending()
                    try:
                        proc.wait(timeout=tick_s)
                        break
                    except subprocess.TimeoutExpired:
                        if on_tick:
                            on_tick(time.perf_counter_ns() / 1e9 - t0)
            except BaseException:
                proc.kill()  # mid-call: the sessions' threads close their connections, as after every window
                proc.wait()
                raise
            out, err = proc.communicate()
            if proc.returncode != 0:
                raise NativeWindowError(f"native/{PROGRAM} failed (exit {proc.returncode}): {err.strip()[-800:]}")
            data = out_path.read_bytes()
        if len(data) < 32 or data[:8] != b"OLOUT001":
            raise NativeWindowError(f"native/{PROGRAM} wrote no result file it could be read from")
        start, end, count = struct.unpack_from("<qqq", data, 8)
        recs = np.frombuffer(data, dtype=RECORD, count=count, offset=32)
        at, messages = 32 + count * RECORD.itemsize, []
        for _ in range(self.sessions):  # the server's words for each session's first error
            (n,) = struct.unpack_from("<i", data, at)
            messages.append(data[at + 4:at + 4 + n].decode("utf-8", "replace"))
            at += 4 + n
        return {"start_ns": start, "end_ns": end, "records": recs, "summary": out.strip(), "messages": messages}


def fill(stats: list, window: dict, keep_timeline: bool, max_errors: int) -> list[str]:
    """The C window's records into the sessions' :class:`~.driver.SessionStats`; notes for the run."""
    recs = window["records"]
    notes = []
    for st in stats:
        mine = recs[recs["session"] == st.session]
        ok = mine[mine["kind"] == OK]
        st.ends.frombytes(ok["end"].astype("<i8").tobytes())
        st.latencies.frombytes((ok["end"] - ok["origin"]).astype("<i8").tobytes())
        st.lags.frombytes((ok["start"] - ok["origin"]).astype("<i8").tobytes())
        st.operations += len(ok)
        if keep_timeline:
            st.timeline.extend(zip(ok["op"].tolist(), (ok["end"] / 1e9).tolist(),
                                   ((ok["end"] - ok["origin"]) / 1e9).tolist()))
        retry = mine[mine["kind"] == RETRY]
        st.retries += len(retry)
        st.retry_ends.frombytes(retry["end"].astype("<i8").tobytes())
        bad = mine[(mine["kind"] == ERROR) | (mine["kind"] == LOST)]
        st.error_ends.frombytes(bad["end"].astype("<i8").tobytes())
        for r in bad:
            code = r["code"].decode("ascii", "replace").strip("\0") or "HY000"
            st.errors += 1
            st.errors_by_code[code] = st.errors_by_code.get(code, 0) + 1
            if r["kind"] == LOST:
                st.lost[code] = st.lost.get(code, 0) + 1
            if len(st.error_samples) < 5:
                words = redact(window["messages"][st.session]) if not st.error_samples else ""
                st.error_samples.append(f"[{code}] {'connection lost: ' if r['kind'] == LOST else ''}"
                                        + (words or f"the server answered {code}"))
        if st.errors >= max_errors:
            st.error_samples.append(f"stopped after {st.errors} errors")
        if (mine["kind"] == OUT_OF_VALUES).any():
            notes.append(f"session {st.session}: the values computed ahead ran out before the window ended")
    return notes
