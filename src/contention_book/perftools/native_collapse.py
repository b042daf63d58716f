"""``perftools collapse`` of a ``perf script`` capture through the small C core in ``native/collapse.c``.

Why C: collapsing is one pass over hundreds of MB of text, and the Arrow reader in
:mod:`.importers.perf_script` spends most of its time in per-line regular expressions; building the
folded text in Python then cost as much again (a ``str.join`` per distinct stack, a sort).  The C core
reads the shapes real captures have (see its header comment: frames led by tabs or spaces, perf without
-g, CRLF, UTF-8 names, damaged lines skipped and counted as Python counts them), keeps per (event, stack) a sample count and a
period sum, so that its memory follows the distinct stacks and not the file, and writes the sorted
folded lines itself.  This module only picks the event and the weight, exactly as
:func:`.importers.perf_script.collapse` does, and imports nothing heavy (no numpy, no pyarrow).  For
any other shape, a gzip'd file, ``strict`` with a damaged line, or when no C compiler is at hand, :func:`write` and
:func:`collapse` return ``None`` and the caller uses the Python reader.

How the core is compiled, loaded and turned off: :mod:`.native_build`.
"""
from __future__ import annotations

import ctypes
import errno
import os
import tempfile

from . import native_build


def _declare(lib) -> None:
    lib.pc_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.pc_parse.restype = ctypes.c_int
    lib.pc_count.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.pc_count.restype = ctypes.c_int64
    lib.pc_event.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int64,
                             ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int64)]
    lib.pc_event.restype = ctypes.c_int64
    lib.pc_folded.argtypes = [ctypes.c_void_p, ctypes.c_int32, ctypes.c_int, ctypes.c_int]
    lib.pc_folded.restype = ctypes.c_int64
    lib.pc_free.argtypes = [ctypes.c_void_p]
    lib.pc_bad_text.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64]
    lib.pc_bad_text.restype = ctypes.c_int64


#: perf_script's FRAME_EXPECTED, ORPHAN_EXPECTED and HEADER_EXPECTED (that module loads pyarrow; a test
#: keeps them equal), by the core's kind of skipped line
FRAME_EXPECTED = "a stack frame line 'ADDRESS SYMBOL+OFFSET (DSO)'"
HEADER_EXPECTED = "a sample header 'comm [pid/]tid [[cpu]] [time:] [period] event:'"
ORPHAN_EXPECTED = HEADER_EXPECTED + " before the stack frames"
_EXPECTED = (FRAME_EXPECTED, ORPHAN_EXPECTED, HEADER_EXPECTED)


def _skipped(lib, handle, name: str) -> tuple[int, list[int], str | None]:
    """Frame lines the core skipped inside samples: how many, the first three line numbers, and the
    warning perf_script's reader gives for them (None when there are none)."""
    from .errors import FormatError

    count = lib.pc_count(handle, 8)
    if not count:
        return 0, [], None
    first = [lib.pc_count(handle, 9 + i) for i in range(min(count, 3))]
    n = lib.pc_bad_text(handle, None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    lib.pc_bad_text(handle, buf, n + 1)
    err = FormatError(name, first[0], _EXPECTED[lib.pc_count(handle, 12)], buf.raw[:n].decode("utf-8"))
    where = ", ".join(map(str, first)) + (", ..." if count > 3 else "")
    return count, first, (f"{name}: skipped {count:,} malformed line(s), at line {where} (line {err.line}: expected "
                          f"{err.expected}; found {err.found!r}); --strict makes this an error")


def _events(lib, handle) -> list[tuple[str, int, int]]:
    """(name, samples, samples without a period) per event, in order of first appearance."""
    out = []
    samples, noperiod = ctypes.c_int64(), ctypes.c_int64()
    for i in range(lib.pc_count(handle, 5)):
        n = lib.pc_event(handle, i, None, 0, ctypes.byref(samples), ctypes.byref(noperiod))
        buf = ctypes.create_string_buffer(n + 1)
        lib.pc_event(handle, i, buf, n + 1, ctypes.byref(samples), ctypes.byref(noperiod))
        out.append((buf.raw[:n].decode("utf-8"), samples.value, noperiod.value))
    return out


def write(path, fd: int, *, weight: str | None = None, event: str | None = None, strict: bool = False) -> dict | None:
    """Write the folded lines of ``path`` to the open file descriptor ``fd`` and return the meta
    :func:`.importers.perf_script.collapse` gives, or None (nothing written) when the C core does not
    read this file (or, ``strict``, skipped a malformed line: the Python reader raises at it).  A closed
    pipe raises BrokenPipeError."""
    from .errors import FormatError
    from .source import display_name

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
        skipped, skipped_first, skipped_warning = _skipped(lib, handle, display_name(path))
        if skipped and strict:
            return None
        events = _events(lib, handle)
        counts = {name: n for name, n, _ in events}
        listing = ", ".join(f"{k} ({v:,} samples)" for k, v in counts.items())
        if event is None:
            event = events[0][0]
        elif event not in counts:
            raise ValueError(f"{display_name(path)}: no samples of event {event!r}; the file has {listing}")
        index = [name for name, _, _ in events].index(event)
        warnings = []
        if len(counts) > 1:
            others = ", ".join(f"{k} ({v:,} samples)" for k, v in counts.items() if k != event)
            warnings.append(f"{display_name(path)}: kept event {event} ({counts[event]:,} samples); "
                            f"left out {others}; choose one with --event NAME")
        if skipped_warning:
            warnings.append(skipped_warning)
        has_period = events[index][2] == 0
        how = weight or ("period" if has_period else "samples")
        if how == "period" and not has_period:
            raise FormatError(display_name(path), None, "a period on every sample header for weight='period' "
                              "(perf script -F ...,period)")
        written = lib.pc_folded(handle, index, how == "period", fd)
        if written == -native_build.NOMEM:
            raise MemoryError("perftools collapse: out of memory while writing the folded lines")
        if written < 0:
            code = int(-written - 1000)
            if code == errno.EPIPE:
                raise BrokenPipeError(code, os.strerror(code))
            raise OSError(code, os.strerror(code))
        return {"format": "perf_script", "source": display_name(path),
                "weight_unit": f"{event} period" if how == "period" else "samples", "event": event,
                "events": list(counts), "event_samples": counts, "skipped_lines": skipped, "skipped_first_lines": skipped_first,
                "warnings": warnings, "lines": int(written)}
    finally:
        if handle:
            lib.pc_free(handle)


def collapse(path, *, weight: str | None = None, event: str | None = None,
             strict: bool = False) -> tuple[list[str], dict] | None:
    """What :func:`.importers.perf_script.collapse` returns for this file (without a process root), or
    None when the C core does not read it: :func:`write` into a temporary file, read back (for tests and
    callers that want the lines in hand)."""
    with tempfile.TemporaryFile() as tmp:
        meta = write(path, tmp.fileno(), weight=weight, event=event, strict=strict)
        if meta is None:
            return None
        tmp.seek(0)
        lines = tmp.read().decode("utf-8").splitlines()
    meta.pop("lines")
    return lines, meta
