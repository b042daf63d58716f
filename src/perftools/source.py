"""Opening export files the way they arrive: gzip'd or not, any BOM, CRLF.

WPA on Windows writes UTF-8 with a BOM (or UTF-16 when a table is pasted
into Notepad), perf output is plain UTF-8, and our own captures are stored
gzip'd.  Importers ask this module for bytes or text and never care which.
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
from typing import BinaryIO

__all__ = ["open_binary", "open_text", "read_head", "detect_encoding", "display_name"]

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


def open_text(path) -> io.TextIOBase:
    """Text of ``path`` with BOM removed and CRLF/CR turned into LF."""
    raw = open_binary(path)
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    enc, bom = detect_encoding(head)
    if bom:
        raw.read(bom)
    return io.TextIOWrapper(raw, encoding=enc, errors="replace", newline=None)


def read_head(path, size: int = 65536) -> str:
    """The first ``size`` bytes of ``path`` as text (for sniffing)."""
    with open_binary(path) as raw:
        data = raw.read(size)
    enc, bom = detect_encoding(data[:4])
    text = data[bom:].decode(enc, errors="replace")
    return text.replace("\r\n", "\n").replace("\r", "\n")
