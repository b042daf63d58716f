"""The C core of the WPA CSV reader gives the Profile the pyarrow reader gives, or steps aside.

Every WPA CSV fixture and generated exports in each shape wpaexporter writes (quoted cells, CRLF, a
BOM, ';' and tab delimiters, no process, Count only, numbers with exponents and many digits, a file big
enough for two threads): loading with the core equals loading with ``CONTENTION_BOOK_PERFTOOLS_NATIVE=0``
frame for frame, sample for sample and meta for meta.  Shapes the core is not sure of make it return
None, so the pyarrow reader reads them and reports errors with their line.
"""
from __future__ import annotations

import gzip
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contention_book.perftools import FormatError, load, native_build
from contention_book.perftools import native_wpa_csv as W

FIXTURES = Path(__file__).parent / "fixtures" / "wpa"
HEADER = "Process,Thread ID,Stack,CPU,Count,Weight (in view) (ms),TimeStamp (s),% Weight"


@pytest.fixture(scope="module", autouse=True)
def core():
    assert native_build.library_path("wpa_csv") is not None, "the C core wpa_csv did not build"


def python_load(path, monkeypatch, **kw):
    with monkeypatch.context() as m:
        m.setenv(native_build.OFF_ENV, "0")
        return load(path, format="wpa_csv", **kw)


def core_reads(path) -> bool:
    """The core reads this file itself (with the columns the importer would ask for)."""
    from contention_book.perftools.importers.wpa_csv import _Header, _wanted

    h = _Header(path)
    w = _wanted(h)
    numbers = {f: w[f][0] for f in ("weight", "count", "thread", "time", "cpu") if f in w}
    try:
        return W.parse(path, h.delimiter, len(h.names), w["stack"][0],
                       w["process"][0] if "process" in w else None, numbers, h.decimal) is not None
    except UnicodeDecodeError:  # the core read it, but it is not UTF-8: the importer says where
        return False


def assert_same(path, monkeypatch, **kw):
    ours, ref = load(path, format="wpa_csv", **kw), python_load(path, monkeypatch, **kw)
    pd.testing.assert_frame_equal(ours.frames, ref.frames)
    np.testing.assert_array_equal(ours.stack_offsets, ref.stack_offsets)
    np.testing.assert_array_equal(ours.stack_frames, ref.stack_frames)
    pd.testing.assert_frame_equal(ours.samples, ref.samples)
    assert ours.meta == ref.meta


def assert_reads_or_fails_as_python(path, monkeypatch):
    """The file reads as the Python reader reads it, or fails with the Python reader's words."""
    try:
        python_load(path, monkeypatch)
    except FormatError as exc:
        with pytest.raises(FormatError) as info:
            load(path, format="wpa_csv")
        assert str(info.value) == str(exc)
    else:
        assert_same(path, monkeypatch)


def export(tmp_path, rows, *, header=HEADER, delimiter=",", newline="\n", name="x.csv", bom=False):
    p = tmp_path / name
    text = newline.join([header.replace(",", delimiter)] + [delimiter.join(r) for r in rows]) + newline
    p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8"))
    return p


def rows(n, rng, stacks=None):
    stacks = stacks or ["[Root]/ntdll.dll!RtlUserThreadStart/sqlmin.dll!LogWriter::Run",
                        '"[Root]/ntdll.dll!Start/app.exe!std::map<int,int>::find/app.exe!operator//x.dll!f"',
                        '"[Root]/a.dll!say ""hi""/b.dll!g"', "n/a", "[Root]", "",
                        "[Root]/sqllang.dll!CSQLSource::Execute/?!?/[Unknown]/Unknown",
                        "[Root]/m.dll!caf\u00e9::ol\u00e9"]
    out = []
    t = 1.0
    for _ in range(n):
        t += rng.random() / 1000
        out.append(["sqlservr.exe (2140)" if rng.random() < 0.8 else '"other, a.exe (7)"', str(rng.randrange(4000, 4010)),
                    rng.choice(stacks), str(rng.randrange(32)), "1", f"{0.999 + rng.random() * 0.002:.6f}",
                    f"{t:.9f}", "0.01"])
    return out


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.csv")))
def test_every_fixture(name, monkeypatch):
    path = FIXTURES / name
    if load(path).meta["format"] != "wpa_csv":
        pytest.skip("not a per-sample export")
    assert_same(path, monkeypatch)


@pytest.mark.parametrize("shape", ["lf", "crlf", "bom", "semicolon", "tab", "blank_lines", "no_final_newline"])
def test_generated_shapes(tmp_path, monkeypatch, shape):
    rng = random.Random(shape)
    data = rows(300, rng)
    kw = {"crlf": {"newline": "\r\n"}, "bom": {"bom": True}, "semicolon": {"delimiter": ";"},
          "tab": {"delimiter": "\t"}}.get(shape, {})
    path = export(tmp_path, data, **kw)
    if shape == "blank_lines":
        text = path.read_text().split("\n")
        path.write_text("\n".join(text[:10] + [""] + text[10:20] + ["", ""] + text[20:]))
    if shape == "no_final_newline":
        path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert core_reads(path)
    assert_same(path, monkeypatch)


@pytest.mark.parametrize("weight, time", [
    ("1", "10"), ("2.5e-3", "1.25E+2"), ("-0", "0.000000001"), ("+3.", ".5"),
    ("0.1000000000000000055511151231257827", "123456789012345678901234567890"),  # past the fast path
    ("1e-30", "4.9406564584124654e-324"), ('"7.25"', '"1.5"'),
    ("3", "-12.5"), ("0.5", "-1e-5"),
])
def test_numbers_read_to_the_same_double(tmp_path, monkeypatch, weight, time):
    data = [["p (1)", "5", "[Root]/a.dll!x", "0", "1", weight, time, "1"],
            ["p (1)", "6", "[Root]/a.dll!y", "1", "1", "0.25", "2", "1"]]
    path = export(tmp_path, data)
    assert core_reads(path)
    assert_same(path, monkeypatch)  # -0.0 counts as a non-negative weight both ways


@pytest.mark.parametrize("header", [
    "Process,Thread ID,Stack,Weight (in view) (ms),TimeStamp (s)",  # no CPU, no Count
    "Thread ID,Stack,Count",                                        # no process, Count as weight
    "Stack,CPU",                                                    # no weight at all
    "Process,Stack,Weight,TimeStamp (ms)",                          # time in ms
])
def test_column_sets(tmp_path, monkeypatch, header):
    rng = random.Random(header)
    src = HEADER.split(",")
    same_as = {"Weight": "Weight (in view) (ms)", "TimeStamp (ms)": "TimeStamp (s)"}
    data = [[r[src.index(same_as.get(n, n))] for n in header.split(",")] for r in rows(200, rng)]
    path = export(tmp_path, data, header=header)
    assert core_reads(path)
    assert_same(path, monkeypatch)


@pytest.mark.parametrize("decimal, delimiter, cells", [
    (".", ",", ['"1,234.56"', '"12,345,678.9"', '"1,000"', "2.5", '"1,234.5e-3"']),       # en-US grouping, quoted
    (".", ";", ["1,234.56", "999", "1,000,000.25", "0.5", "1,234"]),                        # ';' file, unquoted groups
    (",", ";", ["1,5", "1.234,56", "12.345.678,9", "0,25", "1.000,0"]),                     # de-DE
    (",", ",", ['"1,5"', '"1.234,56"', '"0,001"', '"7,25"', '"3.000.000,5"']),              # de-DE with ','
    (",", "\t", ["1,5", "2,25", "1.234,5", "0,000001", "1,0E+3"]),                         # copied table
    (",", ";", ["1\u202f234,5", "2,25", "12\u202f345\u202f678,9", "0,5", "1\u202f000,0"]),  # fr-FR (Windows 10)
    (",", ";", ["1\u00a0234,5", "2,25", "12\u00a0345,75", "0,5", "3\u00a0000\u00a0000,0"]),  # ru-RU
    (".", ",", ["\"1'234.5\"", "2.25", "1'000'000.5", "0.5", "\"12'345.75\""]),                 # de-CH
    (".", ",", ['" 1.5"', '"2.25 "', "\" 1,234.5\t\"", "1 234.5", "1\u20092.5"]),               # padded, thin space
])
def test_grouped_and_decimal_comma_numbers_are_read_by_the_core(tmp_path, monkeypatch, decimal, delimiter, cells):
    """WPA writes numbers in the exporting machine's locale: the core reads them as the Python reader does."""
    header = "Process,Thread ID,Stack,Weight (in view) (ms),TimeStamp (s),Count"
    data = []
    for i, c in enumerate(cells * 4):
        t = f'"{i // 10}{decimal}{i % 10}5"' if delimiter == decimal else f"{i // 10}{decimal}{i % 10}5"
        data.append(["p.exe (1)", str(4000 + i % 3), f"[Root]/a.dll!f{i % 5}", c, t, "1"])
    path = export(tmp_path, data, header=header, delimiter=delimiter, newline="\r\n")
    from contention_book.perftools.importers.wpa_csv import _Header

    assert _Header(path).decimal == decimal
    assert core_reads(path)
    assert_same(path, monkeypatch)


def test_number_spellings_read_alike_by_both_readers(tmp_path, monkeypatch):
    """Random spellings (grouped or not, in threes or not, signs, exponents, blanks and Unicode spaces): the
    core reads each file as the Python reader does, or steps aside and the file fails or reads exactly as
    without the core."""
    rng = random.Random(25)
    pieces = ["1", "12", "123", "1234", ",", ",", ".", "e", "E-", "+", "-", "0", "999", "00", " ", "'", "\u00a0",
              "\u202f", "\t", "\u2007"]
    read = 0
    for k in range(250):
        cells = []
        for _ in range(2):
            cell = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 6)))
            cells.append(f'"{cell}"')
        data = [["p (1)", "5", "[Root]/a.dll!x", "0", "1", c.replace("-", ""), "1.5", "1"] for c in cells]
        data.append(["p (1)", "5", "[Root]/a.dll!y", "0", "1", "0.25", "2.5", "1"])
        path = export(tmp_path, data, name=f"n{k}.csv")
        read += core_reads(path)
        assert_reads_or_fails_as_python(path, monkeypatch)
    assert read > 0


def test_weight_column_chosen_by_the_reader(tmp_path, monkeypatch):
    path = export(tmp_path, rows(50, random.Random(3)))
    assert_same(path, monkeypatch, weight_column="% Weight")


def test_a_file_big_enough_for_two_threads(tmp_path, monkeypatch):
    """Over 4 MB the core reads two halves in two threads; the split lands mid-file, between rows."""
    rng = random.Random(11)
    deep = ["[Root]/" + "/".join(f"m{rng.randrange(9)}.dll!F{rng.randrange(400)}" for _ in range(rng.randrange(3, 40)))
            for _ in range(500)]
    path = export(tmp_path, rows(30000, rng, stacks=deep + ['"[Root]/q.dll!a,b"']), newline="\r\n")
    assert path.stat().st_size > 4 << 20
    assert core_reads(path)
    assert_same(path, monkeypatch)


@pytest.mark.parametrize("case", [
    "quote_in_number", "bad_grouping", "inf_weight", "nan_time", "extra_field", "missing_field",
    "quote_across_lines", "stray_cr", "text_after_quote", "invalid_utf8",
])
def test_steps_aside_for_shapes_it_is_not_sure_of(tmp_path, monkeypatch, case):
    good = ["p (1)", "5", "[Root]/a.dll!x", "0", "1", "1.5", "0.5", "1"]
    bad = list(good)
    raw = None
    if True:
        if case == "quote_in_number":
            bad[5] = '"""1.5"""'
        elif case == "bad_grouping":  # not threes: Python refuses it too, with the line
            bad[5] = '"12,34.5"'
        elif case == "inf_weight":
            bad[5] = "inf"
        elif case == "nan_time":
            bad[6] = "NaN"
        elif case == "extra_field":
            bad.append("x")
        elif case == "missing_field":
            bad = bad[:-1]
        elif case == "quote_across_lines":
            bad[2] = '"[Root]/a.dll!x\nb.dll!y"'
        elif case == "stray_cr":
            bad[2] = "[Root]/a.dll!x\rb.dll!y"
        elif case == "text_after_quote":
            bad[2] = '"[Root]/a.dll!x"y'
        elif case == "invalid_utf8":
            raw = "\xff"
        path = export(tmp_path, [good, bad, good])
        if raw:
            path.write_bytes(path.read_bytes().replace(b"a.dll!x", b"a.dll!\xff", 1))
    assert not core_reads(path)
    assert_reads_or_fails_as_python(path, monkeypatch)  # and the file then reads (or fails) as without the core


def test_gzip_and_utf16_are_left_to_pyarrow(tmp_path, monkeypatch):
    path = export(tmp_path, rows(40, random.Random(5)))
    gz = tmp_path / "x.csv.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    u16 = tmp_path / "u16.csv"
    u16.write_bytes(path.read_text(encoding="utf-8").encode("utf-16"))
    for p in (gz, u16):
        assert W.parse(p, ",", 8, 2, 0, {"weight": 5}) is None
        assert_same(p, monkeypatch)


def test_bad_weights_found_by_the_core_are_reported_with_their_line(tmp_path):
    good = ["p (1)", "5", "[Root]/a.dll!x", "0", "1", "1.5", "0.5", "1"]
    path = export(tmp_path, [good, good[:5] + ["-2.5"] + good[6:], good])
    assert core_reads(path)  # -2.5 is a plain number: the core reads it, the importer refuses it
    with pytest.raises(FormatError) as info:
        load(path)
    assert "x.csv, line 3:" in str(info.value) and "non-negative weight" in str(info.value)


@pytest.mark.parametrize("ascii_only", [True, False])
def test_the_core_splits_stacks_as_the_python_splitter_does(tmp_path, monkeypatch, ascii_only):
    """wc_split gives the frames and stacks _Splitter gives; a frame that ends in a non-ASCII byte (whose
    trimming Arrow decides by Unicode) leaves the splitting to Python, with the same result."""
    stacks = ["[Root]/ntdll.dll!RtlUserThreadStart/sqlmin.dll!LogWriter::Run", '" [Root] "', "[Root]/", "/",
              '" [Root]/ a.dll!f / b.dll!g "', "[Root]/a.dll!f/n/a/Unknown/?/[x y]/b.dll!h",
              "[Root]/a.dll!std::ratio<1/1000>/b.dll!operator//c.dll!f", "[Root]/!x/a!b!c/[Root]",
              "[Root]/a.dll!f//b.dll!g", "[Root]/a.dll!f/[x/y]/b.dll!g", '"[Root]/a.dll!f,g/b.dll!h ""q"""',
              "[Root]/a.dll!Unknown/Unknownx/b.dll!g", "  n/a  ", "[Root]/n/a"]
    if not ascii_only:
        stacks.append("[Root]/a.dll!\u043d\u0430\u0448/b.dll!g\u00a0")
    path = export(tmp_path, rows(200, random.Random(11), stacks=stacks))
    from contention_book.perftools.importers.wpa_csv import _Header, _wanted

    h = _Header(path)
    w = _wanted(h)
    got = W.parse(path, h.delimiter, len(h.names), w["stack"][0], w["process"][0], {"weight": w["weight"][0]})
    assert isinstance(got[0], W.SplitStacks) == ascii_only
    assert_same(path, monkeypatch)
