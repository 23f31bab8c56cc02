"""Interrupt code that runs past its time, and keep the kernel.

The magic runs in the kernel's main thread, so a helper thread sends SIGINT
to that thread (``signal.pthread_kill``): unlike ``_thread.interrupt_main``
it also wakes a blocking ``time.sleep`` or socket read.  The resulting
KeyboardInterrupt is told apart from the user's by ``fired``.  Code that
swallows KeyboardInterrupt gets, every ``grace`` seconds after, an
``AttemptTimeout`` (a BaseException, so ``except Exception`` and ``except
KeyboardInterrupt`` let it through) raised asynchronously in the main thread,
plus another SIGINT to wake it from a blocking call.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time

KICKS = 20


class AttemptTimeout(BaseException):
    """Raised into code that ignored the first interrupt."""


def _raise_in(thread_id: int, exc: type[BaseException]) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))


class _Clock:
    """One helper thread for every watchdog in the process, started once.

    Starting a thread per attempt cost more than running a small cell (the
    main thread waits for the new one to get the GIL).  Arming writes a
    deadline and wakes the thread only when it sleeps past it; disarming wakes
    nothing: the thread finds out at the deadline it slept to.  Kicks happen
    under the lock that disarming takes, so none lands after ``__exit__``."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: list[Watchdog] = []
        self._wake_at = float("inf")  # when the thread wakes next (inf: when told)
        self._thread: threading.Thread | None = None

    def arm(self, dog: Watchdog) -> None:
        with self._cond:
            self._armed.append(dog)
            if self._thread is None or not self._thread.is_alive():  # first use, or after a fork
                self._thread = threading.Thread(target=self._run, name="aici-watchdog", daemon=True)
                self._thread.start()
            elif dog.deadline < self._wake_at:
                self._cond.notify()

    def disarm(self, dog: Watchdog) -> None:
        with self._cond:
            if dog in self._armed:
                self._armed.remove(dog)

    def _run(self) -> None:
        with self._cond:
            while True:
                if not self._armed:
                    self._wake_at = float("inf")
                    self._cond.wait()
                    continue
                dog = min(self._armed, key=lambda d: d.deadline)
                left = dog.deadline - time.monotonic()
                if left > 0:
                    self._wake_at = dog.deadline
                    self._cond.wait(left)
                    continue
                dog.kick()
                if dog.kicks >= KICKS:
                    self._armed.remove(dog)


_CLOCK = _Clock()


class Watchdog:
    def __init__(self, seconds: float, grace: float = 1.0) -> None:
        self.seconds = seconds
        self.grace = grace
        self.fired = False
        self.kicks = 0
        self.deadline = float("inf")
        self._armed = False
        self._target = threading.main_thread().ident

    @property
    def active(self) -> bool:
        # Signals reach only the main thread, and need a Python-level handler.
        return (self.seconds > 0 and hasattr(signal, "pthread_kill")
                and threading.current_thread() is threading.main_thread()
                and callable(signal.getsignal(signal.SIGINT)))

    def __enter__(self) -> Watchdog:  # noqa: PYI034
        if self.active:
            self.deadline = time.monotonic() + self.seconds
            self._armed = True
            _CLOCK.arm(self)
        return self

    def kick(self) -> None:
        """Interrupt the main thread (the clock's thread calls this, holding its lock)."""
        self.fired = True
        if self.kicks and self._target is not None:
            _raise_in(self._target, AttemptTimeout)
        signal.pthread_kill(self._target, signal.SIGINT)  # type: ignore[arg-type]
        self.kicks += 1
        self.deadline = time.monotonic() + self.grace

    def __exit__(self, *exc: object) -> None:
        if self._armed:
            _CLOCK.disarm(self)
        if self.fired:
            # A signal sent just before the watchdog was disarmed may still be pending:
            # let it land here rather than in the caller's next line.
            try:
                time.sleep(0.02)
            except (KeyboardInterrupt, AttemptTimeout):
                pass
