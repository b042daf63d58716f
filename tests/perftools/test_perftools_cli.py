"""``perftools``: every subcommand through main([...])."""

import subprocess
import sys
from pathlib import Path

from contention_book.perftools.__main__ import main

FIX = Path(__file__).parent / "fixtures"
BEFORE, AFTER = FIX / "wpa" / "logcache_before.csv", FIX / "wpa" / "logcache_after.csv"
PERF = FIX / "perf" / "postgres_update_pidtid.perf-script.txt"


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_summary(capsys):
    code, out, err = run(capsys, "summary", BEFORE, "--top", "3")
    assert code == 0 and err == ""
    assert "total weight 10,000 ms" in out
    assert "23.89" in out and "sqlmin.dll!LogAppendContext::BackOff" in out
    assert "Modules by exclusive weight" in out and "sqlmin.dll" in out


def test_summary_filters(capsys):
    code, out, _ = run(capsys, "summary", PERF, "--process", "4772", "--thread", "4772")
    assert code == 0 and "postgres" in out
    code, out, _ = run(capsys, "summary", PERF, "--start", "229.3", "--end", "229.35", "--module", "libc.so.6")
    assert code == 0


def test_callers(capsys):
    code, out, _ = run(capsys, "callers", FIX / "wpa" / "tree_en_us.csv", "LogAppendContext::BackOff", "--depth", "2")
    assert code == 0
    lines = out.splitlines()
    assert any(l.strip().endswith("sqlmin.dll!LogAppendContext::BackOff") and "23.90" in l for l in lines)
    assert any(l.endswith("    sqllang.dll!CMsqlExecContext::ExecuteStmts") for l in lines)  # depth 2, indented
    code, out, _ = run(capsys, "callers", FIX / "folded" / "small.folded", "exec", "--callees")
    assert code == 0 and "scan" in out


def test_callers_unknown_function(capsys):
    code, _, err = run(capsys, "callers", BEFORE, "BackOf")
    assert code == 2 and "did you mean" in err and "LogAppendContext::BackOff" in err


def test_diff(capsys):
    code, out, _ = run(capsys, "diff", BEFORE, AFTER, "--top", "2")
    assert code == 0
    line = next(l for l in out.splitlines() if "BackOff" in l)
    assert line.split()[:3] == ["23.89", "1.43", "-22.46"]
    code, out, _ = run(capsys, "diff", BEFORE, AFTER, "--by", "module")
    assert code == 0 and "sqllang.dll" in out


def test_collapse_stdout_and_file(capsys, tmp_path):
    code, out, _ = run(capsys, "collapse", FIX / "folded" / "small.folded")
    assert code == 0 and out == (FIX / "folded" / "small.folded").read_text()
    code, out, _ = run(capsys, "collapse", PERF, "--process-root", "--weight", "samples", "-o", tmp_path / "x.folded.gz")
    assert code == 0 and out == ""
    assert (tmp_path / "x.folded.gz").read_bytes() == (FIX / "folded" / "postgres_update_pidtid.folded.gz").read_bytes()


def test_flame_png_and_svg(capsys, tmp_path):
    png, svg = tmp_path / "f.png", tmp_path / "f.svg"
    assert run(capsys, "flame", BEFORE, "-o", png, "--title", "before")[0] == 0
    assert png.stat().st_size > 10_000
    assert run(capsys, "flame", PERF, "-o", svg, "--icicle", "--process-root")[0] == 0
    assert svg.read_text().startswith("<svg")


def test_format_option_and_bad_usage(capsys):
    assert run(capsys, "summary", BEFORE, "--format", "wpa_csv")[0] == 0
    code, _, err = run(capsys, "summary", BEFORE, "--format", "perf_script")
    assert code == 2 and "line 1" in err  # a CSV is not perf script
    code, _, err = run(capsys, "summary", BEFORE, "--format", "nope")
    assert code == 2 and "unknown format" in err
    assert run(capsys, "frobnicate")[0] == 2  # argparse usage error
    assert run(capsys, "summary", "/no/such/file")[0] == 2
    code, _, err = run(capsys, "summary", FIX / "folded" / "small.folded", "--start", "1")
    assert code == 2 and "no timestamps" in err


def test_module_entry_point_runs():
    r = subprocess.run([sys.executable, "-m", "contention_book.perftools", "summary", str(BEFORE), "--top", "1"],
                       capture_output=True, text=True, env={**__import__("os").environ,
                                                            "PYTHONPATH": str(Path(__file__).parents[2] / "src")})
    assert r.returncode == 0, r.stderr
    assert "BackOff" in r.stdout or "ErsqExecuteQuery" in r.stdout
