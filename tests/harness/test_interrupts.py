"""harness.interrupts: a stop signal whose first raise Python dropped still stops the run where it waits."""
from __future__ import annotations

import signal
import time

import pytest

from contention_book.harness import interrupts, native


def test_a_dropped_stop_signal_stops_a_native_program_within_a_second():
    """The fault tests once lost a SIGINT that landed while subprocess.Popen forked (an at-fork callback printed
    and dropped the handler's exception) and the run went on.  The handler's record of it stops the wait."""
    interrupts.arrived(signal.SIGINT)  # as the handler leaves it, its own raise lost
    try:
        started = time.monotonic()
        with pytest.raises(interrupts.RunInterrupted, match="SIGINT"):
            native.run("latch_convoy", ["--duration-ms", "30000"])
        assert time.monotonic() - started < 15  # includes building the program the first time
    finally:
        interrupts.clear()


def test_nothing_pending_raises_nothing():
    interrupts.clear()
    interrupts.raise_if_pending()
