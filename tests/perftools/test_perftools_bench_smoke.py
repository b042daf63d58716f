"""The benchmark runs end to end at a tiny size (the real run is 200 MB) and prints each goal beside its figure."""

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
    for m in ("own.csv", "own.perf", "diverse.csv", "diverse.perf"):
        assert 1.5 < res["mb"][m] < 2.5, (m, res["mb"])
    assert 4.5 < res["mb"]["diverse_x3.perf"] < 7.5
    assert 1.5 < res["mb"]["phased.perf"] < 2.5 and 4.5 < res["mb"]["phased_x3.perf"] < 7.5
    got = res["results"]
    for label in ("collapse diverse", "collapse diverse x3", "collapse phased", "collapse phased x3", "summary diverse",
                  "read_csv diverse", "collapse capture"):
        assert got[label]["median"] > 0 and got[label]["peak_rss"] > 0, label
    goals = {g["goal"] for g in res["goals"]}
    assert {"collapse peak RSS / file, diverse capture", "summary / pyarrow read_csv, diverse CSV",
            "summary peak RSS / file, diverse CSV", "collapse peak RSS, capture x3 / capture x1",
            "collapse peak RSS, capture x3 / capture x1, in two phases"} <= goals
    assert ("collapse / inferno-collapse-perf, diverse capture" in goals) == (bench.inferno_path() is not None)
    for g in res["goals"]:
        assert f"goal <= {g['limit']:.2f}x" in out and g["goal"] in out
    assert res["help_s"] > 0 and "perftools --help" in out
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # generated files removed
