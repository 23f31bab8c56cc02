"""The command line's terminal: progress on stderr, and asking before flagged code runs.

``TerminalApprover`` is an async approver (``aapprove``): it waits for the
answer with the event loop's reader on stdin, so other notebooks of a
``--jobs`` run keep going while one waits.  With no terminal on stdin (CI, a
pipe, cron) nobody can answer, so it refuses at once -- never a wait nobody
can end.
"""

from __future__ import annotations

import asyncio
import os
from typing import TextIO

from jupyter_ai_ci.events import Approval, AskApproval, CallModel, Execute, ExecutionResult, Notice, PURPOSE_LABELS

NO_TTY = ("needs approval, but stdin is not a terminal, so nobody can be asked; pass --yes to approve, "
          "or set --policy auto / c.AICISettings.allow")
PICTURES_ALLOWED = "c.AICISettings.figures_to_hosted = 'yes' sends them"
SHOWN_LINES = 30  # of the code shown with the question; the model's text may have scrolled away


class TerminalReporter:
    """Progress on stderr: attempts and retries always, the model's text when on a TTY alone."""

    def __init__(self, label: str, stream: TextIO, show_text: bool, model: str = "model") -> None:
        self.label = label
        self.stream = stream
        self.show_text = show_text
        self.model = model  # named as the magic names it: "── gpt-4o-mini: fixing ──"

    def _say(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def model_started(self, call: CallModel) -> None:
        self._say(f"{self.label}── {self.model}: {PURPOSE_LABELS[call.purpose]} ──\n")

    def model_text(self, text: str) -> None:
        if self.show_text:
            self._say(text)

    def model_finished(self) -> None:
        if self.show_text:
            self._say("\n")

    def notice(self, notice: Notice) -> None:
        if notice.kind in ("refused", "no-code"):
            return  # the result line says it, once ("answered without code", or why it gave up)
        if notice.kind == "candidate-text":  # another choice of the last reply: where it would stream
            self._say(f"{self.label}── {self.model}: another candidate, from the same reply ──\n")
            if self.show_text:
                self._say(notice.text.rstrip("\n") + "\n")
            return
        mark = {"retrying": "✗", "attempt": "▶", "undone": "↺", "not-undoable": "!",
                "candidate": "◆"}.get(notice.kind, "·")
        self._say(f"{self.label}{mark} {notice.text}\n")

    def executing(self, action: Execute) -> None:
        pass

    def executed(self, action: Execute, result: ExecutionResult) -> None:
        for note in result.notes:
            self._say(f"{self.label}· {note}\n")


class TerminalApprover:
    """Asks ``Run this code? [y/N]`` on the terminal; one question at a time across notebooks."""

    def __init__(self, label: str, stream: TextIO, lock: asyncio.Lock, stdin: TextIO) -> None:
        self.label = label
        self.stream = stream
        self.lock = lock
        self.stdin = stdin

    async def aapprove(self, request: AskApproval) -> Approval:
        if not self.stdin.isatty():
            if request.kind == "pictures":
                return Approval(False, f"nobody can be asked (stdin is not a terminal); {PICTURES_ALLOWED}")
            if request.kind == "install":  # no policy installs unasked: "--policy auto" was no way out
                return Approval(False, NO_TTY.split("; ")[0] + f"; pass --yes to approve, or allow the "
                                f"package: --allow 'pip:{request.package}'")
            return Approval(False, NO_TTY)
        async with self.lock:
            self.stream.write(self._question(request))
            self.stream.flush()
            answer = await read_line(self.stdin)
        if answer is None:  # Ctrl-D: the result line goes on a line of its own
            self.stream.write("\n")
            self.stream.flush()
            return Approval(False, "stdin closed before an answer")
        if answer.strip().lower() in ("y", "yes"):
            return Approval(True, "approved", asked=True)
        return Approval(False, "rejected by the user", asked=True)

    def _question(self, request: AskApproval) -> str:
        if request.kind == "pictures":
            return f"{self.label}⚠ {request.reasons[0]}.\n{self.label}Send pictures there? [y/N] "
        if request.kind == "install":
            return f"{self.label}⚠ {request.reasons[0]}: {request.code[0]}\n{self.label}Install it? [y/N] "
        lines = [f"{self.label}⚠ attempt {request.attempt} needs approval:"]
        lines += [f"{self.label}   - {reason}" for reason in request.reasons]
        code = "\n".join(request.code).splitlines()
        lines += [f"{self.label}   ┆ {line}" for line in code[:SHOWN_LINES]]
        if len(code) > SHOWN_LINES:
            lines.append(f"{self.label}   ┆ … {len(code) - SHOWN_LINES} more lines")
        return "\n".join(lines) + f"\n{self.label}Run this code? [y/N] "


async def read_line(stdin: TextIO) -> str | None:
    """One line from a terminal without blocking the event loop; None at end of input."""
    loop = asyncio.get_running_loop()
    fd = stdin.fileno()
    got: asyncio.Future[bytes] = loop.create_future()

    def readable() -> None:
        # A terminal in canonical mode hands over a whole line at once.
        if not got.done():
            got.set_result(os.read(fd, 4096))

    try:
        loop.add_reader(fd, readable)
    except NotImplementedError:
        # Windows' proactor loop has no readers; a thread it is (it cannot be cancelled).
        text = await loop.run_in_executor(None, stdin.readline)
        return text or None
    try:
        data = await got
    finally:
        loop.remove_reader(fd)
    return data.decode(errors="replace") if data else None
