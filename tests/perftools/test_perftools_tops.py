"""``perftools summary`` and ``collapse`` without pandas: the numpy tables equal analysis' DataFrames,
the numpy filters keep what Profile.filter keeps, and a test fails if the summary loads pandas."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from contention_book.perftools import analysis, load, tops
from contention_book.perftools.builder import SampleArrays, arrays_only
from contention_book.perftools.importers import folded

FIXTURES = sorted(p for p in (Path(__file__).parent / "fixtures").rglob("*") if p.is_file() and p.name != "README.md")


def both(path):
    with arrays_only():
        a = load(path)
    assert isinstance(a, SampleArrays)
    return load(path), a


def same_rows(rows, df, name_col):
    assert [r.name for r in rows] == df[name_col].astype(str).tolist()
    for col in ("exclusive", "exclusive_pct", "inclusive", "inclusive_pct"):
        np.testing.assert_allclose([getattr(r, col) for r in rows], df[col].to_numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
@pytest.mark.parametrize("sort", ["exclusive", "inclusive"])
def test_tables_equal_analysis(path, sort):
    p, a = both(path)
    assert (a.n_samples, a.n_stacks) == (len(p.samples), p.n_stacks)
    assert a.total_weight == pytest.approx(p.total_weight, rel=1e-12)
    same_rows(tops.top_functions(a, 30, sort=sort), analysis.top_functions(p, 30, sort=sort), "function")
    same_rows(tops.top_modules(a, None, sort=sort), analysis.top_modules(p, None, sort=sort), "module")


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_filters_keep_what_profile_filter_keeps(path):
    p, a = both(path)
    procs = p.processes()
    threads = p.samples["thread"].dropna().unique().tolist()[:2]
    modules = [m for m in p.frames["module"].unique().tolist() if m][:1]
    t = p.samples["time"].to_numpy()
    cases = [dict(process=procs[:1]), dict(thread=threads or [1]), dict(module=modules or ["none"])]
    if not np.isnan(t).all():
        cases.append(dict(start=float(np.nanmedian(t))))
    for kw in cases:
        fp, fa = p.filter(**kw), a.filter(**kw)
        assert fa.n_samples == len(fp.samples), kw
        np.testing.assert_array_equal(fa.stack_id, fp.samples["stack_id"].to_numpy())
        assert folded.lines_from(fa.frame_names(), fa.stack_offsets, fa.stack_frames, fa.stack_id, fa.weight) == \
            folded.lines(fp), kw


@pytest.mark.parametrize("path", [f for f in FIXTURES if "perf" in f.parent.name or "wpa" in f.parent.name][:4] +
                         [f for f in FIXTURES if f.parent.name in ("xperf", "folded")], ids=lambda p: p.name)
def test_summary_and_collapse_do_not_load_pandas(path):
    code = ("import sys\nfrom contention_book.perftools.__main__ import main\n"  # argv from sys.argv: a shell's run
            f"sys.argv = ['perftools', 'summary', {str(path)!r}]\nassert main() == 0\n"
            f"sys.argv = ['perftools', 'collapse', {str(path)!r}, '--thread', '1', '-o', '/dev/null']\n"
            "assert main() == 0\n"
            "assert 'pandas' not in sys.modules, 'perftools summary loaded pandas'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


PAIRS = [("wpa/logcache_before.csv", "wpa/logcache_after.csv"),
         ("perf/postgres_update.perf-script.txt", "perf/postgres_update_pidtid.perf-script.txt"),
         ("folded/small.folded", "xperf/dumper_sampled.txt")]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0])
@pytest.mark.parametrize("by, measure", [("function", "exclusive"), ("function", "inclusive"), ("module", "exclusive")])
def test_diff_equals_analysis(pair, by, measure):
    root = Path(__file__).parent / "fixtures"
    (pa_, aa), (pb, ab) = both(root / pair[0]), both(root / pair[1])
    rows = tops.diff(aa, ab, by=by, measure=measure)
    df = analysis.diff(pa_, pb, by=by, measure=measure)
    assert [r.name for r in rows] == df["name"].tolist()
    for col in ("pct_a", "pct_b", "change_pp", "weight_a", "weight_b"):
        np.testing.assert_allclose([getattr(r, col) for r in rows], df[col].to_numpy(), rtol=1e-12, atol=1e-12)


def test_diff_and_callers_commands_do_not_load_pandas():
    root = Path(__file__).parent / "fixtures"
    a, b = (str(root / p) for p in PAIRS[0])
    code = ("import sys\nfrom contention_book.perftools.__main__ import main\n"
            f"sys.argv = ['perftools', 'diff', {a!r}, {b!r}]\nassert main() == 0\n"
            f"sys.argv = ['perftools', 'callers', {a!r}, 'sqlmin.dll!LogAppendContext::BackOff']\nassert main() == 0\n"
            "assert 'pandas' not in sys.modules, 'perftools diff or callers loaded pandas'\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("path, function", [("perf/postgres_update.perf-script.txt", "finish_task_switch.isra.0"),
                                            ("wpa/logcache_before.csv", "sqlmin.dll!LogAppendContext::BackOff"),
                                            ("xperf/dumper_sampled.txt", "ntdll.dll!RtlUserThreadStart"),
                                            ("folded/small.folded", "main")])
@pytest.mark.parametrize("which", ["callers", "callees"])
def test_callgraph_equals_analysis(path, function, which):
    from contention_book.perftools import callgraph

    p, a = both(Path(__file__).parent / "fixtures" / path)
    try:
        df = getattr(analysis, which)(p, function, depth=3)
    except KeyError as exc:
        with pytest.raises(KeyError) as info:
            getattr(callgraph, which)(a, function, depth=3)
        assert str(info.value) == str(exc)
        return
    rows = getattr(callgraph, which)(a, function, depth=3)
    assert [(r.depth, r.frame, r.path) for r in rows] == list(zip(df["depth"], df["frame"], df["path"]))
    for col in ("weight", "pct", "pct_of_function"):
        np.testing.assert_allclose([getattr(r, col) for r in rows], df[col].to_numpy(), rtol=1e-12, atol=1e-12)
