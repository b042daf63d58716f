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
from typing import Sequence

import pandas as pd

from contention_book.harness import native

from .spec import CHAPTER, FILES, NATIVE_ACCOUNTING, NATIVE_COLUMNS, PROGRAM


def program_args(*, kinds: Sequence[str], threads: Sequence[int], duration_ms: int, repetitions: int,
                 record_bytes: int, fair_after_us: int, spin_us: int,
                 backoffs: int) -> list[str]:
    return ["--kinds", ",".join(kinds), "--threads", ",".join(map(str, threads)),
            "--duration-ms", str(int(duration_ms)), "--repetitions", str(int(repetitions)),
            "--record-bytes", str(int(record_bytes)), "--fair-after-us", str(int(fair_after_us)),
            "--spin-us", str(int(spin_us)), "--backoffs", str(int(backoffs))]


def expected_seconds(kinds: Sequence[str], threads: Sequence[int], duration_ms: int, repetitions: int) -> float:
    return len(kinds) * len(threads) * repetitions * duration_ms / 1000


def to_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The program's rows with the recording contract's common columns in front."""
    missing = [c for c in (*NATIVE_COLUMNS, *NATIVE_ACCOUNTING) if c not in frame.columns]
    if missing:
        raise native.NativeError(f"{PROGRAM} printed no column(s) {', '.join(missing)}; expected {', '.join(NATIVE_COLUMNS)}")
    common = pd.DataFrame({"variant": frame["kind"], "sessions": frame["threads"], "elapsed_s": frame["duration_s"],
                           "operations": frame["records"], "throughput": frame["records_per_s"]})
    return pd.concat([common, frame], axis=1)


def run_native(ctx) -> None:
    """Build and run the sweep into ``ctx.writer``."""
    p = ctx.params
    kinds, thread_list = ctx.variants, p["sessions"]
    duration_ms = max(1, round(p["duration_s"] * 1000))
    args = program_args(kinds=kinds, threads=thread_list, duration_ms=duration_ms, repetitions=p["repetitions"],
                        record_bytes=p["record_bytes"], fair_after_us=p["fair_after_us"], spin_us=p["spin_us"],
                        backoffs=p["backoffs"])
    writer = ctx.writer
    writer.update(parameters={**writer.manifest["parameters"], "program": PROGRAM, "duration_ms": duration_ms,
                              "arguments": args})
    estimate = expected_seconds(kinds, thread_list, duration_ms, p["repetitions"])
    ctx.log(f"[{CHAPTER}] building native/{PROGRAM}.c, then {len(kinds)} lock kinds x {len(thread_list)} thread "
            f"counts x {p['repetitions']} repetitions of {duration_ms} ms: about {estimate:.0f} s; progress below")
    native.build(PROGRAM)
    frame = native.run(PROGRAM, args, timeout_s=estimate * 3 + 60)
    runs = to_runs(frame)
    writer.write_csv(FILES["runs"], runs,
                     "one row per lock kind, thread count and repetition, as native/latch_convoy printed it")
    # The program runs the whole sweep in one process; each row is one point, checked here by its identities
    # (records counted by the threads = records appended under the lock = acquisitions timed, and so on).
    ctx.check_balanced("runs", runs)
    allowed = len(os.sched_getaffinity(0))
    if allowed != writer.manifest["host"].get("logical_cpus"):
        writer.add_note(f"the run was allowed {allowed} of the machine's "
                        f"{writer.manifest['host'].get('logical_cpus')} logical CPUs")
    offcpu_runs(ctx, runs, args, thread_list, duration_ms)
    writer.add_note("wait latency is the time from asking for the lock to holding it, every acquisition "
                    "included; quantiles come from a log-bucketed histogram (buckets at most 12.5% wide)")


def offcpu_runs(ctx, runs: pd.DataFrame, args: list[str], thread_list, duration_ms: int) -> None:
    """The fair and the unfair lock once more each, at the deciding thread count (the most threads within the
    CPUs), under an off-CPU capture (stacks/<kind>.offcpu-folded.gz: where the convoy sleeps, who wakes it).
    The sweep's own rows are never taken under perf; this run's throughput beside the sweep's median at the
    same point is the capture's cost, in a note.  OFFCPU=0 in the environment leaves it out."""
    from contention_book.perftools.capture import finish_offcpu, start_offcpu

    from .tables import within_cpus

    kinds = [k for k in ("fair", "unfair") if k in ctx.variants]
    n = within_cpus(thread_list, ctx.writer.manifest["host"].get("logical_cpus"))
    if os.environ.get("OFFCPU", "1") == "0" or not kinds or n is None:
        return
    for kind in kinds:
        extra = list(args)
        for flag, value in (("--kinds", kind), ("--threads", str(n)), ("--repetitions", "1")):
            extra[extra.index(flag) + 1] = value
        rec = start_offcpu(ctx.writer, kind, comms=[PROGRAM], threads_only=True)  # the workers, not main's sleep
        done = False
        try:
            row = native.run(PROGRAM, extra, timeout_s=duration_ms / 1000 * 3 + 60)
            done = True
        finally:
            st = finish_offcpu(ctx.writer, rec, ctx.log, failed=not done, variant=kind, sessions=n, repetition=0,
                               threads=f"{PROGRAM} threads")
        if st is not None and st.ok:
            sweep = runs[(runs["variant"] == kind) & (runs["sessions"] == n)]["throughput"].median()
            under = float(row["records_per_s"].iloc[0])
            ctx.writer.add_note(f"off-CPU capture of {kind} at {n} threads: {under:,.0f} records/s under perf against "
                                f"the sweep's median {sweep:,.0f} without ({under / sweep - 1:+.0%}); perf record "
                                f"used {st.perf_cpu_s} s of CPU in {st.window_s} s")
