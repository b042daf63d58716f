"""Numbers as Windows tools print them: locale decimals, grouping, units.

WPA and wpaexporter format numbers with the exporting machine's locale, so
one file says ``1,176567818`` (decimal comma), another ``1,176.567818``
(grouping comma) and a German one ``39.992,941063`` or ``1.234.567,5``.
A single value like ``1,234`` is ambiguous; a file is written in one locale,
so callers gather evidence from many values (:func:`detect_decimal`) and
then parse every value with the same decimal mark.  Column headers carry
units (``Weight (in view) (ms)``, ``TimeStamp (s)``): :func:`split_unit`
separates them so importers can normalise time to seconds.
"""

from __future__ import annotations

import re
from typing import Iterable

__all__ = [
    "decimal_evidence",
    "detect_decimal",
    "parse_number",
    "parse_strings",
    "column_evidence",
    "split_unit",
    "TIME_UNITS",
]

# Characters used as thousands separators besides '.' and ','.
_SPACES = ("\u00a0", "\u202f", "\u2009", " ", "'")

_DOT_STYLE = r"^[+-]?(?:\d{1,3}(?:,\d{3})+|\d*)(?:\.\d*)?(?:[eE][+-]?\d+)?$"
_COMMA_STYLE = r"^[+-]?(?:\d{1,3}(?:\.\d{3})+|\d*)(?:,\d*)?(?:[eE][+-]?\d+)?$"
_STYLE_RE = {".": re.compile(_DOT_STYLE), ",": re.compile(_COMMA_STYLE)}
_HAS_DIGIT = re.compile(r"\d")

# Regexes whose match proves the decimal mark (used on whole columns).
_PROVES_COMMA = r"^[+-]?\d*,(?:\d{0,2}|\d{4,})$|\.\d{3},\d*$|\.\d{3}\.\d{3}"
_PROVES_DOT = r"^[+-]?\d*\.(?:\d{0,2}|\d{4,})(?:[eE][+-]?\d+)?$|,\d{3}\.\d*$|,\d{3},\d{3}"

TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "ns": 1e-9}
_UNIT_RE = re.compile(r"^(?P<name>.*?)\s*\((?P<unit>s|sec|ms|us|\u00b5s|ns)\)\s*$")


def split_unit(header: str) -> tuple[str, str | None]:
    """``"Weight (in view) (ms)"`` -> ``("Weight (in view)", "ms")``."""
    m = _UNIT_RE.match(header.strip())
    if not m:
        return header.strip(), None
    return m.group("name"), m.group("unit")


def _clean(text: str) -> str:
    text = text.strip().strip('"').strip()
    for ch in _SPACES:
        if ch in text:
            text = text.replace(ch, "")
    return text


def decimal_evidence(text: str) -> str | None:
    """The decimal mark ``text`` proves (``'.'`` or ``','``), or ``None``.

    ``1,5`` proves a comma, ``1.5`` a dot, ``1.234,5`` a comma; ``1,234`` and
    ``1.234`` prove nothing (grouping or three decimals).
    """
    t = _clean(text)
    has_dot, has_comma = "." in t, "," in t
    if has_dot and has_comma:
        return "." if t.rfind(".") > t.rfind(",") else ","
    for mark in ".,":
        if (has_dot if mark == "." else has_comma):
            if t.count(mark) > 1:  # repeated mark can only be grouping
                return "," if mark == "." else "."
            if len(t) - t.index(mark) - 1 != 3:
                return mark
    return None


def detect_decimal(values: Iterable[str], default: str = ".") -> str:
    """Decimal mark of a file from a sample of its numeric cells."""
    for v in values:
        if v:
            e = decimal_evidence(v)
            if e:
                return e
    return default


def parse_number(text: str, decimal: str = ".") -> float:
    """Parse one cell; raise ``ValueError`` if it is not a number in that style."""
    t = _clean(text)
    if not t or not _HAS_DIGIT.search(t) or not _STYLE_RE[decimal].match(t):
        raise ValueError(f"not a number: {text!r}")
    thousands = "," if decimal == "." else "."
    t = t.replace(thousands, "")
    if decimal == ",":
        t = t.replace(",", ".")
    return float(t)


def column_evidence(arr) -> str | None:
    """Like :func:`decimal_evidence` for a whole string column (vectorised)."""
    import pyarrow.compute as pc  # here: the sniffer uses this module and must not load pyarrow

    arr = _clean_array(arr)
    comma = pc.any(pc.match_substring_regex(arr, _PROVES_COMMA)).as_py()
    dot = pc.any(pc.match_substring_regex(arr, _PROVES_DOT)).as_py()
    if comma and not dot:
        return ","
    if dot and not comma:
        return "."
    return None


def _clean_array(arr):
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_string(arr.type) and not pa.types.is_large_string(arr.type):
        arr = pc.cast(arr, pa.string())
    arr = pc.utf8_trim(arr, characters=' "\t')
    for ch in _SPACES:
        arr = pc.replace_substring(arr, ch, "")
    return arr


def parse_strings(arr, decimal: str = ".", *, allow_null: bool = False):
    """Vectorised :func:`parse_number`.

    Returns ``(values, bad)``: a float64 numpy array and the index of the
    first cell that is not a number in that style (``None`` if all parse).
    Empty cells are NaN when ``allow_null``, otherwise bad.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    s = _clean_array(arr)
    empty = pc.fill_null(pc.equal(pc.utf8_length(s), 0), True)
    ok = pc.and_(
        pc.match_substring_regex(s, _STYLE_RE[decimal].pattern),
        pc.match_substring_regex(s, r"\d"),
    )
    ok = pc.fill_null(ok, False)
    if allow_null:
        ok = pc.or_(ok, empty)
    if not pc.all(ok).as_py():
        bad = int(np.flatnonzero(~ok.to_numpy(zero_copy_only=False))[0])
        return None, bad
    thousands = "," if decimal == "." else "."
    s = pc.replace_substring(s, thousands, "")
    if decimal == ",":
        s = pc.replace_substring(s, ",", ".")
    s = pc.if_else(empty, pa.scalar(None, pa.string()), s)
    values = pc.cast(s, pa.float64()).to_numpy(zero_copy_only=False)
    return np.asarray(values, dtype=np.float64), None
