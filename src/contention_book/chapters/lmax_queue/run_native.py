"""The in-process ceiling, measured: the C ring buffer against a locked queue, and false sharing."""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from contention_book.harness import native

from .spec import CHAPTER, FILES

RING_PROGRAM = "lmax_disruptor"
SHARING_PROGRAM = "lmax_false_sharing"
# single_atomic is shared_atomic's own loop on one thread: the contended atomic is set against it, so the claim
# compares one instruction alone and contended, not a plain increment against an atomic one
LAYOUTS = ("single", "adjacent", "padded", "shared_atomic", "single_atomic")


def check_queue_size(size: int) -> int:
    size = int(size)
    if size < 2 or size & (size - 1):
        raise ValueError(f"queue_size={size}: the native ring needs a power of two of at least 2 (it indexes "
                         "with sequence & (size - 1))")
    return size


def sweep(queues: Sequence[str], producers: Sequence[int], messages: int, queue_size: int, repetitions: int,
          spin: int = 200, timeout_s: float = 600) -> pd.DataFrame:
    """One program run per (repetition, producer count, queue), queues interleaved round after round."""
    frames = []
    for rep in range(repetitions):
        for p in producers:
            for queue in queues:
                frame = native.run(RING_PROGRAM, ["--queue", queue, "--producers", p, "--messages", messages,
                                                  "--size", queue_size, "--spin", spin, "--repetitions", 1],
                                   timeout_s=timeout_s)
                frames.append(frame.assign(repetition=rep))
    out = pd.concat(frames, ignore_index=True)
    return out.rename(columns={"queue": "variant", "producers": "sessions", "messages": "operations",
                               "msgs_per_s": "throughput"})


def false_sharing(increments: int, repetitions: int, timeout_s: float = 600) -> pd.DataFrame:
    """One program run per (repetition, layout), the layouts interleaved round after round, so repetition k of
    every layout ran side by side and their ratios pair by repetition."""
    frames = [native.run(SHARING_PROGRAM, ["--layout", layout, "--increments", increments, "--repetitions", 1],
                         timeout_s=timeout_s).assign(repetition=rep)
              for rep in range(repetitions) for layout in LAYOUTS]
    return pd.concat(frames, ignore_index=True)


def run_native(ctx) -> None:
    """The ring against the locked queue, and the false-sharing demo, into ``ctx.writer``."""
    p, w, log = ctx.params, ctx.writer, ctx.log
    variants, sessions = ctx.variants, sorted(p["sessions"])
    messages_per_session, repetitions, increments = p["messages_per_session"], p["repetitions"], p["increments"]
    queue_size = check_queue_size(p["queue_size"])
    w.update(parameters={**w.manifest["parameters"], "spin_before_yield": 200, "latency_sample_every": 16})
    log(f"[{CHAPTER}] native sweep: {', '.join(variants)} x producers {list(sessions)}, "
        f"{messages_per_session:,} messages each, ring of {queue_size:,}")
    runs = sweep(variants, sessions, messages_per_session, queue_size, repetitions)
    w.write_csv(FILES["runs"], runs, "one row per queue, producer count and repetition (latency in ns)")
    log(f"[{CHAPTER}] false sharing: {increments:,} increments per thread")
    w.write_csv(FILES["false_sharing"], false_sharing(increments, repetitions),
                "ns per increment: one counter, two adjacent, two padded, one shared atomic, one atomic on one thread")
    cpus = int(runs["cpus"].iloc[0])
    if cpus < 4:
        w.add_note(f"this machine lets the programs use {cpus} logical CPUs: with more than one producer the "
                   "threads outnumber the CPUs, and a waiting thread yields its time slice after a short spin")
