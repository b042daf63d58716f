"""``xperf -i trace.etl -symbols -a dumper`` text.

Format reference: google/UIforETW ``bin/xperf_to_collapsedstacks.py``
(which documents and parses this output) and ``xperf -help dumper``.  The
file opens with a ``BeginHeader`` ... ``EndHeader`` block listing, for each
event type, its column names, e.g.::

    SampledProfile, TimeStamp, Process Name ( PID), ThreadID, PrgrmCtr, CPU, ThreadStartImage!Function, Image!Function, Count, SampledProfile type
    Stack, TimeStamp, ThreadID, No., Address, Image!Function

Then one event per line, fields padded with spaces.  A sample's stack is a
run of ``Stack`` lines, leaf first (``No.`` = 1, 2, ...), that carries the
sample's TimeStamp and ThreadID; it may come some lines after the sample,
so samples and stacks are joined on (TimeStamp, ThreadID) once the file is
read.  Columns are located by name from the header, never by position.
Stacks that belong to another event at the same TimeStamp (context
switches, ready-thread events) are ignored; a stack that matches no event
at all is an error.  Samples with no stack get WPA's ``n/a`` frame.
TimeStamps are microseconds from the start of the trace; the model stores
seconds.  Weight is the sample's ``Count`` column (1 when absent).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import FormatError
from ..builder import NO_STACK, ProfileBuilder, normalise_process, split_frame_name
from ..numbers import parse_number
from ..sniff import looks_like_xperf_dumper as looks_like  # noqa: F401  (the sniffer's tell)
from ..source import decode_error, display_name, open_text

__all__ = ["load"]

SAMPLE_REQUIRED = ("TimeStamp", "Process Name ( PID)", "ThreadID")
STACK_REQUIRED = ("TimeStamp", "ThreadID", "No.", "Image!Function")


def _fields(line: str, ncols: int, func_cols: list[int]) -> list[str] | None:
    """Split an event line into ``ncols`` fields.  ``Image!Function`` values
    may contain commas (C++ templates): fixed columns are taken from the
    left and right, and in the function columns between them a new field
    starts only at a piece that names a module (``image!...``)."""
    raw = line.split(",")
    if len(raw) == ncols:
        return [p.strip() for p in raw]
    if len(raw) < ncols or not func_cols:
        return None
    lo, hi = func_cols[0], func_cols[-1]
    n_after = ncols - 1 - hi
    middle = raw[lo : len(raw) - n_after]
    merged: list[str] = []
    for piece in middle:
        if not merged or (len(merged) < hi - lo + 1 and "!" in piece):
            merged.append(piece)
        else:
            merged[-1] += "," + piece
    if len(merged) != hi - lo + 1:
        return None
    return [p.strip() for p in raw[:lo] + merged + raw[len(raw) - n_after :]]


_INT64_MAX, _INT32_MAX = 2**63 - 1, 2**31 - 1


def _integer(text: str, limit: int) -> int | None:
    """ASCII digits whose value is at most ``limit`` (``str.isdigit`` takes '²' too), else None."""
    if not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value <= limit else None


def load(path):
    """Read xperf dumper text into a :class:`~perftools.model.Profile`."""
    try:
        return _load(path)
    except UnicodeDecodeError:
        err = decode_error(path)  # the line and byte offset; None only for UTF-16, whose decoder says where
        if err is None:
            raise
        raise err from None


def _load(path):
    name = display_name(path)
    headers: dict[str, tuple[list[str], int]] = {}
    b = ProfileBuilder()
    samples: list[list] = []  # [ts, tid, process, cpu, weight, line]
    pending: dict[tuple[str, str], list[int]] = {}
    other_ts: set[str] = set()
    stacks: list[tuple[str, str, list[str], int]] = []  # ts, tid, frames leaf-first, line
    cur: list | None = None
    state = "before"
    seen_any = False
    with open_text(path, errors="strict") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.strip()
            if not line:
                continue
            seen_any = True
            if state == "before":
                if line == "BeginHeader":
                    state = "header"
                continue  # xperf prints progress lines before the header
            if state == "header":
                if line == "EndHeader":
                    state = "body"
                    _check_header(name, headers, lineno)
                    sp = headers["SampledProfile"][0]
                    st = headers["Stack"][0]
                    sp_idx = {c: sp.index(c) for c in sp}
                    st_idx = {c: st.index(c) for c in st}
                    sp_funcs = [i for i, c in enumerate(sp) if c.endswith("!Function")]
                    st_funcs = [i for i, c in enumerate(st) if c.endswith("!Function")]
                    continue
                cols = [c.strip() for c in line.split(",")]
                headers[cols[0]] = (cols[1:], lineno)
                continue
            event, _, rest = line.partition(",")
            event = event.strip()
            if event == "Stack":
                fields = _fields(rest, len(st), st_funcs)
                if fields is None:
                    raise FormatError(name, lineno, f"{len(st)} fields after 'Stack,' as declared on header line {headers['Stack'][1]}", line)
                ts, tid, no = fields[st_idx["TimeStamp"]], fields[st_idx["ThreadID"]], fields[st_idx["No."]]
                if _integer(no, _INT32_MAX) is None:
                    raise FormatError(name, lineno, "a frame number in the 'No.' column", no)
                no_i = int(no)
                if cur is not None and cur[0] == ts and cur[1] == tid and no_i == len(cur[2]) + 1:
                    cur[2].append(fields[st_idx["Image!Function"]])
                elif no_i == 1:
                    cur = [ts, tid, [fields[st_idx["Image!Function"]]], lineno]
                    stacks.append(cur)  # type: ignore[arg-type]
                else:
                    want = 1 if cur is None or (cur[0], cur[1]) != (ts, tid) else len(cur[2]) + 1
                    raise FormatError(name, lineno, f"stack frame number {want}", line)
                continue
            cur = None
            if event == "SampledProfile":
                fields = _fields(rest, len(sp), sp_funcs)
                if fields is None:
                    raise FormatError(
                        name, lineno, f"{len(sp)} fields after 'SampledProfile,' as declared on header line {headers['SampledProfile'][1]}", line
                    )
                ts, tid = fields[sp_idx["TimeStamp"]], fields[sp_idx["ThreadID"]]
                for col, v in (("TimeStamp", ts), ("ThreadID", tid)):
                    if _integer(v, _INT64_MAX) is None:
                        raise FormatError(name, lineno, f"an integer in the {col!r} column (0 to 2**63 - 1)", v)
                cpu = fields[sp_idx["CPU"]] if "CPU" in sp_idx else ""
                if cpu and _integer(cpu, _INT32_MAX) is None:
                    raise FormatError(name, lineno, "an integer in the 'CPU' column (0 to 2**31 - 1)", cpu)
                w = 1.0
                if "Count" in sp_idx:
                    try:
                        w = parse_number(fields[sp_idx["Count"]])
                    except ValueError:
                        raise FormatError(name, lineno, "a number in the 'Count' column", fields[sp_idx["Count"]]) from None
                    if not (math.isfinite(w) and w >= 0):
                        raise FormatError(name, lineno, "a finite, non-negative number in the 'Count' column",
                                          fields[sp_idx["Count"]])
                pending.setdefault((ts, tid), []).append(len(samples))
                samples.append([int(ts), int(tid), normalise_process(fields[sp_idx["Process Name ( PID)"]]),
                                int(cpu) if cpu else None, w, lineno, -1])
            elif event in headers:
                other_ts.add(_timestamp(rest, headers[event][0]))
            else:
                raise FormatError(name, lineno, "an event type declared between BeginHeader and EndHeader", line)
    if not seen_any:
        raise FormatError(name, 1, "xperf dumper text starting with a BeginHeader line", "an empty file")
    if state != "body":
        raise FormatError(name, lineno if seen_any else 1, "'BeginHeader' ... 'EndHeader'" if state == "before" else "'EndHeader' to close the header", "end of file")
    if not samples:
        raise FormatError(name, lineno, "at least one SampledProfile event", "end of file")

    frame_cache: dict[str, int] = {}
    for ts, tid, frames, line in stacks:
        waiting = pending.get((ts, tid))
        idx = next((i for i in waiting if samples[i][6] < 0), None) if waiting else None
        if idx is None:
            if ts in other_ts or waiting:
                continue  # the stack of a context switch or other event
            raise FormatError(name, line, f"a SampledProfile event with TimeStamp {ts} and ThreadID {tid} for this stack", "a stack with no sample")
        ids = []
        for fr in reversed(frames):
            fid = frame_cache.get(fr)
            if fid is None:
                fid = frame_cache[fr] = b.frame(*split_frame_name(fr))
            ids.append(fid)
        samples[idx][6] = b.stack(ids)
    no_stack = None
    for s in samples:
        if s[6] < 0:
            if no_stack is None:
                no_stack = b.stack((b.frame("", NO_STACK),))
            s[6] = no_stack
    return b.build(
        [s[6] for s in samples],
        [s[4] for s in samples],
        process=[s[2] for s in samples],
        thread=np.array([s[1] for s in samples], dtype=np.int64),
        time=np.array([s[0] for s in samples], dtype=np.float64) * 1e-6,
        cpu=np.array([np.nan if s[3] is None else s[3] for s in samples], dtype=np.float64),
        meta={"format": "xperf_dumper", "source": name, "weight_unit": "samples"},
    )


def _timestamp(rest: str, cols: list[str]) -> str:
    if "TimeStamp" in cols:
        parts = rest.split(",")
        i = cols.index("TimeStamp")
        if i < len(parts):
            return parts[i].strip()
    return ""


def _check_header(name, headers, lineno) -> None:
    for event, required in (("SampledProfile", SAMPLE_REQUIRED), ("Stack", STACK_REQUIRED)):
        if event not in headers:
            raise FormatError(name, lineno, f"a '{event}, ...' column list in the header before EndHeader", "EndHeader")
        cols, at = headers[event]
        missing = [c for c in required if c not in cols]
        if missing:
            raise FormatError(name, at, f"column(s) {', '.join(repr(m) for m in missing)} in the {event} header", ", ".join([event] + cols))
