"""Shared fixtures: a throwaway PostgreSQL with a known password, started once per session."""
from __future__ import annotations

import functools
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

KNOWN_PASSWORD = "Leak-Canary-7f3a9c"  # used only by the test cluster; tests grep every output for it
TEST_ENV_VAR = "CONTENTION_BOOK_TEST_PG"
# Live runs in tests do not wait for a quiet machine (the tests themselves keep it busy); they still record the load.
os.environ.setdefault("CONTENTION_BOOK_QUIET_WAIT_S", "0")
# Nor do they measure a machine card (seconds per run); tests/harness/test_machine_card.py turns it on for its own.
os.environ.setdefault("CONTENTION_BOOK_MACHINE_CARD", "0")
# Live runs in tests take no off-CPU capture (perftools.capture.OffCpuRecorder: minutes of perf script per variant);
# tests/perftools/test_perftools_offcpu_capture.py records one of its own.
os.environ.setdefault("OFFCPU", "0")
# pytest keeps each test module's assertion-rewritten code in __pycache__, unless bytecode writing is off.  Where
# PYTHONDONTWRITEBYTECODE=1 is set (as on the machines this book is built and tested on), every test worker rewrote
# all the test modules again on every run: 9 s of CPU per worker before its first test.  The cache holds our tests'
# code only (.gitignore keeps it out of the repository); .ci/run builds it while apt-get installs.
sys.dont_write_bytecode = False


# make test runs the suite on every CPU and one more (pytest -n <CPUs + 1> --dist loadgroup), with the work units
# below in place of xdist's own groups (its xdist_group mark no longer takes effect with pytest 9: it renames a
# test's node id through an attribute pytest 9 does not read).
#
# The tests that build the book into the checkout's book/_build, or read that build, are one unit, run in order on
# one worker: two workers never build into the same folder at once, and no built-page check reads a half-built
# book or skips for want of one.  The build comes first, as in a run on one CPU (test_book.py sorts first).
BOOK_BUILD_GROUP = "book-build"
BOOK_BUILD_TESTS = ("tests/test_book.py::test_the_book_builds_with_warnings_as_errors",
                    "tests/test_book.py::test_notebook_runs_on_recorded_data", "tests/test_book_reading.py::",
                    "tests/test_browser.py::",
                    "tests/test_make_inputs.py::test_page_sends_the_executed_chapter_to_a_file_and_leaves_the_book")
_MODULE_FIXTURE = re.compile(r"""@pytest\.fixture\([^)]*scope\s*=\s*["'](?:module|class|package)["']""")


@functools.cache
def shares_a_module_fixture(test_file: str) -> bool:
    """A test file with a module-scoped fixture (a cluster, live runs, a fresh venv, loaded references) is one
    unit: the fixture is made once, as on one CPU, not once per worker."""
    try:
        return bool(_MODULE_FIXTURE.search((Path(__file__).resolve().parents[1] / test_file).read_text()))
    except OSError:
        return False


def work_unit(nodeid: str) -> str:
    """The unit a test is scheduled in: the book build's, its file's, or its own."""
    if nodeid.startswith(BOOK_BUILD_TESTS):
        return BOOK_BUILD_GROUP
    test_file = nodeid.split("::")[0]
    return test_file if shares_a_module_fixture(test_file) else nodeid


@pytest.hookimpl(optionalhook=True)  # a run without xdist (-p no:xdist) does not know the hook
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class WorkUnits(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return WorkUnits(config, log)


@pytest.fixture(autouse=True)
def no_page_cache_after_a_test():
    """A test that renders a page in this process leaves no per-view cache on for the next (shared.memo)."""
    yield
    from contention_book.chapters.shared import memo

    memo.rendering(False)


@pytest.fixture(scope="session", autouse=True)
def guard_journal_dir(tmp_path_factory):
    """The guard's journals (what a killed run must restore) in a directory of this test session, not ~/.cache."""
    from contention_book.harness.guard import JOURNAL_DIR_ENV

    path = tmp_path_factory.mktemp("guard-journal")
    saved = os.environ.get(JOURNAL_DIR_ENV)
    os.environ[JOURNAL_DIR_ENV] = str(path)
    yield path
    if saved is None:
        os.environ.pop(JOURNAL_DIR_ENV, None)
    else:
        os.environ[JOURNAL_DIR_ENV] = saved


@pytest.fixture(scope="session", autouse=True)
def run_lock_dir(tmp_path_factory):
    """The chapters' run locks in a directory of this test session (each xdist worker has its own), not the
    checkout's .cache: tests on two workers running the same chapter must not refuse each other."""
    from contention_book.harness.runner import LOCK_DIR_ENV

    path = tmp_path_factory.mktemp("run-locks")
    saved = os.environ.get(LOCK_DIR_ENV)
    os.environ[LOCK_DIR_ENV] = str(path)
    yield path
    if saved is None:
        os.environ.pop(LOCK_DIR_ENV, None)
    else:
        os.environ[LOCK_DIR_ENV] = saved


PG_PREFIX = "contention-book-pg-"


@pytest.fixture(scope="session")
def pg():
    """The embedded cluster, in a temporary directory, with KNOWN_PASSWORD."""
    from contention_book.harness.embedded_pg import (EmbeddedPostgres, EmbeddedPostgresError, claim_temporary,
                                                     sweep_killed)

    sweep_killed(PG_PREFIX)  # the clusters of a test session that was killed before its teardown
    root = Path(tempfile.mkdtemp(prefix=PG_PREFIX))
    os.chmod(root, 0o755)
    try:
        server = EmbeddedPostgres(root=root / "pg", password=KNOWN_PASSWORD)
        claim_temporary(server)
        server.start()
    except EmbeddedPostgresError as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"the embedded PostgreSQL could not start: {exc}")
    server.export(TEST_ENV_VAR)
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_target(pg):
    from contention_book.harness.targets import ensure_own_database, resolve_target

    target = resolve_target(TEST_ENV_VAR, "postgres")
    ensure_own_database(target, "contention_test", log=lambda *_: None)
    return target


def processes_with_env(key: str, value: str) -> list[str]:
    """'pid command' of every process whose environment holds key=value.

    Tests that look for leftover runs must see only their own: other test suites may run on the same machine
    at the same time, and a machine-wide pgrep would count (or kill) their runs too.
    """
    needle = f"{key}={value}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if needle in (proc / "environ").read_bytes().split(b"\0"):
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                found.append(f"{proc.name} {cmd}")
        except OSError:
            continue
    return found
