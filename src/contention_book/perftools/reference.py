"""Compare our collapse of a perf capture with a reference collapser's.

inferno-collapse-perf and FlameGraph's stackcollapse-perf.pl write frames
by their own naming conventions: the process name as the root frame with
spaces turned into ``_``, function names without their argument list,
``[dso]`` for an unknown symbol, Java's ``L`` class prefix dropped.  Ours
keep ``module!function``.  :func:`as_reference_names` maps our profile to
their conventions, and nothing else, so that :func:`compare` can say
whether the two collapses agree stack for stack and weight for weight.
The naming rules are those of inferno's ``src/collapse/perf.rs``
(``tidy_generic``, ``tidy_java``, ``with_module_fallback``).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict

from .model import Profile

__all__ = ["as_reference_names", "read_folded_text", "compare", "tidy_function", "rust_legacy_name"]

_RUST_HASH = re.compile(r"(?:::)?h[0-9a-f]{16}$")
_RUST_ESCAPES = {"SP": "@", "BP": "*", "RF": "&", "LT": "<", "GT": ">", "LP": "(", "RP": ")", "C": ",",
                 "u7e": "~", "u20": " ", "u27": "'", "u3d": "=", "u5b": "[", "u5d": "]", "u7b": "{",
                 "u7d": "}", "u3b": ";", "u2b": "+", "u21": "!", "u22": '"'}
_RUST_TOKEN = re.compile(r"\$([A-Za-z0-9]+)\$|\.\.")


def rust_legacy_name(func: str) -> str:
    """A legacy-mangled Rust name perf left half done (``Vec$LT$T$GT$::push::h0123...``)
    as inferno shows it: hash dropped, ``$LT$`` and ``..`` escapes undone."""
    m = _RUST_HASH.search(func)
    if m is None or func.startswith("_ZN"):
        return func
    rest = func[: m.start()]
    if rest.startswith("_$"):
        rest = rest[1:]

    def undo(t: re.Match) -> str:
        if t.group(0) == "..":
            return "::"
        return _RUST_ESCAPES.get(t.group(1), t.group(0))

    return _RUST_TOKEN.sub(undo, rest)


def tidy_function(func: str, java: bool) -> str:
    """inferno's ``tidy_generic`` (and ``tidy_java`` for java processes)."""
    func = func.replace(";", ":")
    depth, last_dot, cut = 0, None, len(func)
    for i, c in enumerate(func):
        if c in "<{[":
            depth += 1
        elif c in ">}])":
            depth -= 1
        elif c == "(":
            if depth == 0:
                if last_dot != i and not func.startswith("(anonymous namespace)", i):
                    cut = i
                    break
            depth += 1
        elif c == ".":
            last_dot = i + 1
    func = func[:cut]
    if java and func.startswith("L") and "/" in func:
        func = func[1:]
    return func


def _frame(module: str, function: str, java: bool) -> str:
    if function == "[unknown]":
        return "[unknown]" if module in ("", "[unknown]") else f"[{module}]"
    return tidy_function(rust_legacy_name(function), java)


def _process(name: str) -> str:
    """``comm (pid)`` -> ``comm``, spaces as ``_`` (inferno's root frame without --pid)."""
    if name.endswith(")") and " (" in name:
        head, _, pid = name[:-1].rpartition(" (")
        if pid.isdigit():
            name = head
    return name.replace(" ", "_")


def as_reference_names(p: Profile) -> dict[str, float]:
    """Folded stacks of ``p`` (process as root) in the reference naming, with their weights."""
    mods = p.frames["module"].tolist()
    funcs = p.frames["function"].tolist()
    stacks = p.stacks
    out: dict[str, float] = defaultdict(float)
    grouped = p.samples.groupby(["process", "stack_id"], observed=True)["weight"].sum()
    for (proc, sid), w in grouped.items():
        root = _process(str(proc))
        java = root.startswith("java")
        frames = [_frame(mods[f], funcs[f], java) for f in stacks[int(sid)]]
        out[";".join([root] + frames)] += float(w)
    return dict(out)


def read_folded_text(text: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        if stack:
            out[stack] += float(n)
    return dict(out)


def compare(ours: dict[str, float], theirs: dict[str, float]) -> list[str]:
    """Differences, one line each (empty: the collapses agree)."""
    diffs = []
    for k in sorted(set(ours) | set(theirs)):
        a, b = ours.get(k), theirs.get(k)
        if a is None or b is None or not math.isclose(a, b, rel_tol=1e-9):
            diffs.append(f"{k}: ours {a}, reference {b}")
    return diffs
