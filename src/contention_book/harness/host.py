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
