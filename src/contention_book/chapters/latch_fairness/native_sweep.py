"""The native live path: ``native/latch_convoy.c`` over lock kinds and thread counts, as a recording.

Every reader can run this: it needs a C compiler and nothing else.  The
program does the article's work in miniature (threads append log records to
one buffer under one lock) with four lock policies, and prints one CSV row per
(kind, threads, repetition).  This module checks the options, runs the sweep
with its progress on stderr, and writes a measured recording whose manifest
holds the machine's facts (lscpu) and the compiler.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from contention_book.harness import native
from contention_book.harness.live import default_destination, invocation

from .common import CHAPTER, FILES, KINDS, NATIVE_COLUMNS, NOTEBOOK, PROGRAM

DEFAULT_THREADS = (1, 2, 4, 8, 16, 32)
DEFAULT_DURATION_MS = 1500
DEFAULT_REPETITIONS = 3
DEFAULT_RECORD_BYTES = 64
DEFAULT_FAIR_AFTER_US = 500  # parking_lot's average interval between fair unlocks
DEFAULT_SPIN_US = 20
DEFAULT_BACKOFFS = 4


def parse_list(value: str | Sequence | None, what: str, allowed: Sequence[str] | None = None) -> list[str]:
    """A comma-separated notebook parameter (or a list) as a list of stripped items."""
    if value is None or value == "":
        return []
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    out = [i.strip() for i in items if i.strip()]
    if allowed is not None:
        bad = [i for i in out if i not in allowed]
        if bad:
            raise ValueError(f"{what}: {', '.join(bad)} not known; expected some of {', '.join(allowed)}")
    return out


def parse_threads(value: str | Sequence | None) -> list[int]:
    out = []
    for item in parse_list(value, "threads"):
        try:
            n = int(item)
        except ValueError:
            raise ValueError(f"threads: {item!r} is not a whole number; expected e.g. '1,2,4,8,16,32'") from None
        if not 1 <= n <= 1024:
            raise ValueError(f"threads: {n} out of range; expected 1 to 1024")
        out.append(n)
    return out or list(DEFAULT_THREADS)


def program_args(*, kinds: Sequence[str], threads: Sequence[int], duration_ms: int, repetitions: int,
                 record_bytes: int, fair_after_us: int, spin_us: int = DEFAULT_SPIN_US,
                 backoffs: int = DEFAULT_BACKOFFS) -> list[str]:
    return ["--kinds", ",".join(kinds), "--threads", ",".join(map(str, threads)),
            "--duration-ms", str(int(duration_ms)), "--repetitions", str(int(repetitions)),
            "--record-bytes", str(int(record_bytes)), "--fair-after-us", str(int(fair_after_us)),
            "--spin-us", str(int(spin_us)), "--backoffs", str(int(backoffs))]


def expected_seconds(kinds: Sequence[str], threads: Sequence[int], duration_ms: int, repetitions: int) -> float:
    return len(kinds) * len(threads) * repetitions * duration_ms / 1000


def to_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The program's rows with the recording contract's common columns in front."""
    missing = [c for c in NATIVE_COLUMNS if c not in frame.columns]
    if missing:
        raise native.NativeError(f"{PROGRAM} printed no column(s) {', '.join(missing)}; expected {', '.join(NATIVE_COLUMNS)}")
    common = pd.DataFrame({"variant": frame["kind"], "sessions": frame["threads"], "elapsed_s": frame["duration_s"],
                           "operations": frame["records"], "throughput": frame["records_per_s"]})
    return pd.concat([common, frame], axis=1)


def run_native(*, threads: str | Sequence[int] | None = None, variants: str | Sequence[str] | None = None,
               duration_ms: int = DEFAULT_DURATION_MS, repetitions: int = DEFAULT_REPETITIONS,
               record_bytes: int = DEFAULT_RECORD_BYTES, fair_after_us: int = DEFAULT_FAIR_AFTER_US,
               spin_us: int = DEFAULT_SPIN_US, backoffs: int = DEFAULT_BACKOFFS, record_to: str | None = None,
               command: str | None = None, log: Callable[[str], None] = print, **_ignored) -> Path:
    """Build and run the sweep; return the new recording's path."""
    kinds = parse_list(variants, "variants (lock kinds)", KINDS) or list(KINDS)
    thread_list = parse_threads(threads)
    if int(repetitions) < 1 or int(duration_ms) < 1:
        raise ValueError(f"repetitions={repetitions}, duration_ms={duration_ms}: both must be at least 1")
    if not 1 <= int(record_bytes) <= 4096:
        raise ValueError(f"record_bytes={record_bytes}: expected 1 to 4096")
    args = program_args(kinds=kinds, threads=thread_list, duration_ms=duration_ms, repetitions=repetitions,
                        record_bytes=record_bytes, fair_after_us=fair_after_us, spin_us=spin_us, backoffs=backoffs)
    parameters = {"engine": "native", "program": PROGRAM, "variants": kinds, "threads": thread_list,
                  "duration_ms": int(duration_ms), "repetitions": int(repetitions), "record_bytes": int(record_bytes),
                  "fair_after_us": int(fair_after_us), "spin_us": int(spin_us), "backoffs": int(backoffs),
                  "arguments": args}
    dest = default_destination(CHAPTER, record_to, "native")
    command = command or invocation(NOTEBOOK, {"source": "live", "engine": "native",
                                               "threads": ",".join(map(str, thread_list))})
    estimate = expected_seconds(kinds, thread_list, int(duration_ms), int(repetitions))
    log(f"[{CHAPTER}] building native/{PROGRAM}.c, then {len(kinds)} lock kinds x {len(thread_list)} thread counts x "
        f"{repetitions} repetitions of {duration_ms} ms: about {estimate:.0f} s; progress below")
    native.build(PROGRAM)
    writer = native.writer(dest, chapter=CHAPTER, parameters=parameters, command=command,
                           title="Latch fairness: a hot lock under four hand-off policies", programs=[PROGRAM])
    with writer:
        frame = native.run(PROGRAM, args, timeout_s=estimate * 3 + 60)
        writer.write_csv(FILES["runs"], to_runs(frame),
                         "one row per lock kind, thread count and repetition, as native/latch_convoy printed it")
        allowed = len(os.sched_getaffinity(0))
        if allowed != writer.manifest["host"].get("logical_cpus"):
            writer.add_note(f"the run was allowed {allowed} of the machine's "
                            f"{writer.manifest['host'].get('logical_cpus')} logical CPUs")
        writer.add_note("wait latency is the time from asking for the lock to holding it, every acquisition "
                        "included; quantiles come from a log-bucketed histogram (buckets at most 12.5% wide)")
    log(f"[{CHAPTER}] recording written: {dest}")
    return dest
