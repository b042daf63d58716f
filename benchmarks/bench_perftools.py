"""Speed and memory of perftools' two big-file importers, with the floor.

Usage::

    PYTHONPATH=src python benchmarks/bench_perftools.py [--size-mb 200] [--workdir DIR] [--repeat 3] [--json OUT]
        [--perf-capture FILE]

``--perf-capture`` (default ``.cache/perf-capture.txt`` when it exists) is a
real ``perf script`` capture, recorded by ``benchmarks/record_perf_capture.sh``
(PostgreSQL under pgbench plus a Rust compiler build, ``perf record -g``).
On it, whole processes are timed, interleaved: ``perftools collapse FILE`` (its C core), the same with
the Python reader only, and ``inferno-collapse-perf FILE`` with its default threads (when installed),
all writing to /dev/null, with each one's peak RSS.  ``perftools --help`` is
timed too (target < 0.3 s).

Generates, in a temporary directory (deleted afterwards), a wpaexporter-style
CPU Usage (Sampled) CSV of about ``--size-mb`` MB (one row per sample, 5-30
frames each, drawn from ~20k distinct stacks with a skewed popularity) and a
``perf script`` text of about the same size built from the same stacks (the
leaf instruction varies per sample as in real captures).  Then, each in a
fresh Python process so peak memories are separate and nothing is cached:

* ``floor``: ``pyarrow.csv.read_csv`` of the CSV (the fastest way to merely
  read it; what the importer is measured against);
* ``stream``: ``pyarrow.csv.open_csv`` iterated in 1 MB batches, the
  bounded-memory way to read it (single-threaded parsing; for context);
* ``csv``: ``perftools.load(csv, format="wpa_csv")`` + ``top_functions``, through
  the C core (``native/wpa_csv.c``), and again with ``CONTENTION_BOOK_PERFTOOLS_NATIVE=0``
  (the pyarrow reader alone, for context);
* ``perf``: ``perftools.load(text, format="perf_script")`` + ``top_functions``;
* ``imports``: the imports alone (the interpreter's baseline memory).

Times exclude interpreter start and imports; the runs are interleaved (each
variant once per round, ``--repeat`` rounds) and the best and the median are
reported (on a shared two-core machine the floor alone varies 0.16-1.0 s
between identical runs, so both are shown).  Peak memory is the child's
VmHWM (peak resident set, which includes the imports).  Targets: CSV parse + aggregate within 1.5x of the
floor, perf script at >= 50 MB/s, peak RSS <= 1.5x the file size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

import numpy as np

CHILD = r"""
import json, sys, time
mode, path = sys.argv[1], sys.argv[2]
import numpy, pandas, pyarrow, pyarrow.csv
from contention_book import perftools
t0 = time.perf_counter()
info = {}
if mode == "floor":
    table = pyarrow.csv.read_csv(path)
    info["rows"] = table.num_rows
elif mode == "stream":
    rows = 0
    for batch in pyarrow.csv.open_csv(path, read_options=pyarrow.csv.ReadOptions(block_size=1 << 20)):
        rows += batch.num_rows
    info["rows"] = rows
elif mode in ("csv", "perf"):
    p = perftools.load(path, format="wpa_csv" if mode == "csv" else "perf_script")
    top = perftools.top_functions(p, 20)
    info.update(rows=len(p.samples), stacks=p.n_stacks, frames=len(p.frames), top=top["function"].iloc[0])
seconds = time.perf_counter() - t0
hwm = 0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        hwm = int(line.split()[1]) * 1024
info.update(mode=mode, seconds=seconds, peak_rss=hwm)
print(json.dumps(info))
"""


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


DEFAULT_CAPTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, ".cache", "perf-capture.txt")


def run_child(mode: str, path: str, extra_env: dict | None = None) -> dict:
    env = {**os.environ, **(extra_env or {})}
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src")
    env["PYTHONPATH"] = os.path.abspath(src) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    r = subprocess.run([sys.executable, "-c", CHILD, mode, path], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{mode} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def interleaved(jobs: dict[str, tuple], repeat: int) -> dict[str, dict]:
    """Each job (mode, path[, extra env]) run ``repeat`` times, in turn, so drift falls on all alike:
    its best run, with the median and all run times, and the highest peak RSS."""
    runs: dict[str, list] = {label: [] for label in jobs}
    for _ in range(repeat):
        for label, job in jobs.items():
            runs[label].append(run_child(*job))
    out = {}
    for label, rs in runs.items():
        r = dict(min(rs, key=lambda r: r["seconds"]))
        r["median"] = float(np.median([x["seconds"] for x in rs]))
        r["peak_rss"] = max(x["peak_rss"] for x in rs)
        r["all_seconds"] = [round(x["seconds"], 3) for x in rs]
        out[label] = r
    return out


def run_process(cmd: list[str], extra_env: dict | None = None) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one whole process, output to /dev/null."""
    env = {**os.environ, **(extra_env or {})}
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "src")
    env["PYTHONPATH"] = os.path.abspath(src) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n{err[-2000:]}")
    return seconds, usage.ru_maxrss * 1024


def perftools_cmd() -> list[str]:
    return [sys.executable, "-m", "contention_book.perftools"]


def bench_help(repeat: int = 5) -> float:
    return min(run_process(perftools_cmd() + ["--help"])[0] for _ in range(repeat))


def bench_capture(path: str, repeat: int) -> dict:
    """perftools collapse against inferno-collapse-perf on one real capture, whole processes."""
    size = os.path.getsize(path)
    res: dict = {"capture": path, "capture_mb": size / 1e6}
    inferno = shutil.which("inferno-collapse-perf")
    ours, python, theirs = [], [], []
    for _ in range(repeat):  # interleaved, so the machine's drift falls on all three alike
        ours.append(run_process(perftools_cmd() + ["collapse", path, "-o", os.devnull]))
        python.append(run_process(perftools_cmd() + ["collapse", path, "-o", os.devnull],
                                  {"CONTENTION_BOOK_PERFTOOLS_NATIVE": "0"}))
        if inferno:
            theirs.append(run_process([inferno, path]))
    res["perftools_s"] = min(t for t, _ in ours)
    res["perftools_rss_ratio"] = max(r for _, r in ours) / size
    res["python_reader_s"] = min(t for t, _ in python)
    if inferno:
        res["inferno_s"] = min(t for t, _ in theirs)
        res["inferno_rss_ratio"] = max(r for _, r in theirs) / size
        res["collapse_ratio"] = res["perftools_s"] / res["inferno_s"]
    res["runs"] = {"perftools": [round(t, 3) for t, _ in ours], "python reader": [round(t, 3) for t, _ in python],
                   "inferno": [round(t, 3) for t, _ in theirs] if inferno else None}
    return res


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=float, default=200.0, help="size of each generated file (default 200)")
    ap.add_argument("--workdir", default=None, help="where to create the temporary files (default: system temp)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest is reported")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="also write the results as JSON here")
    ap.add_argument("--perf-capture", default=DEFAULT_CAPTURE if os.path.exists(DEFAULT_CAPTURE) else None,
                    help="a real perf script capture to collapse against inferno (default: .cache/perf-capture.txt "
                         "if present; record one with benchmarks/record_perf_capture.sh)")
    args = ap.parse_args(argv)

    size = int(args.size_mb * 1e6)
    tmp = tempfile.mkdtemp(prefix="bench-perftools-", dir=args.workdir)
    try:
        rng = np.random.default_rng(args.seed)
        t0 = time.perf_counter()
        n_stacks = 20000 if args.size_mb >= 20 else 2000
        stacks = make_stacks(rng, n_stacks=n_stacks)
        csv_path, perf_path = os.path.join(tmp, "cpu_sampled.csv"), os.path.join(tmp, "perf-script.txt")
        csv_rows = write_csv(csv_path, stacks, size, rng)
        perf_samples = write_perf(perf_path, stacks, size, rng)
        gen = time.perf_counter() - t0
        csv_mb, perf_mb = os.path.getsize(csv_path) / 1e6, os.path.getsize(perf_path) / 1e6
        print(f"generated in {gen:.1f} s: CSV {csv_mb:.1f} MB ({csv_rows:,} samples), "
              f"perf script {perf_mb:.1f} MB ({perf_samples:,} samples), {len(stacks):,} distinct stacks")
        base = interleaved({"imports": ("imports", csv_path)}, 1)["imports"]
        got = interleaved({"floor": ("floor", csv_path), "stream": ("stream", csv_path), "csv": ("csv", csv_path),
                           "csv_python": ("csv", csv_path, {"CONTENTION_BOOK_PERFTOOLS_NATIVE": "0"}),
                           "perf": ("perf", perf_path)}, args.repeat)
        floor, stream, ours, ours_python, perf = (got[k] for k in ("floor", "stream", "csv", "csv_python", "perf"))
        ratio = ours["seconds"] / floor["seconds"]
        ratio_median = ours["median"] / floor["median"]
        mbps = perf_mb / perf["seconds"]
        mib = 1 << 20
        res = {
            "csv_mb": csv_mb, "perf_mb": perf_mb, "csv_rows": csv_rows, "perf_samples": perf_samples,
            "distinct_stacks": len(stacks), "imports_rss_mb": base["peak_rss"] / 1e6,
            "floor_s": floor["seconds"], "csv_s": ours["seconds"], "csv_ratio": ratio,
            "floor_median_s": floor["median"], "csv_median_s": ours["median"], "csv_ratio_median": ratio_median,
            "stream_s": stream["seconds"], "stream_rss_mb": stream["peak_rss"] / 1e6,
            "csv_python_s": ours_python["seconds"], "csv_python_rss_mb": ours_python["peak_rss"] / 1e6,
            "perf_s": perf["seconds"], "perf_mb_per_s": mbps,
            "floor_rss_mb": floor["peak_rss"] / 1e6, "csv_rss_mb": ours["peak_rss"] / 1e6, "perf_rss_mb": perf["peak_rss"] / 1e6,
            "csv_rss_ratio": ours["peak_rss"] / (csv_mb * 1e6), "perf_rss_ratio": perf["peak_rss"] / (perf_mb * 1e6),
            "runs": {k: r["all_seconds"] for k, r in got.items()},
        }
        ok = lambda c: "ok" if c else "MISSED"  # noqa: E731
        print(f"peak RSS of the imports alone: {base['peak_rss'] / mib:.0f} MiB")
        print(f"best and median of {args.repeat} interleaved runs each:")
        print(f"{'':34}{'best s':>9}{'median s':>10}{'peak RSS':>12}{'RSS/file':>10}{'(RSS-imports)/file':>20}")
        for label, r, mb in (("pyarrow.csv.read_csv (floor)", floor, csv_mb), ("pyarrow.csv.open_csv, 1 MB batches", stream, csv_mb),
                             ("perftools wpa_csv + top_functions", ours, csv_mb),
                             ("  the same, pyarrow reader only", ours_python, csv_mb),
                             ("perftools perf_script + top", perf, perf_mb)):
            print(f"{label:34}{r['seconds']:9.3f}{r['median']:10.3f}{r['peak_rss'] / mib:9.0f} MiB{r['peak_rss'] / (mb * 1e6):10.2f}"
                  f"{(r['peak_rss'] - base['peak_rss']) / (mb * 1e6):20.2f}")
        print(f"WPA CSV summary peak RSS / read_csv peak RSS = {ours['peak_rss'] / floor['peak_rss']:.2f}x")
        print(f"CSV parse+aggregate / floor = {ratio:.2f}x best-to-best, {ratio_median:.2f}x median-to-median "
              f"(target <= 1.5x): {ok(ratio <= 1.5)} / {ok(ratio_median <= 1.5)}")
        print(f"CSV parse+aggregate / streaming read alone = {ours['seconds'] / stream['seconds']:.2f}x")
        print(f"perf script: {mbps:.0f} MB/s (target >= 50): {ok(mbps >= 50)}")
        print(f"peak RSS / file size: CSV {res['csv_rss_ratio']:.2f}, perf {res['perf_rss_ratio']:.2f} (target <= 1.5): "
              f"{ok(max(res['csv_rss_ratio'], res['perf_rss_ratio']) <= 1.5)}")
        print(f"runs (s): {res['runs']}")
        res["help_s"] = bench_help()
        print(f"perftools --help, whole process: {res['help_s']:.3f} s (target < 0.3): {ok(res['help_s'] < 0.3)}")
        if args.perf_capture:
            cap = bench_capture(args.perf_capture, args.repeat)
            res["capture"] = cap
            print(f"real capture {cap['capture']} ({cap['capture_mb']:.0f} MB), whole processes, best of {args.repeat}:")
            print(f"  perftools collapse      {cap['perftools_s']:8.2f} s   peak RSS / file {cap['perftools_rss_ratio']:.2f} "
                  f"(target <= 1.0): {ok(cap['perftools_rss_ratio'] <= 1.0)}")
            print(f"  perftools collapse, Python reader only ({'CONTENTION_BOOK_PERFTOOLS_NATIVE=0'}) "
                  f"{cap['python_reader_s']:.2f} s")
            if "inferno_s" in cap:
                print(f"  inferno-collapse-perf   {cap['inferno_s']:8.2f} s   peak RSS / file {cap['inferno_rss_ratio']:.2f}")
                print(f"  perftools / inferno time = {cap['collapse_ratio']:.2f}x (target <= 1.0): "
                      f"{ok(cap['collapse_ratio'] <= 1.0)}")
            else:
                print("  inferno-collapse-perf is not installed (cargo install inferno): no ratio")
            print(f"  runs (s): {cap['runs']}")
        else:
            print("no real perf capture (benchmarks/record_perf_capture.sh writes .cache/perf-capture.txt): "
                  "perftools/inferno ratio not measured")
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=2)
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
