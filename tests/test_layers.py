"""Lower floors never import upper ones: perftools <- harness <- chapters."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "contention_book"
ABOVE = {"perftools": ("harness", "chapters"), "harness": ("chapters",)}


@pytest.mark.parametrize("floor", sorted(ABOVE))
def test_a_floor_imports_nothing_above_it(floor):
    bad = []
    for path in sorted((SRC / floor).rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for upper in ABOVE[floor]:
                if re.search(rf"^\s*(from|import)\s+(contention_book\.{upper}\b|\.\.{upper}\b)", line):
                    bad.append(f"{path.relative_to(SRC)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_the_harness_finds_every_chapter_through_the_entry_points():
    """The runner and the book builder learn the chapters from the installed entry points (pyproject.toml), never by
    importing the chapters package: the two lists must name the same packages."""
    from contention_book.chapters import PACKAGES
    from contention_book.harness import chapter_registry

    assert chapter_registry.packages() == {k: f"contention_book.chapters.{v}" for k, v in PACKAGES.items()}
    assert chapter_registry.package("ghost-cleanup", "spec").SPEC.chapter == "ghost-cleanup"
    with pytest.raises(KeyError, match="unknown chapter 'nope'"):
        chapter_registry.package("nope")
