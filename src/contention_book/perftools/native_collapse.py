"""``perftools collapse`` of a ``perf script`` capture through the small C core in ``native/collapse.c``.

Why C: collapsing is one pass over hundreds of MB of text, and the Arrow reader in
:mod:`.importers.perf_script` spends most of its time in per-line regular expressions.  The C core
reads the usual shape only (see its header comment) and hands back, per sample, the stack, the event
and the period; this module then keeps one event, weighs and folds exactly as
:func:`.importers.perf_script.collapse` does.  For any other shape, a gzip'd file, a pipe, or when no
C compiler is at hand, :func:`collapse` returns ``None`` and the caller uses the Python reader.

How the core is compiled, loaded and turned off: :mod:`.native_build`.
"""
from __future__ import annotations

import ctypes
import os

from . import native_build


def _declare(lib) -> None:
    lib.pc_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.pc_parse.restype = ctypes.c_int
    lib.pc_count.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.pc_count.restype = ctypes.c_int64
    lib.pc_samples.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 3
    lib.pc_table.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    lib.pc_free.argtypes = [ctypes.c_void_p]


def parse(path):
    """(stack ids, event ids, periods, frame names, stack offsets, stack frames, events) or None."""
    import numpy as np

    from .builder import frame_name

    if not native_build.plain_file(path):
        return None
    lib = native_build.load("collapse", _declare)  # None when turned off or not built
    if lib is None:
        return None
    handle = ctypes.c_void_p()
    try:
        status = lib.pc_parse(os.fsencode(path), ctypes.byref(handle))
        if status != native_build.OK or lib.pc_count(handle, 0) == 0:
            return None  # another shape, or nothing read: the Python reader says what
        n = lib.pc_count(handle, 0)
        stack = np.empty(n, dtype=np.int32)
        event = np.empty(n, dtype=np.int32)
        period = np.empty(n, dtype=np.float64)
        lib.pc_samples(handle, stack.ctypes.data, event.ctypes.data, period.ctypes.data)
        count = lambda what: lib.pc_count(handle, what)  # noqa: E731
        copy = lambda which, arena, offsets: lib.pc_table(handle, which, arena, offsets)  # noqa: E731
        names = [frame_name(*key.partition("\x00")[::2]) for key in native_build.texts(count, copy, 0, 1, 2)]
        values, offsets = native_build.table(count, copy, 1, 3, 4, elem="int32")
        events = native_build.texts(count, copy, 2, 5, 6)
        return stack, event, period, names, offsets, values, events
    finally:
        lib.pc_free(handle)


def collapse(path, *, weight: str | None = None, event: str | None = None,
             integer: bool = False) -> tuple[list[str], dict] | None:
    """What :func:`.importers.perf_script.collapse` returns for this file (without a process root), or
    None when the C core does not read it."""
    import numpy as np

    from .errors import FormatError
    from .importers import folded
    from .source import display_name

    got = parse(path)
    if got is None:
        return None
    stack, ev, period, names, offsets, values, events = got
    counts_arr = np.bincount(ev, minlength=len(events))
    counts = {name: int(c) for name, c in zip(events, counts_arr.tolist())}  # in order of first appearance
    listing = ", ".join(f"{k} ({v:,} samples)" for k, v in counts.items())
    if event is None:
        event = events[0]
    elif event not in counts:
        raise ValueError(f"{display_name(path)}: no samples of event {event!r}; the file has {listing}")
    warnings = []
    if len(counts) > 1:
        keep = ev == events.index(event)
        stack, period = stack[keep], period[keep]
        others = ", ".join(f"{k} ({v:,} samples)" for k, v in counts.items() if k != event)
        warnings.append(f"{display_name(path)}: kept event {event} ({counts[event]:,} samples); "
                        f"left out {others}; choose one with --event NAME")
    has_period = not np.isnan(period).any()
    how = weight or ("period" if has_period else "samples")
    if how == "period":
        if not has_period:
            raise FormatError(display_name(path), None, "a period on every sample header for weight='period' "
                              "(perf script -F ...,period)")
        w = period
    else:
        w = np.ones(len(stack))
    lines = folded.lines_from(names, offsets, values, stack, w, integer=integer)
    meta = {"format": "perf_script", "source": display_name(path),
            "weight_unit": f"{event} period" if how == "period" else "samples", "event": event,
            "events": list(counts), "event_samples": counts, "skipped_lines": 0, "skipped_first_lines": [],
            "warnings": warnings}
    return lines, meta
