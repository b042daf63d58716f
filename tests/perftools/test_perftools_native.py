"""The C core of ``perftools collapse`` gives what the Python reader gives, or steps aside.

Every fixture, every header shape, generated captures with mixed events and missing periods, and (where
fetched) the public corpus: the native collapse either equals ``perf_script.collapse`` line for line and
meta for meta, or returns None so the Python reader runs.  A C compiler is installed by ``.ci/run``; the
tests fail, not skip, when the core cannot be built there.
"""
from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest

from contention_book.perftools import native_build, native_collapse as N
from contention_book.perftools.__main__ import main
from contention_book.perftools.importers import perf_script

FIXTURES = Path(__file__).parent / "fixtures" / "perf"
FRAMES = (
    "\t          4b1ead80 XLogFlush+0x140 (/usr/lib/postgresql/15/bin/postgres)\n"
    "\t          4b4732d9 PostgresMain+0x919 (/usr/lib/postgresql/15/bin/postgres)\n"
)
HEADERS = [
    "java 19983 cycles:",
    "node 31912 cpu-clock: ",
    "iperf 27409/28744 [000] 441995.133575: cpu-clock:",
    "perf 47118 [011] 51499.088689:          1 page-faults: ",
    "emulator  4152 75695.008865:          1 cycles:u: ",
    "V8 WorkerThread 24636/25607 [000] 94564.109216: cycles:",
    "java 19983 250000 cycles:",
    "busy\t4771 [001] 229.248454:\t\t1001001 cpu-clock:",
    "a 1 2 3 4 5 cycles:",          # comm '1 2 3 4'? no: the shortest comm, then pid 1, then the rest
    "x 12/34 [1] 1.5: 77 ev:ent:",  # an event with a colon inside
]


@pytest.fixture(scope="module", autouse=True)
def core():
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.fail("no C compiler: .ci/run installs gcc, and the C core must be tested")
    for name in native_build.CORES:
        assert native_build.library_path(name) is not None, f"the C core {name} did not build"


def python(path, **kw):
    return perf_script.collapse(path, **kw)


def same(path, **kw):
    """The native result equals the Python one; False when the core stepped aside."""
    got = N.collapse(path, **kw)
    if got is None:
        return False
    assert got == python(path, **kw)
    return True


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.txt")))
def test_the_fixtures(name):
    path = FIXTURES / name
    assert same(path)  # python_busy_no_callchain too: one line per sample, the frame in the header's tail
    assert same(path, weight="samples")


@pytest.mark.parametrize("header", HEADERS)
def test_every_header_shape(tmp_path, header):
    path = tmp_path / "c.txt"
    path.write_text(f"# comment\n{header}\n{FRAMES}\n{header}\n{FRAMES}")
    assert same(path)


def _generated(rng: random.Random, samples: int, events=("cycles",), period=True) -> str:
    mods = ["/usr/bin/postgres", "[kernel.kallsyms]", "/lib/x86_64-linux-gnu/libc.so.6", "", "/opt/a b/lib x.so"]
    syms = ["XLogFlush+0x1f", "[unknown]", "operator new(unsigned long)+0x10", "s_lock", "hash_search", "",
            "std::ratio<1/1000>::num", "f (inlined)", "deadbeef"]
    out = []
    for i in range(samples):
        ev = events[rng.randrange(len(events))]
        per = f" {rng.randrange(1, 10**6)}" if period else ""
        comm = rng.choice(["postgres", "kworker/u8:2", "V8 Worker", "a"])
        tid = rng.choice([f"{rng.randrange(1, 99999)}", f"{rng.randrange(1, 999)}/{rng.randrange(1, 999)}"])
        cpu = rng.choice(["", f" [{rng.randrange(0, 64):03d}]"])
        out.append(f"{comm} {tid}{cpu} {i}.{rng.randrange(10**6):06d}:{per} {ev}:")
        for _ in range(rng.randrange(1, 12)):
            sym = rng.choice(syms)
            mod = rng.choice(mods)
            out.append(f"\t    {rng.randrange(16**8):x} {sym} ({mod})" if sym else f"\t    {rng.randrange(16**8):x} ({mod})")
        out.append("")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("seed", range(6))
def test_generated_captures(tmp_path, seed):
    rng = random.Random(seed)
    path = tmp_path / "g.txt"
    events = ("cycles",) if seed % 2 else ("cycles", "instructions", "cycles:u")
    path.write_text(_generated(rng, 400, events=events, period=seed != 4))
    assert same(path)
    assert same(path, weight="samples")
    if len(events) > 1:
        assert same(path, event="instructions")
        with pytest.raises(ValueError, match="no samples of event 'nope'"):
            N.collapse(path, event="nope")
    if seed == 4:  # no period anywhere: period weights are refused as the Python reader refuses them
        with pytest.raises(Exception, match="a period on every sample header"):
            N.collapse(path, weight="period")


def test_a_sample_without_frames_is_one_n_a_frame_as_in_python(tmp_path):
    path = tmp_path / "e.txt"
    path.write_text("a 1 1.0: 3 cycles:\n\na 1 2.0: 4 cycles:\n" + FRAMES + "\nb 2 3.0: 5 cycles: \n")
    assert same(path)
    assert "n/a 8" in N.collapse(path)[0]


SPACED = FRAMES.replace("\t", "        ")  # perf script 5.x and later pad frames with spaces, not a tab
# Shapes of real captures that each sent a whole file (and every capture concatenated with it) to the
# Python reader: 2-3x slower than inferno and 1.1x the file's size in memory.  Each is a look-alike of a
# public capture's lines (named), written here by hand.
REAL_SHAPES = {
    "space-led frames (perf 5.x, inferno single-event.txt)": "a 1 1.0: 3 cycles:\n" + SPACED + "\n",
    "simpleperf: tabs after the padding (firefox simple-perf.txt)":
        "Gecko\t25122 [007] 115539.936601:\t\t1000000 task-clock:u:\n"
        "        b3cea6c4\tLock::unlock() (/system/lib/libc.so)\n        b3cea535\tshould_trace() (/system/lib/libc.so)\n\n",
    "frames not indented (FlameGraph perf-java-stacks-02.txt)":
        "java 7 cycles:\nffffffff8103d0ca native_write_msr_safe ([kernel.kallsyms])\n" + FRAMES + "\n",
    "a frame line cut short (flamescope perf.test01)":
        "a 1 1.0: 3 cycles:\n" + FRAMES + "\t    7fa4c73bc184 start_thread (/lib/x86_64-linux-gnu\n\n"
        "a 1 2.0: 4 cycles:\n\tBAD\n" + FRAMES + "\n",
    "a sample's only frame unreadable (inferno weird-stack-line.txt)":
        "a 1 1.0: 3 cycles:\n\t          THIS_IS_A_WEIRD_LINE\n\n" + "a 1 2.0: 4 cycles:\n" + FRAMES + "\n",
    "a blank line inside a sample: orphan frames (inferno empty-line.txt)":
        "a 1 1.0: 3 cycles:\n\n\t  10 orphan (x.so)\n\t  11 orphan2+0x1 (x.so)\n\na 1 2.0: 4 cycles:\n" + FRAMES + "\n",
    "perf's stderr in the capture: lines outside a sample that are neither header nor frame":
        "Failed to open /tmp/perf-4771.map, continuing without symbols\n" + FRAMES + "\n"
        "a 1 1.0: 3 cycles:\n" + FRAMES + "\n  Warning: 2 chunks lost\n" + SPACED + "b 2 2.0: 4 cycles:\n" + FRAMES
        + "\nWarning:\nProcessed 10 events and lost 1 chunks!\n\n",
    "perf without -g: the frame in the header's tail (inferno single-line-stacks.txt)":
        "  false 39654 19115.489713:          1 cycles:u:  ffffffff9b201293 [unknown] ([unknown])\n"
        "  false 39654 19115.489733:          7 cycles:u:  7f1e4c2a0e40 _dl_start+0x0 (/usr/lib/ld.so)\n",
    "a header led by spaces after space-led frames, no blank line": "  a 1 1.0: 3 cycles:\n" + SPACED + "  b 2 2.0: 5 cycles:\n" + SPACED,
    "CRLF line ends (a capture saved on Windows)": ("a 1 1.0: 3 cycles:\n" + SPACED + "\n" + "b 2 2.0: 4 cycles:\n" + FRAMES
                                                      + "\n").replace("\n", "\r\n"),
    "UTF-8 in comm, event and tail": "gr\u00fc\u00dfe \u65e5\u672c 1 1.0: 3 cycles\u00e9:\n" + FRAMES + "\n"
                                     "\u0436 2 2.0: 4 cycles\u00e9:  10 \u00e9t\u00e9 (x.so)\n\n",
    "UTF-8 in a symbol": "a 1 1.0: 3 cycles:\n\t  10 gr\u00fc\u00dfe::\u65e5\u672c (/opt/\u00e9/x.so)\n" + FRAMES + "\n",
}


@pytest.mark.parametrize("name", list(REAL_SHAPES))
def test_real_capture_shapes_are_read_by_the_core_as_python_reads_them(tmp_path, name):
    path = tmp_path / "x.txt"
    path.write_text(REAL_SHAPES[name])
    assert same(path), f"the C core stepped aside on: {name}"
    assert same(path, weight="samples")


def test_skipped_lines_are_reported_as_python_reports_them_and_strict_is_left_to_python(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text(REAL_SHAPES["a frame line cut short (flamescope perf.test01)"])
    lines, meta = N.collapse(path)
    assert meta["skipped_lines"] == 2 and meta["skipped_first_lines"] == [4, 7]
    assert "skipped 2 malformed line(s), at line 4, 7 (line 4: expected a stack frame line" in meta["warnings"][-1]
    assert N.collapse(path, strict=True) is None  # the Python reader raises at line 4
    with pytest.raises(Exception, match="line 4"):
        perf_script.collapse(path, strict=True)
    assert N._EXPECTED == (perf_script.FRAME_EXPECTED, perf_script.ORPHAN_EXPECTED, perf_script.HEADER_EXPECTED)


def test_a_mixed_concatenation_stays_in_the_core(tmp_path):
    """Thirty captures in one file: one odd sample must not send the whole file to Python."""
    path = tmp_path / "x.txt"
    path.write_text("".join(REAL_SHAPES.values()) + _generated(random.Random(3), 300))
    assert same(path)


@pytest.mark.parametrize("text", [
    "a 1 1.0: 3 cycles:\r" + FRAMES + "\n",                            # a CR alone (Python: a line end)
    "a\u0663 1 1.0: 3 cycles:\n" + FRAMES + "\n",                       # a digit to Python's \d in a header
    "a \u0663 1 1.0: 3 cycles:\n" + FRAMES + "\n",
    "a 1 1.0: 3 cycles:\n\t  10 a\u00a0b (x.so)\n\n",                   # a blank that only Python's str.strip sees
    "a 1 1.0: 3 cycles:\n\t  10 a\xff (x.so)\n\n",                      # not UTF-8 (written as latin-1 below)
    "a 1 1.0: 3 cycles:\n\tb 2 2.0: 4 cycles:\n" + FRAMES + "\n",       # a tab-led header: readers differ
    "a 1 1.0: 3 cycles:  10 leaf (x.so)\n" + FRAMES + "\n",            # frames under a header with a tail
    "a 1 1.0: 3 cycles:  not a frame\n\n",                             # a tail that is no frame
    "\t  10 orphan (x.so)\n\tnot a frame\n\na 1 1.0: 3 cycles:\n" + FRAMES + "\n",  # tab-led, outside a sample
    "10 orphan (x.so)\n" + FRAMES + "\na 1 1.0: 3 cycles:\n" + FRAMES + "\n",  # a frame outside, not indented
    "no header at all\n",
    "",
])
def test_other_shapes_are_left_to_the_python_reader(tmp_path, text):
    path = tmp_path / "x.txt"
    path.write_bytes(text.encode("latin-1") if "\xff" in text else text.encode())
    assert N.collapse(path) is None


def test_the_cli_uses_it_and_says_the_same(tmp_path, capsys, monkeypatch):
    path = FIXTURES / "postgres_update.perf-script.txt"
    assert main(["collapse", str(path)]) == 0
    native = capsys.readouterr().out
    monkeypatch.setenv(native_build.OFF_ENV, "0")
    assert main(["collapse", str(path)]) == 0
    assert capsys.readouterr().out == native


def test_a_gzipped_capture_is_read_by_python(tmp_path):
    import gzip

    path = tmp_path / "c.txt.gz"
    path.write_bytes(gzip.compress(("a 1 1.0: 3 cycles:\n" + FRAMES + "\n").encode()))
    assert N.collapse(path) is None


MIRRORS = Path(os.environ.get("PERFTOOLS_CORPUS_MIRRORS", "/work/.mirror"))


def test_the_public_corpus_where_fetched(tmp_path):
    import subprocess

    from test_perftools_inferno_corpus import _corpus  # the same captures the inferno comparison reads

    corpus = _corpus()
    if not corpus:
        pytest.skip(f"no fetched capture mirrors under {MIRRORS}")
    read = 0
    for git_dir, name in corpus:
        data = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"HEAD:{name}"], capture_output=True,
                              check=True).stdout
        path = tmp_path / Path(name).name
        path.write_bytes(data)
        try:
            read += same(path)
        except (ValueError, Exception) as err:  # the Python reader refuses it: so must the C core step aside
            assert N.collapse(path) is None, (name, err)
    print(f"\nthe C core read {read} of {len(corpus)} corpus captures; Python read the rest")
    assert read > 0


def test_a_big_capture_read_in_two_halves_equals_the_python_reader(tmp_path):
    """Over 4 MB the core reads two halves in two threads into one set of tables: the second half brings
    events, frames and stacks the first never saw, and more of the first's."""
    rng = random.Random(7)
    first = _generated(rng, 9000, events=("cycles",))
    second = _generated(rng, 9000, events=("instructions", "cycles")).replace("postgres", "pg2")
    path = tmp_path / "big.txt"
    path.write_text(first + second)
    assert path.stat().st_size > 4 << 20, path.stat().st_size
    assert same(path)
    assert same(path, event="instructions")
    assert same(path, weight="samples")
    # skipped lines in both halves: the second half's line numbers follow the first half's lines
    text = (first + second).split("\n")
    for at in (5, len(text) - 40, len(text) - 20, len(text) - 8):
        if text[at].startswith("\t"):
            text[at] = "\tBAD"
    path.write_text("\n".join(text))
    assert same(path)
    assert N.collapse(path)[1]["skipped_lines"] >= 2


#: Collapses each file named on the command line with the C core, in a process of its own, and prints
#: what it returned (None: it stepped aside), as JSON.
_EVERY = ("import json, sys\nfrom contention_book.perftools import native_collapse as N\n"
          "print(json.dumps([N.collapse(p) for p in sys.argv[1:]]))\n")


def test_the_two_threads_end_on_every_size_and_shape_of_input(tmp_path):
    """The two reading threads share one set of tables behind a lock and hand their samples over in
    batches: on no input may they wait for ever (an earlier core, with a thread that parsed and another
    that interned, hung on every input).  Each file is read in a child process under a timeout: empty,
    one line, small, big (two threads), big with samples of no frames, one sample bigger than a batch
    and a line longer than a read block, and big ones that step aside early in either half."""
    import json
    import subprocess
    import sys

    big = _generated(random.Random(11), 20000, events=("cycles", "instructions"))
    half = len(big) // 2
    files = {
        "empty": "",
        "a blank line": "\n",
        "one header, no line end": "a 1 1.0: 3 cycles:",
        "one header": "a 1 1.0: 3 cycles:\n",
        "one frame line": FRAMES.splitlines()[0],
        "small": _generated(random.Random(12), 5),
        "big": big,
        "big, samples without frames": "".join(f"a 1 {i}.0: 3 cycles:\n\n" for i in range(250_000)),
        "one sample of 100,000 frames, after a 3 MB comment": "#" + "x" * (3 << 20) + "\na 1 1.0: 3 cycles:\n"
        + "".join(f"\t    {i:x} f{i % 5000}+0x1 (/lib/m{i % 7}.so)\n" for i in range(100_000)) + "\n",
        "big, another shape in the first half": "odd \r line\n" + big,
        "big, another shape at the end": big + "odd \r line\n",
        "big, another shape in the second half's first batch": big[:half] + big[half:].replace("\n\n", "\n\nodd \r line\n\n", 1),
    }
    paths = []
    for k, (name, text) in enumerate(files.items()):
        paths.append(tmp_path / f"{k}.txt")
        paths[-1].write_bytes(text.encode())
    assert paths[6].stat().st_size > 4 << 20 and paths[7].stat().st_size > 4 << 20  # read by two threads
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-c", _EVERY, *map(str, paths)], capture_output=True, text=True,
                          env=env, timeout=600)  # seconds of work; a hang never ends
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = dict(zip(files, json.loads(proc.stdout)))
    for name in ("empty", "a blank line", "one frame line"):  # no samples: the Python reader says what
        assert got[name] is None, name
    for name in ("big, another shape in the first half", "big, another shape at the end",
                 "big, another shape in the second half's first batch"):
        assert got[name] is None, name
    for name in ("one header, no line end", "one header", "small", "big", "big, samples without frames",
                 "one sample of 100,000 frames, after a 3 MB comment"):
        assert got[name] is not None, name
    for name, path in zip(files, paths):
        if got[name] is not None:
            assert got[name] == json.loads(json.dumps(python(path))), name
    assert got["big, samples without frames"][0] == ["n/a 750000"]
    assert len(got["one sample of 100,000 frames, after a 3 MB comment"][0]) == 1


def test_core_writes_to_a_closed_pipe_quietly(tmp_path):
    """`perftools collapse big | head -1`: the core's write fails with EPIPE; the command ends with 0, silent."""
    import subprocess
    import sys

    path = tmp_path / "big.txt"
    path.write_text(_generated(random.Random(9), 20000))
    proc = subprocess.Popen([sys.executable, "-m", "contention_book.perftools", "collapse", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0 and first.endswith(b"\n") and err == "", err


def test_the_repeated_capture_gives_the_same_stacks_three_times_the_weight(tmp_path):
    path, three = tmp_path / "one.txt", tmp_path / "three.txt"
    path.write_text(_generated(random.Random(3), 3000))
    three.write_text(path.read_text() * 3)
    one_lines, _ = N.collapse(path)
    three_lines, _ = N.collapse(three)
    assert [ln.rpartition(" ")[0] for ln in three_lines] == [ln.rpartition(" ")[0] for ln in one_lines]
    assert [int(ln.rpartition(" ")[2]) for ln in three_lines] == [3 * int(ln.rpartition(" ")[2]) for ln in one_lines]
    assert same(three)


def test_crlf_after_the_first_chunk_reads_as_lf_in_python_and_in_the_core(tmp_path, monkeypatch):
    """A CRLF capture concatenated after 8 MB of LF ones: Python's byte-chunk reader turned each CRLF into
    two line ends, so every header stood alone (an n/a sample) and its frames were skipped as orphans."""
    lf = "".join(f"a 1 {i}.0: 3 cycles:\n" + FRAMES + "\n" for i in range(40))
    crlf = ("b 2 9.0: 5 cycles:\n" + SPACED + "\n" + "c 3 9.5: 7 cycles:\n" + FRAMES + "\n").replace("\n", "\r\n")
    mixed, plain = tmp_path / "mixed.txt", tmp_path / "plain.txt"
    mixed.write_bytes((lf + crlf).encode())
    plain.write_bytes((lf + crlf.replace("\r\n", "\n")).encode())
    monkeypatch.setattr(perf_script, "_CHUNK", 1024)  # the CRLF part falls after the first chunk
    assert python(mixed) == python(plain)[:1] + ({**python(plain)[1], "source": python(mixed)[1]["source"]},)
    assert N.collapse(mixed) == python(mixed)


def test_a_header_that_also_reads_as_a_frame_is_a_header_in_every_reader(tmp_path):
    """'a 1 1.0: 3 cycles:  10 f (x.so)' (comm 'a' is hex, the tail ends in ')') after frames with no blank
    line: Python's block reader took it for one more frame of the sample above, and so dropped a sample."""
    path = tmp_path / "x.txt"
    path.write_text("perf script: noise\n" + FRAMES + "a 1 1.0: 3 cycles:  10 f (x.so)\n\n"
                    "b 2 2.0: 4 cycles:\n" + FRAMES + "a 1 3.0: 5 cycles:  10 f (x.so)\n\n")
    lines, meta = python(path)
    assert "x.so!f 8" in lines and meta["skipped_lines"] == 1
    assert same(path)


_MUTATIONS = [
    lambda ln, r: "", lambda ln, r: "garbage line", lambda ln, r: "\t" + ln.lstrip(), lambda ln, r: "    " + ln.lstrip(),
    lambda ln, r: ln.lstrip(), lambda ln, r: ln[: r.randrange(len(ln) + 1)], lambda ln, r: "# c", lambda ln, r: ln + "\r",
    lambda ln, r: "\txxx", lambda ln, r: "  ", lambda ln, r: "\t \t", lambda ln, r: "  a 1 1.0: 3 cycles:", lambda ln, r: "\ta 1 1.0: 3 cycles:",
    lambda ln, r: "a 1 1.0: 3 cycles:  10 f (x.so)", lambda ln, r: "10 f (x.so)", lambda ln, r: "  10 g\u00e9 (x.so)",
    lambda ln, r: "\u00e9 1 1.0: 3 cycl\u00e9s:", lambda ln, r: "x\u0663 1 1.0: 3 cycles:", lambda ln, r: "\u00e9\u00e9 (x.so)",
]


def test_mutated_captures_are_read_as_python_reads_them_or_left_to_it(tmp_path):
    """Real shapes cut, mixed and mutated line by line: wherever the core reads the file, it says what
    Python says (this found the header read as a frame above)."""
    pieces = [t.split("\n") for t in REAL_SHAPES.values()] + [_generated(random.Random(9), 30).split("\n")]
    path = tmp_path / "m.txt"
    read = 0
    for seed in range(300):
        r = random.Random(seed)
        lines = []
        for _ in range(r.randrange(1, 4)):
            p = r.choice(pieces)
            a = r.randrange(len(p))
            lines += p[a : a + r.randrange(5, 60)]
        for _ in range(r.randrange(0, 6)):
            i = r.randrange(len(lines))
            lines[i] = r.choice(_MUTATIONS)(lines[i], r)
        path.write_bytes(("\n".join(lines) + r.choice(["", "\n", "\n\n"])).encode())
        got = N.collapse(path)
        if got is not None:
            read += 1
            assert got == python(path), seed
    assert read > 50, read  # the rest are shapes left to Python


def test_a_line_of_blanks_ends_a_sample_in_every_reader(tmp_path):
    """Python's vectorised reader took a tab-led line of blanks for a bad frame, its block reader for a
    blank line (which str.strip() makes it); now both, and the core, read a blank line."""
    path = tmp_path / "x.txt"
    path.write_text("a 1 1.0: 3 cycles:\n" + FRAMES + "\t \n" + "b 2 2.0: 4 cycles:\n" + FRAMES + "\t\n"
                    + FRAMES + "\n")
    lines, meta = python(path)
    assert meta["skipped_lines"] == 2 and "before the stack frames" in meta["warnings"][-1]  # orphans
    assert same(path)
