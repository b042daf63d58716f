"""Reading a WPA CSV export through the small C core in ``native/wpa_csv.c``.

:mod:`.importers.wpa_csv` calls :func:`parse` first and uses what it returns: per row the stack and
process as indices into their distinct cell texts, and the numeric columns as float64 arrays, the values
its pyarrow reader would have parsed (decimal comma or point, thousands grouped or not).  ``None`` means
the core stepped aside (another shape, a number spelled otherwise, UTF-16, gzip, a pipe, no compiler) and the pyarrow reader reads the file, with its
line-numbered errors; a cell that is not UTF-8 raises UnicodeDecodeError.  How the core is compiled, loaded and turned off: :mod:`.native_build`.
"""
from __future__ import annotations

import ctypes
import os

from . import native_build

ROLE_STACK, ROLE_PROCESS, ROLE_NUMBER = 1, 2, 3


class SplitStacks:
    """The distinct Stack cells already split into frames by the core (``wc_split``): ``frames`` as
    ``(module, function)`` in order of first appearance, and per stack its ``lengths`` and frame ``ids``
    (what ``importers.wpa_csv._Splitter`` makes of the cell texts, without pyarrow)."""

    def __init__(self, frames: list[tuple[str, str]], lengths, ids):
        self.frames, self.lengths, self.ids = frames, lengths, ids


def _declare(lib) -> None:
    lib.wc_parse.argtypes = [ctypes.c_char_p, ctypes.c_char, ctypes.c_char, ctypes.c_int, ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_void_p)]
    lib.wc_parse.restype = ctypes.c_int
    lib.wc_count.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.wc_count.restype = ctypes.c_int64
    lib.wc_column.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    lib.wc_table.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    lib.wc_free.argtypes = [ctypes.c_void_p]
    lib.wc_split.argtypes = [ctypes.c_void_p]
    lib.wc_split.restype = ctypes.c_int
    lib.wc_split_count.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.wc_split_count.restype = ctypes.c_int64
    lib.wc_split_copy.argtypes = [ctypes.c_void_p] + [ctypes.c_void_p] * 4


def _unquote(cell: str) -> str:
    """A cell's text as the CSV reader gives it (RFC 4180: outer quotes off, doubled quotes single)."""
    return cell[1:-1].replace('""', '"') if cell.startswith('"') else cell


def parse(path, delimiter: str, ncols: int, stack: int, process: int | None, numbers: dict[str, int],
          decimal: str = "."):
    """``(stacks, stack_idx, processes, process_idx, {field: float64 array})`` or None.

    ``stack``, ``process``: column positions; ``numbers``: field -> column position; ``decimal``: the
    file's decimal mark ('.' or ','; the other one may group digits in threes, as WPA's locales write).  ``stacks`` is a
    :class:`SplitStacks`, or (when the core leaves the splitting to Python) the distinct cell texts;
    ``processes`` the distinct Process cells; both in order of first appearance; ``*_idx`` index them
    per row.
    """
    import numpy as np

    if not native_build.plain_file(path) or len(delimiter.encode()) != 1:
        return None
    with open(path, "rb") as fh:
        if fh.read(2) in (b"\xff\xfe", b"\xfe\xff"):
            return None  # UTF-16
    lib = native_build.load("wpa_csv", _declare)  # None when turned off or not built
    if lib is None:
        return None
    roles = np.zeros(ncols, dtype=np.int32)
    roles[stack] = ROLE_STACK
    if process is not None:
        roles[process] = ROLE_PROCESS
    fields = list(numbers)
    for slot, field in enumerate(fields):
        roles[numbers[field]] = ROLE_NUMBER + slot
    handle = ctypes.c_void_p()
    try:
        status = lib.wc_parse(os.fsencode(path), delimiter.encode(), decimal.encode(), ncols, roles.ctypes.data, ctypes.byref(handle))
        if status != native_build.OK or lib.wc_count(handle, 0) == 0:
            return None
        n = lib.wc_count(handle, 0)
        count = lambda what: lib.wc_count(handle, what)  # noqa: E731
        copy = lambda which, arena, offsets: lib.wc_table(handle, which, arena, offsets)  # noqa: E731

        def texts(which: int) -> list[str]:
            return list(map(_unquote, native_build.texts(count, copy, which, 1 + 2 * which, 2 + 2 * which)))

        def column(which: int, dtype):
            out = np.empty(n, dtype=dtype)
            lib.wc_column(handle, which, out.ctypes.data)
            return out

        stacks = _split(lib, handle)
        if stacks is None:
            stacks = texts(0)  # UnicodeDecodeError: the caller finds the line (source.decode_error)
        processes = texts(1) if process is not None else None
        values = {field: column(2 + slot, np.float64) for slot, field in enumerate(fields)}
        process_idx = column(1, np.int32) if process is not None else None
        return stacks, column(0, np.int32), processes, process_idx, values
    finally:
        if handle:
            lib.wc_free(handle)


def _split(lib, handle) -> SplitStacks | None:
    """The cells split by the core, or None when it leaves that to Python (non-ASCII at a frame's end)."""
    import numpy as np

    status = lib.wc_split(handle)
    if status == native_build.NOMEM:
        raise MemoryError("perftools: out of memory while splitting stacks")
    if status != native_build.OK:
        return None
    n_frames, n_bytes, n_ids = (lib.wc_split_count(handle, k) for k in range(3))
    arena = np.empty(n_bytes, dtype=np.uint8)
    frame_at = np.empty(n_frames + 1, dtype=np.int64)
    stack_at = np.empty(lib.wc_count(handle, 1) + 1, dtype=np.int64)
    ids = np.empty(n_ids, dtype=np.int32)
    lib.wc_split_copy(handle, arena.ctypes.data, frame_at.ctypes.data, stack_at.ctypes.data, ids.ctypes.data)
    raw, bounds = arena.tobytes(), frame_at.tolist()
    frames = [tuple(raw[a:b].decode("utf-8").split("\x00", 1)) for a, b in zip(bounds[:-1], bounds[1:])]
    return SplitStacks(frames, np.diff(stack_at), ids)
