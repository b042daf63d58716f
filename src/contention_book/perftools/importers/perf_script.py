"""Linux ``perf script`` text (the output of ``perf record -g``), and
Android simpleperf's ``report_sample.py`` text, which copies its shape.

Format reference: perf-script(1); brendangregg/FlameGraph
``stackcollapse-perf.pl`` and jonhoo/inferno ``collapse/perf.rs``, the
reference collapsers, whose choices this follows unless noted.

* A sample is a header line ``comm [pid/]tid [[cpu]] [time:] [period]
  event:`` followed by frame lines ``addr sym+off (dso)``, leaf first, and
  a blank line.  Which header fields appear depends on perf's options and
  ``-F``: ``java 19983 cycles:`` (no time, no cpu) is as valid as
  ``iperf 27409/28744 [000] 441995.133575: 1 cycles:``.  comm may contain
  spaces; simpleperf separates fields and the frame's address with tabs.
  Frame lines are indented, except in some older captures; any line inside
  a sample that is not a header is read as a frame.  Without ``-g`` each
  sample is one line whose tail is the sampled frame.
* ``+0x..`` offsets are stripped so samples at different instructions of
  one function share a frame; an ``[unknown]`` symbol becomes one
  ``dso![unknown]`` frame per dso.
* Weight: by default each sample weighs its period when the headers carry
  one (``perf record`` without ``-c`` varies it), as ``perf report``,
  inferno and FlameGraph weight; else 1.  ``weight="samples"`` counts.
* Events: a capture may mix events (cycles and instructions); summing them
  means nothing, so only one is kept, by default the first in the file (as
  the reference tools do).  ``meta["warnings"]`` says which were dropped.
* Malformed lines (a frame that does not parse, a header that does not)
  are skipped and counted, as the reference tools skip them; a bad header
  drops its whole sample.  So are headers whose numbers no perf writes: a
  pid or tid beyond 64 bits, a cpu beyond 32 bits, a time or period that
  overflows to infinity, and a header without an event (``comm 1 5.5:``,
  whose time would otherwise be read as the event: an event is never a
  number).  ``meta["warnings"]`` gives the count and the
  first three line numbers; ``strict=True`` raises at the first instead.

Speed: files reach hundreds of MB, so the reader works on multi-MB chunks
cut at blank lines.  A chunk of the usual shape (headers, tab-indented
frames) is read with array operations: its lines become one Arrow string
array, each distinct frame line is parsed once in Python, headers go
through one vectorised regex, and a sample's stack is interned by the bytes
of its frame ids.  Chunks of any other shape (space-led lines, CRLF, UTF-16,
a header that does not parse) go through a block reader, line by line,
which interns the leaf line and the caller text of each sample.  A test
checks that both readers agree.  ``perftools collapse`` goes straight from
here to folded lines (:func:`collapse`), without pandas, when the C core
(:mod:`..native_collapse`) leaves a file to this reader; this reader is the
reference the core is tested against.
"""

from __future__ import annotations

import codecs
import re
from array import array

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import FormatError
from ..builder import NO_STACK, ProfileBuilder, frame_name
from ..sniff import PERF_HEADER_PATTERN, looks_like_perf_script as looks_like  # noqa: F401
from ..source import arrow_pool_scope, detect_encoding, display_name, open_binary

__all__ = ["load", "collapse", "looks_like", "parse_frame", "HEADER_PATTERN"]

HEADER_PATTERN = PERF_HEADER_PATTERN  #: the sample header (kept with the sniffer, which needs no pyarrow)
_HEADER_RE = re.compile(HEADER_PATTERN)
_ADDRESS = re.compile(r"[0-9a-fA-F]+[ \t]+")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")

HEADER_EXPECTED = "a sample header 'comm [pid/]tid [[cpu]] [time:] [period] event:'"
FRAME_EXPECTED = "a stack frame line 'ADDRESS SYMBOL+OFFSET (DSO)'"
ORPHAN_EXPECTED = HEADER_EXPECTED + " before the stack frames"
RANGE_EXPECTED = (HEADER_EXPECTED + " whose pid and tid fit in 64 bits, cpu in 32 bits, and whose time and "
                  "period are finite")
_INT64_MAX, _INT32_MAX = str(2**63 - 1), str(2**31 - 1)
TAIL_EXPECTED = HEADER_EXPECTED + " optionally followed by " + FRAME_EXPECTED

_CHUNK = 8 << 20
_UNINDENTED = re.compile(r"\n[^ \t]")
_TAB_BLANKS = re.compile(rb"(?:^|\n)\t[ \t\r\x0b\x0c\x1c-\x1f]*(?:\n|$)")


def parse_frame(line: str) -> tuple[str, str] | None:
    """``(module, function)`` of one ``addr sym+off (dso)`` line, or None."""
    s = line.strip()
    m = _ADDRESS.match(s)
    if m is None or not s.endswith(")"):
        return None
    rest = s[m.end() :]
    i = rest.rfind(" (")
    if i < 0:
        if not rest.startswith("("):
            return None
        sym, dso = "", rest[1:-1]
    else:
        sym, dso = rest[:i].strip(), rest[i + 2 : -1]
    sym = _OFFSET.sub("", sym) or "[unknown]"
    module = dso.rsplit("/", 1)[-1] if dso else "[unknown]"
    return module, sym


class _Bad(Exception):
    """Internal: the fast path met a block it cannot read; read it line by line."""


class _Interner:
    """Caches frame lines and caller texts to frame ids and stack ids."""

    def __init__(self, builder: ProfileBuilder):
        self.b = builder
        self.leaf: dict[str, int] = {}
        self.rest: dict[str, int] = {}
        self.rest_frames: list[tuple[int, ...]] = []
        self.stacks: dict[int, int] = {}
        self.stack_bytes: dict[bytes, int] = {}  # the vectorised reader's: int32 frame ids, leaf first
        self.pairs: dict[str, int] = {}  # the vectorised reader's: "module\0function" -> frame id
        self.no_stack = -1

    def frame_or_bad(self, line: str) -> int:
        """Frame id of a frame line (any trailing newline ignored), -1 if it does not parse."""
        try:
            return self.frame_of(line.rstrip("\n"))
        except _Bad:
            return -1

    def frame_of(self, line: str) -> int:
        fid = self.leaf.get(line)
        if fid is None:
            parsed = parse_frame(line)
            if parsed is None:
                raise _Bad(line)
            fid = self.leaf[line] = self.b.frame(*parsed)
        return fid

    def rest_of(self, text: str) -> int:
        rid = self.rest.get(text)
        if rid is None:
            frames = tuple(self.frame_of(ln) for ln in reversed(text.split("\n")) if ln) if text else ()
            rid = self.rest[text] = len(self.rest_frames)
            self.rest_frames.append(frames)
        return rid

    def stack_of(self, leaf_fid: int, rid: int) -> int:
        key = rid * 4194304 + leaf_fid if leaf_fid < 4194304 else (rid, leaf_fid)
        sid = self.stacks.get(key)
        if sid is None:
            sid = self.stacks[key] = self.b.stack(self.rest_frames[rid] + (leaf_fid,))
        return sid

    def empty(self) -> int:
        if self.no_stack < 0:
            self.no_stack = self.b.stack((self.b.frame("", NO_STACK),))
        return self.no_stack


class _Problems:
    """Malformed lines: counted and skipped, or (strict) the first raised.

    Within a chunk problems are found out of order (headers are checked in
    bulk at its end), so they are sorted by position before use."""

    def __init__(self, name: str, strict: bool):
        self.name, self.strict = name, strict
        self.count = 0
        self.first: list[int] = []
        self.first_error: FormatError | None = None
        self.pending: list[tuple[int, str, str]] = []  # (position in the chunk's text, ...)
        self.pending_lines: list[tuple[int, str, str]] = []  # (line number, ...)

    def add(self, pos: int, expected: str, text: str) -> None:
        self.pending.append((pos, expected, text))

    def add_line(self, line: int, expected: str, text: str) -> None:
        self.pending_lines.append((line, expected, text))

    def settle(self, chunk: str | None, line0: int) -> None:
        found = [(line0 + chunk.count("\n", 0, pos), e, t) for pos, e, t in self.pending] + self.pending_lines
        self.pending.clear()
        self.pending_lines.clear()
        for line, expected, text in sorted(found):
            err = FormatError(self.name, line, expected, text)
            if self.strict:
                raise err
            self.count += 1
            if self.first_error is None:
                self.first_error = err
            if len(self.first) < 3:
                self.first.append(line)

    def warning(self) -> str | None:
        if not self.count:
            return None
        where = ", ".join(map(str, self.first)) + (", ..." if self.count > 3 else "")
        e = self.first_error
        return (f"{self.name}: skipped {self.count:,} malformed line(s), at line {where} "
                f"(line {e.line}: expected {e.expected}; found {e.found!r}); --strict makes this an error")


def _iter_chunks(path):
    """``(text, first_line_number)`` of chunks of whole samples (cut at a blank line)."""
    with open_binary(path) as raw:
        first = raw.read(_CHUNK)
        enc, bom = detect_encoding(first[:4])
        dec = codecs.getincrementaldecoder(enc)(errors="replace")
        carry = ""
        data = first[bom:]
        line0 = 1
        while True:
            eof = not data
            text = carry + dec.decode(data, final=eof)
            if "\r" in text:
                text = text.replace("\r\n", "\n")
                if not eof and text.endswith("\r"):
                    carry, text = "\r", text[:-1]
                text = text.replace("\r", "\n")
            if eof:
                if text.strip("\n"):
                    yield text, line0
                return
            cut = text.rfind("\n\n")
            if cut < 0:
                carry = text
            else:
                yield text[:cut], line0
                line0 += text.count("\n", 0, cut) + 2
                carry = text[cut + 2 :]
            data = raw.read(_CHUNK)


class _Chunk:
    """Per-chunk output: header texts, their positions and stack ids."""

    def __init__(self):
        self.headers: list[str] = []
        self.pos = array("q")
        self.sids = array("i")
        self.framed = array("b")  # 1: the stack came from frame lines, so the header has no tail

    def add(self, header: str, pos: int, sid: int, framed: int) -> None:
        self.headers.append(header)
        self.pos.append(pos)
        self.sids.append(sid)
        self.framed.append(framed)


def _slow_block(block: str, base: int, intern: _Interner, out: _Chunk, bad: _Problems) -> None:
    """Any block that is not 'header line, tab-indented frames': perf
    without -g, comments, unindented frames, simpleperf's space-padded
    frames, samples with no blank line between them, malformed lines."""
    header: str | None = None
    hpos = 0
    frames: list[int] = []
    skipping = False  # after a malformed header: drop its frames

    def flush():
        if header is None:
            return
        if frames:
            out.add(header, hpos, intern.b.stack(frames[::-1]), 1)
            return
        m = _HEADER_RE.match(header)
        tail = (m.group("tail") or "").strip() if m else ""
        if not tail:
            out.add(header, hpos, intern.empty(), 0)
            return
        try:
            fid = intern.frame_of(" " + tail)
        except _Bad:
            bad.add(hpos, TAIL_EXPECTED, header)
            return
        out.add(header, hpos, intern.b.stack((fid,)), 0)

    pos = base
    for ln in block.split("\n"):
        lpos, pos = pos, pos + len(ln) + 1
        if not ln.strip():
            flush()
            header, frames, skipping = None, [], False
            continue
        if ln[0] == "#":
            continue
        indented = ln[0] in " \t"
        if header is not None and indented:
            try:
                frames.append(intern.frame_of(ln))
                continue
            except _Bad:
                pass
        if _HEADER_RE.match(ln):
            flush()
            header, hpos, frames, skipping = ln, lpos, [], False
            continue
        if header is not None:
            try:
                frames.append(intern.frame_of(ln))
            except _Bad:
                bad.add(lpos, FRAME_EXPECTED, ln)
            continue
        if skipping:
            continue
        if parse_frame(ln) is not None:
            bad.add(lpos, ORPHAN_EXPECTED, ln)
        else:
            bad.add(lpos, HEADER_EXPECTED, ln)
            skipping = True
    flush()


def _read_chunk(chunk: str, intern: _Interner, bad: _Problems) -> _Chunk:
    out = _Chunk()
    leaf_get, rest_get, stack_get = intern.leaf.get, intern.rest.get, intern.stacks.get
    headers, positions, sids, framed = out.headers, out.pos, out.sids, out.framed
    pos = 0
    for block in chunk.split("\n\n"):
        base, pos = pos, pos + len(block) + 2
        nl = block.find("\n")
        if nl <= 0 or block[0] in " \t#" or block[nl + 1 : nl + 2] != "\t":
            if block:
                _slow_block(block, base, intern, out, bad)
            continue
        nl2 = block.find("\n", nl + 1)
        if nl2 < 0:
            leaf, rest = block[nl + 1 :], ""
        else:
            leaf, rest = block[nl + 1 : nl2], block[nl2 + 1 :]
        try:
            fid = leaf_get(leaf)
            if fid is None:
                fid = intern.frame_of(leaf)
            rid = rest_get(rest)
            if rid is None:
                if rest and (rest[0] not in " \t" or _UNINDENTED.search(rest)):
                    raise _Bad(rest)  # a line that may be a header ('a 1 1.0: 3 cycles:  10 f (x.so)' also
                    # reads as a frame): _slow_block tries it as a header first, as the other readers do
                rid = intern.rest_of(rest)
        except _Bad:
            _slow_block(block, base, intern, out, bad)
            continue
        key = rid * 4194304 + fid if fid < 4194304 else (rid, fid)
        sid = stack_get(key)
        if sid is None:
            sid = intern.stack_of(fid, rid)
        headers.append(block[:nl])
        positions.append(base)
        sids.append(sid)
        framed.append(1)
    return out


_FIELDS = ("comm", "pid", "tid", "cpu", "time", "period", "event")


def _header_columns(out: _Chunk, bad: _Problems) -> tuple[dict[str, pa.Array], np.ndarray]:
    """Header fields of a chunk's samples; malformed headers are reported and their samples dropped.

    A header followed by frame lines ends at its event (``notatime:
    cpu-clock:`` would otherwise read as an event named ``notatime``)."""
    m = pc.extract_regex(pa.array(out.headers, type=pa.string()), HEADER_PATTERN)
    sids = np.frombuffer(out.sids, dtype=np.int32)
    valid = m.is_valid().to_numpy(zero_copy_only=False)
    framed = np.frombuffer(out.framed, dtype=np.int8).astype(bool)
    tail = pc.fill_null(pc.not_equal(pc.utf8_trim_whitespace(m.field("tail")), ""), False)
    valid &= ~(framed & tail.to_numpy(zero_copy_only=False))
    in_range = _in_range(m)
    if not (valid & in_range).all():
        for i in np.flatnonzero(~(valid & in_range)):
            bad.add(out.pos[int(i)], HEADER_EXPECTED if not valid[i] else RANGE_EXPECTED, out.headers[int(i)])
        valid &= in_range
        m = pc.filter(m, pa.array(valid))
        sids = sids[valid]
    return {name: m.field(name) for name in _FIELDS}, sids.copy()


def load(path, *, weight: str | None = None, event: str | None = None, strict: bool = False) -> Profile:
    """Read ``perf script`` output (plain or gzip'd) into a :class:`Profile`.

    ``weight``: ``"period"`` (each sample weighs its event period, as
    ``perf report`` and inferno weight), ``"samples"`` (1 per sample), or
    ``None``: period when the headers carry one, else samples.
    ``event``: the one event to keep (default: the first in the file).
    ``strict``: raise at the first malformed line instead of skipping it.
    """
    if weight not in (None, "samples", "period"):
        raise ValueError("weight must be 'samples' or 'period'")
    with arrow_pool_scope():
        return _parse(path, weight, event, strict).profile()


def collapse(path, *, weight: str | None = None, event: str | None = None, strict: bool = False,
             process_root: bool = False, integer: bool = False) -> tuple[list[str], dict]:
    """Folded lines of a capture, as ``folded.lines(load(path, ...))`` gives
    them, and the meta a Profile would carry, without building the Profile
    (nor importing pandas): the ``perftools collapse`` path."""
    from . import folded

    if weight not in (None, "samples", "period"):
        raise ValueError("weight must be 'samples' or 'period'")
    with arrow_pool_scope():
        parsed = _parse(path, weight, event, strict)
        sids, w, c, meta = parsed.selected()
        proc_codes = proc_names = None
        if process_root:
            enc = _process_names(c).dictionary_encode()
            proc_codes = enc.indices.to_numpy(zero_copy_only=False)
            proc_names = enc.dictionary.to_pylist()
        b = parsed.builder
        names = [frame_name(m, f) for m, f in b.frames]
        lines = folded.lines_from(names, np.frombuffer(b._offsets, dtype=np.int64),
                                  np.frombuffer(b._values, dtype=np.int32), sids, w, proc_codes, proc_names,
                                  integer=integer)
    return lines, meta


def _parse(path, weight, event, strict) -> "_Parsed":
    name = display_name(path)
    builder = ProfileBuilder()
    intern = _Interner(builder)
    bad = _Problems(name, strict)
    cols: dict[str, list] = {k: [] for k in _FIELDS}
    sid_parts: list[np.ndarray] = []

    def keep(h, sids):
        for k in cols:
            cols[k].append(h[k])
        sid_parts.append(sids)

    def by_blocks(text, line0):
        out = _read_chunk(text, intern, bad)
        if out.headers:
            keep(*_header_columns(out, bad))
        bad.settle(text, line0)

    with open_binary(path) as raw:
        first = raw.read(_CHUNK)
    enc, bom = detect_encoding(first[:4])
    if enc != "utf-8" or b"\r" in first:
        for text, line0 in _iter_chunks(path):
            by_blocks(text, line0)
    else:
        for data, line0 in _iter_byte_chunks(path, bom):
            got = _vector_chunk(data, line0, intern, bad)
            if got is None:  # a shape the vectorised reader leaves to the block reader
                # CRLF as one line end, as _iter_chunks reads it (a CR alone also ends a line)
                by_blocks(data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n"), line0)
            else:
                if len(got[1]):
                    keep(*got)
                bad.settle(None, line0)
    n = sum(len(s) for s in sid_parts)
    if not n:
        if bad.first_error is not None:
            raise bad.first_error
        raise FormatError(name, 1, "at least one perf sample (" + HEADER_EXPECTED + ")", "an empty file")
    return _Parsed(path, builder, np.concatenate(sid_parts), {k: _concat(v) for k, v in cols.items()}, bad,
                   weight, event)


def _iter_byte_chunks(path, skip: int):
    """``(bytes, first_line_number)`` of chunks of whole samples (cut at a blank line)."""
    with open_binary(path) as raw:
        if skip:
            raw.read(skip)
        carry = b""
        line0 = 1
        while True:
            data = raw.read(_CHUNK)
            buf = carry + data if carry else data
            if not data:
                if buf.strip(b"\n"):
                    yield buf, line0
                return
            cut = buf.rfind(b"\n\n")
            if cut < 0:
                carry = buf
                continue
            yield buf[:cut], line0
            line0 += buf.count(b"\n", 0, cut) + 2
            carry = buf[cut + 2 :]


def _vector_chunk(data: bytes, line0: int, intern: _Interner, bad: _Problems):
    """The usual shape, read with array operations: header lines that start
    with a non-blank, tab-indented frame lines, blank lines between samples.

    Lines become one Arrow string array (no Python string per line); frame
    lines are dictionary-encoded so each distinct one is parsed once in
    Python; headers go through one vectorised regex.  Returns the header
    fields of the kept samples and their stack ids, or None when the chunk
    has a line of another shape (space-led, a header that does not parse),
    which the block reader then handles line by line."""
    n = len(data)
    buf = np.frombuffer(data, dtype=np.uint8)
    starts = np.concatenate(([0], np.flatnonzero(buf == 10) + 1)).astype(np.int64)
    ends = np.append(starts[1:] - 1, n)
    first = np.full(len(starts), 10, dtype=np.uint8)
    nonempty = ends > starts
    first[nonempty] = buf[starts[nonempty]]
    if (first == 32).any() or _TAB_BLANKS.search(data):  # a line of tab and blanks is a blank line: the
        return None                                         # block reader's (str.strip) reading
    lines = pa.StringArray.from_buffers(len(starts), pa.py_buffer(np.append(starts, n).astype(np.int32)),
                                        pa.py_buffer(data))
    try:
        lines.validate(full=True)
    except pa.ArrowInvalid:  # not UTF-8: the block reader decodes with replacement characters
        return None
    is_frame = first == 9
    is_blank = first == 10
    hidx = np.flatnonzero(~(is_frame | is_blank | (first == 35)))
    if not len(hidx):
        return None
    m = pc.extract_regex(pc.utf8_rtrim(lines.take(pa.array(hidx)), characters="\n"), HEADER_PATTERN)
    if m.null_count:
        return None
    fidx = np.flatnonzero(is_frame)
    enc = pc.dictionary_encode(lines.take(pa.array(fidx)))
    lut = _frame_ids(enc.dictionary, intern)
    fid = lut[enc.indices.to_numpy(zero_copy_only=False)] if len(lut) else np.zeros(0, dtype=np.int64)
    owner = np.searchsorted(hidx, fidx) - 1
    bidx = np.flatnonzero(is_blank)
    j = np.searchsorted(bidx, fidx) - 1
    last_blank = np.where(j >= 0, bidx[np.maximum(j, 0)] if len(bidx) else -1, -1)
    orphan = (owner < 0) | (last_blank > hidx[np.maximum(owner, 0)])
    good = (fid >= 0) & ~orphan
    if not good.all():
        for i in np.flatnonzero(~good).tolist():
            text = data[starts[fidx[i]] : ends[fidx[i]]].decode("utf-8", errors="replace")
            expected = FRAME_EXPECTED if not orphan[i] else (ORPHAN_EXPECTED if fid[i] >= 0 else HEADER_EXPECTED)
            bad.add_line(line0 + int(fidx[i]), expected, text)
    gf = fid[good].astype(np.int32)
    counts = np.bincount(owner[good], minlength=len(hidx))
    offs = np.concatenate(([0], np.cumsum(counts))).tolist()
    keyb = gf.tobytes()
    frames = gf.tolist()
    cache, stack = intern.stack_bytes, intern.b.stack
    sids = np.empty(len(hidx), dtype=np.int32)
    valid = np.ones(len(hidx), dtype=bool)
    tail = pc.utf8_trim_whitespace(m.field("tail"))
    has_tail = pc.fill_null(pc.not_equal(tail, ""), False).to_numpy(zero_copy_only=False)
    in_range = _in_range(m)
    for i, (a, b) in enumerate(zip(offs, offs[1:])):
        if not in_range[i]:
            valid[i] = False
            bad.add_line(line0 + int(hidx[i]), RANGE_EXPECTED, _line(data, starts, ends, hidx[i]))
            continue
        if a == b:  # no frame lines: perf without -g (the tail is the frame) or an empty stack
            sid = _tail_stack(tail[i].as_py() if has_tail[i] else "", intern)
            if sid is None:
                valid[i] = False
                bad.add_line(line0 + int(hidx[i]), TAIL_EXPECTED, _line(data, starts, ends, hidx[i]))
                continue
        else:
            if has_tail[i]:  # frames below a header that has more after its event
                valid[i] = False
                bad.add_line(line0 + int(hidx[i]), HEADER_EXPECTED, _line(data, starts, ends, hidx[i]))
                continue
            k = keyb[4 * a : 4 * b]
            sid = cache.get(k)
            if sid is None:
                sid = cache[k] = stack(frames[a:b][::-1])
        sids[i] = sid
    if not valid.all():
        m = pc.filter(m, pa.array(valid))
        sids = sids[valid]
    return {name: m.field(name) for name in _FIELDS}, sids


#: :func:`parse_frame` as three vectorised steps: the text after the address
#: ending in ')', then symbol and dso split at the last ' (' (or no symbol).
_FRAME_REST = r"^\s*[0-9a-fA-F]+[ \t]+(?P<rest>.*\))\s*$"
_SYM_DSO = r"^(?P<sym>.*) \((?P<dso>.*)\)$"
_DSO_ONLY = r"^\((?P<dso>.*)\)$"


def _frame_ids(lines: pa.Array, intern: _Interner) -> np.ndarray:
    """Frame id of each distinct frame line, -1 where it does not parse
    (:func:`parse_frame`'s rules, in Arrow; Python sees each distinct
    ``(module, function)`` once per chunk, not each distinct line)."""
    def group(m, name):  # a struct field, null where the regex did not match
        return pc.if_else(m.is_valid(), m.field(name), pa.scalar(None, pa.string()))

    rest = group(pc.extract_regex(lines, _FRAME_REST), "rest")
    both = pc.extract_regex(rest, _SYM_DSO)
    only = group(pc.extract_regex(rest, _DSO_ONLY), "dso")
    has_sym = both.is_valid()
    sym = pc.if_else(has_sym, pc.utf8_trim_whitespace(both.field("sym")), "")
    dso = pc.if_else(has_sym, both.field("dso"), only)
    sym = pc.if_else(dso.is_valid(), sym, pa.scalar(None, pa.string()))
    sym = pc.replace_substring_regex(sym, r"\+0x[0-9a-fA-F]+$", "")
    sym = pc.if_else(pc.equal(sym, ""), "[unknown]", sym)
    module = pc.replace_substring_regex(dso, r"^.*/", "")
    module = pc.if_else(pc.equal(dso, ""), "[unknown]", module)
    pair = pc.dictionary_encode(pc.binary_join_element_wise(module, sym, "\x00"))
    frame, cache = intern.b.frame, intern.pairs
    ids = []
    for text in pair.dictionary.to_pylist():
        fid = cache.get(text)
        if fid is None:
            fid = cache[text] = frame(*text.split("\x00", 1))
        ids.append(fid)
    lut = np.asarray(ids + [-1], dtype=np.int64)
    codes = pair.indices
    return lut[pc.fill_null(codes, -1).to_numpy(zero_copy_only=False)]


def _in_range(m) -> np.ndarray:
    """Per header: pid and tid within 64 bits, cpu within 32, time and period finite (a float64 of
    more than 308 digits is infinite); an absent field is in range."""
    ok = np.ones(len(m), dtype=bool)
    for name, limit in (("pid", _INT64_MAX), ("tid", _INT64_MAX), ("cpu", _INT32_MAX)):
        digits = pc.utf8_ltrim(pc.fill_null(m.field(name), ""), characters="0")
        n = pc.utf8_length(digits)
        fits = pc.or_(pc.less(n, len(limit)), pc.and_(pc.equal(n, len(limit)), pc.less_equal(digits, limit)))
        ok &= fits.to_numpy(zero_copy_only=False)
    for name in ("time", "period"):
        v = _to_int(pc.fill_null(m.field(name), ""))
        ok &= ~np.isinf(v)
    return ok


def _line(data: bytes, starts, ends, i) -> str:
    return data[starts[i] : ends[i]].decode("utf-8", errors="replace")


def _tail_stack(tail: str, intern: _Interner) -> int | None:
    """Stack of a sample without frame lines: its header's tail, or no stack."""
    if not tail:
        return intern.empty()
    fid = intern.frame_or_bad(" " + tail)
    return None if fid < 0 else intern.b.stack((fid,))


def _event_filter(path, events: pa.Array, event: str | None) -> tuple[np.ndarray | None, str, dict, list[str]]:
    """Mask of the samples of the kept event, its name, counts per event, warnings."""
    vc = pc.value_counts(events)  # in order of first appearance
    counts = dict(zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist()))
    listing = ", ".join(f"{k} ({v:,} samples)" for k, v in counts.items())
    if event is None:
        event = next(iter(counts))
    elif event not in counts:
        raise ValueError(f"{display_name(path)}: no samples of event {event!r}; the file has {listing}")
    warnings = []
    if len(counts) == 1:
        return None, event, counts, warnings
    others = ", ".join(f"{k} ({v:,} samples)" for k, v in counts.items() if k != event)
    warnings.append(f"{display_name(path)}: kept event {event} ({counts[event]:,} samples); "
                    f"left out {others}; choose one with --event NAME")
    return pc.equal(events, event).to_numpy(zero_copy_only=False), event, counts, warnings


def _concat(parts: list) -> pa.Array:
    return pa.chunked_array(parts).combine_chunks() if len(parts) != 1 else parts[0]


def _to_int(arr: pa.Array) -> np.ndarray:
    """Digits-or-empty strings to float64 (NaN for empty), vectorised."""
    nulls = pc.if_else(pc.equal(arr, ""), pa.scalar(None, pa.string()), arr)
    return pc.cast(nulls, pa.float64()).to_numpy(zero_copy_only=False)


def _to_int64(arr: pa.Array) -> pa.Array:
    """Digits-or-empty strings to int64 (null for empty)."""
    return pc.cast(pc.if_else(pc.equal(arr, ""), pa.scalar(None, pa.string()), arr), pa.int64())


def _nullable(arr: pa.Array):
    """An int64 Arrow array as what the builder takes: int64 values when none is null, else float64
    with NaN (exact up to 2**53; tids of real systems are far below)."""
    if not arr.null_count:
        return arr.to_numpy(zero_copy_only=False)
    return pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False)


def _process_names(c: dict) -> pa.Array:
    """Per sample: ``comm (pid)`` when the header has pid/tid, else ``comm``."""
    has_tid = pc.not_equal(pc.fill_null(c["tid"], ""), "")
    pid_txt = pc.if_else(has_tid, pc.cast(_to_int64(c["pid"]), pa.string()), pa.scalar(None, pa.string()))
    named = pc.binary_join_element_wise(c["comm"], " (", pid_txt, ")", "")
    return pc.coalesce(named, c["comm"])


class _Parsed:
    """A parsed capture: interned stacks, per-sample header fields, problems."""

    def __init__(self, path, builder, sids, cols, bad, weight, event):
        self.path, self.builder, self.sids, self.cols, self.bad = path, builder, sids, cols, bad
        self.weight, self.event = weight, event

    def selected(self):
        """Stack ids, weights and header columns of the kept event's samples, and the meta."""
        path, c, sids = self.path, self.cols, self.sids
        mask, event, counts, warnings = _event_filter(path, c["event"], self.event)
        if mask is not None:
            keep = pa.array(mask)
            c = {k: pc.filter(v, keep) for k, v in c.items()}
            sids = sids[mask]
        period = _to_int(c["period"])
        has_period = not np.isnan(period).any()
        weight = self.weight or ("period" if has_period else "samples")
        if weight == "period":
            if not has_period:
                raise FormatError(display_name(path), None, "a period on every sample header for weight='period' "
                                  "(perf script -F ...,period)")
            w = period
        else:
            w = np.ones(len(sids))
        if self.bad.warning():
            warnings.append(self.bad.warning())
        meta = {
            "format": "perf_script",
            "source": display_name(path),
            "weight_unit": f"{event} period" if weight == "period" else "samples",
            "event": event,
            "events": list(counts),
            "event_samples": counts,
            "skipped_lines": self.bad.count,
            "skipped_first_lines": list(self.bad.first),
            "warnings": warnings,
        }
        return sids, w, c, meta

    def profile(self):
        sids, w, c, meta = self.selected()
        # "comm N" alone: N is the thread id (perf's default), pid unknown.  Ids as exact 64-bit integers
        # (a float would round those beyond 2**53); _in_range has kept them within int64.
        thread = pc.coalesce(_to_int64(c["tid"]), _to_int64(c["pid"]))
        process = _process_names(c).dictionary_encode()
        codes = process.indices.to_numpy(zero_copy_only=False)
        return self.builder.build(sids, w, process=(codes, process.dictionary.to_pylist()),
                                  thread=_nullable(thread), time=_to_int(c["time"]), cpu=_to_int(c["cpu"]),
                                  meta=meta)
