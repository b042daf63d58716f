"""Reading a WPA CSV export through the small C core in ``native/wpa_csv.c``.

:mod:`.importers.wpa_csv` calls :func:`parse` first and uses what it returns: per row the stack and
process as indices into their distinct cell texts, and the numeric columns as float64 arrays, just as
its pyarrow reader would have typed them.  ``None`` means the core stepped aside (another shape, a
decimal comma, UTF-16, gzip, a pipe, no compiler) and the pyarrow reader reads the file, with its
line-numbered errors.  How the core is compiled, loaded and turned off: :mod:`.native_build`.
"""
from __future__ import annotations

import ctypes
import os

from . import native_build

ROLE_STACK, ROLE_PROCESS, ROLE_NUMBER = 1, 2, 3


def _declare(lib) -> None:
    lib.wc_parse.argtypes = [ctypes.c_char_p, ctypes.c_char, ctypes.c_int, ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_void_p)]
    lib.wc_parse.restype = ctypes.c_int
    lib.wc_count.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.wc_count.restype = ctypes.c_int64
    lib.wc_column.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    lib.wc_table.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    lib.wc_free.argtypes = [ctypes.c_void_p]


def _unquote(cell: str) -> str:
    """A cell's text as the CSV reader gives it (RFC 4180: outer quotes off, doubled quotes single)."""
    return cell[1:-1].replace('""', '"') if cell.startswith('"') else cell


def parse(path, delimiter: str, ncols: int, stack: int, process: int | None, numbers: dict[str, int]):
    """``(stacks, stack_idx, processes, process_idx, {field: float64 array})`` or None.

    ``stack``, ``process``: column positions; ``numbers``: field -> column position.  ``stacks`` and
    ``processes`` are the distinct cell texts in order of first appearance; ``*_idx`` index them per row.
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
        status = lib.wc_parse(os.fsencode(path), delimiter.encode(), ncols, roles.ctypes.data, ctypes.byref(handle))
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

        try:
            stacks = texts(0)
            processes = texts(1) if process is not None else None
        except UnicodeDecodeError:
            return None  # pyarrow says where
        values = {field: column(2 + slot, np.float64) for slot, field in enumerate(fields)}
        process_idx = column(1, np.int32) if process is not None else None
        return stacks, column(0, np.int32), processes, process_idx, values
    finally:
        if handle:
            lib.wc_free(handle)
