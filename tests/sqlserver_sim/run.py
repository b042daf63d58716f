"""Run a chapter's SQL Server path through the live runner against the simulator (tests only)."""
from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from pathlib import Path

from . import fake_pyodbc, server

SHIM = Path(__file__).resolve().parent / "shim"
TESTS = Path(__file__).resolve().parents[1]
TARGET_VAR = "CONTENTION_BOOK_SIM_TARGET"

# Small sizes: every chapter's SQL Server path end to end in about a second on the simulator.
SMALL = {
    "ghost-cleanup": {"updates": "300", "chunk": "50", "repetitions": "1", "cleanup_wait_s": "0"},
    "latch-fairness": {"rows": "5000", "repetitions": "1", "data_mb": "8", "log_mb": "8", "sample_counters": "false"},
    "last-page-insert": {"sessions": "1,2", "repetitions": "1", "duration_s": "0.3", "rows_per_session": "400",
                         "wait_hz": "50"},
    "logcache-spinlock": {"sessions": "1,2", "repetitions": "1", "duration_s": "0.3", "rows_per_session": "200",
                          "batch": "100", "seed_rows": "10"},
    "lmax-queue": {"sessions": "1,2", "repetitions": "1", "duration_s": "0.3", "messages_per_session": "200",
                   "push_chunk": "100", "queue_size": "1000"},
}


def connection_string(state: Path, driver: str = "ODBC Driver 18 for SQL Server", extra: str = "") -> str:
    return f"Driver={{{driver}}};Server=tcp:sim,1433;SimState={state};{extra}"


def argv(chapter: str, record_to: Path, params: dict | None = None, allow: bool = False) -> list[str]:
    out = [chapter, "--engine", "sqlserver", "--target", TARGET_VAR, "--record-to", str(record_to)]
    for k, v in {**SMALL[chapter], **(params or {})}.items():
        out += ["--param", f"{k}={v}"]
    return out + (["--allow-server-changes"] if allow else [])


def run_in_process(chapter: str, state: Path, record_to: Path, params: dict | None = None, allow: bool = False,
                   conn_str: str | None = None) -> tuple[int, str, float]:
    """(exit status, what the runner printed, seconds) of ``python -m contention_book.run`` in this process."""
    from contention_book.harness import runner

    os.environ[TARGET_VAR] = conn_str or connection_string(state)
    saved = sys.modules.get("pyodbc")
    sys.modules["pyodbc"] = fake_pyodbc
    out = io.StringIO()
    started = time.monotonic()
    try:
        with contextlib.redirect_stdout(out):
            rc = runner.main(argv(chapter, record_to, params, allow))
    finally:
        if saved is not None:
            sys.modules["pyodbc"] = saved
        else:
            sys.modules.pop("pyodbc", None)
    return rc, out.getvalue(), time.monotonic() - started


def subprocess_env(state: Path) -> dict[str, str]:
    env = dict(os.environ)
    env[TARGET_VAR] = connection_string(state)
    env["PYTHONPATH"] = os.pathsep.join([str(SHIM), str(TESTS), env.get("PYTHONPATH", "")])
    return env


def render(chapter: str, recording: Path) -> dict:
    """What the chapter shows from the recording: its key numbers and its verdicts (must not raise)."""
    from contention_book.chapters import package

    shown = package(chapter, "recordings").load_shown(str(recording))
    numbers = package(chapter).key_numbers(shown)
    verdicts = package(chapter, "claims").verdicts(shown)
    return {"shown": shown, "key_numbers": numbers, "verdicts": verdicts}
