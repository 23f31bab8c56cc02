"""Who the magic's approver may ask: found by hand, a script piped into ``ipython`` answered
"Run this code? [y/N]" with its own next line (which then never ran)."""

from __future__ import annotations

import io
import sys
from types import SimpleNamespace

import pytest

from jupyter_ai_ci.events import AskApproval
from jupyter_ai_ci.safety.approval import NO_STDIN, StdinApprover


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_shell_asks_only_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    shell = SimpleNamespace()  # the terminal IPython: no kernel
    monkeypatch.setattr(sys, "stdin", io.StringIO("y\nprint('the next line of the script')\n"))
    said: list[str] = []
    approver = StdinApprover(shell, said.append)
    decision = approver.approve(AskApproval(("import os\nos.remove('x')",), ("deletes a file",), attempt=1))
    assert not decision.granted and decision.why == NO_STDIN
    assert sys.stdin.readline() == "y\n"  # nothing was read from the script
    monkeypatch.setattr(sys, "stdin", _Terminal())
    assert approver.can_ask()


def test_a_kernel_asks_its_frontend_when_it_allows_stdin() -> None:
    assert StdinApprover(SimpleNamespace(kernel=SimpleNamespace(_allow_stdin=True)), print).can_ask()
    assert not StdinApprover(SimpleNamespace(kernel=SimpleNamespace(_allow_stdin=False)), print).can_ask()


def test_end_of_input_at_the_terminal_refuses_on_a_line_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # Found by hand: Ctrl-D left "Run this code? [y/N] PolicyRefused: …" on one line.
    monkeypatch.setattr(sys, "stdin", _Terminal(""))  # input() at a terminal: EOFError on Ctrl-D
    said: list[str] = []
    decision = StdinApprover(SimpleNamespace(), said.append).approve(
        AskApproval(("import os\nos.remove('x')",), ("deletes a file",), attempt=1))
    assert not decision.granted and decision.why == "rejected by the user (end of input)"
    assert said[-1] == "\n"
