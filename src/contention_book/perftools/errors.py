"""The one exception every importer raises for input it cannot read.

Exports come from tools we do not control (WPA, xperf, perf), are often
hand-edited or truncated, and are read in batch by the book's notebooks.  A
single exception class, whose message always names the file, the line and
what was expected there, lets a caller catch "this file is bad" in one place
and lets a reader fix the file without reading our code.
"""

from __future__ import annotations

import os

__all__ = ["FormatError"]


def _short(text: str, limit: int = 80) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class FormatError(ValueError):
    """Input does not follow the format it claims (or was sniffed) to be.

    ``path``: the file (or ``"<string>"``); ``line``: 1-based line number
    (``None`` only when no line applies); ``expected``: what the reader
    wanted there; ``found``: an excerpt of what it got (optional).
    """

    def __init__(self, path, line: int | None, expected: str, found: str | None = None):
        self.path = os.fspath(path) if path is not None else "<input>"
        self.line = line
        self.expected = expected
        self.found = None if found is None else _short(str(found))
        where = self.path if line is None else f"{self.path}, line {line}"
        msg = f"{where}: expected {expected}"
        if self.found is not None:
            msg += f"; found {self.found!r}"
        super().__init__(msg)

    def __reduce__(self):  # keep picklable (multiprocessing, pytest-xdist)
        return (type(self), (self.path, self.line, self.expected, self.found))
