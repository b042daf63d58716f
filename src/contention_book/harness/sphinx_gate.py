"""Sphinx reads the book while its chapters still execute, and waits at each chapter until it is written.

Why: a full rebuild executed the chapters (two kernels on two CPUs) and only then started Sphinx, which spent
about 7 s alone on one CPU: starting, reading every page, writing the HTML.  Started with the chapters instead,
in a child process at low priority, Sphinx starts and reads the pages that do not wait on a chapter (the
introduction, the Data page, the perftools pages, the chapters that finished first) on whatever CPU a kernel
leaves free, and what is left after the last chapter is that chapter's pages, the Findings page and the writing.

The two sides:

- :class:`GatedSphinx`, in the builder: starts the child with the documents still to come, in the order they are
  expected, and tells it on its standard input, one name a line, each document as it is written.
- :func:`setup`, a Sphinx extension listed in ``_config.yml``: in a child started that way (and only there), it
  reads those documents last, re-reads them even if Sphinx thinks them unchanged, and before reading each one
  waits for its name.  If the builder goes away, standard input ends, and the child reads what is there.
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading

PENDING_ENV = "CONTENTION_BOOK_PENDING_DOCS"  # the documents still to come, comma-separated, in expected order
NICE = 10  # the child's priority while kernels run: it takes a CPU a kernel leaves free, not one it needs
WRITERS = 2  # Sphinx's own process resolves each page while the others write (parallel - 1 of them)


class _Gate:
    def __init__(self, pending: list[str], stream) -> None:
        self.pending, self.ready, self.stream, self.ended = pending, set(), stream, False

    def wait(self, docname: str) -> None:
        while docname in self.pending and docname not in self.ready and not self.ended:
            line = self.stream.readline()
            if not line:  # the builder is gone: read what is on disk
                self.ended = True
            self.ready.add(line.strip())


_gate: _Gate | None = None


def _outdated(app, env, added, changed, removed) -> list[str]:  # noqa: ARG001 - Sphinx's signature
    return list(_gate.pending) if _gate else []


def _order(app, env, docnames: list[str]) -> None:  # noqa: ARG001
    if _gate:
        later = [d for d in _gate.pending if d in docnames]
        docnames[:] = [d for d in docnames if d not in later] + later


def _wait(app, env, docname: str) -> None:  # noqa: ARG001
    if _gate:
        _gate.wait(docname)


def _write_in_parallel(app, env) -> None:  # noqa: ARG001 - emitted once every document is read
    """Write the pages on every CPU: by now the chapters have all executed, so the CPUs are Sphinx's.  Set only
    after reading, which stays serial (a gated read waits for each chapter in turn)."""
    app.parallel = max(1, min(WRITERS, os.cpu_count() or 1))


def setup(app):
    global _gate
    pending = [d for d in os.environ.get(PENDING_ENV, "").split(",") if d]
    _gate = _Gate(pending, sys.stdin) if pending else None
    app.connect("env-get-outdated", _outdated)
    app.connect("env-before-read-docs", _order)
    app.connect("env-purge-doc", _wait)  # emitted just before each document is read
    if _gate:
        app.connect("env-updated", _write_in_parallel)
    return {"parallel_read_safe": False, "parallel_write_safe": True}


class GatedSphinx:
    """The builder's side: Sphinx (``python -m contention_book.harness.book sphinx``) in a child process, told
    when each of ``pending`` (document names, in the order they are expected) is written.  Names given before
    :meth:`start` are passed on when it starts."""

    def __init__(self, pending: list[str], command: list[str] | None = None) -> None:
        self.pending, self._proc, self._told = pending, None, []
        self._command = command or [sys.executable, "-m", "contention_book.harness.book", "sphinx"]
        self._lock = threading.Lock()

    def start(self) -> None:
        env = {**os.environ, PENDING_ENV: ",".join(self.pending)}
        with self._lock:
            self._proc = subprocess.Popen(self._command, stdin=subprocess.PIPE, text=True, env=env)
            self._send(self._told)

    def written(self, *docnames: str) -> None:
        """Tell the child these documents are on disk (from any thread)."""
        with self._lock:
            if self._proc is None:
                self._told.extend(docnames)
            else:
                self._send(docnames)

    def _send(self, docnames) -> None:
        try:
            self._proc.stdin.write("".join(f"{d}\n" for d in docnames))
            self._proc.stdin.flush()
        except (BrokenPipeError, ValueError):  # the child has already stopped; finish() reports how
            pass

    def finish(self) -> int:
        """Every document is written: wait for the HTML, and return Sphinx's exit status (0: no warnings)."""
        with self._lock:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:
                pass
        return self._proc.wait()

    def cancel(self) -> None:
        """The build failed before its pages were all written: stop the child."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
