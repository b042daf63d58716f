"""shared.memo: a result is kept per view only while a page renders, and a caller's edit never reaches it."""
from __future__ import annotations

import pandas as pd
import pytest

from contention_book.chapters.shared import memo


class View:
    def __init__(self):
        self.value = 1


def test_results_are_kept_per_view_only_while_a_page_renders():
    calls = []

    @memo.per_view
    def numbers(view, scale=1):
        calls.append(view)
        return {"v": view.value * scale}

    a, b = View(), View()
    try:
        memo.rendering(False)
        assert numbers(a) == {"v": 1} and numbers(a) == {"v": 1} and len(calls) == 2  # outside a page: no cache
        a.value = 5
        assert numbers(a) == {"v": 5}
        memo.rendering()
        first = numbers(a)
        first["v"] = 99  # the caller's copy
        assert numbers(a) == {"v": 5} and len(calls) == 4  # kept once, handed out as a copy
        assert numbers(b) == {"v": 1} and numbers(a, scale=2) == {"v": 10} and len(calls) == 6  # per view, per args
    finally:
        memo.rendering(False)


def test_unhashable_arguments_and_frames_are_handled():
    calls = []

    @memo.per_view
    def table(view, extra=None):
        calls.append(1)
        return pd.DataFrame({"x": [view.value]})

    v = View()
    try:
        memo.rendering()
        t = table(v)
        t.loc[0, "x"] = 42
        assert table(v).loc[0, "x"] == 1 and len(calls) == 1
        table(v, extra=pd.DataFrame())  # a frame as an argument cannot be a key: computed each time
        table(v, extra=pd.DataFrame())
        assert len(calls) == 3
    finally:
        memo.rendering(False)


def test_a_copied_view_does_not_inherit_its_parents_results():
    """One repetition's view is ``copy.copy`` of the whole recording's, with other tables: its numbers are its own."""
    import copy

    @memo.per_view
    def numbers(view):
        return {"v": view.value}

    parent = View()
    try:
        memo.rendering()
        assert numbers(parent) == {"v": 1}
        child = copy.copy(parent)
        child.value = 7
        assert numbers(child) == {"v": 7} and numbers(parent) == {"v": 1}
    finally:
        memo.rendering(False)


@pytest.mark.parametrize("chapter", ["latch_fairness", "logcache_spinlock", "ghost_cleanup", "last_page_insert",
                                     "lmax_queue"])
def test_a_page_that_keeps_results_shows_the_numbers_it_would_compute_afresh(chapter):
    """Every key number and verdict with the page's cache on equals the one computed with it off."""
    import importlib

    ch = importlib.import_module(f"contention_book.chapters.{chapter}")
    recordings = importlib.import_module(f"contention_book.chapters.{chapter}.recordings")

    def everything():
        shown = recordings.load_shown()
        numbers = ch.key_numbers(shown)
        verdicts = ch.verdicts(shown)
        return ({k: str(v) for k, v in numbers.items() if not hasattr(v, "_repr_markdown_")},
                verdicts.astype(str).to_dict("records"))

    try:
        memo.rendering(False)
        fresh = everything()
        memo.rendering()
        kept = everything()
        kept_again = everything()
    finally:
        memo.rendering(False)
    assert kept == fresh and kept_again == fresh
