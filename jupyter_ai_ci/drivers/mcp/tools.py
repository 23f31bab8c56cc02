"""The tools: ``ask``, ``run``, ``context``, ``fix``, ``undo`` — each the one run, driven for an agent.

Each call names its notebook; the notebook's lock keeps calls from interleaving in its kernel.
What a call decides is the run's (``run/``): this module resolves the notebook, waits its turn,
drives, and shapes the result (``results.py``).  A problem is one line, as an error result.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from mcp.types import CallToolResult

from jupyter_ai_ci.context.privacy import mask_secrets
from jupyter_ai_ci.core.consensus import sureness
from jupyter_ai_ci.drivers.headless import held_result, make_run, open_notebook, run_in
from jupyter_ai_ci.drivers.mcp import results as r
from jupyter_ai_ci.drivers.mcp.fixing import Fixes
from jupyter_ai_ci.drivers.mcp.notebooks import Kept, Notebooks
from jupyter_ai_ci.drivers.mcp.progress import HOW_TO_ALLOW, ClientApprover, Progress
from jupyter_ai_ci.errors import AICIError
from jupyter_ai_ci.events import Outcome
from jupyter_ai_ci.notebook import comm
from jupyter_ai_ci.notebook.document import Node, cell_records, save_onto
from jupyter_ai_ci.notebook.placing import Live, Placed, place_cells
from jupyter_ai_ci.notebook.replay import ReplayStore
from jupyter_ai_ci.notebook.sinks import METADATA_KEY
from jupyter_ai_ci.run import undo as undoing
from jupyter_ai_ci.run.given import run_given
from jupyter_ai_ci.run.request import Options, Run
from jupyter_ai_ci.run.summary import summarize
from jupyter_ai_ci.safety import remote
from jupyter_ai_ci.tokens import count_tokens


def failure(exc: Exception) -> CallToolResult:
    line = f"✗ {exc}" if isinstance(exc, AICIError) else f"✗ failed unexpectedly ({type(exc).__name__}: {exc})"
    return r.tool_result(r.UndoResult(ok=False, line=line), error=True)


async def _undone_if_cancelled(work: Awaitable[CallToolResult]) -> CallToolResult:
    """``work`` in a task of its own, so that the client's cancel (or a disconnect) reaches it once:
    the SDK cancels the call's anyio scope, where every later await would be cancelled too and the
    rollback could never run.  The task gets one cancel, interrupts the kernel and rolls the
    attempt back (``adrive``); the call waits for that, shielded, before it ends."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        task.cancel()
        with anyio.CancelScope(shield=True), contextlib.suppress(BaseException):
            await task
        raise


def status(outcome: Outcome) -> str:
    if outcome.status in ("success", "answered"):
        return "done" if outcome.consensus is None or outcome.consensus.sure else "not sure"
    return "failed" if outcome.status == "failed" else "not answered"


class Tools:
    def __init__(self, notebooks: Notebooks, yes: bool = False, how_to_allow: str = HOW_TO_ALLOW) -> None:
        self.nbs = notebooks
        self.yes = yes  # the person's --yes (a server option), never the agent's
        self.how_to_allow = how_to_allow  # said when flagged code is refused: the transport's way
        self.fixes = Fixes(notebooks.session, yes, how_to_allow)

    async def _turn(self, notebook: str, ctx: Any, work: Callable[[Path, Kept, Progress], Awaitable[CallToolResult]],
                    fixing: bool = False) -> CallToolResult:
        """Resolve the notebook, wait for its turn (said), keep its kernel, run ``work`` (unless a
        fix waits there for a decision, and ``work`` is not ``fix``'s)."""
        try:
            path = self.nbs.path(notebook)
            progress = Progress(ctx)
            async with progress.running():
                lock = self.nbs.lock(path)
                if lock.locked():
                    progress.say(f"waiting: another call is running in {path.name}")
                async with lock:
                    if not fixing:
                        self.fixes.check_free(path)
                    return await _undone_if_cancelled(work(path, await self.nbs.kept(path), progress))
        except Exception as exc:  # noqa: BLE001 - every failure is one line to the agent
            return failure(exc)

    async def ask(self, request: str, notebook: str, ctx: Any, retries: int | None = None,
                  candidates: int | None = None, steps: int | None = None) -> CallToolResult:
        async def work(path: Path, kept: Kept, progress: Progress) -> CallToolResult:
            started = time.perf_counter()
            opened = open_notebook(path)
            options = Options(retries=retries, candidates=candidates, steps=steps, yes=self.yes)
            run = make_run(opened, self.nbs.session, request, options, progress, "mcp")
            if run.held_by:
                return r.tool_result(r.AskResult(status="done", line=f"✓ {held_result(path, run).message}"))
            run.check()
            request_id = kept.next_request()
            done = await run_in(opened, run, kept.executor, progress, ClientApprover(ctx, self.how_to_allow),
                                live=self._live(path, kept))
            outcome = done.outcome or Outcome("failed")
            seconds = time.perf_counter() - started
            facts = summarize(outcome, seconds, done.result.replayed if done.result else False)
            # A run that gave up says what to do next, as the command line's line does.
            line = facts.line() if outcome.status != "failed" else " · ".join([f"✗ {done.message}", *facts.figures()])
            if outcome.status == "success" and done.result is not None:
                line += await self._keep_undo(kept, request_id, undoing.request_meta(
                    run, outcome, done.cells, "mcp"))
            if done.live:
                line += f" · {done.live}"
            elif done.cells:
                line += await self._open_note(path)
            applied = outcome.cells
            others = [f"{g.shown} (candidate {', '.join(map(str, g.candidates))})"
                      for g in (outcome.consensus.groups[1:] if outcome.consensus else ())]
            result = r.AskResult(
                status=status(outcome), line=line, attempts=r.attempts(outcome),
                code="\n\n".join(c.code for c in applied),
                outputs="\n".join(r.text_of(c.result) for c in applied), answer=outcome.answer,
                candidates=[sureness(outcome.consensus), *others] if outcome.consensus else [],
                cells=list(done.cells), requests=outcome.requests, prompt_tokens=outcome.usage.prompt_tokens,
                completion_tokens=outcome.usage.completion_tokens, seconds=round(seconds, 3))
            mask = self._mask(run)
            return r.tool_result(r.masked(result, mask), r.images([c.result for c in applied]),
                                 error=outcome.status not in ("success", "answered"))
        return await self._turn(notebook, ctx, work)

    async def run(self, code: str, notebook: str, ctx: Any) -> CallToolResult:
        async def work(path: Path, kept: Kept, progress: Progress) -> CallToolResult:
            request_id = kept.next_request()
            given = await run_given(self.nbs.session, code, kept.executor, kept.kernel,
                                    ClientApprover(ctx, self.how_to_allow), progress, yes=self.yes)
            outcome = given.outcome
            attempt = outcome.attempts[-1] if outcome.attempts else None
            ran = attempt.results if attempt is not None else ()
            if outcome.status == "refused":
                result = r.RunCodeResult(status="refused", line=f"✗ {outcome.reason}")
            elif outcome.status == "failed" and attempt is not None:
                error = attempt.error
                undone = r.undone(attempt)
                why = error.one_line() if error else ""
                result = r.RunCodeResult(status="rolled back", line=f"✗ rolled back: {why} ({undone})",
                                         outputs="\n".join(r.text_of(x) for x in ran[:-1]),
                                         error=error.traceback if error else "", undone=undone)
            else:
                placed = await self._append(path, outcome, kept)
                cells = list(placed.ids)
                line = "✓ committed" + (f" · {placed.where}" if placed.live else "") + await self._keep_undo(
                    kept, request_id, {"request": f"run: {code.strip().splitlines()[0][:60]}", "thread": str(path),
                                       "key": "", "cells": cells, "codes": [code], "source": "mcp"}) + (
                    "" if placed.live else await self._open_note(path))
                result = r.RunCodeResult(status="committed", line=line, outputs="\n".join(r.text_of(x) for x in ran),
                                         cells=cells)
            masked = r.masked(result, given.masked)
            return r.tool_result(masked, r.images(ran), error=outcome.status != "success")
        return await self._turn(notebook, ctx, work)

    async def _append(self, path: Path, outcome: Outcome, kept: Kept) -> Placed:
        """The committed code as a cell of the notebook, marked as the agent's (not a model's)."""
        meta: dict[str, Any] = {"request": "(code run by an agent through MCP)", "source": "mcp", "model": "",
                                "agent_code": True}
        return await place_cells(open_notebook(path), outcome.cells, meta, kept.executor.execution_count,
                                 self._live(path, kept), heading=False)

    def _live(self, path: Path, kept: Kept) -> Live:
        """Cells into the page where the notebook is open, through its kernel's comm, when a browser
        is connected and our labextension announced itself on that kernel; else False (the file)."""
        async def send(cells: list[Node]) -> bool:
            return await self._to_page(path, kept, comm.expression("insert", cells=cells))
        return send

    async def _to_page(self, path: Path, kept: Kept, expression: str) -> bool:
        if not await self._open_elsewhere(path):
            return False
        answer = remote.parse_json(await kept.executor.evaluate(expression))
        return bool(answer and answer.get("sent") is True)

    async def context(self, notebook: str, ctx: Any, request: str = "") -> CallToolResult:
        async def work(path: Path, kept: Kept, progress: Progress) -> CallToolResult:
            opened = open_notebook(path)
            run = make_run(opened, self.nbs.session, request or "(the request)", Options(), None, "mcp")
            found = await kept.kernel.asnapshot(replace(run.query(), notebook=tuple(cell_records(opened.nb))))
            messages, stopped = run.preview(found)
            text = "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)
            tokens = count_tokens(text)
            line = f"· context of {path.name}: {tokens} tokens" + (f" ({stopped})" if stopped else "")
            return r.tool_result(r.ContextResult(line=line, context=text, tokens=tokens))
        return await self._turn(notebook, ctx, work)

    async def undo(self, notebook: str, ctx: Any, n: int = 1) -> CallToolResult:
        async def work(path: Path, kept: Kept, progress: Progress) -> CallToolResult:
            s = self.nbs.settings
            value = await kept.executor.evaluate(remote.expression("undo", n=max(1, n),
                                                                   limits=kept.executor.transactions.undo))
            store = ReplayStore(path.parent / s.replay_file) if s.replay else None
            done = undoing.finish(remote.parse_json(value) or {}, self.nbs.session, store)
            live = done.ok and bool(done.cells) and await self._to_page(
                path, kept, comm.expression("delete", ids=list(done.cells)))
            if done.ok and done.cells and not live:  # in the page, they leave it; its save writes the file
                gone = set(done.cells)

                def drop(nb: Node) -> None:
                    nb.cells = [c for c in nb.cells if not (str(c.get("id", "")) in gone
                                                            and METADATA_KEY in c.get("metadata", {}))]
                save_onto(open_notebook(path), drop)
            line = done.line + (await self._open_note(path) if done.ok and done.cells and not live else "")
            return r.tool_result(r.UndoResult(ok=done.ok, line=line, cells=done.cells), error=not done.ok)
        return await self._turn(notebook, ctx, work)

    async def fix(self, notebook: str, ctx: Any, cell: str = "", decision: str | None = None) -> CallToolResult:
        async def work(path: Path, kept: Kept, progress: Progress) -> CallToolResult:
            if decision is not None:
                return await self.fixes.decide(path, decision)
            return await self.fixes.offer(path, kept, progress, ctx, cell)
        return await self._turn(notebook, ctx, work, fixing=True)

    async def _open_note(self, path: Path) -> str:
        """Said when the file just written is open in a browser: its copy there does not have the
        change, and saving that copy would write over it (JupyterLab asks first, but it asks)."""
        if not await self._open_elsewhere(path):
            return ""
        return (f" · {path.name} is open in a browser: its cells there are not the file's; reload it from "
                "disk there (File > Reload Notebook from Disk) before saving it")

    async def _open_elsewhere(self, path: Path) -> bool:
        try:
            return await self.nbs.kernels.open_elsewhere(path)
        except Exception:  # noqa: BLE001 - not knowing is not a failed call
            return False

    async def _keep_undo(self, kept: Kept, request_id: str, meta: dict[str, Any]) -> str:
        """Hand the request's way back to the kernel's undo stack; "" or why none was kept."""
        try:
            answer = remote.parse_json(await kept.executor.evaluate(remote.expression(
                "note", request=request_id, limits=kept.executor.transactions.undo, meta=meta)))
        except Exception:  # noqa: BLE001 - a kernel that cannot answer keeps no way back
            return " · undo not kept"
        if answer is None or answer.get("kept") is not True:
            note = answer.get("note") if answer else ""
            return f" · {note}" if isinstance(note, str) and note else " · undo not kept"
        return ""

    @staticmethod
    def _mask(run: Run) -> Callable[[str], str]:
        # run.secrets: every secret the run was told of, this process's environment included.
        return lambda text: mask_secrets(text, run.secrets)
