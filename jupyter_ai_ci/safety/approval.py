"""Asking a person before flagged code runs, from inside a running cell.

While a cell runs the kernel does not process widget events, so Approve /
Reject buttons would need polling for UI events.  ``input()`` over the
kernel's stdin channel needs none of that and works in JupyterLab, Notebook,
VS Code and the terminal.  When the frontend has no stdin (a headless run
with nbclient, ``allow_stdin=False``) or stdin is closed, the answer is an
immediate refusal: never a wait nobody can answer.
"""

from __future__ import annotations

import asyncio
import sys
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from jupyter_ai_ci.events import Approval, AskApproval

_NOBODY = "needs approval, but nobody can be asked here (this frontend has no stdin)"
NO_STDIN = f"{_NOBODY}; use --yes, the allow list, or %config AskMagics.policy = 'auto'"


def nobody_to_ask(request: AskApproval) -> str:
    """NO_STDIN, for an install in words that help: no policy runs an install unasked, so
    "set the policy to 'auto'" was no way out (found by a newcomer who had)."""
    if request.kind == "pictures":
        return "nobody can be asked here; %config AskMagics.figures_to_hosted = 'yes' sends them"
    if request.kind != "install":
        return NO_STDIN
    return f"{_NOBODY}; use --yes, or allow the package: %config AskMagics.allow = ['pip:{request.package}']"


NOBODY_FOR_REVIEW = "nobody can be asked here"


class GrantAll:
    """``--yes``: the user approved up front what the policy would ask about -- but not code
    from a replay record their key did not sign (``request.review``).  A notebook someone sent
    can carry ``%%ask --yes`` in its own cell, so that flag vouches for nothing it did not
    write: such code goes to ``asker``, a person, or is not run.  The command line's ``--yes``
    follows the same rule (docs/safety.md): a folder cloned for CI is someone else's too."""

    def __init__(self, asker: Any = None) -> None:
        self.asker = asker

    def approve(self, request: AskApproval) -> Approval:
        # Nor a figure's picture to a hosted endpoint: --yes is about code; a picture cannot be
        # masked, and a notebook someone sent could say --yes for you.
        if not request.person_only:
            return Approval(True, "--yes")
        approve = getattr(self.asker, "approve", None)
        if approve is not None:
            return approve(request)  # type: ignore[no-any-return]
        return Approval(False, nobody_to_ask(request) if request.kind == "pictures" else NOBODY_FOR_REVIEW)

    async def aapprove(self, request: AskApproval) -> Approval:
        aapprove = getattr(self.asker, "aapprove", None)
        if request.person_only and aapprove is not None:
            return await aapprove(request)  # type: ignore[no-any-return]
        return self.approve(request)


class Memo(Protocol):
    """What a person answered before (``model.vision.Answers``: pictures to an endpoint)."""

    def recall(self, request: AskApproval) -> Approval | None: ...

    def heard(self, request: AskApproval, approval: Approval) -> None: ...


# One question about pictures at a time per event loop: two runs at once (the panel's tabs, the
# command line's --jobs) would both ask, and the second answer overwrite the first.
_asking: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


class Vouched:
    """The run's approver, remembering whether a person approved code that needed review:
    only then may the replay record it came from be signed with this user's key (a record
    served, or approved by nobody, stays unverified).  ``memo`` answers what was answered
    before (pictures to a hosted endpoint are asked about once) and keeps new answers."""

    def __init__(self, inner: Any, memo: Memo | None = None) -> None:
        self.inner = inner
        self.memo = memo
        self.vouched = False

    def _note(self, request: AskApproval, approval: Approval) -> Approval:
        self.vouched |= bool(request.review) and approval.granted
        if self.memo is not None:
            self.memo.heard(request, approval)
        return approval

    def approve(self, request: AskApproval) -> Approval:
        known = self.memo.recall(request) if self.memo is not None else None
        return known if known is not None else self._note(request, self.inner.approve(request))

    async def aapprove(self, request: AskApproval) -> Approval:
        if self.memo is None or request.kind != "pictures":
            return await self._aask(request)
        lock = _asking.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:  # asked by another run meanwhile: its answer stands
            known = self.memo.recall(request)
            return known if known is not None else await self._aask(request)

    async def _aask(self, request: AskApproval) -> Approval:
        aapprove = getattr(self.inner, "aapprove", None)
        approval = await aapprove(request) if aapprove is not None else self.inner.approve(request)
        return self._note(request, approval)


class StdinApprover:
    def __init__(self, shell: Any, say: Callable[[str], None]) -> None:
        self.shell = shell
        self.say = say

    def can_ask(self) -> bool:
        kernel = getattr(self.shell, "kernel", None)
        if kernel is not None:  # a kernel asks its frontend (input_request), if it allows stdin
            return bool(getattr(kernel, "_allow_stdin", True))
        # The terminal IPython reads our question from its own stdin: piped in (a script fed to
        # ``ipython``), the answer would be the script's next line, which then never runs.
        stdin = getattr(sys, "stdin", None)
        try:
            return stdin is not None and stdin.isatty()
        except (AttributeError, ValueError, OSError):  # a closed or replaced stdin: nobody to ask
            return False

    def _ask(self, prompt: str) -> str:
        """The person's answer: a kernel asks its frontend itself, the terminal reads its stdin.
        Never through ``builtins.input``, which the code being asked about could have replaced
        with ``lambda *a: 'y'`` (ipykernel binds it to the same ``raw_input`` for each cell)."""
        kernel = getattr(self.shell, "kernel", None)
        raw_input = getattr(kernel, "raw_input", None)
        return str(raw_input(prompt)) if callable(raw_input) else input(prompt)  # ours (pristine.py)

    def approve(self, request: AskApproval) -> Approval:
        if not self.can_ask():
            return Approval(False, nobody_to_ask(request))
        if request.kind == "install":
            self.say(f"⚠ {request.reasons[0]}: {request.code[0]}\n")
            prompt = "Install it? [y/N] "
        elif request.kind == "pictures":
            self.say(f"⚠ {request.reasons[0]}.\n")
            prompt = "Send pictures there? [y/N] "
        else:
            self.say(f"⚠ attempt {request.attempt} needs approval:\n")
            for reason in request.reasons:
                self.say(f"   - {reason}\n")
            prompt = "Run this code? [y/N] "
        try:
            answer = self._ask(prompt)
        except (EOFError, OSError, RuntimeError) as exc:
            # ipykernel raises StdinNotImplementedError (a RuntimeError) without stdin.
            if isinstance(exc, EOFError):  # Ctrl-D at the prompt: the refusal goes on a line of its own
                self.say("\n")
                return Approval(False, "rejected by the user (end of input)")
            return Approval(False, f"{nobody_to_ask(request)} ({type(exc).__name__})")
        if answer.strip().lower() in ("y", "yes"):
            return Approval(True, "approved", asked=True)
        return Approval(False, "rejected by the user", asked=True)
