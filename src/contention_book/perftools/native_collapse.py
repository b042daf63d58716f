"""``perftools collapse`` of a ``perf script`` capture through the small C core in ``native/collapse.c``.

Why C: collapsing is one pass over hundreds of MB of text, and the Arrow reader in
:mod:`.importers.perf_script` spends most of its time in per-line regular expressions.  The C core
reads the usual shape only (see its header comment) and hands back, per sample, the stack, the event
and the period; this module then keeps one event, weighs and folds exactly as
:func:`.importers.perf_script.collapse` does.  For any other shape, a gzip'd file, a pipe, or when no
C compiler is at hand, :func:`collapse` returns ``None`` and the caller uses the Python reader.

The library is compiled on first use with the system ``cc`` (``make setup`` does it ahead), into the
package directory or, when that is read-only, ``~/.cache/contention-book``; its name carries the
source's hash, so an edited source is rebuilt.  ``CONTENTION_BOOK_PERFTOOLS_NATIVE=0`` turns it off
(the tests compare both readers that way).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "native" / "collapse.c"
OFF_ENV = "CONTENTION_BOOK_PERFTOOLS_NATIVE"
PC_OK, PC_FALLBACK, PC_IOERROR, PC_NOMEM = 0, 1, 2, 3
_lib = None
_tried = False


def _candidates(tag: str) -> list[Path]:
    name = f"_collapse-{tag}.so"
    return [SOURCE.parent / name, Path.home() / ".cache" / "contention-book" / "perftools" / name]


def library_path(build: bool = True) -> Path | None:
    """The compiled core for this source (built when missing and ``build``), or None."""
    if not SOURCE.is_file():
        return None
    tag = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    for path in _candidates(tag):
        if path.is_file():
            return path
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not build or cc is None or sys.platform == "win32":
        return None
    for path in _candidates(tag):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-pthread", "-o", str(tmp), str(SOURCE)],
                                  capture_output=True, text=True, timeout=120)
            if done.returncode == 0:
                os.replace(tmp, path)
                return path
            tmp.unlink(missing_ok=True)
        except OSError:
            continue
    return None


def _load():
    global _lib, _tried
    if _tried:
        return _lib
    _tried = True
    path = library_path()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(str(path))
    except OSError:
        return None
    lib.pc_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.pc_parse.restype = ctypes.c_int
    lib.pc_count.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.pc_count.restype = ctypes.c_int64
    lib.pc_samples.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 3
    lib.pc_table.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    lib.pc_free.argtypes = [ctypes.c_void_p]
    _lib = lib
    return lib


def available() -> bool:
    return os.environ.get(OFF_ENV, "1") != "0" and _load() is not None


def _plain_file(path) -> bool:
    """A regular, uncompressed file the C core can open itself."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "-":
        return False
    p = Path(path)
    if not p.is_file():
        return False
    with open(p, "rb") as fh:
        return fh.read(2) != b"\x1f\x8b"


def _table(lib, handle, which: int, n_what: int, bytes_what: int):
    import numpy as np

    n, size = lib.pc_count(handle, n_what), lib.pc_count(handle, bytes_what)
    elem = np.int32 if which == 1 else np.uint8
    arena = np.empty(size, dtype=elem)
    offsets = np.empty(n + 1, dtype=np.int64)
    lib.pc_table(handle, which, arena.ctypes.data, offsets.ctypes.data)
    return arena, offsets


def parse(path):
    """(stack ids, event ids, periods, frame names, stack offsets, stack frames, events) or None."""
    import numpy as np

    from .builder import frame_name

    if os.environ.get(OFF_ENV, "1") == "0" or not _plain_file(path):
        return None
    lib = _load()
    if lib is None:
        return None
    handle = ctypes.c_void_p()
    try:
        status = lib.pc_parse(os.fsencode(path), ctypes.byref(handle))
        if status != PC_OK or lib.pc_count(handle, 0) == 0:
            return None  # another shape, or nothing read: the Python reader says what
        n = lib.pc_count(handle, 0)
        stack = np.empty(n, dtype=np.int32)
        event = np.empty(n, dtype=np.int32)
        period = np.empty(n, dtype=np.float64)
        lib.pc_samples(handle, stack.ctypes.data, event.ctypes.data, period.ctypes.data)
        arena, off = _table(lib, handle, 0, 1, 2)
        text = arena.tobytes()
        names = []
        for a, b in zip(off[:-1].tolist(), off[1:].tolist()):
            module, _, function = text[a:b].decode("utf-8").partition("\x00")
            names.append(frame_name(module, function))
        values, offsets = _table(lib, handle, 1, 3, 4)
        ev_arena, ev_off = _table(lib, handle, 2, 5, 6)
        ev_text = ev_arena.tobytes()
        events = [ev_text[a:b].decode("utf-8") for a, b in zip(ev_off[:-1].tolist(), ev_off[1:].tolist())]
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


if __name__ == "__main__":  # make setup: build the core ahead of first use
    built = library_path()
    print(f"perftools native core: {built}" if built else "perftools native core: not built (no C compiler); "
          "the Python reader is used")
