"""Speed and memory of ``perftools collapse`` and ``perftools summary`` on big files, beside their floors.

Usage::

    python benchmarks/bench_perftools.py [--size-mb 200] [--workdir DIR] [--repeat 3] [--json OUT]
        [--perf-capture FILE] [--src DIR]

Inputs, generated in a temporary directory (deleted afterwards), each about ``--size-mb`` MB:

* ``diverse perf``: :func:`perftools_inputs.write_perf`, 30 captures' worth of programs and names, samples
  drawn from 80,000 stacks, long C++ frames; and the same file written three times over (``x3``), whose
  peak memory must stay that of one copy;
* ``diverse perf`` holds captures in every layout real ones have (tab, space or simpleperf indents, no
  ``-g``, CRLF) and a few damaged lines;
* ``phased perf`` (and its ``x3``): a capture in two phases, as a real one often is (one program, then
  another): the first half of ``diverse perf`` and then the same samples in other modules, so the second
  half's frames and stacks are not the first's; the x3 goal holds for it too;
* ``diverse CSV``: :func:`perftools_inputs.write_wpa_csv`, about 20,000 distinct stacks, CRLF, a BOM,
  quoted cells (C++ templates, quotes), extra columns, no weight column, grouped time stamps; and
  ``de CSV``, the same stacks as a German machine exports them (``;``, decimal commas), timed for
  context beside ``read_csv`` with ``delimiter=';'``;
* ``tree CSV``: :func:`perftools_inputs.write_wpa_tree`, a copied Stack tree (small, as WPA copies
  what is expanded), timed for context;
* ``own perf`` and ``own CSV``: the project's earlier generators (short names, 20,000 stacks, one shape);
* ``--perf-capture`` (default ``.cache/perf-capture.txt`` when it exists): a real capture recorded by
  ``benchmarks/record_perf_capture.sh``.

Whole processes are timed (interpreter start and imports included, as a reader at a shell waits for
them), writing to /dev/null, interleaved (each command once per round, ``--repeat`` rounds), so that a
busy machine's drift falls on all alike; the median is the figure, and every run is printed.  Peak
memory is the process's peak resident set (``ru_maxrss``).  Floors: ``inferno-collapse-perf`` (found on
PATH or in ``~/.cargo/bin``; ``cargo install inferno``), and ``pyarrow.csv.read_csv`` in a Python process.
Goals (issue 25), printed beside each figure:

* collapse <= 0.8x inferno on the diverse capture, peak RSS <= 0.5x the file, and the x3 file's peak RSS
  within 1.2x the single file's;
* summary <= 1.2x pyarrow ``read_csv`` on the diverse CSV, peak RSS <= 1.5x the file.

``--src`` runs another checkout's ``src`` (e.g. the code before a change, from ``git archive``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perftools_inputs  # noqa: E402

def make_stacks(rng: np.random.Generator, n_stacks: int = 20000, n_funcs: int = 4000, n_mods: int = 24):
    """Distinct stacks (lists of (module, function)), sharing prefixes like real ones."""
    mods = [f"m{i:02d}.dll" for i in range(n_mods)]
    funcs = [(mods[int(rng.integers(n_mods))], f"F{i}") for i in range(n_funcs)]
    roots = [("ntdll.dll", "RtlUserThreadStart"), ("kernel32.dll", "BaseThreadInitThunk")]
    stacks: list[tuple] = []
    seen = set()
    while len(stacks) < n_stacks:
        depth = int(rng.integers(5, 31))
        if stacks and rng.random() < 0.85:
            base = list(stacks[int(rng.integers(len(stacks)))])
            base = base[: int(rng.integers(2, len(base) + 1))]
        else:
            base = list(roots)
        while len(base) < depth:
            base.append(funcs[int(rng.integers(n_funcs))])
        key = tuple(base[:depth])
        if key not in seen:
            seen.add(key)
            stacks.append(key)
    return stacks


def write_phased(source: str, path: str) -> None:
    """The first half of ``source`` (cut at a blank line), then the same samples in other modules."""
    with open(source, "rb") as f:
        data = f.read()
    mid = len(data) // 2
    cuts = [k for k in (data.find(b"\n\n", mid), data.find(b"\n\r\n", mid)) if k >= 0]
    first = data[:min(cuts) + 1] if cuts else data
    with open(path, "wb") as out:
        out.write(first)
        out.write(first.replace(b"(", b"(v2"))


def popularity(rng, n):
    w = 1.0 / np.arange(1, n + 1) ** 0.9
    rng.shuffle(w)
    return w / w.sum()


def write_csv(path: str, stacks, size: int, rng) -> int:
    texts = ["[Root]/" + "/".join(f"{m}!{f}" for m, f in s) for s in stacks]
    p = popularity(rng, len(texts))
    avg = float(np.dot(p, [len(t) for t in texts])) + 72
    rows = int(size / avg)
    written, t = 0, 10.0
    with open(path, "w", newline="") as out:
        out.write("Process,Thread ID,Stack,CPU,Count,Weight (in view) (ms),TimeStamp (s),% Weight\r\n")
        while written < rows:
            n = min(50000, rows - written)
            idx = rng.choice(len(texts), size=n, p=p)
            tids = rng.integers(4000, 4064, size=n)
            cpus = rng.integers(0, 32, size=n)
            ws = 0.999 + rng.random(n) * 0.002
            buf = []
            for i, tid, cpu, w in zip(idx.tolist(), tids.tolist(), cpus.tolist(), ws.tolist()):
                t += 0.0001
                buf.append(f"sqlservr.exe (2140),{tid},{texts[i]},{cpu},1,{w:.6f},{t:.9f},0.00\r\n")
            out.write("".join(buf))
            written += n
    return rows


def write_perf(path: str, stacks, size: int, rng) -> int:
    def addr(m, f):
        return (zlib.crc32(f"{m}!{f}".encode()) & 0xFFFFFF) << 4

    callers = []
    for s in stacks:
        lines = []
        for m, f in reversed(s[:-1]):  # leaf first: callers after the leaf
            lines.append(f"\t{addr(m, f) + 0x40:16x} {f}+0x40 (/usr/lib/app/{m})\n")
        callers.append("".join(lines))
    leaves = [s[-1] for s in stacks]
    p = popularity(rng, len(stacks))
    avg = float(np.dot(p, [len(c) for c in callers])) + 130
    n_samples = int(size / avg)
    written, t = 0, 1000.0
    with open(path, "w") as out:
        while written < n_samples:
            n = min(20000, n_samples - written)
            idx = rng.choice(len(stacks), size=n, p=p)
            offs = rng.integers(0, 0x200, size=n)
            tids = rng.integers(20000, 20064, size=n)
            buf = []
            for i, off, tid in zip(idx.tolist(), offs.tolist(), tids.tolist()):
                t += 0.001001
                m, f = leaves[i]
                buf.append(
                    f"postgres {tid}/{tid} [{tid % 32:03d}] {t:.6f}:    1001001 cpu-clock: \n"
                    f"\t{addr(m, f) + off:16x} {f}+0x{off:x} (/usr/lib/app/{m})\n{callers[i]}\n"
                )
            out.write("".join(buf))
            written += n
    return n_samples



HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CAPTURE = os.path.join(HERE, os.pardir, ".cache", "perf-capture.txt")
SRC = os.path.abspath(os.path.join(HERE, os.pardir, "src"))
READ_CSV = ("import sys, pyarrow.csv as c; "
            "c.read_csv(sys.argv[1], parse_options=c.ParseOptions(delimiter=sys.argv[2] if sys.argv[2:] else ','))")
RESULTS = os.path.join(HERE, "results", "bench-perftools.json")


#: Forks and execs the command and prints its peak RSS: a child forked from this (big) process would
#: count this process's pages in its own peak (fork copies the page tables, exec keeps the high-water
#: mark), so the command is forked from this small launcher instead (its own ~8 MB then set the floor).
LAUNCHER = ("import os, sys\npid = os.fork()\nif pid == 0:\n    os.execvp(sys.argv[1], sys.argv[1:])\n"
            "_, status, ru = os.wait4(pid, 0)\nos.write(2, b'\\nMAXRSS %d\\n' % ru.ru_maxrss)\n"
            "sys.exit(os.waitstatus_to_exitcode(status))\n")


def run_process(cmd: list[str], src: str = SRC, extra_env: dict | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one whole process, output to /dev/null."""
    env = {**os.environ, **(extra_env or {})}
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-S", "-c", LAUNCHER] + cmd, stdout=null, stderr=subprocess.PIPE,
                              env=env)
        seconds = time.perf_counter() - t0
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed ({proc.returncode}):\n{err[-2000:]}")
    return seconds, int(err.rsplit("MAXRSS ", 1)[1].split()[0]) * 1024


def perftools_cmd() -> list[str]:
    return [sys.executable, "-m", "contention_book.perftools"]


def inferno_path() -> str | None:
    found = shutil.which("inferno-collapse-perf")
    home = os.path.expanduser("~/.cargo/bin/inferno-collapse-perf")
    return found or (home if os.access(home, os.X_OK) else None)


def interleaved(jobs: dict[str, list[str]], repeat: int, src: str) -> dict[str, dict]:
    """Each command run ``repeat`` times, in turn: median, best, all times, highest peak RSS."""
    runs: dict[str, list] = {label: [] for label in jobs}
    for _ in range(repeat):
        for label, cmd in jobs.items():
            runs[label].append(run_process(cmd, src))
    return {label: {"median": float(np.median([t for t, _ in rs])), "best": min(t for t, _ in rs),
                    "runs": [round(t, 3) for t, _ in rs], "peak_rss": max(r for _, r in rs)}
            for label, rs in runs.items()}


def bench_help(src: str, repeat: int = 5) -> float:
    return float(np.median([run_process(perftools_cmd() + ["--help"], src)[0] for _ in range(repeat)]))


def _goal(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=float, default=200.0, help="size of each generated file (default 200)")
    ap.add_argument("--workdir", default=None, help="where to create the temporary files (default: system temp)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds (default 3); the median is reported")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=RESULTS if os.path.isdir(os.path.dirname(RESULTS)) else None,
                    help="also write the results as JSON here (default: benchmarks/results/bench-perftools.json, "
                         "which the book's perftools page reads when it is built)")
    ap.add_argument("--perf-capture", default=DEFAULT_CAPTURE if os.path.exists(DEFAULT_CAPTURE) else None,
                    help="a real perf script capture, timed as well (default: .cache/perf-capture.txt if present)")
    ap.add_argument("--src", default=SRC, help="the src directory whose perftools is timed (default: this checkout's)")
    args = ap.parse_args(argv)
    src = os.path.abspath(args.src)
    size = int(args.size_mb * 1e6)
    small = args.size_mb < 20
    tmp = tempfile.mkdtemp(prefix="bench-perftools-", dir=args.workdir)
    mib = 1 << 20
    try:
        rng = np.random.default_rng(args.seed)
        t0 = time.perf_counter()
        files = {k: os.path.join(tmp, k) for k in ("own.csv", "own.perf", "diverse.csv", "diverse.perf", "diverse_x3.perf", "phased.perf", "phased_x3.perf",
                                                   "de.csv", "tree.csv")}
        stacks = make_stacks(rng, n_stacks=2000 if small else 20000)
        write_csv(files["own.csv"], stacks, size, rng)
        write_perf(files["own.perf"], stacks, size, rng)
        perf_info = perftools_inputs.write_perf(files["diverse.perf"], size, np.random.default_rng(args.seed + 1),
                                                stacks=4000 if small else 80_000)
        csv_info = perftools_inputs.write_wpa_csv(files["diverse.csv"], size, np.random.default_rng(args.seed + 2),
                                                  stacks=2000 if small else 20_000)
        de_info = perftools_inputs.write_wpa_csv(files["de.csv"], size, np.random.default_rng(args.seed + 2),
                                                 stacks=2000 if small else 20_000, shape="de")
        tree_info = perftools_inputs.write_wpa_tree(files["tree.csv"], np.random.default_rng(args.seed + 3),
                                                    stacks=200 if small else 2000)
        write_phased(files["diverse.perf"], files["phased.perf"])
        for one_path, three_path in (("diverse.perf", "diverse_x3.perf"), ("phased.perf", "phased_x3.perf")):
            with open(files[three_path], "wb") as out:
                for _ in range(3):
                    with open(files[one_path], "rb") as one:
                        shutil.copyfileobj(one, out, 16 << 20)
        mb = {k: os.path.getsize(v) / 1e6 for k, v in files.items()}
        print(f"generated in {time.perf_counter() - t0:.1f} s: " + ", ".join(f"{k} {v:.0f} MB" for k, v in mb.items()))
        print(f"diverse perf: {perf_info['samples']:,} samples from {perf_info['stacks']:,} stacks drawn, "
              f"{perf_info['damaged']:,} damaged lines; diverse CSV: {csv_info['rows']:,} rows, "
              f"{csv_info['stacks']:,} distinct stacks; de CSV: {de_info['rows']:,} rows; "
              f"tree CSV: {tree_info['nodes']:,} nodes")
        inferno = inferno_path()
        collapse = perftools_cmd() + ["collapse"]
        jobs = {"collapse diverse": collapse + [files["diverse.perf"], "-o", os.devnull],
                "collapse diverse x3": collapse + [files["diverse_x3.perf"], "-o", os.devnull],
                "collapse phased": collapse + [files["phased.perf"], "-o", os.devnull],
                "collapse phased x3": collapse + [files["phased_x3.perf"], "-o", os.devnull],
                "collapse own": collapse + [files["own.perf"], "-o", os.devnull],
                "summary diverse": perftools_cmd() + ["summary", files["diverse.csv"]],
                "read_csv diverse": [sys.executable, "-c", READ_CSV, files["diverse.csv"]],
                "summary own": perftools_cmd() + ["summary", files["own.csv"]],
                "read_csv own": [sys.executable, "-c", READ_CSV, files["own.csv"]],
                "summary de": perftools_cmd() + ["summary", files["de.csv"]],
                "read_csv de": [sys.executable, "-c", READ_CSV, files["de.csv"], ";"],
                "summary tree": perftools_cmd() + ["summary", files["tree.csv"]]}
        if inferno:
            jobs["inferno diverse"] = [inferno, files["diverse.perf"]]
            jobs["inferno own"] = [inferno, files["own.perf"]]
        if args.perf_capture:
            jobs["collapse capture"] = collapse + [args.perf_capture, "-o", os.devnull]
            if inferno:
                jobs["inferno capture"] = [inferno, args.perf_capture]
        load_before = os.getloadavg()[0]
        got = interleaved(jobs, args.repeat, src)
        sizes = {"collapse diverse": mb["diverse.perf"], "collapse diverse x3": mb["diverse_x3.perf"],
                 "collapse phased": mb["phased.perf"], "collapse phased x3": mb["phased_x3.perf"],
                 "collapse own": mb["own.perf"], "summary diverse": mb["diverse.csv"], "read_csv diverse": mb["diverse.csv"],
                 "summary own": mb["own.csv"], "read_csv own": mb["own.csv"], "inferno diverse": mb["diverse.perf"],
                 "inferno own": mb["own.perf"], "summary de": mb["de.csv"], "read_csv de": mb["de.csv"],
                 "summary tree": mb["tree.csv"]}
        if args.perf_capture:
            sizes["collapse capture"] = sizes["inferno capture"] = os.path.getsize(args.perf_capture) / 1e6
        print(f"whole processes, {args.repeat} interleaved rounds (src: {src}):")
        print(f"{'':24}{'median s':>10}{'best s':>9}{'peak RSS':>12}{'RSS/file':>10}  runs (s)")
        for label, r in got.items():
            r["rss_ratio"] = r["peak_rss"] / (sizes[label] * 1e6)
            print(f"{label:24}{r['median']:10.3f}{r['best']:9.3f}{r['peak_rss'] / mib:8.0f} MiB{r['rss_ratio']:10.2f}  {r['runs']}")
        res: dict = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "repeat": args.repeat, "size_mb": args.size_mb,
                     "machine": f"a {os.cpu_count()}-CPU {platform.machine()} machine, load average "
                                f"{load_before:.1f} before the runs", "mb": mb, "perf_info": perf_info,
                     "csv_info": csv_info, "de_info": de_info, "tree_info": tree_info, "results": got, "goals": []}

        def goal(what: str, figure: float, limit: float, unit: str = "x") -> None:
            ok = figure <= limit
            res["goals"].append({"goal": what, "figure": figure, "limit": limit, "ok": ok})
            print(f"  {what:58} {figure:6.2f}{unit}  goal <= {limit:.2f}{unit}  {_goal(ok)}")

        print("goals (median to median):")
        if inferno:
            goal("collapse / inferno-collapse-perf, diverse capture",
                 got["collapse diverse"]["median"] / got["inferno diverse"]["median"], 0.8)
        else:
            print("  collapse / inferno: inferno-collapse-perf is not installed (cargo install inferno): not measured")
        goal("collapse peak RSS / file, diverse capture", got["collapse diverse"]["rss_ratio"], 0.5)
        goal("collapse peak RSS, capture x3 / capture x1",
             got["collapse diverse x3"]["peak_rss"] / got["collapse diverse"]["peak_rss"], 1.2)
        goal("collapse peak RSS, capture x3 / capture x1, in two phases",
             got["collapse phased x3"]["peak_rss"] / got["collapse phased"]["peak_rss"], 1.2)
        goal("summary / pyarrow read_csv, diverse CSV",
             got["summary diverse"]["median"] / got["read_csv diverse"]["median"], 1.2)
        goal("summary peak RSS / file, diverse CSV", got["summary diverse"]["rss_ratio"], 1.5)
        print("for context (no goal):")
        if inferno:
            print(f"  collapse / inferno, own generator: {got['collapse own']['median'] / got['inferno own']['median']:.2f}x")
            if args.perf_capture:
                print(f"  collapse / inferno, real capture: "
                      f"{got['collapse capture']['median'] / got['inferno capture']['median']:.2f}x")
        print(f"  summary / read_csv, own generator: {got['summary own']['median'] / got['read_csv own']['median']:.2f}x")
        print(f"  summary / read_csv, de CSV (';', decimal commas): "
              f"{got['summary de']['median'] / got['read_csv de']['median']:.2f}x, "
              f"peak RSS {got['summary de']['rss_ratio']:.2f}x the file")
        print(f"  summary, tree CSV ({mb['tree.csv']:.1f} MB): {got['summary tree']['median']:.3f} s")
        res["help_s"] = bench_help(src)
        print(f"  perftools --help, whole process: {res['help_s']:.3f} s (median of 5)")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=2)
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
