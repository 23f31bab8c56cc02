"""An attempt that worked, held open until the user accepts or rejects it.

A fix offered from the notebook's error output (``run.fixcell``) is tried before it is
offered: its attempt runs as a transaction, like every attempt.  The loop commits an
attempt that worked; here that commit is held back, so the offer can still be undone:
**accept** commits the attempt's state (the kernel keeps what the fix did, exactly once,
with no second run), **reject** rolls it back (the kernel as it was before the fix).
The executor underneath is any of ours (its ``commit``/``rollback`` or their ``a``
coroutines); everything else passes through.
"""

from __future__ import annotations

import inspect
from typing import Any

from jupyter_ai_ci.events import TransactionReport

NOT_HELD = TransactionReport(supported=False)


class HeldAttempt:
    """Wraps an executor: the last successful attempt's commit waits for ``accept``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.held = False  # an attempt worked and its transaction is still open
        self.decided = ""  # "accepted" or "rejected", once

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    # The loop's Commit: held back (the sync and async drivers both look these up).
    def commit(self) -> None:
        self.held = True
        if callable(hold := getattr(self.inner, "hold", None)):
            hold()  # the person's cells run while the offer waits: theirs, not the fix's

    async def acommit(self) -> None:
        self.held = True
        await self._call("hold")

    def _has(self, name: str) -> bool:
        return callable(getattr(self.inner, name, None)) or callable(getattr(self.inner, f"a{name}", None))

    async def _call(self, name: str) -> Any:
        method = getattr(self.inner, f"a{name}", None) or getattr(self.inner, name, None)
        if method is None:
            return None
        result = method()
        return await result if inspect.isawaitable(result) else result

    async def aaccept(self) -> None:
        """Keep the attempt's state: its transaction is committed; nothing runs again."""
        if self.held and not self.decided:
            self.decided = "accepted"
            await self._call("commit")

    async def areject(self) -> TransactionReport:
        """Undo the attempt: the names it changed are put back as they were before it."""
        if not self.held or self.decided:
            return NOT_HELD
        self.decided = "rejected"
        # Cells the user ran since the offer keep what they did: only the fix's names go back.
        report = await self._call("rollback_held" if self._has("rollback_held") else "rollback")
        return report if isinstance(report, TransactionReport) else NOT_HELD

    def accept(self) -> None:
        if self.held and not self.decided:
            self.decided = "accepted"
            self.inner.commit()

    def reject(self) -> TransactionReport:
        if not self.held or self.decided:
            return NOT_HELD
        self.decided = "rejected"
        report = self.inner.rollback_held() if self._has("rollback_held") else self.inner.rollback()
        return report if isinstance(report, TransactionReport) else NOT_HELD
