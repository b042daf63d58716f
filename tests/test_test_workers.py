"""make test's work units on several CPUs (tests/conftest.py): the book build and every test that reads it in one
unit, build first; a file whose tests share a module fixture in one unit; any other test on its own."""
from __future__ import annotations

from pathlib import Path

import conftest


def test_the_book_build_and_its_readers_are_one_unit_and_other_tests_their_own():
    build = "tests/test_book.py::test_the_book_builds_with_warnings_as_errors"
    readers = ["tests/test_browser.py::test_no_horizontal_overflow", "tests/test_book_reading.py::test_x"]
    assert {conftest.work_unit(n) for n in [build, *readers]} == {conftest.BOOK_BUILD_GROUP}
    other = "tests/test_book.py::test_toc_lists_only_chapters_that_exist"
    assert conftest.work_unit(other) == other
    files = [t.split("::")[0] for t in conftest.BOOK_BUILD_TESTS]
    assert sorted(files)[0] == files[0] == "tests/test_book.py"  # collected, hence run, first
    book_tests = (Path(conftest.__file__).parent / "test_book.py").read_text()  # and the build first in its file
    assert book_tests.index("def test_the_book_builds_with_") < book_tests.index("def test_notebook_runs_on_recorded")
    assert conftest.work_unit("tests/test_book.py::test_notebook_runs_on_recorded_data[lmax-queue]") == \
        conftest.BOOK_BUILD_GROUP


def test_a_file_with_a_module_fixture_is_one_unit():
    assert conftest.shares_a_module_fixture("tests/test_packaging.py")  # a fresh venv, made once
    assert conftest.work_unit("tests/test_packaging.py::test_a[1]") == "tests/test_packaging.py"
    assert not conftest.shares_a_module_fixture("tests/test_layers.py")
    assert not conftest.shares_a_module_fixture("tests/no_such_file.py")
