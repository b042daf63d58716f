"""Opening export files the way they arrive: gzip'd or not, any BOM, CRLF,
and reading big ones without holding on to memory.

WPA on Windows writes UTF-8 with a BOM (or UTF-16 when a table is pasted
into Notepad), perf output is plain UTF-8, and our own captures are stored
gzip'd.  Importers ask this module for bytes or text and never care which.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import io
import os
import queue
import threading
from typing import BinaryIO

__all__ = [
    "open_binary", "open_text", "read_head", "detect_encoding", "display_name",
    "arrow_pool", "arrow_pool_scope", "prefetch", "prefetch_many",
]

_GZIP_MAGIC = b"\x1f\x8b"


def display_name(path) -> str:
    return os.fspath(path) if not hasattr(path, "read") else getattr(path, "name", "<stream>")


def open_binary(path) -> BinaryIO:
    """Raw bytes of ``path``, transparently gunzipped."""
    f = open(path, "rb")
    if f.peek(2)[:2] == _GZIP_MAGIC:
        f.close()
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return f


def detect_encoding(head: bytes) -> tuple[str, int]:
    """``(encoding, bom_length)`` from the first bytes of a file."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", 3
    if head.startswith(codecs.BOM_UTF16_LE) or head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16", 0  # the utf-16 codec consumes its own BOM
    return "utf-8", 0


def open_text(path, errors: str = "replace") -> io.TextIOBase:
    """Text of ``path`` with BOM removed and CRLF/CR turned into LF.  ``errors="strict"``: a byte that is
    not the file's encoding raises UnicodeDecodeError (:func:`decode_error` then says where)."""
    raw = open_binary(path)
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    enc, bom = detect_encoding(head)
    if bom:
        raw.read(bom)
    return io.TextIOWrapper(raw, encoding=enc, errors=errors, newline=None)


def decode_error(path):
    """The FormatError for the first bytes of ``path`` that are not UTF-8 (naming the line and the byte
    offset), or None when the file decodes (or is UTF-16, whose lines cannot be cut on bytes)."""
    from .errors import FormatError

    with open_binary(path) as raw:
        enc, _ = detect_encoding(raw.peek(4)[:4] if hasattr(raw, "peek") else b"")
        if enc != "utf-8":
            return None
        offset = 0
        for line_no, line in enumerate(raw, 1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return FormatError(display_name(path), line_no,
                                   f"UTF-8 text (byte offset {offset + exc.start:,} of the file is not; "
                                   "re-export the file as UTF-8)",
                                   f"{line[exc.start:exc.end]!r} in {line.decode('utf-8', errors='replace')}")
            offset += len(line)
    return None


def read_head(path, size: int = 65536) -> str:
    """The first ``size`` bytes of ``path`` as text (for sniffing)."""
    with open_binary(path) as raw:
        data = raw.read(size)
    enc, bom = detect_encoding(data[:4])
    text = data[bom:].decode(enc, errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")


_POOL: list = []


def arrow_pool():
    """The Arrow memory pool for streaming a big export: jemalloc if built.

    Streaming allocates and frees a few MB per 1 MB block; jemalloc hands
    freed pages back to the OS sooner than the default mimalloc.  Measured
    on a 192 MB wpaexporter CSV: peak RSS 283 MB instead of 325 MB at the
    same speed.  (Zero decay, ``jemalloc_set_decay_ms(0)``, gets 216 MB but
    doubles the time in page faults.)  ``None`` (the default pool) on builds
    without jemalloc.  While a file is read it is also made the default
    pool (:func:`arrow_pool_scope`), since not every Arrow allocation on the
    way takes a pool argument."""
    import pyarrow as pa

    if not _POOL:
        try:
            _POOL.append(pa.jemalloc_memory_pool())
        except (NotImplementedError, pa.ArrowNotImplementedError, AttributeError):
            _POOL.append(None)
    return _POOL[0]


@contextlib.contextmanager
def arrow_pool_scope():
    """Make :func:`arrow_pool` Arrow's default pool while a big file is read."""
    import pyarrow as pa

    pool = arrow_pool()
    if pool is None:
        yield
        return
    old = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(old)


def prefetch(iterable, depth: int = 2):
    """Iterate ``iterable`` in a background thread, ``depth`` items ahead.

    pyarrow's CSV reader releases the GIL while it parses, so the next 1 MB
    block is parsed while Python interns the previous one.  Exceptions
    reach the consumer."""
    for _, item in prefetch_many([iterable], depth):
        yield item


def prefetch_many(iterables, depth: int = 2):
    """Like :func:`prefetch` for several iterables at once, each in its own
    thread; yields ``(index, item)`` in arrival order."""
    iterables = list(iterables)
    q: queue.Queue = queue.Queue(maxsize=max(1, depth * len(iterables)))
    done = object()
    stop = threading.Event()

    def run(i, iterable):
        try:
            for item in iterable:
                if stop.is_set():
                    return
                q.put((i, item, None))
            q.put((i, done, None))
        except BaseException as exc:  # handed to the consumer
            q.put((i, done, exc))

    threads = [threading.Thread(target=run, args=(i, it), name=f"perftools-prefetch-{i}", daemon=True)
               for i, it in enumerate(iterables)]
    for t in threads:
        t.start()
    try:
        left = len(threads)
        while left:
            i, item, exc = q.get()
            if item is done:
                if exc is not None:
                    raise exc
                left -= 1
                continue
            yield i, item
    finally:
        stop.set()
        for t in threads:
            while t.is_alive():  # unblock a producer waiting on a full queue
                try:
                    q.get(timeout=0.05)
                except queue.Empty:
                    pass


STDIN_NAMES = ("-", "/dev/stdin")


def is_stream_path(path) -> bool:
    """``-``, ``/dev/stdin``, a named pipe or a process substitution: input
    that can be read only once."""
    if hasattr(path, "read"):
        return False
    p = os.fspath(path)
    if p in STDIN_NAMES:
        return True
    try:
        import stat

        return stat.S_ISFIFO(os.stat(p).st_mode) or stat.S_ISCHR(os.stat(p).st_mode)
    except OSError:
        return False


def spool(path, directory=None) -> str:
    """Copy a once-only input (see :func:`is_stream_path`) to a temporary
    file and return its path; the caller deletes it.

    Three of the five importers read their file more than once (sniffing
    reads its head, the CSV reader re-opens it by name), so a pipe is made
    a file first; a gzip'd stream stays gzip'd and is unpacked on reading."""
    import shutil
    import sys
    import tempfile

    p = os.fspath(path)
    src = sys.stdin.buffer if p == "-" else open(p, "rb")
    try:
        fd, tmp = tempfile.mkstemp(prefix="perftools-stdin-", dir=directory)
        with os.fdopen(fd, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    finally:
        if src is not sys.stdin.buffer:
            src.close()
    return tmp


def gzip_errors_named(fn):
    """Decorator: a truncated or corrupt ``.gz`` becomes a FormatError that
    names the file, instead of zlib's or Arrow's anonymous EOF error."""
    import functools
    import zlib

    @functools.wraps(fn)
    def wrapper(path, *args, **kwargs):
        try:
            return fn(path, *args, **kwargs)
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            err = exc
        except OSError as exc:  # Arrow: "Truncated compressed stream"
            if "compress" not in str(exc).lower() or not _is_gzip(path):
                raise
            err = exc
        from .errors import FormatError

        raise FormatError(display_name(path), None, "a complete gzip stream",
                          f"a truncated or damaged .gz ({err})") from None

    return wrapper


def _is_gzip(path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == _GZIP_MAGIC
    except (OSError, TypeError):
        return False
