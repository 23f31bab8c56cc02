"""The execution watchdog: one helper thread for every attempt, real SIGINTs to the main thread."""

from __future__ import annotations

import threading
import time

import pytest

from jupyter_ai_ci.executors.watchdog import Watchdog


def _watchdog_threads() -> int:
    return sum(t.name == "aici-watchdog" for t in threading.enumerate())


def test_a_short_timeout_after_a_long_one_still_fires_on_time() -> None:
    # The clock sleeps toward the long deadline; the short one must wake it.
    with Watchdog(600):
        pass
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), Watchdog(0.2) as dog:
        time.sleep(5)
    assert dog.fired and time.monotonic() - started < 2


def test_many_attempts_share_one_thread_and_none_fires_late() -> None:
    for _ in range(50):
        with Watchdog(0.05) as dog:
            pass
        assert not dog.fired
    time.sleep(0.15)  # past every deadline: a disarmed watchdog never kicks
    assert _watchdog_threads() == 1


def test_an_inner_watchdog_leaves_the_outer_one_armed() -> None:
    with pytest.raises(KeyboardInterrupt), Watchdog(0.3) as outer:
        with Watchdog(60) as inner:
            pass
        time.sleep(5)
    assert outer.fired and not inner.fired
