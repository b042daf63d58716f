"""SQL Server wait sampling inside the server: an Extended Events session on the run's own sessions.

Polling ``sys.dm_os_waiting_tasks`` from a client (the default) sees only the
waits in progress at each poll, and the poll itself is load.  The
``sqlos.wait_info`` event, at its end (``opcode = 1``), fires inside the
server for every completed wait, with its type and duration; filtered on the
run's own ``session_id``s and kept in a ``ring_buffer`` target (memory only,
no file on the server), it gives every wait of the workload, not a sample.

An event session is a server-scope object (it needs ALTER ANY EVENT
SESSION), so it is a :class:`harness.guard.Change` of scope ``server``: off
unless the reader opts in (``allow_server_changes``), printed before it
runs, and dropped on every exit path by the guard.  Its name carries this
process's id, so two runs never share one, and one left by a killed run is
recognisable (and dropped by :func:`leftover_drops`).

Observer cost: the event session's CPU is spent in the server's own
threads, which a client cannot count; :attr:`XEventWaitSampler.cpu_per_s`
is the client side (reading and parsing the target).  The ring buffer's
own counters (events processed, dropped) are kept with the frame.

How much the ring keeps: the ring_buffer target drops its oldest events at
whichever limit comes first, ``max_events_limit`` (1,000 events when not
set) or ``max_memory`` (targets page,
https://learn.microsoft.com/sql/relational-databases/extended-events/targets-for-extended-events-in-sql-server).
Both are set here.  Its XML counts every event it was given
(``totalEventsProcessed``) and those it still holds (``eventCount``); when
the first is larger, the point's waits were cut short, and the recording
says so.
"""
from __future__ import annotations

import os
import re
import time
import xml.etree.ElementTree as ET
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from .guard import Change
from .spec import Table

PREFIX = "contention_book_waits_"
NAME = re.compile(r"^contention_book_waits_\d{1,10}$")
COLUMNS = ["timestamp", "session_id", "wait_type", "duration_ms", "signal_duration_ms"]
# Waits a session spends idle, not working: left out by the shares, as wait analyses of SQL Server usually do.
IDLE_WAITS = frozenset({"SLEEP_TASK", "WAITFOR", "BROKER_RECEIVE_WAITFOR", "SOS_WORK_DISPATCHER", "XE_DISPATCHER_WAIT",
                        "XE_TIMER_EVENT", "REQUEST_FOR_DEADLOCK_SEARCH", "LAZYWRITER_SLEEP", "SQLTRACE_BUFFER_FLUSH"})

# The recording's table of what the event session captured, per point (a chapter's layout declares it).
XEVENT_WAITS = Table("samples/xevent_waits.csv",
                     ("variant", "sessions", "wait", "waits", "wait_ms", "share", "events_processed",
                      "events_dropped", "observer_cpu_per_s"), (),
                     "completed waits of the run's sessions from an Extended Events session (wait_source=xevents); "
                     "observer_cpu_per_s is the client CPU spent reading the ring buffer, per second of run")


def session_name(pid: int | None = None) -> str:
    """``contention_book_waits_<pid>``: this run's event session."""
    return f"{PREFIX}{int(pid if pid is not None else os.getpid())}"


def _checked(name: str) -> str:
    if not NAME.match(name):
        raise ValueError(f"event session name {name!r}: expected {PREFIX}<digits>")
    return name


MAX_EVENTS = 1_000_000  # far above what max_memory holds: memory, not a count, bounds the ring


def create_statements(name: str, session_ids: Iterable[int], max_memory_kb: int = 16_384,
                      max_events: int = MAX_EVENTS) -> list[str]:
    """CREATE EVENT SESSION on the completed waits of ``session_ids``, then START it."""
    name = _checked(name)
    ids = sorted({int(s) for s in session_ids})
    if not ids:
        raise ValueError("an Extended Events wait session needs at least one session_id to watch")
    if any(not 0 < s < 32768 for s in ids):
        raise ValueError(f"session ids {ids}: expected SQL Server session ids (1 to 32767)")
    who = " OR ".join(f"[sqlserver].[session_id] = ({s})" for s in ids)
    create = (f"CREATE EVENT SESSION [{name}] ON SERVER\n"
              f"ADD EVENT sqlos.wait_info (\n"
              f"    ACTION (sqlserver.session_id)\n"
              f"    WHERE ([opcode] = (1) AND ({who})))\n"
              f"ADD TARGET package0.ring_buffer (SET max_events_limit = ({int(max_events)}), "
              f"max_memory = ({int(max_memory_kb)}))\n"
              f"WITH (MAX_DISPATCH_LATENCY = 1 SECONDS, EVENT_RETENTION_MODE = ALLOW_SINGLE_EVENT_LOSS, "
              f"STARTUP_STATE = OFF);")
    return [create, f"ALTER EVENT SESSION [{name}] ON SERVER STATE = START;"]


def drop_statements(name: str) -> list[str]:
    name = _checked(name)
    return [f"IF EXISTS (SELECT 1 FROM sys.server_event_sessions WHERE name = N'{name}')\n"
            f"    DROP EVENT SESSION [{name}] ON SERVER;"]


def read_statement(name: str) -> str:
    """The ring buffer's XML, while the session runs."""
    name = _checked(name)
    return ("SELECT CAST(t.target_data AS xml) FROM sys.dm_xe_session_targets AS t "
            "JOIN sys.dm_xe_sessions AS s ON s.address = t.event_session_address "
            f"WHERE s.name = N'{name}' AND t.target_name = N'ring_buffer';")


RUN_SESSIONS = ("SELECT session_id FROM sys.dm_exec_sessions WHERE database_id = DB_ID() AND session_id <> @@SPID "
                "AND is_user_process = 1")


def run_session_ids(conn) -> list[int]:
    """The user sessions in the harness's database other than ``conn``'s own: the driver's, once they are connected."""
    return sorted(int(r[0]) for r in conn.cursor().execute(RUN_SESSIONS).fetchall())


def change(name: str, session_ids: Sequence[int]) -> Change:
    """The event session as a guarded server-scope change: created and started, then dropped."""
    name = _checked(name)

    def read(conn) -> bool:
        row = conn.cursor().execute("SELECT COUNT(*) FROM sys.server_event_sessions WHERE name = ?", name).fetchone()
        return bool(row[0])

    def apply(exists: bool) -> list[str]:
        if exists:
            raise RuntimeError(f"an event session named {name} already exists and is not this run's; drop it first "
                               f"({drop_statements(name)[0].splitlines()[-1].strip()})")
        return create_statements(name, session_ids)

    return Change(f"Extended Events session {name} on the completed waits of session(s) "
                  f"{', '.join(map(str, sorted(set(session_ids))))}", "server", read, apply,
                  lambda _exists: drop_statements(name), restore_if_attempted=True)


def parse_ring_buffer(xml_text: str) -> tuple[pd.DataFrame, dict[str, int]]:
    """(one row per completed wait, the target's counters) from ``ring_buffer`` XML.

    A malformed document is a ValueError naming what was expected.
    """
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ValueError(f"ring_buffer target data: not XML ({exc}); expected <RingBufferTarget>") from None
    if root.tag != "RingBufferTarget":
        raise ValueError(f"ring_buffer target data: root element <{root.tag}>; expected <RingBufferTarget>")
    counters = {k: int(v) for k, v in root.attrib.items() if v.lstrip("-").isdigit()}
    rows = []
    for ev in root.iter("event"):
        fields: dict[str, Any] = {}
        for node in ev:
            name = node.get("name")
            text = node.findtext("text")
            value = node.findtext("value")
            fields[name] = text if text not in (None, "") else value
        try:
            rows.append((ev.get("timestamp"), int(fields["session_id"]), str(fields["wait_type"]),
                         float(fields.get("duration") or 0), float(fields.get("signal_duration") or 0)))
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"ring_buffer event at {ev.get('timestamp')!r}: expected data wait_type, duration and "
                             f"action session_id; found {sorted(k for k in fields if k)}") from None
    return pd.DataFrame(rows, columns=COLUMNS), counters


def shares(frame: pd.DataFrame) -> pd.DataFrame:
    """Per wait type: waits, total wait ms and its share of all (idle waits left out)."""
    f = frame[~frame["wait_type"].isin(IDLE_WAITS)]
    out = (f.groupby("wait_type").agg(waits=("duration_ms", "size"), wait_ms=("duration_ms", "sum"))
           .sort_values("wait_ms", ascending=False).reset_index().rename(columns={"wait_type": "wait"}))
    total = out["wait_ms"].sum()
    out["share"] = out["wait_ms"] / total if total > 0 else 0.0
    return out


def cut_short(counters: dict[str, int]) -> str | None:
    """What the ring lost, from its own counters, or None when it holds every event it was given."""
    processed, kept = counters.get("totalEventsProcessed", 0), counters.get("eventCount", 0)
    lost = []
    if processed > kept:
        lost.append(f"the ring buffer holds {kept:,} of the {processed:,} completed waits it was given (its oldest "
                    "are dropped at max_events_limit or max_memory); the waits are the last ones only")
    if counters.get("droppedCount"):
        lost.append(f"the event session dropped {counters['droppedCount']:,} event(s); the waits are a lower bound")
    return "; ".join(lost) or None


class XEventWaitSampler:
    """Reads this run's event session when the point ends; ``frame()``/``counters`` as parsed.

    The session itself is created and dropped by the guard (:func:`change`);
    this only reads it, with a connection of its own.
    """

    source = "xevents"

    def __init__(self, connect: Callable[[], Any], name: str | None = None):
        self.connect, self.name = connect, _checked(name or session_name())
        self.error: str | None = None
        self.counters: dict[str, int] = {}
        self._frame = pd.DataFrame(columns=COLUMNS)
        self._started = self._ended = 0.0
        self._cpu = 0.0

    def start(self) -> "XEventWaitSampler":
        self._started = time.perf_counter()
        return self

    def stop(self) -> "XEventWaitSampler":
        self._ended = time.perf_counter()
        cpu0 = time.thread_time()
        conn = self.connect()
        try:
            row = conn.cursor().execute(read_statement(self.name)).fetchone()
            if row is None or row[0] is None:
                self.error = f"event session {self.name} has no ring_buffer target running"
            else:
                self._frame, self.counters = parse_ring_buffer(str(row[0]))
                self.error = cut_short(self.counters)
        finally:
            conn.close()
        self._cpu = time.thread_time() - cpu0
        return self

    @property
    def cpu_per_s(self) -> float:
        """Client CPU seconds spent reading the target, per second of run (the server's share is not countable)."""
        span = self._ended - self._started
        return self._cpu / span if span > 0 else float("nan")

    def frame(self) -> pd.DataFrame:
        return self._frame

    def summary(self, tags: dict[str, Any]) -> pd.DataFrame:
        """Shares per wait type, tagged, with the ring buffer's counters and the client's cost of reading it."""
        out = shares(self._frame)
        return out.assign(**tags, events_processed=self.counters.get("totalEventsProcessed", 0),
                          events_dropped=self.counters.get("droppedCount", 0), observer_cpu_per_s=self.cpu_per_s)


class XEventWatch:
    """A point's event session, for a runner: ``on_ready`` creates it (through the guard) on the sessions just
    connected; ``finish`` reads the ring buffer; ``close`` drops it.  Use as a context manager around the point,
    so the drop runs on every exit path (error, KeyboardInterrupt, SIGTERM turned into an exception).
    """

    def __init__(self, connect: Callable[[], Any], connect_db: Callable[[str | None], Any],
                 log: Callable[[str], None], allow_server_changes: bool):
        import contextlib

        self.connect, self.connect_db, self.log = connect, connect_db, log
        self.allow = allow_server_changes
        self.sampler = XEventWaitSampler(connect)
        self._stack = contextlib.ExitStack()

    def on_ready(self) -> None:
        from .guard import StateGuard

        conn = self.connect()
        try:
            ids = run_session_ids(conn)
        finally:
            conn.close()
        self._stack.enter_context(StateGuard(self.connect_db, [change(self.sampler.name, ids)],
                                             allow_server_changes=self.allow, log=self.log))
        self.sampler.start()

    def finish(self) -> "XEventWaitSampler":
        if self.sampler._started:
            self.sampler.stop()
        return self.sampler

    def __enter__(self) -> "XEventWatch":
        return self

    def __exit__(self, *exc) -> bool:
        self._stack.close()
        return False


def write_xevents(writer, sampler: XEventWaitSampler, tags: dict[str, Any], path: str, log: Callable[[str], None],
                  chapter: str) -> None:
    """A point's captured waits into the recording, its observer cost into the run log (and the table)."""
    writer.append_csv(path, sampler.summary(tags))
    if sampler.error:
        writer.add_note(f"Extended Events waits ({', '.join(f'{k}={v}' for k, v in tags.items())}): {sampler.error}")
    top = sampler.summary(tags).head(3)
    log(f"[{chapter}] xevents {sampler.name}: {len(sampler.frame()):,} completed wait(s)"
        + (f", most time in {', '.join(top['wait'])}" if len(top) else "")
        + f"; observer cost {sampler.cpu_per_s * 1e3:.2f} ms client CPU per s of run (reading the ring buffer)")
