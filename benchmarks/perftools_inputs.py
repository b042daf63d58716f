"""Benchmark inputs for perftools that look like captures made elsewhere, not like our own.

Why: the importers were fast on the project's own generated files (short frame names, 20,000 stacks,
one header shape) and slower on held-out captures.  These generators make what real captures have:

* ``perf script`` text made of many "captures" (``--segments``), each with its own programs, thread
  ids, header shape (with or without pid, cpu, period) and name vocabulary, so that the file holds about
  ``stacks`` distinct stacks (default 50,000); C, C++ (templates, operators, long argument lists), Rust
  (hashes), kernel and JIT frames, ``[unknown]`` frames, comm names with spaces; the leaf instruction
  offset varies per sample.
* A wpaexporter CSV with about ``stacks`` distinct stacks (default 20,000) of 21 frames on average,
  CRLF line ends, no weight column (a Count column only), every text cell quoted (C++ frames carry
  commas), module names as WPA writes them.

Everything comes from one seeded generator, so a file is the same on every run.
"""

from __future__ import annotations

import numpy as np

_CPP_TYPES = ("int", "unsigned long", "char const*", "std::basic_string<char, std::char_traits<char>, "
              "std::allocator<char> >", "double", "bool", "void*", "std::size_t", "long long")
_VERBS = ("Acquire", "Release", "Insert", "Lookup", "Flush", "Scan", "Visit", "Build", "Emit", "Resolve",
          "Wait", "Poll", "Drain", "Commit", "Append", "Split", "Merge", "Encode", "Decode", "Hash")
_NOUNS = ("Buffer", "Page", "Latch", "Tuple", "Index", "Queue", "Node", "Heap", "Log", "Record", "Lock",
          "Slot", "Frame", "Task", "Future", "Stream", "Table", "Row", "Segment", "Cursor")


def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def _cpp_type(rng, depth=0) -> str:
    if depth < 2 and rng.random() < 0.45:
        args = ", ".join(_cpp_type(rng, depth + 1) for _ in range(int(rng.integers(1, 4))))
        return f"ns{int(rng.integers(9))}::{_pick(rng, _NOUNS)}<{args} >"
    return _pick(rng, _CPP_TYPES)


def function_name(rng, salt: str, kind: str) -> str:
    """One function name of a language's usual shape; ``salt`` varies names between captures."""
    verb, noun = _pick(rng, _VERBS), _pick(rng, _NOUNS)
    n = int(rng.integers(100000))
    if kind == "c":
        return f"{noun}{verb}{salt}_{n}"
    if kind == "cpp":
        cls = f"{salt}::{noun}{n % 97}<{_cpp_type(rng)}>"
        args = ", ".join(_cpp_type(rng) + ("&" if rng.random() < 0.3 else "") for _ in range(int(rng.integers(0, 4))))
        op = "operator()" if rng.random() < 0.1 else f"{verb.lower()}_{noun.lower()}{n % 13}"
        return f"{cls}::{op}({args}){' const' if rng.random() < 0.3 else ''}"
    if kind == "rust":
        return f"{salt.lower()}::{noun.lower()}::{verb.lower()}_{n}::h{int(rng.integers(1 << 62)):016x}"
    if kind == "kernel":
        return f"{verb.lower()}_{noun.lower()}_{salt.lower()}{n % 500}"
    return f"L{salt}/{noun}{n};::{verb.lower()}"  # JIT


class _Segment:
    """One capture's vocabulary: programs, libraries, functions per library."""

    def __init__(self, rng, index: int):
        self.salt = f"S{index}x{int(rng.integers(1 << 20)):05x}"
        self.comms = [f"prog{index}-{k}" if rng.random() < 0.8 else f"Web Content {index}.{k}" for k in range(3)]
        self.pid = int(rng.integers(1000, 4_000_000))
        kinds = ("c", "cpp", "rust", "cpp", "c")
        self.libs = []
        for k in range(6):
            kind = kinds[k % len(kinds)]
            dso = f"/usr/lib/x86_64-linux-gnu/lib{self.salt.lower()}_{k}.so.{k + 1}"
            funcs = [function_name(rng, self.salt, kind) for _ in range(int(rng.integers(60, 180)))]
            self.libs.append((dso, funcs))
        self.kernel = [function_name(rng, self.salt, "kernel") for _ in range(80)]
        self.jit = [function_name(rng, self.salt, "jit") for _ in range(40)]
        self.shape = index % 4  # header shape

    def frame(self, rng) -> tuple[str, str]:
        r = rng.random()
        if r < 0.03:
            return "[unknown]", "[unknown]"
        if r < 0.06:
            return f"/tmp/perf-{self.pid}.map", _pick(rng, self.jit)
        dso, funcs = _pick(rng, self.libs)
        return dso, _pick(rng, funcs)

    def stack(self, rng) -> list[tuple[str, str]]:
        """Root first: a thread start, some library frames, sometimes a kernel tail."""
        depth = int(rng.integers(4, 30))
        frames = [("/usr/lib/x86_64-linux-gnu/libc.so.6", "__clone3"),
                  ("/usr/lib/x86_64-linux-gnu/libc.so.6", "start_thread")]
        frames += [self.frame(rng) for _ in range(depth)]
        if rng.random() < 0.3:
            frames += [("[kernel.kallsyms]", _pick(rng, self.kernel)) for _ in range(int(rng.integers(2, 9)))]
        return frames

    def header(self, comm: str, tid: int, cpu: int, t: float, period: int) -> str:
        if self.shape == 0:
            return f"{comm} {self.pid}/{tid} [{cpu:03d}] {t:.6f}: {period} cycles:\n"
        if self.shape == 1:
            return f"{comm} {tid} [{cpu:03d}] {t:.6f}: {period} cycles:\n"
        if self.shape == 2:
            return f"{comm} {self.pid}/{tid} {t:.6f}: {period} cycles:\n"
        return f"{comm}  {tid} [{cpu:03d}] {t:.6f}:      {period} cycles:\n"


def _addr(rng) -> int:
    return int(rng.integers(0x400000, 0x7FFFFFFFF000))


def popularity(rng, n: int, skew: float = 0.9) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** skew
    rng.shuffle(w)
    return w / w.sum()


def write_perf(path: str, size: int, rng, stacks: int = 80_000, segments: int = 30, skew: float = 0.3) -> dict:
    """A ``perf script`` text of about ``size`` bytes; returns its sample and distinct-stack counts."""
    per = max(1, stacks // segments)
    segs, blocks, owner = [], [], []
    for k in range(segments):
        seg = _Segment(rng, k)
        segs.append(seg)
        for _ in range(per):
            frames = seg.stack(rng)
            leaf = frames[-1]
            callers = "".join(f"\t    {_addr(rng):x} {f}+0x{int(rng.integers(1, 0x900)):x} ({d})\n"
                              for d, f in reversed(frames[:-1]))
            blocks.append((leaf, callers))
            owner.append(k)
    p = popularity(rng, len(blocks), skew)
    avg = float(np.dot(p, [len(c) + len(lf[1]) for lf, c in blocks])) + 110
    n_samples = int(size / avg)
    written, t = 0, 1000.0
    with open(path, "w", newline="\n") as out:
        while written < n_samples:
            n = min(20000, n_samples - written)
            idx = rng.choice(len(blocks), size=n, p=p)
            offs = rng.integers(0, 0x300, size=n)
            periods = rng.integers(10000, 4_000_000, size=n)
            buf = []
            for i, off, period in zip(idx.tolist(), offs.tolist(), periods.tolist()):
                seg = segs[owner[i]]
                t += 0.000251
                (dso, fn), callers = blocks[i]
                tid = seg.pid + (i % 7)
                buf.append(seg.header(seg.comms[i % 3], tid, i % 64, t, period))
                buf.append(f"\t    {0x7f0000000000 + (i << 12) + off:x} {fn}+0x{off:x} ({dso})\n{callers}\n")
            out.write("".join(buf))
            written += n
    return {"samples": n_samples, "stacks": len(blocks)}


def write_wpa_csv(path: str, size: int, rng, stacks: int = 20_000) -> dict:
    """A wpaexporter-like CSV of about ``size`` bytes: CRLF, quoted cells, Count but no weight column."""
    mods = [f"{name}.dll" for name in ("sqlmin", "sqllang", "sqldk", "sqlos", "ntdll", "kernel32", "KernelBase",
                                        "ucrtbase", "msvcp140", "vcruntime140", "hkengine", "hkcompile")]
    funcs = {m: [function_name(rng, m.split(".")[0].capitalize(), "cpp" if rng.random() < 0.1 else "c")
                 for _ in range(300)] for m in mods}
    texts, seen = [], set()
    roots = ["ntdll.dll!RtlUserThreadStart", "kernel32.dll!BaseThreadInitThunk"]
    while len(texts) < stacks:
        depth = int(rng.integers(8, 33))  # 21 frames on average with the two roots
        if texts and rng.random() < 0.7:
            base = _pick(rng, texts)[: int(rng.integers(3, depth))]
        else:
            base = list(roots)
        while len(base) < depth:
            m = _pick(rng, mods)
            base.append(f"{m}!{_pick(rng, funcs[m])}" if rng.random() > 0.02 else f"{m}!<PDB_not_found>")
        key = tuple(base)
        if key not in seen:
            seen.add(key)
            texts.append(base)
    cells = ['"[Root]/' + "/".join(s).replace('"', '""') + '"' for s in texts]
    p = popularity(rng, len(cells))
    avg = float(np.dot(p, [len(c) for c in cells])) + 70
    rows = int(size / avg)
    written, t = 0, 10.0
    with open(path, "w", newline="") as out:
        out.write('"Line #","Process","Thread ID","Stack","CPU","Count","TimeStamp (s)","% Weight"\r\n')
        while written < rows:
            n = min(50000, rows - written)
            idx = rng.choice(len(cells), size=n, p=p)
            tids = rng.integers(4000, 9000, size=n)
            buf = []
            for j, (i, tid) in enumerate(zip(idx.tolist(), tids.tolist())):
                t += 0.000125
                buf.append(f'{written + j + 1},"sqlservr.exe (2140)",{tid},{cells[i]},{tid % 16},1,{t:.9f},0.00\r\n')
            out.write("".join(buf))
            written += n
    return {"rows": rows, "stacks": len(texts)}
