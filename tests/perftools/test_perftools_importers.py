"""Each importer on its fixtures, with totals and percentages worked out by
hand in fixtures/README.md; plus sniffing, BOM/CRLF/gzip and locale cases."""

import gzip
from pathlib import Path
import shutil

import numpy as np
import pandas as pd
import pytest

from contention_book import perftools
from contention_book.perftools import FormatError, load, sniff, top_functions, top_modules
from contention_book.perftools.importers import perf_script

FIXTURES = Path(__file__).parent / "fixtures"

WPA = FIXTURES / "wpa"
PERF = FIXTURES / "perf"
BACKOFF = "sqlmin.dll!LogAppendContext::BackOff"


def pct(table, name, col="exclusive_pct", key="function"):
    row = table[table[key] == name]
    assert len(row) == 1, f"{name} not in table"
    return float(row[col].iloc[0])


# ---------------------------------------------------------------- sniffing
@pytest.mark.parametrize(
    "path, fmt",
    [
        (WPA / "logcache_before.csv", "wpa_csv"),
        (WPA / "per_sample_de_locale.csv", "wpa_csv"),
        (WPA / "tree_en_us.csv", "wpa_tree"),
        (WPA / "tree_de_copy.tsv", "wpa_tree"),
        (FIXTURES / "xperf" / "dumper_sampled.txt", "xperf_dumper"),
        (PERF / "postgres_update.perf-script.txt", "perf_script"),
        (PERF / "python_busy_no_callchain.perf-script.txt", "perf_script"),
        (FIXTURES / "folded" / "small.folded", "folded"),
        (FIXTURES / "folded" / "postgres_update_pidtid.folded.gz", "folded"),
    ],
)
def test_sniff(path, fmt):
    assert sniff(path) == fmt


def test_unknown_format_name():
    with pytest.raises(ValueError, match="unknown format"):
        load(FIXTURES / "folded" / "small.folded", format="speedscope")


def test_format_aliases():
    assert len(load(PERF / "postgres_update.perf-script.txt", format="perf").samples) == 160


# ---------------------------------------------------------------- wpaexporter CSV
def test_wpa_csv_before_after_percentages():
    before = load(WPA / "logcache_before.csv")
    after = load(WPA / "logcache_after.csv")
    assert before.total_weight == pytest.approx(10000.0)
    assert after.total_weight == pytest.approx(10000.0)
    assert before.meta["format"] == "wpa_csv" and before.meta["weight_unit"] == "ms"
    assert pct(top_functions(before), BACKOFF) == pytest.approx(23.89)
    assert pct(top_functions(after), BACKOFF) == pytest.approx(1.43)
    # n/a (no stack) and unresolved frames are kept, as WPA shows them
    t = top_functions(before)
    assert pct(t, "n/a") == pytest.approx(3.0)
    assert pct(t, "sqlmin.dll!<PDB_not_found>") == pytest.approx(5.0)
    # [Root] is not a frame; inclusive counts the two <PDB_not_found> once
    assert "[Root]" not in set(t["function"])
    assert pct(t, "sqlmin.dll!<PDB_not_found>", "inclusive_pct") == pytest.approx(5.0)
    assert pct(t, "sqllang.dll!CMsqlExecContext::ExecuteStmts", "inclusive_pct") == pytest.approx(85.0)
    m = top_modules(before)
    assert pct(m, "sqlmin.dll", key="module") == pytest.approx(55.0)
    assert pct(m, "sqllang.dll", key="module") == pytest.approx(30.0)
    assert pct(m, "ntoskrnl.exe", key="module") == pytest.approx(12.0)
    assert before.processes() == ["System (4)", "sqlservr.exe (2140)"]


def test_wpa_csv_stack_order_root_first():
    p = load(WPA / "logcache_before.csv")
    names = p.stack_names(int(p.samples["stack_id"].iloc[0]))
    assert names[0] == "ntdll.dll!RtlUserThreadStart"
    assert names[-1] == BACKOFF
    assert p.frames.iloc[p.stack(0)[-1]].tolist() == ["sqlmin.dll", "LogAppendContext::BackOff"]


def test_wpa_csv_german_locale_bom_crlf():
    p = load(WPA / "per_sample_de_locale.csv")
    s = p.samples
    assert len(s) == 8
    assert p.total_weight == pytest.approx(9.0)
    assert s["weight"].iloc[0] == pytest.approx(1.176567818)
    assert s["time"].iloc[0] == pytest.approx(39992.941063)  # "39.992,941063" s
    assert s["time"].iloc[-1] == pytest.approx(40001.0)
    assert s["cpu"].tolist() == [1, 1, 0, 0, 1, 0, 0, 1]
    assert s["thread"].iloc[-1] == 88
    t = top_functions(p)
    assert pct(t, BACKOFF) == pytest.approx(200 / 9)
    assert pct(t, "sqlmin.dll!CArray<int,8>::Add") == pytest.approx(100 / 9)  # quoted comma
    assert pct(t, "?!?") == pytest.approx(100 / 9)  # unresolved module
    assert pct(t, "?!?", "inclusive_pct") == pytest.approx(100 / 9)  # twice on one stack
    unknown = p.frames[p.frames["function"] == "Unknown"]  # frame without a module
    assert unknown["module"].tolist() == [""]
    assert pct(t, "n/a") == pytest.approx(100 / 9)
    assert "Idle (0)" in p.processes()


def test_wpa_csv_time_filter():
    p = load(WPA / "per_sample_de_locale.csv")
    q = p.filter(start=39994.0, end=39997.0)
    assert len(q.samples) == 3
    assert q.total_weight == pytest.approx(3.0)
    assert pct(top_functions(q), "sqlmin.dll!memcpy") == pytest.approx(100 / 3)


def test_wpa_csv_gzip_and_utf16(tmp_path):
    src = WPA / "per_sample_de_locale.csv"
    gz = tmp_path / "export.csv.gz"
    with open(src, "rb") as f, gzip.open(gz, "wb") as g:
        shutil.copyfileobj(f, g)
    u16 = tmp_path / "export_utf16.csv"
    u16.write_text(src.read_text(encoding="utf-8-sig"), encoding="utf-16")
    want = load(src)
    for path in (gz, u16):
        got = load(path)
        assert got.total_weight == pytest.approx(want.total_weight)
        assert got.samples["time"].tolist() == pytest.approx(want.samples["time"].tolist())
        assert pct(top_functions(got), BACKOFF) == pytest.approx(200 / 9)


def test_wpa_csv_semicolon_and_thousands(tmp_path):
    # Excel-style ';' separated export with '.' grouping inside the weight
    f = tmp_path / "semi.csv"
    f.write_text(
        "Process;Thread ID;Stack;Weight (in view) (ms)\n"
        "a.exe (1);7;[Root]/a.dll!main/a.dll!work;1.234.567,5\n"
        "a.exe (1);7;[Root]/a.dll!main;2.432,5\n",
        encoding="utf-8",
    )
    p = load(f)
    assert p.samples["weight"].tolist() == [1234567.5, 2432.5]


def test_wpa_csv_late_bad_number_names_the_line(tmp_path):
    # plain numbers for more than the sniffed head, then a bad one: the
    # fast typed read fails, the text re-read fails, the diagnosis names it
    f = tmp_path / "late.csv"
    row = "sqlservr.exe (2140),5120,[Root]/a.dll!main/a.dll!work,1.000000\n"
    with open(f, "w") as out:
        out.write("Process,Thread ID,Stack,Weight (in view) (ms)\n")
        out.write(row * 20000)
        out.write(row.replace("1.000000", "1.0.0"))
    with pytest.raises(FormatError) as e:
        load(f)
    assert e.value.line == 20002
    assert "Weight (in view) (ms)" in str(e.value)


def test_wpa_csv_late_locale_value_still_parses(tmp_path):
    # the head is plain, a grouped value comes later: re-read as text
    f = tmp_path / "late_ok.csv"
    row = "sqlservr.exe (2140),5120,[Root]/a.dll!main/a.dll!work,1.000000\n"
    with open(f, "w") as out:
        out.write("Process,Thread ID,Stack,Weight (in view) (ms)\n")
        out.write(row * 20000)
        out.write(row.replace("1.000000", '"1,000.000000"'))
    p = load(f)
    assert p.total_weight == pytest.approx(21000.0)


def test_wpa_csv_count_column_when_no_weight(tmp_path):
    f = tmp_path / "count.csv"
    f.write_text("Stack,Count\n[Root]/a!x,3\n[Root]/a!y,1\n")
    p = load(f)
    assert p.meta["weight_unit"] == "samples"
    assert pct(top_functions(p), "a!x") == pytest.approx(75.0)


# ---------------------------------------------------------------- WPA tree
@pytest.mark.parametrize("name", ["tree_en_us.csv", "tree_de_copy.tsv"])
def test_wpa_tree_fixture(name):
    p = load(WPA / name)
    assert p.meta["format"] == "wpa_tree"
    assert p.total_weight == pytest.approx(1000.0)
    t = top_functions(p)
    expected_self = {
        "sqllang.dll!CMsqlExecContext::ExecuteStmts": 25.0,
        BACKOFF: 23.9,
        "sqllang.dll!CStmtQuery::ErsqExecuteQuery": 20.0,
        "sqlmin.dll!SQLServerLogMgr::AppendLogRequest": 10.0,
        "ntoskrnl.exe!PspSystemThreadStartup": 7.0,
        "sqlmin.dll!memcpy": 6.1,
        "sqldk.dll!SOS_Scheduler::Idle": 5.0,
        "ntoskrnl.exe!KiIdleLoop": 3.0,
    }
    for fn, v in expected_self.items():
        assert pct(t, fn) == pytest.approx(v), fn
    assert pct(t, "ntdll.dll!RtlUserThreadStart", "inclusive_pct") == pytest.approx(90.0)
    assert pct(t, "sqllang.dll!process_request", "inclusive_pct") == pytest.approx(85.0)
    assert pct(t, "sqlmin.dll!SQLServerLogMgr::AppendLogRequest", "inclusive_pct") == pytest.approx(40.0)
    assert t["exclusive_pct"].sum() == pytest.approx(100.0)
    # the single-child chain under [Root] is a chain, not siblings
    backoff_stack = p.stack_names(_stack_with_leaf(p, BACKOFF))
    assert backoff_stack == [
        "ntdll.dll!RtlUserThreadStart",
        "kernel32.dll!BaseThreadInitThunk",
        "sqldk.dll!SchedulerManager::ThreadEntryPoint",
        "sqldk.dll!SOS_Task::Param::Execute",
        "sqllang.dll!process_request",
        "sqllang.dll!CMsqlExecContext::ExecuteStmts",
        "sqlmin.dll!SQLServerLogMgr::AppendLogRequest",
        BACKOFF,
    ]
    by_proc = p.samples.groupby("process", observed=True)["weight"].sum()
    assert by_proc["sqlservr.exe (2140)"] == pytest.approx(900.0)
    assert by_proc["System (4)"] == pytest.approx(100.0)


def _stack_with_leaf(p, name):
    for i in range(p.n_stacks):
        if p.stack_names(i)[-1] == name:
            return i
    raise AssertionError(name)


# ---------------------------------------------------------------- xperf dumper
def test_xperf_dumper_fixture():
    p = load(FIXTURES / "xperf" / "dumper_sampled.txt")
    s = p.samples
    assert len(s) == 6 and p.total_weight == 6
    assert p.processes() == ["Idle (0)", "sqlservr.exe (2140)", "xperf.exe (288)"]
    assert s["time"].tolist() == pytest.approx([0.001, 0.001, 0.002, 0.002, 0.003, 0.003])
    assert s["thread"].tolist() == [5120, 5200, 5120, 0, 5124, 4848]
    assert s["cpu"].tolist() == [1, 0, 1, 0, 1, 0]
    t = top_functions(p)
    assert pct(t, BACKOFF) == pytest.approx(100 / 3)
    assert pct(t, "sqlmin.dll!memcpy") == pytest.approx(100 / 6)  # its stack came late
    assert pct(t, "sqlmin.dll!CArray<int,8>::Add") == pytest.approx(100 / 6)  # comma in name
    assert pct(t, "n/a") == pytest.approx(100 / 6)  # Idle: no stack
    assert pct(t, "sqlmin.dll!SQLServerLogMgr::AppendLogRequest", "inclusive_pct") == pytest.approx(400 / 6)
    # the CSwitch's stack (KiSwapContext) is not a sample's
    assert not (p.frames["function"] == "KiSwapContext").any()
    # stacks are root first even though the dumper lists the leaf first
    assert p.stack_names(int(s["stack_id"].iloc[0]))[0] == "ntdll.dll!RtlUserThreadStart"


# ---------------------------------------------------------------- perf script
def test_perf_script_postgres_capture():
    p = load(PERF / "postgres_update.perf-script.txt")
    s = p.samples
    # weighted by period (1001001 ns of cpu-clock each), as perf report weighs
    assert len(s) == 160 and p.total_weight == 160 * 1001001
    assert set(s["thread"]) == {4771, 4772}
    assert set(s["cpu"]) <= {0, 1}
    assert s["time"].iloc[0] == pytest.approx(229.248454)
    assert p.meta["events"] == ["cpu-clock"]
    t = top_functions(p)
    # offsets are stripped; Debian's stripped postgres shows [unknown]
    assert not t["function"].str.contains(r"\+0x").any()
    assert "postgres![unknown]" in set(t["function"])
    assert pct(t, "libc.so.6!__libc_start_call_main", "inclusive_pct") > 80
    first = p.stack_names(int(s["stack_id"].iloc[0]))
    assert first[0] == "libc.so.6!__libc_start_call_main"
    assert first[-1] == "[kernel.kallsyms]!ext4_da_write_end"
    assert "postgres!XLogFlush" in first


def test_perf_script_pid_tid_form_names_processes():
    p = load(PERF / "postgres_update_pidtid.perf-script.txt")
    assert p.processes() == ["postgres (4771)", "postgres (4772)"]
    assert p.filter(process="4772").samples["thread"].unique().tolist() == [4772]
    assert len(p.filter(process="postgres").samples) == 40


def test_perf_script_comm_with_space_and_no_callchain():
    a = load(PERF / "python_busy_comm_with_space.perf-script.txt")
    assert a.processes() == ["busy worker"]
    assert len(a.samples) == 30
    b = load(PERF / "python_busy_no_callchain.perf-script.txt")
    assert b.processes() == ["busy worker"]
    assert len(b.samples) == 30
    assert all(len(b.stack(i)) == 1 for i in range(b.n_stacks))
    assert pct(top_functions(b), "libpython3.11.so.1.0!PyLong_FromLong") == pytest.approx(30.0)


def test_perf_script_weight_period():
    p = perf_script.load(PERF / "postgres_update.perf-script.txt", weight="period")
    assert p.total_weight == pytest.approx(160 * 1001001)
    assert perf_script.load(PERF / "postgres_update.perf-script.txt", weight="samples").total_weight == 160


def test_perf_script_chunk_boundaries(tmp_path, monkeypatch):
    # tiny chunks: samples split across reads must come out the same
    src = PERF / "postgres_update.perf-script.txt"
    want = load(src)
    monkeypatch.setattr(perf_script, "_CHUNK", 997)
    got = load(src)
    assert got.samples["stack_id"].map(lambda i: tuple(got.stack_names(i))).tolist() == want.samples[
        "stack_id"
    ].map(lambda i: tuple(want.stack_names(i))).tolist()
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(b"\xef\xbb\xbf" + src.read_bytes().replace(b"\n", b"\r\n"))
    got = load(crlf, format="perf_script")
    assert len(got.samples) == 160
    np.testing.assert_allclose(got.samples["time"], want.samples["time"])


# ---------------------------------------------------------------- folded
def test_folded_small():
    p = load(FIXTURES / "folded" / "small.folded")
    assert p.total_weight == 50
    t = top_functions(p)
    assert pct(t, "scan") == pytest.approx(70.0)
    assert pct(t, "exec", "inclusive_pct") == pytest.approx(70.0)  # recursion counted once
    assert pct(t, "parse", "inclusive_pct") == pytest.approx(30.0)


def test_folded_with_process_root_matches_its_perf_source():
    f = load(FIXTURES / "folded" / "postgres_update_pidtid.folded.gz", process_root=True)
    s = load(PERF / "postgres_update_pidtid.perf-script.txt")
    assert f.processes() == s.processes()
    a, b = top_functions(f), top_functions(s)
    merged = a.merge(b, on="function")
    assert len(merged) == len(a) == len(b)
    np.testing.assert_allclose(merged["exclusive_pct_x"], merged["exclusive_pct_y"])
    np.testing.assert_allclose(merged["inclusive_pct_x"], merged["inclusive_pct_y"])


def test_public_api_exports():
    for name in ("load", "Profile", "FormatError", "top_functions", "top_modules", "callers", "callees",
                 "diff", "to_folded", "write_folded", "flame_figure", "write_svg"):
        assert hasattr(perftools, name)
    assert issubclass(FormatError, ValueError)
    assert isinstance(load(FIXTURES / "folded" / "small.folded").samples, pd.DataFrame)
