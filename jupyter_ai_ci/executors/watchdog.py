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


class Watchdog:
    def __init__(self, seconds: float, grace: float = 1.0) -> None:
        self.seconds = seconds
        self.grace = grace
        self.fired = False
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._target = threading.main_thread().ident

    @property
    def active(self) -> bool:
        # Signals reach only the main thread, and need a Python-level handler.
        return (self.seconds > 0 and hasattr(signal, "pthread_kill")
                and threading.current_thread() is threading.main_thread()
                and callable(signal.getsignal(signal.SIGINT)))

    def __enter__(self) -> Watchdog:  # noqa: PYI034
        if self.active:
            self._thread = threading.Thread(target=self._run, name="aici-watchdog", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        if self._done.wait(self.seconds):
            return
        for kick in range(KICKS):
            with self._lock:
                if self._done.is_set():
                    return
                self.fired = True
                if kick and self._target is not None:
                    _raise_in(self._target, AttemptTimeout)
                signal.pthread_kill(self._target, signal.SIGINT)  # type: ignore[arg-type]
            if self._done.wait(self.grace):
                return

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._done.set()
        if self.fired:
            # A signal sent just before ``_done`` was set may still be pending:
            # let it land here rather than in the caller's next line.
            try:
                time.sleep(0.02)
            except (KeyboardInterrupt, AttemptTimeout):
                pass
