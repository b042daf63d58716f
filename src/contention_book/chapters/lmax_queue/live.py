"""One entry point for a live run of the chapter, whatever the engine."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from contention_book.harness.live import default_destination, invocation, live_target, measured_writer
from contention_book.harness.targets import check_identifier, ensure_own_database

from .common import CHAPTER, DEFAULTS, ENGINES, NOTEBOOK, VARIANTS


def parse_sessions(sessions: str | Sequence[int] | int | None, engine: str) -> list[int]:
    """'1,2,4' (or a list, or one number) -> [1, 2, 4]; empty -> the engine's default sweep."""
    if sessions in (None, "", 0, ()):
        return list(DEFAULTS[engine]["sessions"])
    if isinstance(sessions, int):
        items = [sessions]
    elif isinstance(sessions, str):
        try:
            items = [int(s) for s in sessions.replace(" ", "").split(",") if s]
        except ValueError:
            raise ValueError(f"sessions={sessions!r}: expected comma-separated positive integers, e.g. '1,2,4'") from None
    else:
        items = [int(s) for s in sessions]
    if not items or any(n < 1 or n > 256 for n in items):
        raise ValueError(f"sessions={sessions!r}: expected integers from 1 to 256")
    return sorted(set(items))


def parse_variants(variants: str | Sequence[str] | None, engine: str) -> list[str]:
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if not variants:
        return list(VARIANTS[engine])
    items = [v.strip() for v in variants.split(",")] if isinstance(variants, str) else list(variants)
    items = [v for v in items if v]
    unknown = [v for v in items if v not in VARIANTS[engine]]
    if unknown:
        raise ValueError(f"variants {unknown}: expected some of {', '.join(VARIANTS[engine])} for engine {engine}")
    return items


def run_live(*, engine: str = "postgres", target: str | None = None, sessions=None, messages_per_session: int = 0,
             queue_size: int = 0, variants=None, duration_s: float = 3.0, repetitions: int = 3,
             increments: int = 100_000_000, push_chunk: int = 1000, pushes_per_call: int = 0,
             record_to: str | None = None,
             database: str = "contention_lab", allow_server_changes: bool = False, command: str | None = None,
             log: Callable[[str], None] = print) -> Path:
    """Measure this chapter on ``engine`` and return the new recording's directory.

    ``messages_per_session`` and ``queue_size`` of 0 take the engine's default
    (see common.DEFAULTS).  PostgreSQL runs are timed windows of ``duration_s``
    per point (``messages_per_session`` caps each producer when above 0), and
    each call pushes ``pushes_per_call`` messages in a server-side loop (0: the
    default, 50; 1: one statement and one client round trip per message).
    """
    variants = parse_variants(variants, engine)
    sessions = parse_sessions(sessions, engine)
    messages = int(messages_per_session) or DEFAULTS[engine]["messages_per_session"]
    size = int(queue_size) or DEFAULTS[engine]["queue_size"]
    dest = default_destination(CHAPTER, record_to, engine)
    command = command or invocation(NOTEBOOK, {"source": "live", "engine": engine, "target": target or "",
                                               "sessions": ",".join(map(str, sessions)), "variants": ",".join(variants)})
    if engine == "native":
        from .native_run import run_native

        return run_native(variants=variants, sessions=sessions, messages_per_session=messages, queue_size=size,
                          repetitions=int(repetitions), increments=int(increments), dest=dest, command=command, log=log)
    check_identifier(database, "database")
    params = {"engine": engine, "variants": variants, "sessions": sessions, "messages_per_session": messages,
              "queue_size": size, "database": database}
    with live_target(target, engine) as tgt:
        ensure_own_database(tgt, database, log=log)
        if engine == "postgres":
            from .live_postgres import run_postgres

            from .live_postgres import check_pushes_per_call

            per_call = check_pushes_per_call(pushes_per_call or DEFAULTS["postgres"]["pushes_per_call"])
            params.update(duration_s=float(duration_s), synchronous_commit="off (session)", fillfactor_ring=50,
                          pushes_per_call=per_call, latency="per call (of pushes_per_call messages)",
                          throughput="messages per second")
            with measured_writer(tgt, CHAPTER, params, command, dest,
                                 title="LMAX queues on PostgreSQL: ring tables and queue tables") as w:
                run_postgres(tgt, database, w, variants=variants, sessions=sessions, queue_size=size,
                             duration_s=float(duration_s), messages_per_session=int(messages_per_session), log=log,
                             pushes_per_call=per_call)
        else:
            from .live_sqlserver import run_sqlserver

            params.update(push_chunk=int(push_chunk), duration_s=float(duration_s),
                          delayed_durability="FORCED (guarded, restored after)")
            with measured_writer(tgt, CHAPTER, params, command, dest,
                                 title="LMAX queues on SQL Server: In-Memory OLTP ring and disk baselines") as w:
                run_sqlserver(tgt, database, w, version=w.manifest["engine"]["version"], variants=variants,
                              sessions=sessions, queue_size=size, messages_per_session=messages,
                              push_chunk=int(push_chunk), duration_s=float(duration_s), log=log)
    log(f"[{CHAPTER}] recording written: {dest}")
    return dest
