"""Analyses on the model: exclusive/inclusive, recursion, callers (inverted
stacks), callees, diff, filters and the folded round trip."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contention_book.perftools import (Profile, callees, callers, diff, load, profile_from_records, to_folded,
                                       top_functions, top_modules, write_folded)
from contention_book.perftools.importers import folded

FIX = Path(__file__).parent / "fixtures"
BACKOFF = "sqlmin.dll!LogAppendContext::BackOff"


@pytest.fixture
def prof():
    # total 100; recursion in b; two processes; times 0..4
    return profile_from_records(
        [
            (["m!main", "m!a", "x!spin"], 40, "p1 (10)", 1, 0.0, 0),
            (["m!main", "m!b", "m!b", "x!spin"], 20, "p1 (10)", 2, 1.0, 1),
            (["m!main", "m!b", "m!c"], 25, "p2 (20)", 3, 2.0, 0),
            (["m!main", "m!b"], 10, "p2 (20)", 3, 3.0, 1),
            (["y!other"], 5, "p1 (10)", 1, 4.0, 0),
        ]
    )


def row(t, name, key="function"):
    return t.set_index(key).loc[name]


def test_exclusive_and_inclusive(prof):
    t = top_functions(prof)
    assert t["exclusive"].sum() == pytest.approx(100)
    assert row(t, "x!spin").exclusive_pct == pytest.approx(60)
    assert row(t, "m!main").exclusive == 0 and row(t, "m!main").inclusive_pct == pytest.approx(95)
    # b is twice on one stack: counted once there (20), plus 25 + 10
    assert row(t, "m!b").inclusive == pytest.approx(55)
    assert row(t, "m!b").exclusive == pytest.approx(10)
    assert list(t["function"][:2]) == ["x!spin", "m!c"]
    assert list(top_functions(prof, 1, sort="inclusive")["function"]) == ["m!main"]


def test_modules(prof):
    t = top_modules(prof)
    assert row(t, "x", "module").exclusive_pct == pytest.approx(60)
    assert row(t, "m", "module").exclusive_pct == pytest.approx(35)
    assert row(t, "m", "module").inclusive_pct == pytest.approx(95)  # once per stack
    assert row(t, "y", "module").inclusive_pct == pytest.approx(5)


def test_callers_inverted(prof):
    c = callers(prof, "x!spin", depth=2)
    assert c.iloc[0].tolist()[:4] == [0, "x!spin", "x!spin", 60.0]
    assert c["pct"].iloc[0] == pytest.approx(60)
    rows = {r.path: (r.depth, r.weight, r.pct_of_function) for r in c.itertuples()}
    assert rows["x!spin <- m!a"] == (1, 40, pytest.approx(200 / 3))
    assert rows["x!spin <- m!a <- m!main"] == (2, 40, pytest.approx(200 / 3))
    # innermost occurrence: the recursive b is spin's direct caller
    assert rows["x!spin <- m!b"] == (1, 20, pytest.approx(100 / 3))
    assert rows["x!spin <- m!b <- m!b"][1] == 20
    assert "x!spin <- m!b <- m!b <- m!main" not in rows  # depth 2
    assert list(c["depth"]) == [0, 1, 2, 1, 2]  # tree order, heaviest first


def test_callers_of_recursive_function_counts_samples_once(prof):
    c = callers(prof, "b", depth=3)  # bare function name
    assert c["weight"].iloc[0] == pytest.approx(55)
    direct = c[c["depth"] == 1].set_index("frame")["weight"]
    assert direct.to_dict() == {"m!main": 35.0, "m!b": 20.0}
    assert direct.sum() == pytest.approx(55)


def test_callers_root_marker_and_unknown():
    p = profile_from_records([(["a!f"], 3), (["a!g", "a!f"], 1)])
    c = callers(p, "a!f")
    assert set(c[c.depth == 1]["frame"]) == {"(root)", "a!g"}
    with pytest.raises(KeyError, match="did you mean 'a!f'"):
        callers(p, "a!ff")


def test_callees(prof):
    c = callees(prof, "m!b", depth=2)
    rows = {r.path: r.weight for r in c.itertuples()}
    assert rows["m!b"] == pytest.approx(55)
    assert rows["m!b -> m!c"] == 25
    assert rows["m!b -> m!b"] == 20  # outermost occurrence, its callee is b
    assert rows["m!b -> (self)"] == 10


def test_diff_logcache_before_after():
    before = load(FIX / "wpa" / "logcache_before.csv")
    after = load(FIX / "wpa" / "logcache_after.csv")
    d = diff(before, after)
    top = d.iloc[0]
    assert top["name"] == BACKOFF
    assert top["pct_a"] == pytest.approx(23.89) and top["pct_b"] == pytest.approx(1.43)
    assert top["change_pp"] == pytest.approx(-22.46)
    assert list(d["name"][:5]) == [
        BACKOFF,
        "sqlmin.dll!IndexDataSetSession::InsertRow",  # +10
        "sqllang.dll!CStmtQuery::ErsqExecuteQuery",  # +9
        "sqlmin.dll!memcpy",  # +8.46
        "ntoskrnl.exe!NtWaitForSingleObject",  # -5
    ]
    assert (d["change_pp"].abs().diff().dropna() <= 1e-12).all()  # sorted by |change|
    m = diff(before, after, by="module").set_index("name")
    assert m.loc["sqlmin.dll", "change_pp"] == pytest.approx(-4.0)
    assert m.loc["sqllang.dll", "change_pp"] == pytest.approx(9.0)


def test_diff_includes_functions_present_on_one_side():
    a = profile_from_records([(["m!x"], 1), (["m!gone"], 1)])
    b = profile_from_records([(["m!x"], 1), (["m!new"], 3)])
    d = diff(a, b).set_index("name")
    assert d.loc["m!gone", "pct_b"] == 0 and d.loc["m!gone", "change_pp"] == pytest.approx(-50)
    assert d.loc["m!new", "pct_a"] == 0 and d.loc["m!new", "change_pp"] == pytest.approx(75)
    inc = diff(a, b, measure="inclusive", n=1)
    assert len(inc) == 1


def test_filters(prof):
    assert prof.filter(process="p1").total_weight == 65
    assert prof.filter(process="p2 (20)").total_weight == 35
    assert prof.filter(process=20).total_weight == 35
    assert prof.filter(process=["p1", "p2"]).total_weight == 100
    assert prof.filter(thread=3).total_weight == 35
    assert prof.filter(start=1.0, end=3.0).total_weight == 55
    assert prof.filter(module="x").total_weight == 60
    assert prof.filter(module="X").total_weight == 60  # case-insensitive like Windows
    assert prof.filter(function="m!c").total_weight == 25
    # percentages are of the filtered total
    q = prof.filter(process="p1")
    assert row(top_functions(q), "x!spin").exclusive_pct == pytest.approx(60 / 65 * 100)
    # filters share frames and stacks, keep the original untouched
    assert q.frames is prof.frames and len(prof.samples) == 5
    assert list(q.samples["process"].cat.categories) == ["p1 (10)"]


def test_filter_time_without_timestamps():
    p = load(FIX / "folded" / "small.folded")
    with pytest.raises(ValueError, match="no timestamps"):
        p.filter(start=1)


def test_folded_round_trip_identical(tmp_path):
    src = FIX / "folded" / "small.folded"
    text = src.read_text()
    assert to_folded(load(src)) == text
    out = tmp_path / "again.folded"
    write_folded(load(src), out)
    assert out.read_text() == text


def test_folded_round_trip_with_process_root(tmp_path):
    gz = FIX / "folded" / "postgres_update_pidtid.folded.gz"
    p = load(gz, process_root=True)
    out = tmp_path / "again.folded.gz"
    write_folded(p, out, process_root=True)
    assert out.read_bytes() == gz.read_bytes()  # same bytes, gzip header included
    import gzip

    text = gzip.decompress(gz.read_bytes()).decode()
    assert to_folded(p, process_root=True) == text
    assert all(line.startswith("postgres (47") for line in text.splitlines())


def test_folded_process_root_detected():
    gz = FIX / "folded" / "postgres_update_pidtid.folded.gz"
    assert load(gz).processes() == ["postgres (4771)", "postgres (4772)"]
    assert load(gz, process_root=False).processes() == [""]
    assert load(FIX / "folded" / "small.folded").processes() == [""]


def test_folded_export_names_and_weights():
    p = profile_from_records([(["sqlmin.dll!A;B", "f"], 1.5, "x.exe (1)"), (["f"], 2)])
    text = to_folded(p)
    assert "sqlmin.dll!A:B;f 1.5\n" in text  # ';' in a name cannot survive folding
    assert "f 2\n" in text
    assert to_folded(p, process_root=True).splitlines()[1] == "x.exe (1);sqlmin.dll!A:B;f 1.5"


def test_every_importer_exports_folded(tmp_path):
    for path in [FIX / "wpa" / "logcache_before.csv", FIX / "wpa" / "tree_en_us.csv",
                 FIX / "xperf" / "dumper_sampled.txt", FIX / "perf" / "postgres_update.perf-script.txt"]:
        p = load(path)
        out = tmp_path / (path.name + ".folded")
        write_folded(p, out)
        again = folded.load(out)
        assert again.total_weight == pytest.approx(p.total_weight)
        a = top_functions(p).set_index("function")["exclusive"]
        b = top_functions(again).set_index("function")["exclusive"]
        pd.testing.assert_series_equal(a.sort_index(), b.sort_index(), check_names=False)


def test_profile_validation():
    p = profile_from_records([(["a!f"], 1)])
    with pytest.raises(ValueError):
        Profile(p.frames, np.array([0, 5]), p.stack_frames, p.samples)
    with pytest.raises(ValueError):
        Profile(p.frames, p.stack_offsets, p.stack_frames, p.samples.drop(columns=["cpu"]))
    assert "1 samples" in repr(p)
    assert p.stacks == [(0,)]
