"""Hand-made look-alikes of WPA CSV exports in the shapes real ones come in: each reads to the same
stacks and weights, through the C core, and a damaged one fails naming the file, the line and what
was expected."""
from __future__ import annotations

import pytest

from contention_book.perftools import FormatError, load

from test_perftools_native_wpa import core_reads

S1 = "[Root]/ntdll.dll!RtlUserThreadStart/kernel32.dll!BaseThreadInitThunk/sqlmin.dll!Foo"
S2 = "[Root]/ntdll.dll!RtlUserThreadStart/app.exe!std::vector<int, std::allocator<int> >::push_back/app.exe!Bar"
S3 = '[Root]/ntdll.dll!RtlUserThreadStart/?!?/app.exe!operator"" ms'
CELLS = [(S1, 1234.5), (S2, 2.0), (S3, 3.25), ("n/a", 4.0)]
EXPECTED = {
    ("ntdll.dll!RtlUserThreadStart", "kernel32.dll!BaseThreadInitThunk", "sqlmin.dll!Foo"): 1234.5,
    ("ntdll.dll!RtlUserThreadStart", "app.exe!std::vector<int, std::allocator<int> >::push_back", "app.exe!Bar"): 2.0,
    ("ntdll.dll!RtlUserThreadStart", "?!?", 'app.exe!operator"" ms'): 3.25,
    ("n/a",): 4.0,
}


def q(s: str) -> str:
    return '"' + s.replace('"', '""') + '"'


def shape(name: str) -> bytes:
    """One export of CELLS in a shape wpaexporter or a copied table writes."""
    if name in ("lf", "crlf", "bom"):
        lines = ["Process,Thread ID,Stack,CPU,Count,Weight (in view) (ms),TimeStamp (s),% Weight"]
        lines += [f"sqlservr.exe (2140),{4000 + i},{q(s)},{i},1,{q(f'{w:,.6f}')},{q(f'{999.5 + i:,.9f}')},0.10"
                  for i, (s, w) in enumerate(CELLS)]
        text = ("\r\n" if name != "lf" else "\n").join(lines) + ("\r\n" if name != "lf" else "\n")
        return (b"\xef\xbb\xbf" if name == "bom" else b"") + text.encode()
    if name == "quoted_reordered_extra":  # every cell quoted, columns in another order, extra columns
        lines = ['\ufeff"Stack","Line #","Module","Weight (in view) (ms)","Process","Thread Name","CPU","% Weight"']
        lines += [f'{q(s)},"{i + 1}","x.dll",{q(f"{w:,.6f}")},"sqlservr.exe (2140)","Worker, ""{i}""","{i}","0.10"'
                  for i, (s, w) in enumerate(CELLS)]
        return ("\r\n".join(lines) + "\r\n").encode()
    if name == "tab_copy":  # a table copied from WPA (Ctrl+C): tabs, nothing quoted
        lines = ["Process\tStack\tWeight (in view) (ms)"]
        lines += [f"sqlservr.exe (2140)\t{s}\t{w:,.6f}" for s, w in CELLS]
        return ("\n".join(lines) + "\n").encode()
    if name == "de_semicolon":  # a German machine: ';', decimal comma, '.' grouping
        tr = str.maketrans(",.", ".,")
        lines = ["Process;Stack;Weight (in view) (ms);TimeStamp (s)"]
        lines += [f"sqlservr.exe (2140);{q(s)};{f'{w:,.6f}'.translate(tr)};{f'{999.5 + i:,.9f}'.translate(tr)}"
                  for i, (s, w) in enumerate(CELLS)]
        return ("\n".join(lines) + "\n").encode()
    raise KeyError(name)


@pytest.mark.parametrize("name", ["lf", "crlf", "bom", "quoted_reordered_extra", "tab_copy", "de_semicolon"])
def test_every_shape_reads_to_the_same_stacks_through_the_core(tmp_path, name):
    path = tmp_path / f"{name}.csv"
    path.write_bytes(shape(name))
    assert core_reads(path), "the C core stepped aside"
    p = load(path)
    assert p.meta["format"] == "wpa_csv" and p.meta["weight_column"] == "Weight (in view) (ms)"
    got = {tuple(p.stack_names(i)): float(w) for i, w in enumerate(p.stack_weights()) if w}
    assert got == EXPECTED


def test_no_weight_column_counts_rows(tmp_path):
    path = tmp_path / "count.csv"
    path.write_bytes(("Process,Stack,Count\r\n" + "".join(f"p.exe (1),{q(s)},1\r\n" for s, _ in CELLS)).encode())
    p = load(path)
    assert p.meta["weight_unit"] == "samples" and p.total_weight == 4


@pytest.mark.parametrize("body, line, expected", [
    (b"", 1, "a stack export (the file is empty)"),
    (b"Process,Stack,Count\r\n", 2, "at least one data row after the CSV header"),
    (b"Process,Stack,Count\r\np (1),a.dll!f,1\r\np (1),a.dll!g", 3, "3 fields as in the header"),       # cut short
    (b'Process,Stack,Count\r\np (1),a.dll!f,1\r\np (1),"[Root]/a.dll!', 3, "3 fields as in the header"),  # open quote
    (b"Process,Count\r\np (1),1\r\n", 1, "a 'Stack' column"),
])
def test_damaged_exports_name_file_line_and_expectation(tmp_path, body, line, expected):
    path = tmp_path / "bad.csv"
    path.write_bytes(body)
    with pytest.raises(FormatError) as info:
        load(path)
    msg = str(info.value)
    assert msg.startswith("bad.csv") or "bad.csv" in msg.split(":")[0], msg
    assert f"line {line}" in msg and expected in msg, msg
