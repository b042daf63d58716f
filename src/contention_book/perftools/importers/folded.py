"""Folded ("collapsed") stacks: ``root;caller;leaf COUNT`` per line.

Format reference: brendangregg/FlameGraph (the output of the
``stackcollapse-*.pl`` scripts and the input of ``flamegraph.pl``); UIforETW's
``xperf_to_collapsedstacks.py`` writes the same with the process as the
first frame.  It is both an input format and the export format of this
package (what :mod:`perftools.capture` stores), so reading then writing a
canonical file (sorted, one line per stack) gives the same bytes back.

Frames are written ``module!function`` (just ``function`` when the module
is unknown); ``;`` inside a name becomes ``:`` as in UIforETW.  With
``process_root=True`` the first frame of each line is the process.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections import defaultdict

import numpy as np

from ..errors import FormatError
from ..builder import ProfileBuilder, split_frame_name
from ..sniff import looks_like_folded as looks_like  # noqa: F401  (the sniffer's tell)
from ..source import display_name, open_text

__all__ = ["load", "dumps", "write", "format_weight"]

LINE_EXPECTED = "a folded stack 'frame;frame;... COUNT'"


_PROCESS = re.compile(r"^[^;!]* \(\d+\)$")
#: A count as collapsers write it: ASCII digits, perhaps a fraction or an exponent (Python's int() and
#: float() would also take '1_000', ' 12', 'nan', 'inf' and other scripts' digits, which none writes).
_COUNT = re.compile(r"^[0-9]+((?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)$", re.ASCII)


def _first_frames_are_processes(path) -> bool:
    """Do all lines start with a ``name (pid)`` frame, as our captures write?"""
    seen = False
    with open_text(path) as f:
        for line in f:
            text = line.rstrip("\n").rpartition(" ")[0]
            if not text:
                continue
            first, semi, _ = text.partition(";")
            if not semi or not _PROCESS.match(first):
                return False
            seen = True
    return seen


def load(path, *, process_root: bool | None = None) -> Profile:
    """Read folded stacks.

    ``process_root``: the first frame of each line names the process.
    ``None`` (default) decides from the file: yes when every line starts
    with a ``name (pid)`` frame, the spelling :func:`write` uses (and WPA's),
    which no ``module!function`` frame has."""
    name = display_name(path)
    if process_root is None:
        process_root = _first_frames_are_processes(path)
    b = ProfileBuilder()
    stack_cache: dict[str, int] = {}
    frame_ids: dict[str, int] = {}  # a frame's text -> its id: the distinct stacks repeat a few thousand frames
    sids, weights, procs = [], [], []
    with open_text(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            text, sep, count = line.rpartition(" ")
            if not sep or not text.strip():
                raise FormatError(name, lineno, LINE_EXPECTED, line)
            m = _COUNT.match(count)
            if m is None:
                if count.startswith("-") and _COUNT.match(count[1:]):
                    raise FormatError(name, lineno, "a finite, non-negative sample count", count)
                raise FormatError(name, lineno, "a sample count after the last space (digits, an optional "
                                  "fraction; no '_' separators)", count)
            w = float(count) if m.group(1) else int(count)
            if w == float("inf"):
                raise FormatError(name, lineno, "a finite, non-negative sample count", count)
            proc = ""
            if process_root:
                proc, semi, text = text.partition(";")
                if not semi or not text:
                    raise FormatError(name, lineno, "a process name and at least one frame ('process;frame;... COUNT')", line)
            sid = stack_cache.get(text)
            if sid is None:
                frames = text.split(";")
                if "" in frames:
                    raise FormatError(name, lineno, "a frame name between each pair of ';'", line)
                ids = []
                for fr in frames:
                    fid = frame_ids.get(fr)
                    if fid is None:
                        fid = frame_ids[fr] = b.frame(*split_frame_name(fr))
                    ids.append(fid)
                sid = stack_cache[text] = b.stack(ids)
            sids.append(sid)
            weights.append(w)
            procs.append(proc)
    if not sids:
        raise FormatError(name, 1, LINE_EXPECTED, "an empty file")
    return b.build(
        sids,
        np.asarray(weights, dtype=np.float64),
        process=procs,
        meta={"format": "folded", "source": name, "weight_unit": "samples"},
    )


def format_weight(w: float) -> str:
    """Integers without a decimal point; other weights in shortest form."""
    return str(int(w)) if float(w).is_integer() else repr(float(w))


def _clean(name: str) -> str:
    return name.replace(";", ":").replace("\n", " ")


def lines(profile: Profile, *, process_root: bool = False, integer: bool = False) -> list[str]:
    """Folded lines (sorted, one per distinct stack) without newlines;
    ``integer``: weights rounded to whole numbers (lines that round to 0 dropped)."""
    s = profile.samples
    proc = s["process"].astype("category") if process_root else None
    return lines_from(
        profile.frame_names().tolist(), profile.stack_offsets, profile.stack_frames,
        s["stack_id"].to_numpy(), s["weight"].to_numpy(),
        proc.cat.codes.to_numpy() if proc is not None else None,
        [str(c) for c in proc.cat.categories] if proc is not None else None,
        integer=integer,
    )


def lines_from(names, offsets, frames, stack_id, weight, proc_codes=None, proc_names=None, *,
               integer: bool = False) -> list[str]:
    """:func:`lines` from the raw arrays of a profile (no pandas needed):
    frame names, stack offsets and frame ids, and per sample its stack id,
    weight and (optionally) process code into ``proc_names``."""
    names = [_clean(n) for n in names]
    n_stacks = len(offsets) - 1
    key = np.asarray(stack_id, dtype=np.int64)
    if proc_codes is not None:
        key = np.asarray(proc_codes, dtype=np.int64) * n_stacks + key
    uniq, inv = np.unique(key, return_inverse=True)
    sums = np.bincount(inv, weights=weight, minlength=len(uniq))
    off = offsets.tolist()
    vals = frames.tolist()
    totals: dict[str, float] = defaultdict(float)
    for k, x in zip(uniq.tolist(), sums.tolist()):
        proc, i = divmod(k, n_stacks) if proc_codes is not None else (-1, k)
        t = ";".join([names[f] for f in vals[off[i] : off[i + 1]]])
        if proc >= 0 and proc_names[proc]:
            t = _clean(proc_names[proc]) + ";" + t
        totals[t] += x
    if integer:
        return [f"{t} {round(v)}" for t, v in sorted(totals.items()) if round(v)]
    return [f"{t} {format_weight(v)}" for t, v in sorted(totals.items())]


def dumps(profile: Profile, *, process_root: bool = False) -> str:
    """The profile as folded text (each line ends with a newline)."""
    out = lines(profile, process_root=process_root)
    return "".join(line + "\n" for line in out)


def write(profile: Profile, dest, *, process_root: bool = False) -> None:
    """Write folded text to a path (gzip'd if it ends in ``.gz``) or file."""
    write_lines(lines(profile, process_root=process_root), dest)


def write_lines(out: list[str], dest) -> None:
    """Write folded lines (from :func:`lines`) to a path (gzip'd if ``.gz``) or file."""
    text = "".join(line + "\n" for line in out)
    if hasattr(dest, "write"):
        dest.write(text)
        return
    dest = os.fspath(dest)
    if dest.endswith(".gz"):
        # mtime=0: the same profile always gives the same bytes (manifests hash them)
        with open(dest, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:
            gz.write(text.encode("utf-8"))
    else:
        with io.open(dest, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
