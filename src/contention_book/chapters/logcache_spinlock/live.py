"""One entry point for live runs of the chapter: native, PostgreSQL or SQL Server."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from contention_book.harness.live import default_destination, invocation, live_target, measured_writer
from contention_book.harness.targets import check_identifier, ensure_own_database

from .common import CHAPTER, ENGINES, NOTEBOOK, VARIANTS

DEFAULTS = {
    # postgres: 4 points x 2 variants x 8 s, plus setup: about 2 minutes on a 2-CPU machine
    "postgres": {"sessions": (1, 2, 4, 8), "rows_per_session": 2_000_000, "batch": 200, "duration_s": 8.0,
                 "seed_rows": 10_000},
    # sqlserver: the article's shape, smaller; a reader with a big box raises sessions
    "sqlserver": {"sessions": (1, 2, 4, 8, 16), "rows_per_session": 200_000, "batch": 10_000, "duration_s": 20.0,
                  "seed_rows": 100_000},
}


def parse_list(text: str | Sequence | None, what: str, cast=int) -> list:
    """'1,2,4' or [1, 2, 4] -> [1, 2, 4]; a clear error naming the parameter otherwise."""
    if text is None or text == "" or text == []:
        return []
    if isinstance(text, (int, float)):
        text = [text]
    items = text.split(",") if isinstance(text, str) else list(text)
    try:
        return [cast(str(x).strip()) for x in items if str(x).strip()]
    except ValueError:
        raise ValueError(f"{what}={text!r}: expected a comma-separated list of {cast.__name__} values") from None


def run_live(*, engine: str = "native", target: str | None = None, sessions: Sequence[int] | str | None = None,
             rows_per_session: int | None = None, variants: Sequence[str] | str | None = None,
             allow_server_changes: bool = False, record_to: str | None = None, stacks: str = "",
             capture_stacks: bool = True, database: str = "contention_lab", duration_s: float | None = None,
             batch: int | None = None, seed_rows: int | None = None, native_seconds: float = 2.0,
             native_repetitions: int = 3, logwriter_cpus: str = "", command: str | None = None,
             log: Callable[[str], None] = print) -> Path:
    """Run the chapter live and return the new recording's directory."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    variants = parse_list(variants, "variants", str) or list(VARIANTS[engine])
    unknown = [v for v in variants if v not in VARIANTS[engine]]
    if unknown:
        raise ValueError(f"variants {unknown}: expected some of {', '.join(VARIANTS[engine])} for {engine}")
    if engine == "native":
        from .native_run import run_native

        return run_native(record_to=record_to, workers=parse_list(sessions, "sessions") or None,
                          seconds=native_seconds, repetitions=native_repetitions, command=command, log=log)
    d = DEFAULTS[engine]
    sessions = parse_list(sessions, "sessions") or list(d["sessions"])
    if any(s < 1 for s in sessions):
        raise ValueError(f"sessions={sessions}: expected positive session counts")
    params = {"engine": engine, "sessions": sessions, "variants": variants, "database": database,
              "rows_per_session": int(rows_per_session or d["rows_per_session"]),
              "batch": int(batch or d["batch"]), "duration_s": float(duration_s or d["duration_s"]),
              "seed_rows": int(seed_rows if seed_rows is not None else d["seed_rows"])}
    check_identifier(database, "database")
    with live_target(target, engine) as tgt:
        ensure_own_database(tgt, database, log=log)
        dest = default_destination(CHAPTER, record_to, engine)
        command = command or invocation(NOTEBOOK, {"source": "live", "engine": engine, "target": target or ""})
        writer = measured_writer(tgt, CHAPTER, params, command, dest,
                                 title="Singleton inserts from N sessions: the log cache under pressure")
        with writer:
            kw = dict(sessions=sessions, rows_per_session=params["rows_per_session"], batch=params["batch"],
                      duration_s=params["duration_s"], seed_rows=params["seed_rows"], log=log)
            if engine == "postgres":
                from .live_postgres import run_postgres

                run_postgres(tgt, database, writer, variants=variants, capture_stacks=capture_stacks,
                             wait_hz=20.0, **kw)
            else:
                from .live_sqlserver import run_sqlserver

                run_sqlserver(tgt, database, writer, variants=variants, allow_server_changes=allow_server_changes,
                              stacks=stacks, logwriter_cpus=parse_list(logwriter_cpus, "logwriter_cpus"), **kw)
    log(f"[{CHAPTER}] recording written: {dest}")
    return dest
