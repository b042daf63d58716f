"""A stop signal forwarded while the runner's Python is still loading: held until run.py decides, never a traceback.

The book forwards a terminal's Ctrl-C to the runner it started (harness.launch).  One that landed while the child
was importing ``signal`` itself reached Python's own SIGINT handler and printed a KeyboardInterrupt traceback from
inside the import (seen in a suite run: ``test_a_signal_in_the_first_seconds_of_make_chapter_leaves_nothing``).
"""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from contention_book.harness.launch import FORWARDED, held_for_the_child

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks only")

BLOCKED = "import signal; print(sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])))"


def test_a_child_started_inside_the_hold_starts_with_the_stop_signals_blocked_and_this_thread_gets_its_mask_back():
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with held_for_the_child():
        child = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True, timeout=60)
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    assert set(map(int, FORWARDED)) <= set(eval(child.stdout)), child.stdout  # noqa: S307 - our own list of ints
    outside = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True, timeout=60)
    assert not set(map(int, FORWARDED)) & set(eval(outside.stdout)), outside.stdout  # noqa: S307


@pytest.mark.parametrize("attempt", range(6))
def test_sigint_the_moment_the_runner_exists_ends_it_quietly(attempt):  # noqa: ARG001 - a race: tried six times
    """Sent before the child has loaded anything: pending until run.py sets the default action and releases it,
    so the run ends by SIGINT with nothing printed.  Without the hold most attempts print a traceback."""
    with held_for_the_child():
        child = subprocess.Popen([sys.executable, "-m", "contention_book.run", "--help"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)
    child.send_signal(signal.SIGINT)
    out, _ = child.communicate(timeout=60)
    assert "Traceback" not in out, out
    assert child.returncode == -signal.SIGINT, (child.returncode, out)
