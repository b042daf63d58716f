"""A Profile for other viewers: speedscope JSON and pprof.

A reader who already uses speedscope (https://www.speedscope.app) or
``go tool pprof`` / Pyroscope should be able to take a WPA or perf capture
there.  Both formats are written here with the standard library only:

* speedscope: the file format of jlfwong/speedscope
  (``src/lib/file-format-spec.ts``, schema
  https://www.speedscope.app/file-format-schema.json).  Where the samples
  carry time, one *sampled* profile per thread lists that thread's samples
  in time order, so speedscope's "Time Order" view is a timeline of the
  thread; without time, one profile per process holds each distinct stack
  once with its total weight.  Stacks are frame indices, root first.
* pprof: ``profile.proto`` of google/pprof, gzip'd, encoded by hand (the
  message has a dozen fields; a protobuf dependency is not worth it).
"""

from __future__ import annotations

import gzip
import json
import os
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from .builder import frame_name
from .model import Profile

__all__ = ["to_speedscope", "write_speedscope", "to_pprof", "write_pprof", "write", "SPEEDSCOPE_SCHEMA"]

SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def _unit(p: Profile) -> tuple[str, float]:
    """speedscope unit of the weights and a factor to apply to them."""
    u = str(p.meta.get("weight_unit", "")).lower()
    if u in ("ms", "milliseconds"):
        return "milliseconds", 1.0
    if u in ("cpu-clock period", "task-clock period", "ns", "nanoseconds"):
        return "nanoseconds", 1.0
    return "none", 1.0


def _exporter() -> str:
    try:
        return f"perftools (contention-book {version('contention-book')})"
    except PackageNotFoundError:
        return "perftools (contention-book)"


def to_speedscope(p: Profile, name: str | None = None) -> dict:
    """The profile as a speedscope file (a JSON-ready dict)."""
    unit, _ = _unit(p)
    frames = [{"name": f, **({"file": m} if m else {})}
              for m, f in zip(p.frames["module"].tolist(), p.frames["function"].tolist())]
    s = p.samples
    sid = s["stack_id"].to_numpy()
    w = s["weight"].to_numpy()
    t = s["time"].to_numpy()
    stacks = p.stacks
    profiles = []
    timed = len(t) and not np.isnan(t).all()
    if timed:
        thread = s["thread"].astype("float64").fillna(-1).to_numpy()
        proc = s["process"].astype(str).to_numpy()
        order = np.lexsort((np.nan_to_num(t, nan=np.inf), thread, proc))
        keys = list(zip(proc[order], thread[order]))
        start = 0
        for i in range(1, len(order) + 1):
            if i < len(order) and keys[i] == keys[start]:
                continue
            idx = order[start:i]
            pr, th = keys[start]
            label = f"{pr} thread {int(th)}" if th >= 0 else (pr or "samples")
            ww = w[idx]
            profiles.append({"type": "sampled", "name": label, "unit": unit, "startValue": 0,
                             "endValue": float(ww.sum()), "samples": [list(stacks[j]) for j in sid[idx]],
                             "weights": ww.tolist()})
            start = i
    else:
        proc = s["process"].astype(str).to_numpy()
        for pr in sorted(set(proc.tolist())):
            m = proc == pr
            per_stack = np.bincount(sid[m], weights=w[m], minlength=p.n_stacks)
            used = np.flatnonzero(per_stack)
            profiles.append({"type": "sampled", "name": pr or "samples", "unit": unit, "startValue": 0,
                             "endValue": float(per_stack.sum()), "samples": [list(stacks[j]) for j in used],
                             "weights": per_stack[used].tolist()})
    return {"$schema": SPEEDSCOPE_SCHEMA, "shared": {"frames": frames}, "profiles": profiles,
            "name": name or str(p.meta.get("source", "perftools")), "activeProfileIndex": 0,
            "exporter": _exporter()}


def write_speedscope(p: Profile, dest) -> None:
    text = json.dumps(to_speedscope(p), separators=(",", ":"))
    _write_bytes(dest, text.encode("utf-8"))


# ---------------------------------------------------------------- pprof
def _varint(n: int) -> bytes:
    out = bytearray()
    n &= (1 << 64) - 1  # int64 as two's complement, as protobuf does
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field_varint(num: int, value: int) -> bytes:
    return _varint(num << 3) + _varint(value) if value else b""


def _field_bytes(num: int, data: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(data)) + data


def _packed(num: int, values) -> bytes:
    return _field_bytes(num, b"".join(_varint(int(v)) for v in values))


def to_pprof(p: Profile) -> bytes:
    """The profile as an uncompressed ``perftools.profiles.Profile`` message.

    Values are integers in pprof: weights in milliseconds become
    nanoseconds, other weights are rounded.  Each frame is one location and
    one function (the module as its file name); samples are stacks leaf
    first, as pprof wants, with one value per distinct (process, stack).
    Function names are ``module!function`` (pprof groups by name, and
    ``[unknown]`` is in many modules); ``go tool pprof -top`` on the result
    shows the shares ``perftools summary`` shows."""
    strings: dict[str, int] = {"": 0}

    def sx(text: str) -> int:
        return strings.setdefault(text, len(strings))

    unit = str(p.meta.get("weight_unit", "samples"))
    scale = 1.0
    if unit.lower() in ("ms", "milliseconds"):
        unit, scale = "nanoseconds", 1e6
    elif unit.lower() in ("cpu-clock period", "task-clock period"):
        unit = "nanoseconds"
    out = bytearray()
    out += _field_bytes(1, _field_varint(1, sx("samples")) + _field_varint(2, sx("count")))
    out += _field_bytes(1, _field_varint(1, sx("weight")) + _field_varint(2, sx(unit)))
    s = p.samples
    grouped = s.groupby(["process", "stack_id"], observed=True, sort=True)["weight"].agg(["size", "sum"])
    stacks = p.stacks
    for (proc, sid), row in grouped.iterrows():
        locs = [f + 1 for f in reversed(stacks[int(sid)])]
        body = _packed(1, locs) + _packed(2, [int(row["size"]), int(round(row["sum"] * scale))])
        if str(proc):
            body += _field_bytes(3, _field_varint(1, sx("process")) + _field_varint(2, sx(str(proc))))
        out += _field_bytes(2, body)
    for i, (mod, fn) in enumerate(zip(p.frames["module"].tolist(), p.frames["function"].tolist()), 1):
        line = _field_varint(1, i)  # Line{function_id}
        out += _field_bytes(4, _field_varint(1, i) + _field_bytes(4, line))
        out += _field_bytes(5, _field_varint(1, i) + _field_varint(2, sx(frame_name(mod, fn)))
                            + _field_varint(3, sx(fn)) + _field_varint(4, sx(mod)))
    for text in strings:  # insertion order = index order
        out += _field_bytes(6, text.encode("utf-8"))
    return bytes(out)


def write_pprof(p: Profile, dest) -> None:
    _write_bytes(dest, gzip.compress(to_pprof(p), mtime=0))


def write(p: Profile, to: str, dest) -> None:
    """Write ``p`` as ``to`` (speedscope, pprof or folded) to a path or binary stream."""
    if to == "speedscope":
        write_speedscope(p, dest)
    elif to == "pprof":
        write_pprof(p, dest)
    elif to == "folded":
        from .importers import folded

        folded.write(p, dest)
    else:
        raise ValueError(f"unknown export format {to!r}; expected speedscope, pprof or folded")


def _write_bytes(dest, data: bytes) -> None:
    if hasattr(dest, "write"):
        dest.write(data)
        dest.flush()
        return
    with open(os.fspath(dest), "wb") as f:
        f.write(data)
