"""The WPA "CPU Usage (Sampled)" table copied or exported as a tree.

Format reference: what WPA writes when the Stack column is left of the
grouping bar and the table is copied (Ctrl+C / "Copy Selection", tab
separated) or exported to CSV: columns such as ``Line #, Process, Stack,
Count, Weight (in view) (ms), % Weight``; one row per tree node below a
``[Root]`` row; the Process cell is filled only on a process's first row.
A node that has siblings is drawn ``|- name``; an only child is drawn at
its parent's indent with no marker, so a long single-child chain stays at
one indent: indent is *not* depth.  ``Line #`` skips numbers where rows were
collapsed, which changes nothing here: a collapsed node's children are
simply absent and its weight is its own.

Rebuilding the tree: a node's *level* is the column of its ``|- `` marker;
an unmarked row inherits its parent's level.

* a row without a marker is the only child of the row just above it
  (whatever its spacing: WPA draws it at its parent's indent);
* a row with a marker at column ``L`` is a child of the nearest node above
  it on the current path whose level is less than ``L`` (nodes at ``L`` or
  deeper are its earlier siblings and their single-child chains), and its
  marker must line up with its siblings' markers.

A node's self weight is its weight minus its children's; every node with
self weight becomes one weighted sample whose stack is the path from
``[Root]`` (excluded) to the node.  The tables are small (WPA copies at
most what is expanded on screen), so this reader is a plain csv loop.
"""

from __future__ import annotations

import csv
import math
import re

import numpy as np

from ..csv_columns import find_columns, sniff_delimiter
from ..errors import FormatError
from ..builder import NO_STACK, ProfileBuilder, normalise_process, split_frame_name
from ..numbers import detect_decimal, parse_number
from ..sniff import looks_like_wpa_tree as looks_like  # noqa: F401  (the sniffer's tell)
from ..source import decode_error, display_name, open_text

__all__ = ["load", "parse_indent"]

_INDENT = re.compile(r"^([ |]*?)(\|- ?)?([^ |].*)$")


def parse_indent(cell: str) -> tuple[int, bool, str] | None:
    """``(column, marked, name)`` of a Stack cell, or None if it has no name.

    ``column`` is where the ``|- `` marker starts (marked rows) or where the
    name starts (unmarked rows)."""
    m = _INDENT.match(cell.rstrip())
    if m is None:
        return None
    marked = m.group(2) is not None
    return (m.start(2) if marked else m.start(3)), marked, m.group(3)


class _Node:
    __slots__ = ("name", "weight", "children", "parent", "line", "path", "child_level")

    def __init__(self, name, weight, parent, line):
        self.name, self.weight, self.parent, self.line = name, weight, parent, line
        self.children = 0.0
        self.child_level = None


def load(path):
    """Read a WPA tree copy/export into a :class:`~perftools.model.Profile`."""
    name = display_name(path)
    try:
        return _load(path, name)
    except UnicodeDecodeError:
        err = decode_error(path)  # the line and byte offset; None only for UTF-16, whose decoder says where
        if err is None:
            raise
        raise err from None


def _load(path, name):
    with open_text(path, errors="strict") as f:
        first = f.readline()
        if not first.strip():
            raise FormatError(name, 1, "a header line with 'Stack' and 'Weight' or 'Count' columns", "an empty line" if first else "an empty file")
        delim = sniff_delimiter(first)
        header = next(csv.reader([first], delimiter=delim))
        reader = csv.reader(f, delimiter=delim)
        rows = [(reader.line_num + 1, r) for r in reader]
    cols = find_columns(header)
    if "stack" not in cols:
        raise FormatError(name, 1, "a 'Stack' column in the header", first)
    wfield = "weight" if "weight" in cols else "count" if "count" in cols else None
    if wfield is None:
        raise FormatError(name, 1, "a 'Weight' or 'Count' column in the header", first)
    si, wi = cols["stack"][0], cols[wfield][0]
    pi = cols["process"][0] if "process" in cols else None
    decimal = detect_decimal(r[wi] for _, r in rows if len(r) > wi)

    b = ProfileBuilder()
    nodes: list[_Node] = []
    procs: list[str] = []
    process = ""
    path_stack: list[tuple[_Node, int]] = []
    trees = 0
    for line, row in rows:
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise FormatError(name, line, f"{len(header)} fields as in the header", f"{len(row)} fields: {delim.join(row)}")
        if pi is not None and row[pi].strip():
            process = normalise_process(row[pi])
        cell = row[si]
        if not cell.strip():
            continue  # a totals or process-group row
        ind = parse_indent(cell)
        if ind is None:
            raise FormatError(name, line, "a frame name after the tree indentation", cell)
        pos, marked, text = ind
        try:
            weight = parse_number(row[wi], decimal)
        except ValueError:
            raise FormatError(name, line, f"a number in column {cols[wfield][1]!r}", row[wi]) from None
        if not (math.isfinite(weight) and weight >= 0):
            raise FormatError(name, line, f"a finite, non-negative number in column {cols[wfield][1]!r}", row[wi])
        if text.strip() == "[Root]":
            node = _Node(None, weight, None, line)
            path_stack = [(node, pos - 1)]
            nodes.append(node)
            procs.append(process)
            trees += 1
            continue
        if not path_stack:
            raise FormatError(name, line, "a '[Root]' row before the first frame", cell)
        if marked:
            while path_stack and path_stack[-1][1] >= pos:
                path_stack.pop()
            if not path_stack:
                raise FormatError(name, line, "a '|- ' marker indented deeper than its '[Root]'", cell)
            parent = path_stack[-1][0]
            if parent.child_level is None:
                parent.child_level = pos
            elif parent.child_level != pos:
                raise FormatError(
                    name, line, f"a '|- ' marker at column {parent.child_level + 1} like its siblings'", cell
                )
            level = pos
        else:
            parent, level = path_stack[-1]
        node = _Node(text.strip(), weight, parent, line)
        parent.children += weight
        path_stack.append((node, level))
        nodes.append(node)
        procs.append(process)
    if not trees:
        raise FormatError(name, len(rows) + 1, "a '[Root]' row in the Stack column", "end of file")

    stack_ids, weights, processes = [], [], []
    for node, proc in zip(nodes, procs):
        if node.parent is None:
            node.path = ()
        else:
            node.path = node.parent.path + (b.frame(*split_frame_name(node.name)),)
        self_w = node.weight - node.children
        tol = 1e-6 * max(abs(node.weight), 1.0)
        if self_w < -tol:
            raise FormatError(
                name, node.line, "children whose weights add up to at most the row's weight",
                f"weight {node.weight:g}, children {node.children:g}",
            )
        if self_w > tol:
            stack = node.path or (b.frame("", NO_STACK),)
            stack_ids.append(b.stack(stack))
            weights.append(self_w)
            processes.append(proc)
    unit = cols[wfield][2]
    return b.build(
        stack_ids,
        np.asarray(weights, dtype=np.float64),
        process=processes,
        meta={
            "format": "wpa_tree",
            "source": name,
            "weight_unit": (unit or "ms") if wfield == "weight" else "samples",
            "weight_column": cols[wfield][1],
        },
    )
