"""How long `make book` takes: a full rebuild from a clean book/_build, and the same command with nothing changed.

    python benchmarks/bench_book.py [--rounds 3]            # (make bench-book)

The two are timed in turns (full, unchanged, full, unchanged, ...), so that a slow spell of the machine falls on
both, and each figure is the median of the rounds.  A full rebuild removes book/_build and re-executes every
chapter (``build --force``); "nothing changed" runs ``build`` right after it (chapters skipped by their content
stamps, Sphinx re-reading nothing).  Beside each wall time: the CPU time of the build and its kernels, and the
machine's load, which say whether a slow figure was the machine's doing.  Goals on the book's 2-CPU build machine:
full rebuild <= 30 s, nothing changed <= 5 s.  The figures are written to benchmarks/results/bench-book.json.

On a fresh clone (``git clone ... && make bench-book``: make setup makes the clone's own .venv first, untimed) the
first full rebuild is also printed on its own: it is the one a reader's first ``make book`` takes (modules not yet
in the page cache, the kernels' first start in this checkout).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
ROOT = Path(os.environ.get("CONTENTION_BOOK_ROOT") or HERE).resolve()  # the checkout whose book is built
BUILD = [sys.executable, "-m", "contention_book.harness.book", "build"]
GOALS = {"full": 30.0, "unchanged": 5.0}
LABELS = {"full": "make book, full rebuild (clean book/_build, every chapter executed)",
          "unchanged": "make book, nothing changed"}


def timed(argv: list[str]) -> tuple[float, float, bool]:
    """Wall and CPU seconds (the build and every process it started) of one build, and whether it built cleanly."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"bench-book: {' '.join(argv[2:])} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    if proc.returncode:  # a chapter failed (its page says so) or Sphinx warned: timed, but not a whole book
        print(f"bench-book: {' '.join(argv[2:])} exited 1:\n{proc.stderr[-1500:]}", file=sys.stderr)
    return took, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime), proc.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="full + unchanged pairs to time (at least 3)")
    parser.add_argument("--json", type=Path, default=HERE / "benchmarks" / "results" / "bench-book.json",
                        help="where to write the figures")
    args = parser.parse_args(argv)
    if args.rounds < 3:
        parser.error("--rounds: at least 3 (the figures are medians)")
    runs: dict[str, list[dict]] = {"full": [], "unchanged": []}
    for r in range(args.rounds):
        shutil.rmtree(ROOT / "book" / "_build", ignore_errors=True)
        for kind, cmd in (("full", BUILD + ["--force"]), ("unchanged", BUILD)):
            load = os.getloadavg()[0]
            wall, cpu, clean = timed(cmd)
            runs[kind].append({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load_1min_before": round(load, 2),
                               "built_cleanly": clean})
            print(f"round {r + 1}/{args.rounds}  {kind:9s}  {wall:6.1f} s wall  {cpu:6.1f} s CPU  "
                  f"(1-minute load before: {load:.1f}){'' if clean else '  NOT A CLEAN BUILD (exit 1)'}", flush=True)
    print()
    result = {"cpus": os.cpu_count(), "rounds": args.rounds, "figures": {}}
    for kind, goal in GOALS.items():
        walls = [run["wall_s"] for run in runs[kind]]
        median = statistics.median(walls)
        cpu = statistics.median(run["cpu_s"] for run in runs[kind])
        verdict = "meets the goal" if median <= goal else "MISSES the goal"
        print(f"{LABELS[kind] + ':':72s} {median:6.1f} s   (goal <= {goal:g} s: {verdict}; "
              f"median of {len(walls)}: {', '.join(f'{w:.1f}' for w in walls)}; CPU {cpu:.1f} s)")
        result["figures"][kind] = {"median_wall_s": median, "goal_s": goal, "meets_goal": median <= goal,
                                   "median_cpu_s": cpu, "runs": runs[kind]}
    first = runs["full"][0]
    label = "make book, first full rebuild (a fresh clone's first make book):"
    print(f"{label:72s} "
          f"{first['wall_s']:6.1f} s   (CPU {first['cpu_s']:.1f} s; 1-minute load before: {first['load_1min_before']:.1f})")
    result["figures"]["first_full"] = {"wall_s": first["wall_s"], "cpu_s": first["cpu_s"],
                                       "load_1min_before": first["load_1min_before"]}
    if not all(run["built_cleanly"] for kind in runs for run in runs[kind]):
        print("\nSome builds exited 1 (a chapter failed or Sphinx warned): these figures are not a whole book's.")
    out = args.json
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"\n(written to {out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
