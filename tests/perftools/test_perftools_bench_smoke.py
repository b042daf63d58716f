"""The benchmark runs end to end at a tiny size (the real run is 200 MB)."""

import importlib.util
from pathlib import Path

BENCH = Path(__file__).parents[2] / "benchmarks" / "bench_perftools.py"


def test_bench_small(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_perftools", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    capture = Path(__file__).parent / "fixtures" / "perf" / "postgres_update.perf-script.txt"
    res = bench.main(["--size-mb", "2", "--repeat", "1", "--workdir", str(tmp_path), "--json", str(tmp_path / "r.json"),
                      "--perf-capture", str(capture)])
    out = capsys.readouterr().out
    assert "pyarrow.csv.read_csv (floor)" in out and "MB/s" in out
    assert 1.5 < res["csv_mb"] < 2.5 and 1.5 < res["perf_mb"] < 2.5
    assert res["floor_s"] > 0 and res["csv_s"] > 0 and res["perf_mb_per_s"] > 0
    assert res["csv_rss_mb"] > 0 and res["perf_rss_mb"] > 0
    assert res["help_s"] > 0 and res["capture"]["perftools_s"] > 0 and "perftools --help" in out
    assert ("perftools / inferno time" in out) == ("inferno_s" in res["capture"])
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # generated files removed
