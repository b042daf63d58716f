"""harness.driver: open-loop sessions wake on schedule (timer slack), closed-loop ones are left as they are."""
from __future__ import annotations

import ctypes
import sys
import threading

import pytest

from contention_book.harness.driver import precise_sleeps, run_sessions


def _slack() -> int:
    """This thread's timer slack in ns (prctl PR_GET_TIMERSLACK)."""
    return ctypes.CDLL(None).prctl(30, 0, 0, 0, 0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="timer slack is a Linux setting")
def test_open_loop_sessions_sleep_with_a_microsecond_of_slack():
    seen: dict[str, int] = {}

    class Conn:
        def cursor(self):
            return None

        def close(self):
            pass

    def op(_cur, session, index):
        if index >= 0:
            seen[f"{'open' if rate else 'closed'}-{session}"] = _slack()

    for rate in (None, 2000.0):
        run_sessions(Conn, op, sessions=2, operations_per_session=5, duration_s=2, rate=rate, progress=False)
    assert seen["open-0"] == seen["open-1"] == 1000
    assert seen["closed-0"] == seen["closed-1"] != 1000  # the default (50 µs), untouched without a schedule
    other = {}
    t = threading.Thread(target=lambda: other.update(before=_slack()) or precise_sleeps() or other.update(after=_slack()))
    t.start()
    t.join()
    assert other["before"] != 1000 and other["after"] == 1000
