"""wpaexporter CSV of the "CPU Usage (Sampled)" table with a Stack column.

Format reference: google/UIforETW ``bin/ExportCPUUsageSampled.wpaProfile``
(the "Randomascii_Export" preset: Process, Thread ID, Stack, ... Count,
Weight (in view), TimeStamp, % Weight) run as ``wpaexporter trace.etl
-profile ExportCPUUsageSampled.wpaProfile -symbols``, and
``bin/xperf_to_collapsedstacks.py`` for what the frames look like.  With no
grouping each row is one sample; the Stack cell is the whole stack as
``/``-separated ``module!function`` frames, root first (an optional
leading ``[Root]`` is dropped).  Function names may contain ``/`` too
(``operator/``, ``std::ratio<1/1000>``), so the cell is split only at a
``/`` whose following text starts a new frame: a module name (no ``/``,
``!``, spaces, brackets or parentheses) and ``!``, or one of the frames WPA
writes without a module (``Unknown``, ``?``, ``n/a``, ``[...]``) up to the
next ``/`` or the end: ``a.dll!operator//b.dll!f`` is ``a.dll!operator/``
then ``b.dll!f``; ``n/a`` means the sample has no stack and
``module!<PDB_not_found>`` an unresolved frame, both kept as frames so
percentages match WPA's.  Header names may carry units (``Weight (in
view) (ms)``, ``TimeStamp (s)``); numbers follow the exporting machine's
locale (see :mod:`perftools.numbers`).

Speed and memory: files of the usual shape (a plain, uncompressed UTF-8 file;
'.' or ',' decimals, digits grouped as Windows locales group them or not) are read by the C core in ``native/wpa_csv.c`` (see
:mod:`..native_wpa_csv`), in two threads, which hands back each distinct
Stack and Process cell once and the numeric columns as arrays, and splits
the distinct stacks into frames itself (by :class:`_Splitter`'s rules), so
that path needs no pyarrow.  Anything else, or no C compiler, goes through
pyarrow's CSV reader: it streams the file in 1 MB blocks (memory stays
bounded) from a background thread, dictionary-encoding the Stack column
while it parses, so Python sees each distinct stack string once per block,
and :class:`_Splitter` splits the new ones with pyarrow.compute.  Both give
the same Profile (tests/perftools/test_perftools_native_wpa.py).  The
figures against pyarrow.csv.read_csv are on the book's perftools page
(``make bench-perftools``).

Every number is range-checked on whole columns (:data:`_RANGES`): weights
and counts finite and non-negative, thread ids integers within 64 bits, CPU
numbers within 32, times finite.  If a file is refused, a slow pass with
:mod:`csv` finds the bad line for the message, and a byte that is not UTF-8
is named by its line and byte offset.
"""

from __future__ import annotations

import csv
import io
import math
import re

import numpy as np

from ..csv_columns import NUMERIC, find_columns, sniff_delimiter
from ..errors import FormatError
from ..builder import NO_STACK, ProfileBuilder, normalise_process, split_frame_name
from ..numbers import TIME_UNITS, decimal_evidence, parse_number, parse_strings, split_unit
from ..sniff import looks_like_wpa_csv as looks_like  # noqa: F401  (the sniffer's tell)
from ..source import (arrow_pool_scope, decode_error, detect_encoding, display_name, open_binary, open_text, prefetch,
                      read_head)

__all__ = ["load", "looks_like"]

_PLAIN = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$")

_NONE = "\x00"  # stands for "no stack" while stack strings are split on '/'
#: A '/' that separates frames: the text after it is a module name and '!'
#: (RE2 has no look-ahead, so the separator is rewritten to _CUT first).
_CUT = "\x01"
_FRAME_START = r"/([^/!\s<>()\[\]{},;]+!)"
_BARE_FRAME = r"/(Unknown|\?|n/a|\[[^\]/]*\])(/|\x01|$)"  # twice: matches may not overlap


class _Header:
    """What the head of the file tells us: delimiter, columns, number style."""

    def __init__(self, path):
        self.name = display_name(path)
        head = read_head(path, 256 << 10)
        if not head.strip():
            raise FormatError(self.name, 1, "a CSV header line with a 'Stack' column", "an empty file")
        lines = head.split("\n")
        self.delimiter = sniff_delimiter(lines[0])
        rows = list(csv.reader(io.StringIO("\n".join(lines[:-1] if len(lines) > 1 else lines)), delimiter=self.delimiter))
        self.names = rows[0]
        self.cols = find_columns(self.names)
        if "stack" not in self.cols:
            raise FormatError(self.name, 1, "a 'Stack' column in the CSV header", lines[0])
        values = {f: [r[self.cols[f][0]] for r in rows[1:1001] if len(r) > self.cols[f][0]] for f in NUMERIC if f in self.cols}
        self.decimal = "."
        for f in ("weight", "time", "count", "thread", "cpu"):
            ev = next((e for e in map(decimal_evidence, values.get(f, [])) if e), None)
            if ev:
                self.decimal = ev
                break
        # Columns pyarrow may type itself: plain numbers in a '.'-decimal file.
        self.plain = {
            f: self.decimal == "." and all(_PLAIN.match(v) or not v.strip() for v in vals)
            for f, vals in values.items()
        }


def load(path, *, weight_column: str | None = None):
    """Read a wpaexporter CSV into a :class:`~perftools.model.Profile`.

    ``weight_column``: header of the column to use as weight (default:
    ``Weight (in view)`` / ``Weight``, else ``Count``, else 1 per row).
    """
    h = _Header(path)
    if weight_column is not None:
        idx = [i for i, n in enumerate(h.names) if n == weight_column or split_unit(n)[0] == weight_column]
        if not idx:
            raise FormatError(h.name, 1, f"a {weight_column!r} column in the CSV header", ",".join(h.names))
        h.cols["weight"] = (idx[0], h.names[idx[0]], split_unit(h.names[idx[0]])[1])
        h.plain.setdefault("weight", False)
    err: Exception
    try:
        got = _read_native(path, h, _wanted(h))
        if got is not None:
            return got
    except (_BadNumber, UnicodeDecodeError) as exc:
        _diagnose(path, h)
        raise FormatError(h.name, None, "a well-formed CSV table", str(exc)) from None
    import pyarrow as pa  # here: the C core's path needs no pyarrow

    all_strings, block = False, 1 << 20
    while True:
        try:
            return _read(path, h, all_strings=all_strings, block=block)
        except _BadNumber as exc:
            err = exc
        except pa.ArrowInvalid as exc:
            err = exc
            text = str(exc).lower()
            if "utf8" in text or "utf-8" in text:
                break  # not UTF-8: _diagnose names the line and the byte
            if "conversion error" in text and not all_strings:
                all_strings = True  # a number further down is not plain: read those columns as text
                continue
            if "straddling" in text and block < (1 << 30):
                block *= 16  # a row (a very deep stack) longer than a block
                continue
        break
    _diagnose(path, h)
    raise FormatError(h.name, None, "a well-formed CSV table", str(err))


class _BadNumber(Exception):
    pass


def _read(path, h: _Header, all_strings: bool, block: int = 1 << 20):
    with arrow_pool_scope():
        return _read_in_pool(path, h, all_strings, block)


def _wanted(h: _Header) -> dict[str, tuple]:
    """The columns read: field -> (position, header, unit); a weight column makes Count unused."""
    wanted = {f: h.cols[f] for f in ("stack", "process", "thread", "time", "cpu", "weight", "count") if f in h.cols}
    if "weight" in wanted:
        wanted.pop("count", None)
    return wanted


def _read_in_pool(path, h: _Header, all_strings: bool, block: int):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    wanted = _wanted(h)
    types: dict[str, pa.DataType] = {wanted["stack"][1]: pa.dictionary(pa.int32(), pa.string())}
    if "process" in wanted:
        types[wanted["process"][1]] = pa.dictionary(pa.int32(), pa.string())
    for f in NUMERIC:
        if f in wanted:
            plain = h.plain.get(f, False) and not all_strings
            types[wanted[f][1]] = pa.float64() if plain else pa.string()
    with open_binary(path) as raw:
        enc, _ = detect_encoding(raw.read(4))
        gz = raw.__class__.__name__ == "GzipFile"
    parse = pacsv.ParseOptions(delimiter=h.delimiter, newlines_in_values=False)
    convert = pacsv.ConvertOptions(
        include_columns=[c[1] for c in wanted.values()],
        column_types=types,
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    encoding = "utf-16" if enc == "utf-16" else "utf8"
    src = pa.input_stream(str(path), compression="gzip") if gz else str(path)
    reader = pacsv.open_csv(src, read_options=pacsv.ReadOptions(block_size=block, encoding=encoding),
                            parse_options=parse, convert_options=convert)
    # One streaming reader: splitting the file between two readers parses
    # faster alone but loses to GIL contention with the interning (measured).
    batches = prefetch(reader)
    try:
        return _consume(batches, h, wanted, path)
    finally:
        batches.close()  # on an error, stop and join the reader thread now


class _Splitter:
    """Splits stack strings into frames and adds them to the builder as stacks, in bulk."""

    def __init__(self, b: ProfileBuilder):
        self.b = b
        self.frame_cache: dict[str, int] = {}

    def __call__(self, texts) -> np.ndarray:
        """Stack ids of new stack strings (a list or a pyarrow string array)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = texts if isinstance(texts, pa.Array) else pa.array(texts, type=pa.string())
        # no stack: n/a (which contains the separator), empty, or [Root] alone
        arr = pc.if_else(pc.is_in(pc.utf8_trim_whitespace(arr), value_set=pa.array(["", "[Root]", NO_STACK])), _NONE, arr)
        cut = pc.replace_substring_regex(arr, _FRAME_START, _CUT + r"\1")
        for _ in range(2):
            cut = pc.replace_substring_regex(cut, _BARE_FRAME, _CUT + r"\1\2")
        lists = pc.split_pattern(cut, _CUT)
        flat = pc.utf8_trim_whitespace(lists.flatten())
        offsets = lists.offsets.to_numpy()
        starts = offsets[:-1]
        # drop the "[Root]" pseudo-frame that starts WPA stacks
        is_root = pc.equal(pc.take(flat, pa.array(starts)), pa.scalar("[Root]")).to_numpy(zero_copy_only=False)
        keep = np.ones(len(flat), dtype=bool)
        keep[starts[is_root]] = False
        enc = pc.dictionary_encode(flat)
        names = enc.dictionary.to_pylist()
        lut = np.empty(len(names), dtype=np.int32)
        b, cache = self.b, self.frame_cache
        for i, fr in enumerate(names):
            fid = cache.get(fr)
            if fid is None:
                fid = cache[fr] = b.frame("", NO_STACK) if fr == _NONE else b.frame(*split_frame_name(fr))
            lut[i] = fid
        fids = lut[enc.indices.to_numpy(zero_copy_only=False)][keep]
        return b.add_stacks(np.diff(offsets) - is_root, fids)


class _StackIds:
    """Turns the per-batch dictionary-encoded Stack columns into stack ids.

    pyarrow gives every 1 MB batch its own dictionary (the distinct stack
    strings of that batch); each is looked up once in a dict of all stacks
    seen so far, and only strings never seen before are split into frames.
    The batches come from a reader thread (:func:`prefetch`), so this
    Python work overlaps the parsing of the next block.  (Unifying the
    dictionaries in Arrow instead was no faster and held ~40 MB more.)"""

    def __init__(self, intern_new):
        self.intern_new = intern_new
        self.cache: dict[str, int] = {}

    def lookup(self, col) -> np.ndarray:
        """Stack ids for one batch's dictionary-encoded Stack column."""
        import pyarrow as pa

        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        d = col.dictionary.to_pylist()
        lut = list(map(self.cache.get, d))
        if None in lut:
            miss = [i for i, v in enumerate(lut) if v is None]
            new_ids = self.intern_new([d[i] for i in miss]).tolist()
            for i, sid in zip(miss, new_ids):
                lut[i] = self.cache[d[i]] = sid
        return np.asarray(lut, dtype=np.int32)[col.indices.to_numpy(zero_copy_only=False)]


class _Processes:
    """Process cell texts -> codes in order of first appearance, each text normalised once."""

    def __init__(self):
        self.cache: dict[str, int] = {}
        self.names: list[str] = []

    def codes(self, texts: list[str]) -> np.ndarray:
        out = []
        for p in texts:
            code = self.cache.get(p)
            if code is None:
                code = self.cache[p] = len(self.names)
                self.names.append(normalise_process(p))
            out.append(code)
        return np.asarray(out, dtype=np.int32)


def _consume(batches, h: _Header, wanted, path):
    import pyarrow as pa

    b = ProfileBuilder()
    stack_ids = _StackIds(_Splitter(b))
    processes = _Processes()
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("stack", "process", *NUMERIC)}
    rows = 0
    for batch in batches:
        parts["stack"].append(stack_ids.lookup(batch.column(wanted["stack"][1])))
        if "process" in wanted:
            col = batch.column(wanted["process"][1])
            parts["process"].append(processes.codes(col.dictionary.to_pylist())[col.indices.to_numpy(zero_copy_only=False)])
        for f in NUMERIC:
            if f in wanted:
                arr = batch.column(wanted[f][1])
                if pa.types.is_floating(arr.type):
                    parts[f].append(arr.to_numpy(zero_copy_only=False).copy())
                else:
                    vals, bad = parse_strings(arr, h.decimal, allow_null=f != "weight")
                    if bad is not None:
                        raise _BadNumber(f"a value in column {wanted[f][1]!r}")
                    parts[f].append(vals)
        rows += batch.num_rows
    if rows == 0:
        raise FormatError(h.name, 2, "at least one data row after the CSV header", "end of file")
    # concatenate, letting the per-batch pieces go
    columns = {f: np.concatenate(parts.pop(f)) for f in list(parts) if parts[f]}
    return _finish(b, h, wanted, columns, processes.names)


def _read_native(path, h: _Header, wanted):
    """The Profile read by the C core, or None when it steps aside (see :mod:`..native_wpa_csv`)."""
    from .. import native_wpa_csv

    numbers = {f: wanted[f][0] for f in NUMERIC if f in wanted}
    got = native_wpa_csv.parse(path, h.delimiter, len(h.names), wanted["stack"][0],
                               wanted["process"][0] if "process" in wanted else None, numbers, h.decimal)
    if got is None:
        return None
    stacks, stack_idx, procs, proc_idx, columns = got
    b = ProfileBuilder()
    if isinstance(stacks, native_wpa_csv.SplitStacks):  # split by the core: no pyarrow on this path
        for module, function in stacks.frames:
            b.frame(module, function)
        columns["stack"] = b.add_stacks(stacks.lengths, stacks.ids)[stack_idx]
    else:
        columns["stack"] = _Splitter(b)(stacks)[stack_idx]
    processes = _Processes()
    if procs is not None:
        columns["process"] = processes.codes(procs)[proc_idx]
    return _finish(b, h, wanted, columns, processes.names)


#: What each numeric column must hold (no tool writes anything else), as checked on whole columns by
#: :func:`_finish` and row by row by :func:`_diagnose`; empty cells are NaN and pass, but for the weight.
_RANGES = {
    "weight": "a finite, non-negative weight",
    "count": "a finite, non-negative count",
    "thread": "an integer thread id within 64 bits (0 to 2**63 - 1)",
    "cpu": "an integer CPU number within 32 bits (0 to 2**31 - 1)",
    "time": "a finite time",
}


def _in_range(field: str, x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        if field in ("weight", "count"):
            return np.isfinite(x) & (x >= 0)
        known = ~np.isnan(x)
        if field == "time":
            return ~known | np.isfinite(x)
        limit = 2.0**63 if field == "thread" else 2.0**31
        return ~known | ((x >= 0) & (x < limit) & (np.floor(x) == x))


def _finish(b: ProfileBuilder, h: _Header, wanted, columns: dict[str, np.ndarray], proc_names: list[str]):
    """The Profile from whole columns: every number in range, time in seconds, processes as categories."""
    weight = columns.get("weight", columns.get("count"))
    for f in NUMERIC:
        if f in columns and f in wanted and not _in_range(f, columns[f]).all():
            raise _BadNumber(f"a value out of range in column {wanted[f][1]!r}: expected {_RANGES[f]}")
    unit = wanted["weight"][2] if "weight" in wanted else None
    weight_unit = (unit or "ms") if "weight" in wanted else ("samples" if "count" in wanted else "rows")
    time = columns.get("time")
    if time is not None and TIME_UNITS.get(wanted["time"][2] or "s", 1.0) != 1.0:
        time *= TIME_UNITS[wanted["time"][2]]
    process = None
    if "process" in wanted and proc_names:
        # Two spellings of one process ("a ( 1)", "a (1)") share a category.
        uniq, inv = np.unique(np.asarray(proc_names, dtype=object), return_inverse=True)
        process = (inv[columns["process"]], list(uniq))
    return b.build(
        columns["stack"],
        weight,
        process=process,
        thread=columns.get("thread"),
        time=time,
        cpu=columns.get("cpu"),
        meta={
            "format": "wpa_csv",
            "source": h.name,
            "weight_unit": weight_unit,
            "weight_column": wanted["weight"][1] if "weight" in wanted else None,
        },
    )


def _diagnose(path, h: _Header) -> None:
    """Raise FormatError at the first byte that is not UTF-8, or the first row that does not fit the
    header or holds a number out of range."""
    bad = decode_error(path)
    if bad is not None:
        raise bad
    ncols = len(h.names)
    wanted = _wanted(h)
    numeric = {h.cols[f][0]: (f, h.cols[f][1]) for f in NUMERIC if f in h.cols}
    weights = {h.cols[f][1] for f in ("weight", "count") if f in h.cols}
    weights = {h.cols["weight"][1]} if "weight" in h.cols else weights
    with open_text(path) as f:
        reader = csv.reader(f, delimiter=h.delimiter)
        next(reader, None)
        for row in reader:
            line = reader.line_num
            if not row:
                continue
            if len(row) != ncols:
                raise FormatError(
                    h.name, line, f"{ncols} fields as in the header", f"{len(row)} fields: {h.delimiter.join(row)}"
                )
            for i, (field, col) in numeric.items():
                v = row[i]
                if not v.strip() and col not in weights:
                    continue
                try:
                    x = parse_number(v, h.decimal)
                except ValueError:
                    raise FormatError(h.name, line, f"a number in column {col!r} (column {i + 1})", v) from None
                if col in weights and not (math.isfinite(x) and x >= 0):
                    raise FormatError(h.name, line, f"a finite, non-negative weight in column {col!r} (column {i + 1})",
                                      v)
                if field in wanted and not _in_range(field, np.array([x]))[0]:
                    raise FormatError(h.name, line, f"{_RANGES[field]} in column {col!r} (column {i + 1})", v)
