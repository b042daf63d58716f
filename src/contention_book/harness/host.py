"""Facts about the machine a run measured, for the manifest.

Local facts come from lscpu and sysfs; SQL Server facts come from its DMVs
(see targets.py), since the server is rarely the client's machine.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
from pathlib import Path


def _lscpu() -> dict[str, str]:
    try:
        out = subprocess.run(["lscpu", "-J"], capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    fields = {}
    for item in json.loads(out).get("lscpu", []):
        fields[item["field"].rstrip(":")] = item.get("data") or ""
    return fields


def _int(value: str | None) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def local_host() -> dict:
    """CPU model, sockets, physical cores, logical CPUs and NUMA nodes of this machine."""
    info = _lscpu()
    logical = os.cpu_count()
    sockets = _int(info.get("Socket(s)"))
    per_socket = _int(info.get("Core(s) per socket"))
    cores = sockets * per_socket if sockets and per_socket else None
    numa = _int(info.get("NUMA node(s)"))
    if numa is None:
        nodes = list(Path("/sys/devices/system/node").glob("node[0-9]*"))
        numa = len(nodes) or None
    mem_gb = None
    try:
        mem_gb = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        pass
    model = info.get("Model name") or platform.processor() or None
    desc = f"{model or 'unknown CPU'}, {logical} logical CPUs"
    return {
        "description": desc,
        "cpu_model": model,
        "sockets": sockets,
        "cores": cores,
        "logical_cpus": logical,
        "numa_nodes": numa,
        "memory_gb": mem_gb,
        "os": f"{platform.system()} {platform.release()}",
        "source": "lscpu on the machine that ran the server",
    }


# -- the machine's load around a run ----------------------------------------------------------------------------

QUIET_WAIT_ENV = "CONTENTION_BOOK_QUIET_WAIT_S"  # longest wait for a quiet machine before a run (0: no wait)
QUIET_WAIT_S = 120.0
QUIET_CHECK_S = 5.0
TEST_LOAD_ENV = "CONTENTION_BOOK_TEST_LOAD_1MIN"  # tests only: the load this process reads, to hold a run in its wait


def load_1min() -> float | None:
    """The 1-minute load average, or None where the system has none (Windows)."""
    if os.environ.get(TEST_LOAD_ENV):
        return float(os.environ[TEST_LOAD_ENV])
    try:
        return float(os.getloadavg()[0])
    except (OSError, AttributeError):
        return None


def wait_limit() -> float:
    """The longest wait for a quiet machine, from :data:`QUIET_WAIT_ENV` (seconds; default :data:`QUIET_WAIT_S`)."""
    raw = os.environ.get(QUIET_WAIT_ENV, "").strip()
    if not raw:
        return QUIET_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{QUIET_WAIT_ENV}={raw!r}: expected a number of seconds (0 to not wait)") from None
    if value < 0:
        raise ValueError(f"{QUIET_WAIT_ENV}={raw!r}: expected a number of seconds, 0 or more")
    return value


def wait_for_quiet(log, *, limit_s: float | None = None, every_s: float = QUIET_CHECK_S, loadavg=None,
                   sleep=None, clock=None, cpus: int | None = None, remote: bool = False) -> dict:
    """Before a run: if the 1-minute load average is above half the logical CPUs, something else is running,
    and the run would measure it too.  Wait (checking every ``every_s``, saying so) until it drops to half,
    for ``limit_s`` at most, then go on either way.  Returns the manifest's ``load`` block without the
    after-figure; :func:`finish_load` adds it.  ``remote``: the server is another machine, whose load this
    cannot see; the wait is then for this client's own load, and the log says so."""
    import time

    loadavg = loadavg or load_1min
    sleep = sleep or time.sleep
    clock = clock or time.monotonic
    limit_s = wait_limit() if limit_s is None else limit_s
    cpus = cpus or os.cpu_count() or 1
    threshold = cpus / 2
    load = loadavg()
    if load is None:
        log("[run] this system reports no load average; the run starts without checking for other work")
        return {}
    started = clock()
    if remote and load > threshold and limit_s > 0:
        log("[run] the server runs elsewhere: this wait is for this machine's own load (the client's, whose "
            "sessions must keep up), not the server's, which it cannot see")
    if load > threshold and limit_s > 0:
        log(f"[run] 1-minute load average {load:.2f} is above {threshold:g} (half of {cpus} logical CPUs): waiting up "
            f"to {limit_s:g} s for the machine to quieten ({QUIET_WAIT_ENV} sets the limit)")
        while load > threshold and clock() - started < limit_s:
            sleep(min(every_s, max(0.0, limit_s - (clock() - started))))
            load = loadavg()
            log(f"[run] waiting for a quieter machine: load {load:.2f}, {clock() - started:.0f} s of {limit_s:g} s")
    waited = clock() - started
    quiet = load <= threshold
    if not quiet:
        log(f"[run] load average still {load:.2f} (above {threshold:g}) after {waited:.0f} s: the run starts anyway, "
            "and its notes say so")
    return {"before_1min": round(load, 2), "logical_cpus": cpus, "threshold_1min": threshold,
            "waited_s": round(waited, 1), "wait_limit_s": float(limit_s), "quiet": quiet}


def finish_load(block: dict, *, loadavg=None) -> tuple[dict, str]:
    """The ``load`` block with the load at the run's end, and the note for the recording (empty when the
    machine was quiet at the start without waiting)."""
    if not block:
        return {}, ""
    after = (loadavg or load_1min)()
    out = {**block, "after_1min": round(after, 2) if after is not None else None}
    end = f" and {after:.2f} at its end" if after is not None else ""
    figures = (f"1-minute load average {block['before_1min']:.2f} when it started{end}, on {block['logical_cpus']} "
               "logical CPUs (a run's own threads and backends count in the load at its end)")
    if not block["quiet"]:
        return out, (f"the machine was busy: the load stayed above {block['threshold_1min']:g} (half the logical CPUs) "
                     f"through a wait of {block['waited_s']:.0f} s, and the run went ahead; {figures}")
    if block["waited_s"] >= 1:
        return out, f"the run waited {block['waited_s']:.0f} s for the machine to quieten; {figures}"
    return out, ""
