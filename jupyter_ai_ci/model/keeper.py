"""The keeper: the small parent of a shared llama.cpp server, which stops it when nobody uses it.

``python -m jupyter_ai_ci.model.keeper --model PATH --idle SECONDS --log FILE --starter PID -- COMMAND...``

The server is shared by every kernel of a person (runtime.py), so it must not die with the one
that started it, and nobody else may be left to stop it.  Why a parent process of our own:

- the client that starts it launches the keeper in a session of its own and the keeper forks
  once more (its first process exits), so no kernel is its parent: killing a kernel, or its
  process group, leaves it alone;
- the server dies with its keeper (PR_SET_PDEATHSIG), so a killed keeper leaves no orphan
  holding gigabytes;
- it reads the idle clock from the locks every client holds anyway (runtime.py): no proxy in
  front of the server, no heartbeat a killed kernel could leave stuck, no timer in each client.
  Once the runtime file names its server, it stops the server when nobody has held the busy lock
  for ``--idle`` seconds (with ``--idle 0``: once no process that used the server is left),
  taking the busy lock exclusive first, so a request never starts under a stop.  Before, the
  server is its starter's, and goes if the starter dies.

It prints ``{"keeper": PID, "server": PID}`` on its stdout once the server is launched; the
client proves the server is its own (local_auth.py) and writes the runtime file.  On its way out
it removes the runtime file (if it still names its server) and the server's log.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from jupyter_ai_ci.model import ended, runtime

STOP_GRACE = 5.0  # seconds a server may take to exit on SIGTERM before it is killed
POLL = 0.5  # seconds between looks at the locks: well under any idle timeout, a few syscalls each


def _die_with_parent() -> None:
    # Linux: the server is killed when the keeper dies, even by SIGKILL.  SIGKILL, not SIGTERM: on
    # SIGTERM the server finishes the generation in flight first (review #38, item 6).
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class Keeper:
    def __init__(self, model: Path, idle: float, log: Path, starter: int, command: list[str]) -> None:
        self.model, self.idle, self.log, self.starter = model, idle, log, starter
        self.server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr,
                                       preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        self.busy = runtime._open_lock(model, "busy")
        self.users = runtime._open_lock(model, "users")
        self.last_busy = time.time()
        self.stopping = False
        self.shared = False  # the runtime file has named its server

    def idle_enough(self) -> bool:
        """Called holding the busy lock: nobody is asking now; has nobody asked for long enough?"""
        if not runtime.names(self.model, self.server.pid):
            # Its file was replaced (refused, or its proof failed): nobody can find it any more.
            # Not shared yet (or never: a test's, a benchmark's own): its starter's until then, and
            # stopped if the starter died before writing the runtime file (a kernel killed mid-start).
            return self.shared or not runtime.running(self.starter)
        if self.idle <= 0:
            return runtime.exclusive_now(self.users)
        with contextlib.suppress(OSError):
            self.last_busy = max(self.last_busy, os.stat(self.busy).st_mtime)  # a request's end
        return time.time() - self.last_busy >= self.idle

    def watch(self) -> None:
        while self.server.poll() is None and not self.stopping:
            time.sleep(POLL)
            # Seen even while requests keep the busy lock (a client starting the next server holds it).
            self.shared = self.shared or runtime.names(self.model, self.server.pid)
            if not runtime.exclusive_now(self.busy):
                self.last_busy = time.time()
                continue
            if self.idle_enough():
                break  # holding the busy lock: no request begins while the server stops
            runtime.release(self.busy)
        # How it ended, for the client whose request it dropped (ended.py): written before the stop,
        # which may wait for the start lock, while that client waits for it.
        on_its_own = self.server.poll() is not None and not self.stopping
        if on_its_own and self.server.returncode:
            ended.record(self.model, self.server.pid, self.server.returncode)
        self.stop()
        code = self.server.returncode
        if not on_its_own and code and -code not in (signal.SIGTERM, signal.SIGKILL):  # a crash under way
            ended.record(self.model, self.server.pid, code)

    def stop(self) -> None:
        registered = runtime.names(self.model, self.server.pid)
        if registered:
            # Under the start lock, so that a file a client just wrote for a new server stays.
            fd = runtime.try_start_lock(self.model, wait=5.0)
            try:
                if runtime.names(self.model, self.server.pid):
                    runtime.file_for(self.model).unlink(missing_ok=True)
            finally:
                if fd is not None:
                    os.close(fd)
        if self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()
        if registered:
            # Its prompts' traces stay nowhere.  A server that never got its runtime file failed to
            # start: the client reads why in the log, then removes it.
            self.log.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jupyter_ai_ci.model.keeper")
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--idle", type=float, default=0.0)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--starter", type=int, required=True, help="the process that started it")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if os.fork():  # no kernel is the keeper's parent (the client waits for this one's exit)
        os._exit(0)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    keeper = Keeper(args.model, args.idle, args.log, args.starter, command)
    print(json.dumps({"keeper": os.getpid(), "server": keeper.server.pid}), flush=True)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the client stops reading: nothing more goes there

    def on_term(signum: int, frame: object) -> None:
        keeper.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C in the terminal that started it is not for it
    keeper.watch()


if __name__ == "__main__":
    main()
