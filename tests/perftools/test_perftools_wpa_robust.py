"""WPA exports as they come from deep SQL Server plans and C++ code: huge
stack cells, '/' inside function names, weights that must not be summed,
and truncated .gz files."""

import gzip

import pytest

from contention_book.perftools import FormatError, load, to_folded
from contention_book.perftools.__main__ import main

HEADER = "Process,Thread ID,Stack,Count,Weight (in view) (ms),TimeStamp (s)\n"


def wpa(tmp_path, rows, name="x.csv"):
    p = tmp_path / name
    p.write_text(HEADER + "".join(rows))
    return p


@pytest.mark.parametrize("frames", [4000, 30000])  # ~200 KB and ~1.4 MB in one cell
def test_stack_cell_over_the_csv_field_limit(tmp_path, frames):
    deep = "[Root]/" + "/".join(f"sqlmin.dll!CQScanNLJoinNew::GetRow{i}" for i in range(frames))
    p = load(wpa(tmp_path, [f"sqlservr.exe (1),5,{deep},1,1.5,0.5\n", "sqlservr.exe (1),5,[Root]/a.dll!x,1,2.0,0.6\n"]))
    assert p.total_weight == 3.5
    assert len(p.stack(int(p.samples["stack_id"].iloc[0]))) == frames


def test_slash_inside_function_names_splits_only_before_a_module(tmp_path):
    cell = '"[Root]/ntdll.dll!Start/app.exe!operator//app.exe!duration<__int64,std::ratio<1/1000> >::count/?!?"'
    p = load(wpa(tmp_path, [f"p (1),5,{cell},1,1.0,0.5\n", "p (1),5,n/a,1,1.0,0.5\n"]))
    assert p.stack_names(0) == ["ntdll.dll!Start", "app.exe!operator/",
                                "app.exe!duration<__int64,std::ratio<1/1000> >::count", "?!?"]
    back = tmp_path / "back.folded"
    back.write_text(to_folded(p))
    q = load(back)  # the collapsed output reads back, frame for frame
    assert sorted(map(tuple, (q.stack_names(i) for i in range(q.n_stacks)))) == sorted(
        map(tuple, (p.stack_names(i) for i in range(p.n_stacks))))


@pytest.mark.parametrize("value, expected", [
    ("-1.0", "a finite, non-negative weight in column 'Weight (in view) (ms)' (column 5)"),
    ("1e999", "a finite, non-negative weight"),
    ("", "a number in column 'Weight (in view) (ms)' (column 5)"),
    ("inf", "a number in column 'Weight (in view) (ms)'"),
    ("nan", "a number in column 'Weight (in view) (ms)'"),
])
def test_bad_weights_are_rejected_with_line_and_column(tmp_path, value, expected):
    path = wpa(tmp_path, ["p (1),5,[Root]/a.dll!x,1,2.0,0.6\n", f"p (1),5,[Root]/a.dll!y,1,{value},0.7\n"])
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.line == 3 and expected in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("body", [HEADER + "p (1),5,[Root]/a.dll!x,1,2.0,0.6\n" * 20000,
                                  "a 1 1.0: 1 cycles:\n\t  10 f (x.so)\n\n" * 20000])
def test_truncated_gzip_is_named(tmp_path, capsys, body):
    data = gzip.compress(body.encode())
    path = tmp_path / "cut.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match="truncated or damaged .gz"):
        load(path)
    assert main(["summary", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perftools: error: {path}: expected a complete gzip stream")
