"""A real kernel for tests: start it with an environment, run a cell, collect
what a frontend would see.  Every wait has a timeout; nothing here can hang."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CellRun:
    status: str = ""
    stdout: str = ""
    stderr: str = ""
    ename: str = ""
    evalue: str = ""
    traceback: list[str] = field(default_factory=list)
    payloads: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[str] = field(default_factory=list)  # input() prompts the kernel sent
    seconds: float = 0.0
    # The text/plain of each display with an id, as its last update left it (%%ask's progress).
    displays: dict[str, str] = field(default_factory=dict)

    @property
    def shown_error(self) -> str:
        return "\n".join(self.traceback)

    @property
    def shown(self) -> str:
        """What a text/plain reader sees: the printed text, then each updated display's text."""
        return "\n".join([self.stdout, *self.displays.values()])


class KernelSession:
    """``start_new_kernel`` with ``env`` added to this process's environment."""

    def __init__(self, env: dict[str, str] | None = None, cwd: str | None = None,
                 startup_timeout: float = 60) -> None:
        from jupyter_client.manager import start_new_kernel

        self.km, self.kc = start_new_kernel(
            kernel_name="python3", env={**os.environ, **(env or {})}, cwd=cwd,
            startup_timeout=startup_timeout,
        )

    def run(self, code: str, timeout: float = 60, answers: list[str] | None = None,
            allow_stdin: bool = False, during: Callable[[float], None] | None = None,
            into: CellRun | None = None) -> CellRun:
        """Run ``code``; ``answers`` answer input() prompts in order (``allow_stdin``
        is then on); ``during(elapsed)`` is called on every output message, and
        ``into`` is filled as messages arrive (so ``during`` can look at it)."""
        run = into if into is not None else CellRun()
        replies = list(answers or [])

        def output(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                if content["name"] == "stdout":
                    run.stdout += content["text"]
                else:
                    run.stderr += content["text"]
            elif kind in ("display_data", "update_display_data"):
                display_id = (content.get("transient") or {}).get("display_id")
                if display_id:
                    run.displays[display_id] = str(content["data"].get("text/plain", ""))
            elif kind == "error":
                run.ename, run.evalue = content["ename"], content["evalue"]
                run.traceback = list(content["traceback"])
            if during is not None:
                during(time.perf_counter() - started)

        def stdin(msg: dict[str, Any]) -> None:
            run.prompts.append(msg["content"]["prompt"])
            self.kc.input(replies.pop(0) if replies else "")

        started = time.perf_counter()
        for _ in range(20):
            reply = self.kc.execute_interactive(
                code, timeout=timeout, output_hook=output, allow_stdin=allow_stdin or bool(answers),
                stdin_hook=stdin,
            )
            # ipykernel 6 aborts requests that arrive while it still aborts its queue after a
            # failed cell (stop_on_error): an aborted cell never ran, so it is sent again.  On a
            # loaded machine the %config that undid a test's budget came back aborted, and the
            # budget failed the next tests (the oldest CI run, session 15).
            if reply["content"]["status"] != "aborted":
                break
            time.sleep(0.1)
        run.seconds = time.perf_counter() - started
        run.status = reply["content"]["status"]
        run.payloads = list(reply["content"].get("payload", []))
        if run.status == "error" and not run.ename:
            run.ename, run.evalue = reply["content"]["ename"], reply["content"]["evalue"]
        return run

    def expressions(self, expressions: dict[str, str], timeout: float = 30,
                    silent: bool = False) -> dict[str, Any]:
        """The kernel's ``user_expressions`` answers to ``expressions`` (an empty execute)."""
        for _ in range(20):
            reply = self.kc.execute_interactive("", timeout=timeout, silent=silent,
                                                user_expressions=expressions)
            # ipykernel 6 aborts requests that arrive while it is still aborting the queue
            # after a failed cell (stop_on_error): ask again, it is over in moments.
            if reply["content"]["status"] != "aborted":
                break
            time.sleep(0.1)
        return dict(reply["content"]["user_expressions"])

    def value(self, expression: str, timeout: float = 30) -> str:
        """The repr of ``expression`` in the kernel, via user_expressions."""
        result = self.expressions({"v": expression}, timeout)["v"]
        if result["status"] != "ok":
            return f"<{result['ename']}: {result['evalue']}>"
        return str(result["data"]["text/plain"])

    def alive(self) -> bool:
        return bool(self.km.is_alive())

    def interrupt(self) -> None:
        self.km.interrupt_kernel()

    def run_interrupted(self, code: str, when: Callable[[CellRun], bool], after: float,
                        timeout: float = 60) -> tuple[CellRun, bool]:
        """Run ``code`` and interrupt the kernel ``after`` seconds once ``when(what has arrived)``
        holds, as a person pressing Stop at that moment; also says whether it was pressed."""
        timers: list[threading.Timer] = []

        def during(elapsed: float) -> None:
            if not timers and when(seen):
                timers.append(threading.Timer(after, self.interrupt))
                timers[0].start()

        seen = CellRun()
        try:
            return self.run(code, during=during, timeout=timeout, into=seen), bool(timers)
        finally:
            for timer in timers:
                timer.cancel()

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
