"""FrontendExecutor in memory: the messages it sends the panel, and the
results it builds from the panel's answers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from jupyter_ai_ci.errors import ExecutionAborted
from jupyter_ai_ci.events import Execute
from jupyter_ai_ci.executors.frontend import FrontendExecutor, result_from_reply

TRACEBACK = [
    "\x1b[0;31m------------------------------------------------------------\x1b[0m",
    "\x1b[0;31mNameError\x1b[0m    Traceback (most recent call last)",
    "Cell \x1b[0;32mIn[4], line 3\x1b[0m\n      1 def f():\n      2     return missing\n----> 3 f()",
    "Cell \x1b[0;32mIn[4], line 2\x1b[0m, in f()\n----> 2     return missing",
    "\x1b[0;31mNameError\x1b[0m: name 'missing' is not defined",
]


def test_result_from_outputs() -> None:
    result = result_from_reply({"status": "ok", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": ["a\n", "b\n"]},
        {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}},
        {"output_type": "execute_result", "data": {"text/plain": "42"}, "execution_count": 3},
    ]}, 4000)
    assert result.ok
    assert result.output == "a\nb\n"
    assert result.result == "42"
    assert result.displays == ("image/png <Figure>",)
    assert len(result.outputs) == 3


def test_error_output_becomes_error_info_without_ansi() -> None:
    result = result_from_reply({"status": "error", "outputs": [
        {"output_type": "stream", "name": "stdout", "text": "before\n"},
        {"output_type": "error", "ename": "NameError", "evalue": "name 'missing' is not defined",
         "traceback": TRACEBACK},
    ]}, 4000)
    assert result.error is not None
    assert result.error.one_line() == "NameError: name 'missing' is not defined (line 2)"
    assert "\x1b" not in result.error.traceback and "----> 3 f()" in result.error.traceback
    assert result.output == "before\n"


def test_long_output_is_cut_head_and_tail() -> None:
    result = result_from_reply({"outputs": [{"output_type": "stream", "name": "stdout",
                                             "text": "x" * 10_000 + "END"}]}, 500)
    assert len(result.output) <= 500 and result.output.endswith("END") and "characters cut" in result.output


class Panel:
    """Plays the browser: answers each execute request with the next canned reply."""

    def __init__(self, executor_replies: list[dict[str, Any]]) -> None:
        self.sent: list[dict[str, Any]] = []
        self.replies = executor_replies
        self.executor: FrontendExecutor | None = None

    def send(self, msg: dict[str, Any]) -> None:
        self.sent.append(msg)
        reply = {"id": msg["id"], **self.replies.pop(0)}
        assert self.executor is not None
        asyncio.get_running_loop().call_soon(self.executor.resolve, reply)


def ok(cell: str) -> dict[str, Any]:
    return {"status": "ok", "cell_id": cell, "outputs": []}


def error(cell: str) -> dict[str, Any]:
    return {"status": "error", "cell_id": cell, "outputs": [
        {"output_type": "error", "ename": "ValueError", "evalue": "bad", "traceback": []}]}


async def run(panel: Panel, executor: FrontendExecutor, plan: list[Execute]) -> list[bool]:
    results = []
    for action in plan:
        executor.begin(action)
        results.append((await executor.aexecute(action.code)).ok)
    return results


def test_a_fix_replaces_the_cells_of_the_failed_attempt() -> None:
    panel = Panel([ok("c1"), error("c2"), ok("c3"), ok("c4"), ok("c5")])
    executor = FrontendExecutor(panel.send, "anchor", {"k": "v"})
    panel.executor = executor
    plan = [Execute("a", 1, 1, 0), Execute("b", 1, 1, 1),  # attempt 1: second block fails
            Execute("a2", 2, 1, 0), Execute("b2", 2, 1, 1),  # the fix, both blocks again
            Execute("c", 3, 2, 0)]  # next step: follows, replaces nothing
    assert asyncio.run(run(panel, executor, plan)) == [True, False, True, True, True]
    afters = [m["after"] for m in panel.sent]
    replaces = [m["replace"] for m in panel.sent]
    assert afters == ["anchor", "c1", "c2", "c3", "c4"]
    assert replaces == [[], [], ["c1", "c2"], [], []]
    # Each cell says its attempt: a stopped run's panel takes that attempt's cells out.
    assert [m["attempt"] for m in panel.sent] == [1, 1, 2, 2, 3]
    assert executor.cells == ["c3", "c4", "c5"]
    assert panel.sent[0]["metadata"] == {"k": "v"} and panel.sent[0]["code"] == "a"


def test_an_aborted_cell_ends_the_run_with_a_sentence() -> None:
    panel = Panel([{"status": "aborted", "reason": "the kernel of a.ipynb is not running"}])
    executor = FrontendExecutor(panel.send, None)
    panel.executor = executor
    with pytest.raises(ExecutionAborted, match="not running"):
        asyncio.run(run(panel, executor, [Execute("a", 1, 1, 0)]))


def test_abort_fails_a_pending_execution() -> None:
    async def scenario() -> None:
        executor = FrontendExecutor(lambda msg: None, None)
        task = asyncio.ensure_future(executor.aexecute("x = 1"))
        await asyncio.sleep(0)
        executor.abort("the panel was closed")
        with pytest.raises(ExecutionAborted, match="panel was closed"):
            await task
        assert executor.resolve({"id": "x1", "status": "ok"}) is False

    asyncio.run(scenario())


def test_an_interrupted_cell_stops_the_run_instead_of_asking_for_a_fix() -> None:
    panel = Panel([{"status": "error", "cell_id": "c1", "outputs": [
        {"output_type": "error", "ename": "KeyboardInterrupt", "evalue": "", "traceback": []}]}])
    executor = FrontendExecutor(panel.send, None)
    panel.executor = executor
    with pytest.raises(ExecutionAborted, match="interrupted"):
        asyncio.run(run(panel, executor, [Execute("while True: pass", 1, 1, 0)]))
