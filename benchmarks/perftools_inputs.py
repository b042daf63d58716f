"""Benchmark inputs for perftools that look like captures made elsewhere, not like our own.

Why: the importers were fast on the project's own generated files (short frame names, 20,000 stacks,
one header shape) and slower on held-out captures.  These generators make what real captures have:

* ``perf script`` text made of many "captures" (``segments``), each with its own programs, thread
  ids, header shape (with or without pid, cpu, period) and name vocabulary, its samples drawn from
  ``stacks`` stacks (default 80,000; a capture without ``-g`` keeps only their leaves); C, C++ (templates, operators, long argument lists), Rust
  (hashes), kernel and JIT frames, ``[unknown]`` frames, comm names with spaces; the leaf instruction
  offset varies per sample.  Each capture also has its own layout, as the public ones do: frames led by
  a tab, by a tab and spaces, by eight spaces (perf 5.x) or by spaces then a tab after a tab-separated
  header (simpleperf's ``report_sample.py``); some captures were recorded without ``-g`` (one line per
  sample, the frame on the header line, comm padded); some have CRLF line ends; and a few damaged lines
  are scattered through all (a frame line cut short, an unreadable frame, perf's ``Warning:`` lines
  between samples), which readers skip and count.
* A wpaexporter CSV with about ``stacks`` distinct stacks (default 20,000) of 21 frames on average
  (:func:`write_wpa_csv`).  The default shape is the held-out export's (CRLF, no weight column, a
  Count column only) with what real exports carry: a UTF-8 BOM, every header and text cell quoted, extra
  columns (Thread Name, Priority), C++ frames with commas, templates and quotes (``operator""``), frames
  WPA writes without a symbol (``?!?``, ``module!<PDB_not_found>``, ``Unknown``), ``n/a`` and
  ``[Root]``-only stacks, and time stamps that pass 1,000 s, written with a grouping comma
  (``"1,000.000125"``).  ``shape="de"`` is a German machine's export: ``;``-separated, LF, decimal
  commas and '.' grouping (``1.234,5``), a ``Weight (in view) (ms)`` column, columns in another order.
* A WPA tree (``Stack`` tree copied with its ``|- `` guides, :func:`write_wpa_tree`), which WPA writes
  for what is expanded on screen: small.

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
    """One capture's vocabulary (programs, libraries, functions per library) and layout."""

    #: frame line indents: perf's tab and four spaces, a tab, eight spaces (perf 5.x), simpleperf's
    INDENTS = ("\t    ", "\t", "        ", "simpleperf")

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
        self.indent = self.INDENTS[index % len(self.INDENTS)]
        self.callchain = index % 7 != 3   # recorded with -g, or not
        self.newline = "\r\n" if index % 6 == 5 else "\n"

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

    def frame_line(self, addr: int, fn: str, off: int, dso: str) -> str:
        """One frame line in this capture's layout (no line end)."""
        if self.indent == "simpleperf":
            return f"          {addr:x}\t{fn}+0x{off:x} ({dso})"
        return f"{self.indent}{addr:x} {fn}+0x{off:x} ({dso})"

    def header(self, comm: str, tid: int, cpu: int, t: float, period: int) -> str:
        """The sample header line (no line end; without -g the caller appends the frame)."""
        if not self.callchain:
            return f"{comm:>16} {tid:>6} [{cpu:03d}] {t:12.6f}: {period:10d} cycles:      "
        if self.indent == "simpleperf":
            return f"{comm}\t{tid} [{cpu:03d}] {t:.6f}:\t\t{period} cpu-clock:"
        if self.shape == 0:
            return f"{comm} {self.pid}/{tid} [{cpu:03d}] {t:.6f}: {period} cycles:"
        if self.shape == 1:
            return f"{comm} {tid} [{cpu:03d}] {t:.6f}: {period} cycles:"
        if self.shape == 2:
            return f"{comm} {self.pid}/{tid} {t:.6f}: {period} cycles:"
        return f"{comm}  {tid} [{cpu:03d}] {t:.6f}:      {period} cycles:"


#: Damaged lines of public captures (see tests/perftools/test_perftools_native.py REAL_SHAPES): a frame
#: cut short inside a sample, an unreadable frame inside a sample, perf's warnings between samples.
_DAMAGE = ("\t    7fa4c73bc184 start_thread (/lib/x86_64-linux-gnu", "\t          THIS_IS_A_WEIRD_LINE",
           "  Warning: 2 chunks lost", "Warning:\nProcessed 4096 events and lost 1 chunks!")


def _addr(rng) -> int:
    return int(rng.integers(0x400000, 0x7FFFFFFFF000))


def popularity(rng, n: int, skew: float = 0.9) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** skew
    rng.shuffle(w)
    return w / w.sum()


def write_perf(path: str, size: int, rng, stacks: int = 80_000, segments: int = 30, skew: float = 0.3,
               damaged: float = 1 / 3000) -> dict:
    """A ``perf script`` text of about ``size`` bytes; returns its sample, distinct-stack and damaged-line counts.

    ``damaged``: the share of samples followed (or, for a frame, entered) by a damaged line."""
    per = max(1, stacks // segments)
    segs, blocks, owner = [], [], []
    for k in range(segments):
        seg = _Segment(rng, k)
        segs.append(seg)
        nl = seg.newline
        for _ in range(per):
            frames = seg.stack(rng)
            leaf = frames[-1]
            if seg.callchain:
                callers = "".join(seg.frame_line(_addr(rng), f, int(rng.integers(1, 0x900)), d) + nl
                                  for d, f in reversed(frames[:-1]))
            else:
                callers = ""
            blocks.append((leaf, callers))
            owner.append(k)
    p = popularity(rng, len(blocks), skew)
    avg = float(np.dot(p, [len(c) + len(lf[1]) for lf, c in blocks])) + 110
    n_samples = int(size / avg)
    written, t, bad = 0, 1000.0, 0
    with open(path, "w", newline="") as out:
        while written < n_samples:
            n = min(20000, n_samples - written)
            idx = rng.choice(len(blocks), size=n, p=p)
            offs = rng.integers(0, 0x300, size=n)
            periods = rng.integers(10000, 4_000_000, size=n)
            hurt = (rng.random(n) < damaged).tolist()
            kinds = rng.integers(len(_DAMAGE), size=n).tolist()
            buf = []
            for i, off, period, h, kind in zip(idx.tolist(), offs.tolist(), periods.tolist(), hurt, kinds):
                seg = segs[owner[i]]
                nl = seg.newline
                t += 0.000251
                (dso, fn), callers = blocks[i]
                tid = seg.pid + (i % 7)
                head = seg.header(seg.comms[i % 3], tid, i % 64, t, period)
                leaf = seg.frame_line(0x7f0000000000 + (i << 12) + off, fn, off, dso)
                if not seg.callchain:
                    buf.append(f"{head}{leaf.lstrip()}{nl}")
                    if h and kind >= 2:
                        buf.append(_DAMAGE[kind].replace("\n", nl) + nl)
                        bad += 1
                    continue
                if h and kind < 2:  # inside the sample, before its callers
                    buf.append(f"{head}{nl}{leaf}{nl}{_DAMAGE[kind]}{nl}{callers}{nl}")
                    bad += 1
                else:
                    buf.append(f"{head}{nl}{leaf}{nl}{callers}{nl}")
                    if h:
                        buf.append(_DAMAGE[kind].replace("\n", nl) + nl + nl)
                        bad += 1
            out.write("".join(buf))
            written += n
    return {"samples": n_samples, "stacks": len(blocks), "damaged": bad}


_MODULES = ("sqlmin", "sqllang", "sqldk", "sqlos", "ntdll", "kernel32", "KernelBase", "ucrtbase", "msvcp140",
            "vcruntime140", "hkengine", "hkcompile")


def _wpa_stacks(rng, stacks: int) -> list[list[str]]:
    """Distinct stacks (root first, ``module!function`` frames), 21 frames on average, sharing prefixes."""
    mods = [f"{name}.dll" for name in _MODULES]
    funcs = {m: [function_name(rng, m.split(".")[0].capitalize(), "cpp" if rng.random() < 0.1 else "c")
                 for _ in range(300)] for m in mods}
    # what real exports hold besides: templates with commas, operator"" (quotes), operator/ (a slash)
    funcs["msvcp140.dll"] += ["std::vector<int, std::allocator<int> >::push_back",
                              'std::literals::chrono_literals::operator"" ms', "std::ratio<1/1000>::num",
                              "std::chrono::duration<__int64, std::ratio<1, 10000000> >::operator/"]
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
            r = rng.random()
            base.append(f"{m}!<PDB_not_found>" if r < 0.02 else "?!?" if r < 0.03 else "Unknown" if r < 0.035
                        else f"{m}!{_pick(rng, funcs[m])}")
        key = tuple(base)
        if key not in seen:
            seen.add(key)
            texts.append(base)
    return texts


def _grouped(x: float, decimals: int, dec: str = ".") -> str:
    """``x`` as WPA writes it in a locale: digits grouped in threes (``1,234.5``; ``1.234,5`` for dec=',')."""
    text = f"{x:,.{decimals}f}"
    return text if dec == "." else text.translate(str.maketrans(",.", ".,"))


def write_wpa_csv(path: str, size: int, rng, stacks: int = 20_000, shape: str = "export") -> dict:
    """A wpaexporter-like CSV of about ``size`` bytes (``shape``: "export" or "de", see the module)."""
    texts = _wpa_stacks(rng, stacks)
    cells = ['"[Root]/' + "/".join(s).replace('"', '""') + '"' for s in texts] + ['"n/a"', '"[Root]"']
    p = popularity(rng, len(cells))
    procs = ['"sqlservr.exe (2140)"', '"sqlservr.exe (2140)"', '"sqlservr.exe (2140)"', '"System (4)"',
             '"svchost.exe (1288)"']
    names = ['"SQL Server, Worker"', '""', '"LogWriter"', '"Ckpt ""main"""']
    avg = float(np.dot(p, [len(c) for c in cells])) + (100 if shape == "export" else 75)
    rows = int(size / avg)
    written, t = 0, 1000.0 - rows * 0.000125 / 8  # passes 1,000 s, where WPA starts grouping the seconds
    with open(path, "w", newline="", encoding="utf-8") as out:
        if shape == "export":
            out.write('\ufeff"Line #","Process","Thread ID","Thread Name","Stack","CPU","Priority","Count",'
                      '"TimeStamp (s)","% Weight"\r\n')
        else:
            out.write("Stack;Process;Thread ID;CPU;Weight (in view) (ms);TimeStamp (s);% Weight\n")
        while written < rows:
            n = min(50000, rows - written)
            idx = rng.choice(len(cells), size=n, p=p)
            tids = rng.integers(4000, 9000, size=n)
            ws = 0.999 + rng.random(n) * 0.002
            buf = []
            for j, (i, tid, w) in enumerate(zip(idx.tolist(), tids.tolist(), ws.tolist())):
                t += 0.000125
                proc = procs[tid % len(procs)]
                if shape == "export":
                    stamp = f'"{_grouped(t, 9)}"' if t >= 1000 else f"{t:.9f}"
                    buf.append(f"{written + j + 1},{proc},{tid},{names[tid % 4]},{cells[i]},{tid % 16},"
                               f"{8 + tid % 8},1,{stamp},0.00\r\n")
                else:
                    buf.append(f"{cells[i]};{proc};{tid};{tid % 16};{_grouped(w, 6, ',')};{_grouped(t, 9, ',')};0,00\n")
            out.write("".join(buf))
            written += n
    return {"rows": rows, "stacks": len(cells), "delimiter": "," if shape == "export" else ";"}


def write_wpa_tree(path: str, rng, stacks: int = 300, width: int = 3) -> dict:
    """A WPA Stack tree copied as CSV (``Line #, Process, Stack, Count, Weight (in view) (ms), % Weight``):
    one row per node under ``[Root]``, ``|- `` before a node with siblings, an only child at its parent's
    indent, thousands grouped (``"1,234.000000"``); returns its node count and total weight."""
    texts = _wpa_stacks(rng, stacks)
    tree: dict = {}
    for s in texts:  # each stack a leaf weight; its prefixes add up
        node = tree
        for fr in s:
            node = node.setdefault(fr, {})
        node[None] = node.get(None, 0) + int(rng.integers(1, 40))

    def total(node) -> int:
        return sum(v if k is None else total(v) for k, v in node.items())

    all_w = total(tree)
    lines = ['"Line #","Process","Stack","Count","Weight (in view) (ms)","% Weight"',
             f'1,"sqlservr.exe (2140)","[Root]","{all_w:,}","{_grouped(all_w, 6)}","100.00"']

    def emit(node, prefix: str) -> None:
        kids = [k for k in node if k is not None]
        for k in kids:
            w = total(node[k])
            marker = "|- " if len(kids) > 1 else ""
            name = k.replace('"', '""')
            lines.append(f'{len(lines)},,"{prefix}{marker}{name}","{w:,}","{_grouped(w, 6)}","{100 * w / all_w:.2f}"')
            emit(node[k], prefix + ("|    " if len(kids) > 1 else ""))

    emit(tree, "  ")
    with open(path, "w", newline="", encoding="utf-8") as out:
        out.write("\r\n".join(lines) + "\r\n")
    return {"nodes": len(lines) - 2, "weight": all_w}
