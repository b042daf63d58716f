"""Numbers that parse but that no tool writes, in every format, through both readers (C core and Python).

Each importer checks the range of every number it reads: counts and weights finite and non-negative,
thread and process ids integers within 64 bits, CPU numbers within 32, no '_' digit separators or other
scripts' digits.  perf script skips such a line with the warning it gives a damaged line (file, line,
what was expected), or refuses it with strict=True / --strict; the other formats refuse the file at
that line.  A sample header without an event is a damaged line; a byte that is not UTF-8 is named by
line and byte offset; a summary never prints a negative total or a NaN percentage.
"""
from __future__ import annotations

import re

import pytest

from contention_book.perftools import FormatError, load, native_build, native_collapse
from contention_book.perftools.__main__ import main
from contention_book.perftools.importers import perf_script

FRAMES = ("\t          4b1ead80 XLogFlush+0x140 (/usr/lib/postgresql/15/bin/postgres)\n"
          "\t          4b4732d9 PostgresMain+0x919 (/usr/lib/postgresql/15/bin/postgres)\n")
GOOD = "postgres 4242/4242 [001] 100.000001: 1001 cycles:"
BIG = "9" * 400  # parses as a float, to infinity


@pytest.fixture(params=["core", "python"])
def reader(request, monkeypatch):
    """Run each case with the C cores on (when they read the file) and off."""
    if request.param == "python":
        monkeypatch.setenv(native_build.OFF_ENV, "0")
    return request.param


# ---- perf script --------------------------------------------------------------------------------------
PERF_BAD = {
    "tid_beyond_64_bits": "postgres 4242/18446744073709551616 [001] 100.5: 1001 cycles:",
    "pid_beyond_64_bits": "postgres 9223372036854775808/4242 [001] 100.5: 1001 cycles:",
    "tid_alone_beyond_64_bits": "postgres 99999999999999999999 [001] 100.5: 1001 cycles:",
    "cpu_beyond_32_bits": "postgres 4242/4242 [4294967296] 100.5: 1001 cycles:",
    "infinite_period": f"postgres 4242/4242 [001] 100.5: {BIG} cycles:",
    "infinite_time": f"postgres 4242/4242 [001] {BIG}.5: 1001 cycles:",
    "no_event": "postgres 4242/4242 [001] 100.5:",
    "no_event_no_cpu": "postgres 4242/4242 100.5: ",
}


def perf_file(tmp_path, bad_header: str):
    path = tmp_path / "capture.perf-script.txt"
    path.write_text(f"{GOOD}\n{FRAMES}\n{bad_header}\n{FRAMES}\n{GOOD}\n{FRAMES}\n")
    return path  # the bad header is line 5


@pytest.mark.parametrize("case", sorted(PERF_BAD))
def test_perf_out_of_range_header_is_a_damaged_line(tmp_path, case, reader, capsys):
    path = perf_file(tmp_path, PERF_BAD[case])
    p = load(path)
    assert len(p.samples) == 2 and p.meta["skipped_lines"] == 1 and p.meta["skipped_first_lines"] == [5]
    assert p.meta["event"] == "cycles" and p.meta["events"] == ["cycles"]  # never the time taken as an event
    warning = " ".join(p.meta["warnings"])
    assert str(path) in warning and "line 5" in warning and "expected a sample header" in warning
    assert (p.samples["weight"] >= 0).all() and p.samples["thread"].max() == 4242
    with pytest.raises(FormatError) as info:
        load(path, strict=True)
    assert info.value.line == 5 and str(path) in str(info.value)
    # a header that is no header the C core skips and counts as Python does; numbers out of range it
    # leaves to the Python reader, which names them
    got = native_collapse.collapse(path)
    assert got == perf_script.collapse(path) if case.startswith("no_event") and reader == "core" else got is None
    assert main(["collapse", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == perf_script.collapse(path)[0] and "line 5" in err
    assert main(["collapse", "--strict", str(path)]) == 2
    assert "line 5" in capsys.readouterr().err


def test_perf_ids_at_the_limit_are_kept_exactly(tmp_path, reader):
    top = 2**63 - 1
    path = perf_file(tmp_path, f"postgres {top}/{top} [2147483647] 100.5: 1001 cycles:")
    p = load(path)
    assert p.meta["skipped_lines"] == 0 and int(p.samples["thread"].max()) == top  # no float rounding


def test_perf_numeric_event_names_are_not_events_but_others_are(tmp_path):
    for event, ok in (("9p:9p_client_req", True), ("r003c", True), ("123.456", False), ("1:2", False)):
        path = tmp_path / "e.txt"
        path.write_text(f"{GOOD}\n{FRAMES}\npostgres 1/1 [000] 5.5: 1 {event}:\n{FRAMES}\n")
        assert bool(perf_script._HEADER_RE.match(f"postgres 1/1 [000] 5.5: 1 {event}:")) == ok, event
        assert load(path).meta["skipped_lines"] == (0 if ok else 1), event


# ---- WPA CSV ------------------------------------------------------------------------------------------
HEADER = "Process,Thread ID,Stack,CPU,Count,Weight (in view) (ms),TimeStamp (s),% Weight"
ROW = ["sqlservr.exe (2140)", "5120", "[Root]/ntdll.dll!Start/sqlmin.dll!LogWriter::Run", "1", "1", "1.5", "0.25", "1"]
WPA_BAD = {  # column index, value, words of the expectation
    "negative_weight": (5, "-2", "non-negative weight"),
    "infinite_weight": (5, "1e999", "non-negative weight"),
    "fractional_thread": (1, "12.5", "integer thread id within 64 bits"),
    "thread_beyond_64_bits": (1, "18446744073709551616", "integer thread id within 64 bits"),
    "negative_thread": (1, "-5", "integer thread id within 64 bits"),
    "thread_with_separator": (1, "1_000", "a number in column 'Thread ID'"),
    "cpu_beyond_32_bits": (3, "4294967296", "integer CPU number within 32 bits"),
    "infinite_time": (6, "1e999", "a finite time"),
}


def wpa_file(tmp_path, col=None, value=None, header=HEADER, row=ROW):
    bad = list(row)
    if col is not None:
        bad[col] = value
    path = tmp_path / "export.csv"
    path.write_text("\n".join([header, ",".join(row), ",".join(row), ",".join(bad), ",".join(row)]) + "\n")
    return path  # the bad row is line 4


@pytest.mark.parametrize("case", sorted(WPA_BAD))
def test_wpa_csv_out_of_range_is_refused_at_its_line(tmp_path, case, reader, capsys):
    col, value, words = WPA_BAD[case]
    path = wpa_file(tmp_path, col, value)
    with pytest.raises(FormatError) as info:
        load(path)
    msg = str(info.value)
    assert info.value.line == 4 and str(path) in msg and words in msg, msg
    assert main(["summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 4" in err and "Traceback" not in err


def test_wpa_csv_count_without_weight_column(tmp_path, reader):
    header = "Process,Thread ID,Stack,CPU,Count,TimeStamp (s)"
    row = ROW[:5] + ["0.25"]
    path = wpa_file(tmp_path, 4, "-2", header=header, row=row)
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == 4 and "non-negative" in str(info.value)


def test_wpa_csv_latin1_byte_is_named_by_line_and_offset(tmp_path, reader):
    path = wpa_file(tmp_path)
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    lines[3] = lines[3].replace(b"LogWriter", b"LogWrit\xe9r")
    path.write_bytes(b"\n".join(lines))
    offset = b"\n".join(lines).index(b"\xe9")
    with pytest.raises(FormatError) as info:
        load(path)
    msg = str(info.value)
    assert info.value.line == 4 and f"byte offset {offset:,}" in msg and "UTF-8" in msg, msg


# ---- xperf dumper -------------------------------------------------------------------------------------
XPERF_HEAD = """BeginHeader
SampledProfile,  TimeStamp,     Process Name ( PID),   ThreadID,           PrgrmCtr, CPU, ThreadStartImage!Function,            Image!Function, Count, SampledProfile type
Stack,  TimeStamp,   ThreadID, No.,            Address,            Image!Function
EndHeader
"""
XPERF_SAMPLE = "SampledProfile, {ts}, sqlservr.exe (2140), {tid}, 0x7ffa10001234, {cpu}, ntdll.dll!Start, sqlmin.dll!f, {count}, Unbatched\n"
XPERF_BAD = {
    "negative_count": dict(count="-2"),
    "infinite_count": dict(count="1e999"),
    "count_with_separator": dict(count="1_000"),
    "thread_beyond_64_bits": dict(tid="18446744073709551616"),
    "thread_superscript_digit": dict(tid="5\u00b2"),
    "timestamp_beyond_64_bits": dict(ts="99999999999999999999"),
    "cpu_beyond_32_bits": dict(cpu="4294967296"),
    "fractional_cpu": dict(cpu="1.5"),
}


@pytest.mark.parametrize("case", sorted(XPERF_BAD))
def test_xperf_out_of_range_is_refused_at_its_line(tmp_path, case):
    good = dict(ts="1000", tid="5120", cpu="1", count="1")
    path = tmp_path / "dump.txt"
    path.write_text(XPERF_HEAD + XPERF_SAMPLE.format(**good) + XPERF_SAMPLE.format(**{**good, **XPERF_BAD[case]}))
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == 6 and str(path) in str(info.value), str(info.value)


def test_xperf_latin1_byte(tmp_path):
    path = tmp_path / "dump.txt"
    good = dict(ts="1000", tid="5120", cpu="1", count="1")
    path.write_bytes((XPERF_HEAD + XPERF_SAMPLE.format(**good)).encode() +
                     XPERF_SAMPLE.format(**good).replace("sqlmin", "sqlm\xefn").encode("latin-1"))
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == 6 and "byte offset" in str(info.value)


# ---- WPA tree -----------------------------------------------------------------------------------------
TREE = "Line #,Process,Stack,Count,Weight (in view) (ms),% Weight\n1,,[Root],3,{root},100\n2,p (1),  |- a.dll!f,3,{w},100\n"


@pytest.mark.parametrize("root, w", [("3", "-1"), ("1e999", "3"), ("nan", "3")])
def test_tree_weights_finite_and_non_negative(tmp_path, root, w):
    path = tmp_path / "tree.csv"
    path.write_text(TREE.format(root=root, w=w))
    with pytest.raises(FormatError) as info:
        load(path, format="wpa_tree")
    assert info.value.line in (2, 3) and str(path) in str(info.value)


def test_tree_latin1_byte(tmp_path):
    path = tmp_path / "tree.csv"
    path.write_bytes(TREE.format(root="3", w="3").replace("a.dll", "\xe0.dll").encode("latin-1"))
    with pytest.raises(FormatError) as info:
        load(path, format="wpa_tree")
    assert info.value.line == 3 and "byte offset" in str(info.value)


# ---- folded -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("count, words", [("1_000", "no '_' separators"), ("nan", "a sample count"),
                                          ("inf", "a sample count"), ("1e999", "finite"), ("-2", "non-negative"),
                                          ("\u0661\u0662", "a sample count"), ("12.", "a sample count")])
def test_folded_counts(tmp_path, count, words):
    path = tmp_path / "x.folded"
    path.write_text(f"a;b 3\na;c {count}\n")
    with pytest.raises(FormatError) as info:
        load(path, format="folded")
    assert info.value.line == 2 and words in str(info.value), str(info.value)


# ---- the summary --------------------------------------------------------------------------------------
def test_summary_never_prints_nan_or_negative(tmp_path, capsys):
    path = tmp_path / "zero.folded"
    path.write_text("a;b 0\na;c 0\n")
    assert main(["summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert not re.search(r"\bnan\b", out.lower()) and not re.search(r"(^|\s)-\d", out), out
    assert "total weight 0" in out
