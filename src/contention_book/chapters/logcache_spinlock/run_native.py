"""The native measurements: core-to-core latency, load latency, context switches, the toy log cache.

Each program is in native/ (see the comment at the top of each file); this
module builds and runs them through :mod:`harness.native` and writes one
recording with engine ``native``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import pandas as pd

from contention_book.harness import native

from .spec import CHAPTER, FILES, MIN_CPUS_FOR_ALONE

PROGRAMS = ("c2c_pingpong", "c2c_chase", "ctxswitch_pingpong", "logcache_spin")
CHASE_SIZES = (16 * 1024, 512 * 1024, 8 * 1024 * 1024, 256 * 1024 * 1024)


def topology(cpus: Sequence[int], sysfs: Path = Path("/sys/devices/system/cpu")) -> pd.DataFrame:
    """core, package and L3 of each CPU from sysfs (-1 where sysfs does not say)."""
    rows = []
    for cpu in cpus:
        base = sysfs / f"cpu{cpu}"

        def read(rel: str) -> str:
            try:
                return (base / rel).read_text().strip()
            except OSError:
                return ""

        l3 = ""
        for idx in sorted((base / "cache").glob("index*")) if (base / "cache").is_dir() else []:
            try:
                if (idx / "level").read_text().strip() == "3":
                    l3 = (idx / "shared_cpu_list").read_text().strip()
            except OSError:
                pass
        core, package = read("topology/core_id"), read("topology/physical_package_id")
        rows.append({"cpu": cpu, "core": int(core) if core.lstrip("-").isdigit() else -1,
                     "package": int(package) if package.lstrip("-").isdigit() else -1,
                     "l3": l3 or "unknown", "siblings": read("topology/thread_siblings_list") or str(cpu)})
    return pd.DataFrame(rows)


def layouts(cpus: Sequence[int], workers: int) -> dict[str, dict]:
    """Variant A: workers on every CPU, the writer on the first; B: the writer alone on the first CPU."""
    if len(cpus) < 2:
        raise ValueError(f"the log-cache variants need at least 2 CPUs to keep one for the writer; have {list(cpus)}")
    writer = cpus[0]
    return {
        "writer_shared": {"writer_cpu": writer, "worker_cpus": list(cpus)},
        "writer_alone": {"writer_cpu": writer, "worker_cpus": [c for c in cpus if c != writer]},
    }


def default_workers(n_cpus: int) -> list[int]:
    """Thread counts for the sweep: n-1 and n workers (1 and 2 on a 2-CPU machine)."""
    return sorted({max(1, n_cpus - 1), n_cpus})


def run_native(ctx) -> None:
    """Run the four programs on this machine's allowed CPUs into ``ctx.writer``."""
    cpus = sorted(os.sched_getaffinity(0))
    workers = list(ctx.params["sessions"] or default_workers(len(cpus)))
    seconds, repetitions = ctx.params["duration_s"], ctx.params["repetitions"]
    c2c_batches, ctx_batches, chase_loads = (ctx.params[k] for k in ("c2c_batches", "ctx_batches", "chase_loads"))
    buffer_bytes = ctx.params["buffer_bytes"]
    log, w = ctx.log, ctx.writer
    w.update(parameters={**w.manifest["parameters"], "cpus": cpus, "workers": workers, "c2c_batches": c2c_batches,
                         "ctx_batches": ctx_batches, "chase_loads": chase_loads, "chase_sizes": list(CHASE_SIZES)})
    for program in PROGRAMS:
        native.build(program)
    w.write_csv(FILES["topology"], topology(cpus), "CPU topology from sysfs")
    log(f"[{CHAPTER}] core-to-core ping-pong on CPUs {cpus}")
    if len(cpus) >= 2:
        c2c = native.run("c2c_pingpong", [f"--cpus={','.join(map(str, cpus))}", f"--batches={c2c_batches}"],
                         timeout_s=600)
        w.write_csv(FILES["c2c"], c2c, "median one-way latency of a cache-line ping-pong per CPU pair")
    else:
        w.add_note("core-to-core: one CPU only, no pair to measure")
    log(f"[{CHAPTER}] load latency by working-set size")
    chase = native.run("c2c_chase", [f"--sizes={','.join(map(str, CHASE_SIZES))}", f"--cpu={cpus[0]}", f"--loads={chase_loads}"],
                       timeout_s=300)
    w.write_csv(FILES["chase"], chase, "dependent-load latency per working-set size")
    log(f"[{CHAPTER}] context switches")
    rows = []
    pairs = [(cpus[0], cpus[0])] + ([(cpus[0], cpus[1])] if len(cpus) >= 2 else [])
    for method in ("futex", "pipe"):
        for a, b in pairs:
            rows.append(native.run("ctxswitch_pingpong", [f"--cpu-a={a}", f"--cpu-b={b}", f"--method={method}",
                                                          f"--batches={ctx_batches}"],
                                   timeout_s=300))
    w.write_csv(FILES["ctxswitch"], pd.concat(rows, ignore_index=True), "ns per blocking hand-off")
    if len(cpus) >= 2:
        runs = []
        total = len(workers) * len(ctx.variants) * repetitions
        done = 0
        for rep in range(repetitions):
            for n in workers:
                for variant, layout in layouts(cpus, n).items():
                    if variant not in ctx.variants:
                        continue
                    done += 1
                    log(f"[{CHAPTER}] log cache {done}/{total}: {variant}, {n} workers")
                    frame = native.run("logcache_spin", [
                        f"--variant={variant}", f"--workers={n}",
                        f"--worker-cpus={','.join(map(str, layout['worker_cpus']))}",
                        f"--writer-cpu={layout['writer_cpu']}", f"--seconds-ms={int(seconds * 1000)}",
                        f"--buffer-bytes={buffer_bytes}"],
                        timeout_s=seconds + 60)
                    frame = frame.assign(repetition=rep, sessions=frame["workers"])
                    ctx.check_balanced("runs", frame)  # appended = flushed + left; flushed = inline + writer's
                    runs.append(frame)
        frame = pd.concat(runs, ignore_index=True)
        frame.insert(1, "sessions", frame.pop("sessions"))
        frame["operations"] = frame["records"]
        frame["writer_flushes_per_s"] = frame["writer_flushes"] / frame["elapsed_s"]
        w.write_csv(FILES["runs"], frame, "toy log cache: one row per variant, worker count and repetition")
        if len(cpus) < MIN_CPUS_FOR_ALONE and "writer_alone" in ctx.variants:
            w.add_note(f"toy log cache on {len(cpus)} CPUs: variant B cannot give the writer a CPU of its own and "
                       "each of two or more workers a CPU of its own, so its workers share a CPU and pass the lock "
                       "without moving its cache line; B is shown but not judged")
    else:
        w.add_note("log cache: one CPU only; the variants need a CPU for the writer and one for workers")
