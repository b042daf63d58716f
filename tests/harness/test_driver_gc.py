"""harness.driver: no garbage collection inside the measured window; the collector as it was afterwards."""
from __future__ import annotations

import gc
import time

import pytest

from contention_book.harness.driver import SessionsFailed, run_sessions


class _Conn:
    def cursor(self):
        return None

    def close(self):
        pass


def test_the_collector_is_off_in_the_window_and_back_after_it():
    seen = {"warm-up": set(), "window": set()}
    collected, window = [], []

    def op(_cur, _session, index):
        seen["window" if index >= 0 else "warm-up"].add(gc.isenabled())
        if index >= 0:
            window.append(time.perf_counter_ns())
            a: list = []
            a.append(a)  # a cycle: garbage only a collection finds

    def count(phase, _info):
        if phase == "start":
            collected.append(time.perf_counter_ns())

    assert gc.isenabled()
    gc.callbacks.append(count)
    try:
        run_sessions(_Conn, op, sessions=2, operations_per_session=5000, warmup_operations=3, duration_s=5,
                     progress=False)
    finally:
        gc.callbacks.remove(count)
    assert seen == {"warm-up": {True}, "window": {False}}
    assert len(window) == 10_000
    assert [t for t in collected if min(window) <= t <= max(window)] == []  # 10,000 cycles, and no collection
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.collect()


def test_the_collector_stays_off_when_it_was_off_and_comes_back_after_a_failed_run():
    gc.disable()
    try:
        run_sessions(_Conn, lambda *_: None, sessions=1, operations_per_session=10, progress=False)
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()

    def on_ready():
        raise KeyboardInterrupt  # Ctrl-C between warm-up and the window

    with pytest.raises(KeyboardInterrupt):
        run_sessions(_Conn, lambda *_: None, sessions=1, operations_per_session=10, progress=False,
                     on_ready=on_ready)
    assert gc.isenabled() and gc.get_freeze_count() == 0

    def broken(*_):
        raise RuntimeError("no")

    with pytest.raises(SessionsFailed):
        run_sessions(_Conn, broken, sessions=1, operations_per_session=10, progress=False)
    assert gc.isenabled() and gc.get_freeze_count() == 0
