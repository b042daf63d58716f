"""How long `make book` takes: once with nothing changed, once rebuilding everything.

    python benchmarks/bench_book.py            # (make bench-book)

Prints three timings measured in this run: a full rebuild (every chapter re-executed and the HTML built anew),
the same command again with nothing changed (chapters skipped by their content stamps, Sphinx incremental), and
their ratio.  Goals on the book's 2-CPU build machine: nothing changed <= 10 s, full rebuild <= 35 s.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = [sys.executable, "-m", "contention_book.harness.book", "build"]


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - started
    if proc.returncode not in (0, 1):  # 1: a chapter failed and shows a warning page; still a build
        sys.exit(f"bench-book: {' '.join(argv[2:])} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return took


def main() -> int:
    shutil.rmtree(ROOT / "book" / "_build", ignore_errors=True)
    full = timed(BUILD + ["--force"])
    unchanged = timed(BUILD)
    print(f"make book, full rebuild (every chapter executed, HTML from scratch): {full:6.1f} s   (goal <= 35 s)")
    print(f"make book, nothing changed:                                          {unchanged:6.1f} s   (goal <= 10 s)")
    print(f"nothing changed / full:                                              {unchanged / full:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
