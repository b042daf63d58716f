"""Lower floors never import upper ones: perftools <- harness <- chapters."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "contention_book"
ABOVE = {"perftools": ("harness", "chapters"), "harness": ("chapters",)}
# The two entry points find a chapter by its name (the runner's command line and the book builder): they look the
# package up in the registry at call time, inside the function, and use nothing else of the floor above.
ENTRY_POINTS = {"harness/book.py": "from ..chapters import", "harness/runner.py": "from ..chapters import"}


@pytest.mark.parametrize("floor", sorted(ABOVE))
def test_a_floor_imports_nothing_above_it(floor):
    bad = []
    for path in sorted((SRC / floor).rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for upper in ABOVE[floor]:
                rel = path.relative_to(SRC).as_posix()
                if rel in ENTRY_POINTS and line.strip().startswith(ENTRY_POINTS[rel]) and line.startswith(" "):
                    continue
                if re.search(rf"^\s*(from|import)\s+(contention_book\.{upper}\b|\.\.{upper}\b)", line):
                    bad.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)
