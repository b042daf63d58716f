"""Linux ``perf script`` text (the output of ``perf record -g``).

Format reference: perf-script(1) and brendangregg/FlameGraph
``stackcollapse-perf.pl``, the reference collapser.  A sample is a header
line ``comm pid/tid [cpu] time: [period] event:`` (``/tid``, ``[cpu]`` and
the period depend on perf's options and ``-F`` fields; comm may contain
spaces) followed by indented frame lines ``addr sym+off (dso)``, leaf
first, and a blank line.  Without ``-g`` each sample is one line whose tail
is the sampled frame.  As in stackcollapse-perf, ``+0x..`` offsets are
stripped so samples at different instructions of one function share a
frame, and ``[unknown]`` symbols become one ``dso![unknown]`` frame per dso
(Debian's stripped postgres shows its static functions this way).

Speed: files reach hundreds of MB, so the reader works on multi-MB chunks
split at blank lines, and interns per sample only two strings: the leaf
line and the text of the caller lines (return addresses repeat exactly,
only the leaf instruction varies).  Each distinct string is parsed once.
Headers are parsed per chunk in one vectorised ``pyarrow.compute``
regex.  When anything does not parse, a slow line-by-line pass over the
file finds the first bad line for the error message.
"""

from __future__ import annotations

import codecs
import re
from array import array

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import FormatError
from ..model import NO_STACK, Profile, ProfileBuilder
from ..source import arrow_pool_scope, detect_encoding, display_name, open_binary

__all__ = ["load", "looks_like", "HEADER_PATTERN"]

#: Sample header; the same pattern runs in RE2 (pyarrow) and Python ``re``.
HEADER_PATTERN = (
    r"^\s*(?P<comm>\S.*?)\s+(?P<pid>\d+)(?:/(?P<tid>\d+))?\s+"
    r"(?:\[(?P<cpu>\d+)\]\s+)?(?P<time>\d+\.\d+):\s*"
    r"(?:(?P<period>\d+)\s+)?(?P<event>\S+?):(?:\s+(?P<tail>.*))?$"
)
_HEADER_RE = re.compile(HEADER_PATTERN)
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")

HEADER_EXPECTED = "a sample header 'comm pid/tid [cpu] time: [period] event:'"
FRAME_EXPECTED = "a stack frame line 'ADDRESS SYMBOL+OFFSET (DSO)'"

_CHUNK = 8 << 20


def looks_like(lines: list[str]) -> bool:
    """The first line that is not a ``#`` comment is a sample header ``comm pid time: event:``."""
    body = [ln for ln in lines if not ln.startswith("#")]
    return bool(body) and bool(_HEADER_RE.match(body[0]))


def _is_frame_line(line: str) -> bool:
    """perf indents frame lines with a tab; headers may be space-padded
    (comm is right-aligned without -g), so a space-led line is a frame only
    when it is not a header."""
    return line[:1] == "\t" or (line[:1] == " " and _HEADER_RE.match(line) is None)


class _Bad(Exception):
    """Internal: fast path met something it cannot parse; diagnose slowly."""


def parse_frame(line: str) -> tuple[str, str] | None:
    """``(module, function)`` of one ``addr sym+off (dso)`` line, or None."""
    s = line.strip()
    sp = s.find(" ")
    if sp <= 0 or not s.endswith(")") or not _HEX.match(s[:sp]):
        return None
    rest = s[sp + 1 :].lstrip()
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


class _Interner:
    """Caches leaf lines and caller texts to frame ids and stack ids."""

    def __init__(self, builder: ProfileBuilder):
        self.b = builder
        self.leaf: dict[str, int] = {}
        self.rest: dict[str, int] = {}
        self.rest_frames: list[tuple[int, ...]] = []
        self.stacks: dict[int, int] = {}
        self.no_stack = -1

    def frame_of(self, line: str) -> int:
        fid = self.leaf.get(line)
        if fid is None:
            if line[:1] not in (" ", "\t"):
                raise _Bad(line)
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


def _iter_chunks(path):
    """Text chunks of whole samples (split after a blank line)."""
    with open_binary(path) as raw:
        first = raw.read(_CHUNK)
        enc, bom = detect_encoding(first[:4])
        dec = codecs.getincrementaldecoder(enc)(errors="replace")
        carry = ""
        data = first[bom:]
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
                    yield text
                return
            cut = text.rfind("\n\n")
            if cut < 0:
                carry = text
            else:
                yield text[:cut]
                carry = text[cut + 2 :]
            data = raw.read(_CHUNK)


def _strip_comments(chunk: str) -> str:
    while chunk.startswith("#") or chunk.startswith("\n"):
        nl = chunk.find("\n")
        chunk = "" if nl < 0 else chunk[nl + 1 :]
    return chunk


def _header_columns(headers: list[str]) -> dict[str, pa.Array]:
    s = pa.array(headers, type=pa.string())
    m = pc.extract_regex(s, HEADER_PATTERN)
    if m.null_count:
        raise _Bad(headers[int(np.flatnonzero(m.is_null().to_numpy(zero_copy_only=False))[0])])
    return {name: m.field(name) for name in ("comm", "pid", "tid", "cpu", "time", "period", "event", "tail")}


def _flat_block(block: str, intern: _Interner, headers: list[str], sids: array) -> None:
    """Blocks that are not 'one header + indented frames': perf without -g,
    or samples with no blank line between them."""
    cur: list[str] | None = None

    def flush():
        if cur is None:
            return
        frames = [intern.frame_of(ln) for ln in reversed(cur)]
        if not frames:
            m = _HEADER_RE.match(headers[-1])
            tail = (m.group("tail") or "").strip() if m else ""
            parsed = parse_frame(" " + tail) if tail else None
            if tail and parsed is None:
                raise _Bad(headers[-1])
            frames = [intern.b.frame(*parsed)] if parsed else []
        sids.append(intern.b.stack(frames) if frames else intern.empty())

    for ln in block.split("\n"):
        if not ln.strip() or ln.startswith("#"):
            continue
        if _is_frame_line(ln):
            if cur is None:
                raise _Bad(ln)
            cur.append(ln)
        else:
            flush()
            headers.append(ln)
            cur = []
    flush()


def load(path, *, weight: str = "samples") -> Profile:
    """Read ``perf script`` output (plain or gzip'd) into a :class:`Profile`.

    ``weight``: ``"samples"`` (1 per sample, as stackcollapse-perf counts)
    or ``"period"`` (the event period, e.g. ns of cpu-clock).
    """
    if weight not in ("samples", "period"):
        raise ValueError("weight must be 'samples' or 'period'")
    try:
        with arrow_pool_scope():
            return _load_fast(path, weight)
    except _Bad as bad:
        _diagnose(path, weight)
        raise FormatError(display_name(path), None, HEADER_EXPECTED + " or " + FRAME_EXPECTED, str(bad))


def _load_fast(path, weight: str) -> Profile:
    builder = ProfileBuilder()
    intern = _Interner(builder)
    cols: dict[str, list] = {k: [] for k in ("comm", "pid", "tid", "cpu", "time", "period", "event")}
    all_sids = array("i")
    first = True
    for chunk in _iter_chunks(path):
        if first:
            chunk = _strip_comments(chunk)
            first = False
        headers: list[str] = []
        sids = array("i")
        leaf_get, rest_get, stack_get = intern.leaf.get, intern.rest.get, intern.stacks.get
        for block in chunk.split("\n\n"):
            nl = block.find("\n")
            if nl < 0:
                if not block:
                    continue
                if block[0] in " \t#":
                    _flat_block(block, intern, headers, sids)
                    continue
                headers.append(block)
                _flat_fix_single(block, intern, sids)
                continue
            if block[0] in " \t#\n" or block[nl + 1] != "\t":
                _flat_block(block, intern, headers, sids)
                continue
            headers.append(block[:nl])
            nl2 = block.find("\n", nl + 1)
            if nl2 < 0:
                leaf, rest = block[nl + 1 :], ""
            else:
                leaf, rest = block[nl + 1 : nl2], block[nl2 + 1 :]
            fid = leaf_get(leaf)
            if fid is None:
                fid = intern.frame_of(leaf)
            rid = rest_get(rest)
            if rid is None:
                rid = intern.rest_of(rest)
            key = rid * 4194304 + fid if fid < 4194304 else (rid, fid)
            sid = stack_get(key)
            if sid is None:
                sid = intern.stack_of(fid, rid)
            sids.append(sid)
        if headers:
            h = _header_columns(headers)
            for k in cols:
                cols[k].append(h[k])
            all_sids.extend(sids)
    if not all_sids:
        raise FormatError(display_name(path), 1, "at least one perf sample (" + HEADER_EXPECTED + ")", "an empty file")
    return _assemble(path, builder, all_sids, cols, weight)


def _flat_fix_single(block: str, intern: _Interner, sids: array) -> None:
    """A single header line with nothing after it: its tail (perf without -g)
    is the sampled frame, else the sample has no stack."""
    m = _HEADER_RE.match(block)
    if m is None:
        raise _Bad(block)
    tail = (m.group("tail") or "").strip()
    if tail:
        parsed = parse_frame(" " + tail)
        if parsed is None:
            raise _Bad(block)
        sids.append(intern.b.stack((intern.b.frame(*parsed),)))
    else:
        sids.append(intern.empty())


def _concat(parts: list) -> pa.Array:
    return pa.chunked_array(parts).combine_chunks() if len(parts) != 1 else parts[0]


def _to_int(arr: pa.Array) -> np.ndarray:
    """Digits-or-empty strings to float64 (NaN for empty), vectorised."""
    nulls = pc.if_else(pc.equal(arr, ""), pa.scalar(None, pa.string()), arr)
    return pc.cast(nulls, pa.float64()).to_numpy(zero_copy_only=False)


def _assemble(path, builder, all_sids, cols, weight) -> Profile:
    comm = _concat(cols["comm"])
    pid, tid = _to_int(_concat(cols["pid"])), _to_int(_concat(cols["tid"]))
    has_tid = ~np.isnan(tid)
    # "comm N" alone: N is the thread id (perf's default), pid unknown.
    thread = np.where(has_tid, tid, pid)
    proc_pid = np.where(has_tid, pid, np.nan)
    pid_txt = pc.cast(pa.array(proc_pid, from_pandas=True).cast(pa.int64()), pa.string())
    named = pc.binary_join_element_wise(comm, " (", pid_txt, ")", "")
    process = pc.coalesce(named, comm).dictionary_encode()
    process = pd.Categorical.from_codes(
        process.indices.to_numpy(zero_copy_only=False),
        categories=pd.Index(process.dictionary.to_pylist()).astype(str),
    )
    time = pc.cast(_concat(cols["time"]), pa.float64()).to_numpy(zero_copy_only=False)
    cpu = _to_int(_concat(cols["cpu"]))
    if weight == "period":
        w = _to_int(_concat(cols["period"]))
        if np.isnan(w).any():
            raise FormatError(display_name(path), None, "a period on every sample header for weight='period'")
    else:
        w = np.ones(len(all_sids))
    events = sorted(set(_concat(cols["event"]).unique().to_pylist()))
    return builder.build(
        np.frombuffer(all_sids, dtype=np.int32),
        w,
        process=process,
        thread=thread,
        time=time,
        cpu=cpu,
        meta={
            "format": "perf_script",
            "source": display_name(path),
            "weight_unit": "samples" if weight == "samples" else "period",
            "events": events,
        },
    )


def _diagnose(path, weight: str) -> None:
    """Line-by-line pass that raises FormatError at the first bad line."""
    name = display_name(path)
    in_sample = False
    from ..source import open_text

    with open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                in_sample = False
                continue
            if line.startswith("#"):
                continue
            if _is_frame_line(line):
                if not in_sample:
                    raise FormatError(name, lineno, HEADER_EXPECTED + " before the stack frames", line)
                if parse_frame(line) is None:
                    raise FormatError(name, lineno, FRAME_EXPECTED, line)
                continue
            m = _HEADER_RE.match(line)
            if m is None:
                raise FormatError(name, lineno, HEADER_EXPECTED, line)
            tail = (m.group("tail") or "").strip()
            if tail and parse_frame(" " + tail) is None:
                raise FormatError(name, lineno, HEADER_EXPECTED + " optionally followed by " + FRAME_EXPECTED, line)
            if weight == "period" and not m.group("period"):
                raise FormatError(name, lineno, "a period before the event name for weight='period'", line)
            in_sample = True
