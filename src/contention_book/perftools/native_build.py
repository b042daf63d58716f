"""Compiling and loading perftools' small C cores (``native/*.c``), with ctypes.

Why C: the two big-file readers (``perf script`` collapse, WPA CSV) are one pass over hundreds of MB
of text, which Python cannot make at memory speed.  Each core reads only the usual shape of its format
and says "fall back" for anything else; the Python readers stay the reference and the tests compare
both.  A core is compiled on first use with the system ``cc`` (``make setup`` does it ahead), into the
package directory or, when that is read-only, ``~/.cache/contention-book``; its file name carries the
hash of its source and of ``native/core.h``, so an edited source is rebuilt.  No compiler, Windows, or
``CONTENTION_BOOK_PERFTOOLS_NATIVE=0`` (how the tests compare both readers): the Python readers are used.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

NATIVE = Path(__file__).resolve().parent / "native"
CORES = ("collapse", "wpa_csv")
OFF_ENV = "CONTENTION_BOOK_PERFTOOLS_NATIVE"
OK, FALLBACK, IOERROR, NOMEM = 0, 1, 2, 3  # core.h's CORE_* status codes
_loaded: dict[str, ctypes.CDLL | None] = {}


def _candidates(name: str, tag: str) -> list[Path]:
    file = f"_{name}-{tag}.so"
    return [NATIVE / file, Path.home() / ".cache" / "contention-book" / "perftools" / file]


def library_path(name: str, build: bool = True) -> Path | None:
    """The compiled core ``native/<name>.c`` for its current source (built when missing and ``build``)."""
    source = NATIVE / f"{name}.c"
    if not source.is_file():
        return None
    digest = hashlib.sha256(source.read_bytes())
    digest.update((NATIVE / "core.h").read_bytes())
    tag = digest.hexdigest()[:12]
    for path in _candidates(name, tag):
        if path.is_file():
            return path
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not build or cc is None or sys.platform == "win32":
        return None
    for path in _candidates(name, tag):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-pthread", "-o", str(tmp), str(source)],
                                  capture_output=True, text=True, timeout=120)
            if done.returncode == 0:
                os.replace(tmp, path)
                return path
            tmp.unlink(missing_ok=True)
        except OSError:
            continue
    return None


def enabled() -> bool:
    return os.environ.get(OFF_ENV, "1") != "0"


def load(name: str, declare) -> ctypes.CDLL | None:
    """The loaded core (``declare(lib)`` sets its signatures once), or None when off or unavailable."""
    if not enabled():
        return None
    if name not in _loaded:
        path = library_path(name)
        lib = None
        if path is not None:
            try:
                lib = ctypes.CDLL(str(path))
                declare(lib)
            except (OSError, AttributeError):
                lib = None
        _loaded[name] = lib
    return _loaded[name]


def plain_file(path) -> bool:
    """A regular, uncompressed file a core can open itself (not a pipe, not '-', not gzip)."""
    if not isinstance(path, (str, os.PathLike)) or str(path) == "-":
        return False
    p = Path(path)
    if not p.is_file():
        return False
    with open(p, "rb") as fh:
        return fh.read(2) != b"\x1f\x8b"


def table(count, copy, which: int, n_what: int, bytes_what: int, elem="uint8"):
    """An interned table out of a core: its arena and its n + 1 offsets (numpy arrays)."""
    import numpy as np

    n, size = count(n_what), count(bytes_what)
    arena = np.empty(size, dtype=elem)
    offsets = np.empty(n + 1, dtype=np.int64)
    copy(which, arena.ctypes.data, offsets.ctypes.data)
    return arena, offsets


def texts(count, copy, which: int, n_what: int, bytes_what: int) -> list[str]:
    """An interned table of byte strings out of a core, decoded (UTF-8; UnicodeDecodeError otherwise)."""
    arena, offsets = table(count, copy, which, n_what, bytes_what)
    raw, bounds = arena.tobytes(), offsets.tolist()
    return [raw[a:b].decode("utf-8") for a, b in zip(bounds[:-1], bounds[1:])]


if __name__ == "__main__":  # make setup: build the cores ahead of first use
    for core in CORES:
        built = library_path(core)
        print(f"perftools native core {core}: {built}" if built else
              f"perftools native core {core}: not built (no C compiler); the Python reader is used")
