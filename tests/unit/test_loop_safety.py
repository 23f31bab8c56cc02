"""The loop's safety decisions, driven in memory: no kernel, no network.

The executor here runs code with ``exec`` in a dict and undoes attempts with
the real ``Transaction``; the model is the ``ScriptedClient``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from jupyter_ai_ci.core.loop import LoopSettings, agent_loop
from jupyter_ai_ci.events import (
    Approval,
    AskApproval,
    CallModel,
    Checkpoint,
    Commit,
    ErrorInfo,
    ExecutionResult,
    Install,
    Notice,
    Rollback,
    TransactionReport,
)
from jupyter_ai_ci.model.client import ScriptedClient
from jupyter_ai_ci.run.drive import adrive, drive
from jupyter_ai_ci.safety.policy import PolicySettings
from jupyter_ai_ci.safety.transaction import Transaction
from jupyter_ai_ci.tokens import estimate_usage


def py(code: str) -> str:
    return f"```python\n{code}\n```"


class DictExecutor:
    def __init__(self, ns: dict[str, Any] | None = None) -> None:
        self.ns: dict[str, Any] = ns if ns is not None else {}
        self.transaction = Transaction(self.ns)
        self.ran: list[str] = []
        self.log: list[str] = []
        self.installed: list[str] = []

    def execute(self, code: str) -> ExecutionResult:
        self.ran.append(code)
        try:
            exec(code, self.ns)  # noqa: S102 -- the fake executor runs code
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # noqa: BLE001
            return ExecutionResult(error=ErrorInfo(type(exc).__name__, str(exc), repr(exc)))
        return ExecutionResult()

    async def aexecute(self, code: str) -> ExecutionResult:
        return self.execute(code)

    def checkpoint(self, code: Sequence[str]) -> TransactionReport:
        self.log.append("checkpoint")
        return self.transaction.begin(code)

    def rollback(self) -> TransactionReport:
        self.log.append("rollback")
        return self.transaction.rollback()

    def commit(self) -> None:
        self.log.append("commit")
        self.transaction.commit()

    def install(self, package: str) -> ExecutionResult:
        self.installed.append(package)
        return ExecutionResult(output=f"installed {package}")


class Approver:
    def __init__(self, *answers: bool) -> None:
        self.answers = list(answers)
        self.asked: list[AskApproval] = []

    def approve(self, request: AskApproval) -> Approval:
        self.asked.append(request)
        return Approval(self.answers.pop(0), "test")


class Notices:
    def __init__(self) -> None:
        self.seen: list[Notice] = []

    def model_started(self, call: Any) -> None: ...
    def model_text(self, text: str) -> None: ...
    def model_finished(self) -> None: ...
    def executing(self, action: Any) -> None: ...
    def executed(self, action: Any, result: Any) -> None: ...

    def notice(self, notice: Notice) -> None:
        self.seen.append(notice)

    def text(self, kind: str) -> str:
        return "\n".join(n.text for n in self.seen if n.kind == kind)


def run(replies: list[str], ex: DictExecutor, approver: Any = None, notices: Notices | None = None,
        **settings: Any) -> Any:
    model = ScriptedClient(replies)
    outcome = drive(agent_loop("do it", "", LoopSettings(**settings)), model, ex, notices,
                    approver=approver)
    return outcome, model


def test_failed_attempt_is_undone_and_the_fix_runs_once() -> None:
    ex = DictExecutor({"data": [1, 2, 3]})
    notices = Notices()
    outcome, _ = run([py("data[0] *= 2\nundefined_name"), py("data[0] *= 2")], ex, notices=notices)
    assert outcome.status == "success"
    assert ex.ns["data"] == [2, 2, 3]  # doubled exactly once
    assert ex.log == ["checkpoint", "rollback", "checkpoint", "commit"]
    assert "attempt 1 undone: restored data" in notices.text("undone")
    assert outcome.attempts[0].undone is not None and "data" in outcome.attempts[0].undone.restored


def test_a_block_that_fails_undoes_the_blocks_before_it() -> None:
    ex = DictExecutor({"rows": []})
    outcome, model = run([py("rows.append(1)\nmade = True") + "\n" + py("1 / 0"), "no code"], ex,
                         retries=1)
    assert outcome.status == "failed" and ex.ns["rows"] == [] and "made" not in ex.ns
    fix = model.requests[1][-1].content
    assert "Block 2 of 2 failed" in fix and "undone" in fix


def test_syntax_error_goes_back_to_the_model_without_running() -> None:
    ex = DictExecutor()
    outcome, model = run([py("x = (1"), py("x = 1")], ex)
    assert outcome.status == "success" and ex.ran == ["x = 1"]
    assert "does not parse" in model.requests[1][-1].content
    assert ex.log == ["checkpoint", "commit"]  # nothing to undo for code that never ran


def test_risky_code_without_anyone_to_ask_is_refused_at_once() -> None:
    ex = DictExecutor()
    outcome, model = run([py("import os\nos.system('echo hi')")], ex)
    assert outcome.status == "refused" and ex.ran == [] and ex.log == []
    assert "nobody can approve it here" in outcome.reason and "os.system" in outcome.reason
    assert outcome.reason.startswith("not run: os.system: runs a shell command")
    assert len(model.requests) == 1


def test_approval_granted_runs_rejected_stops() -> None:
    ok_ex, no_ex = DictExecutor(), DictExecutor()
    approver = Approver(True)
    outcome, _ = run([py("import subprocess\nsubprocess.getoutput('true')\nran = True")], ok_ex, approver)
    assert outcome.status == "success" and ok_ex.ns["ran"] is True
    assert "subprocess.getoutput" in approver.asked[0].reasons[0]
    outcome, _ = run([py("import subprocess\nsubprocess.getoutput('true')\nran = True")], no_ex,
                     Approver(False))
    assert outcome.status == "refused" and "ran" not in no_ex.ns


def test_modes_auto_and_ask() -> None:
    risky = [py("import subprocess\nsubprocess.getoutput('true')")]
    outcome, _ = run(list(risky), DictExecutor(), policy=PolicySettings("auto"))
    assert outcome.status == "success"
    approver = Approver(True)
    outcome, _ = run([py("x = 1")], DictExecutor(), approver, policy=PolicySettings("ask"))
    assert outcome.status == "success" and len(approver.asked) == 1


def test_deny_list_refuses_without_asking() -> None:
    approver = Approver()
    outcome, _ = run([py("import shutil\nshutil.rmtree('x')")], DictExecutor(), approver,
                     policy=PolicySettings("auto", deny=("shutil.rmtree",)))
    assert outcome.status == "refused" and "deny list" in outcome.reason and approver.asked == []


def test_missing_module_is_installed_after_approval_then_rerun_without_the_model() -> None:
    ex = DictExecutor()
    attempts: list[int] = []

    class Flaky(DictExecutor):
        def execute(self, code: str) -> ExecutionResult:
            attempts.append(1)
            if not self.installed:
                return ExecutionResult(error=ErrorInfo(
                    "ModuleNotFoundError", "No module named 'sklearn'", ""))
            return super().execute(code)

    ex = Flaky()
    approver = Approver(True)
    outcome, model = run([py("fitted = True")], ex, approver)
    assert outcome.status == "success" and ex.installed == ["scikit-learn"]
    assert len(model.requests) == 1 and len(outcome.attempts) == 2
    assert approver.asked[0].kind == "install" and "scikit-learn" in approver.asked[0].code[0]


def test_install_rejected_falls_back_to_asking_the_model() -> None:
    class NoModule(DictExecutor):
        def execute(self, code: str) -> ExecutionResult:
            if "yaml" in code:
                return ExecutionResult(error=ErrorInfo("ModuleNotFoundError", "No module named 'yaml'", ""))
            return super().execute(code)

    ex = NoModule()
    outcome, model = run([py("import yaml"), py("import json")], ex, Approver(False))
    assert outcome.status == "success" and ex.installed == [] and len(model.requests) == 2


def test_install_allowed_by_the_allow_list_needs_no_question() -> None:
    class NoModule(DictExecutor):
        def execute(self, code: str) -> ExecutionResult:
            if not self.installed:
                return ExecutionResult(error=ErrorInfo("ModuleNotFoundError", "No module named 'PIL'", ""))
            return super().execute(code)

    ex = NoModule()
    approver = Approver()
    outcome, _ = run([py("ok = 1")], ex, approver, policy=PolicySettings(allow=("pip:pillow",)))
    assert outcome.status == "success" and ex.installed == ["pillow"] and approver.asked == []


def test_token_budget_stops_before_the_call_that_would_exceed_it() -> None:
    first = next(agent_loop("do it", "", LoopSettings()))
    assert isinstance(first, CallModel)
    prompt = sum(estimate_usage(m.content) for m in first.messages)
    ex = DictExecutor()
    outcome, model = run([py("1/0"), py("x = 1")], ex, token_budget=prompt + 20, retries=3)
    assert outcome.status == "over-budget" and "token budget" in outcome.reason
    assert outcome.reason.endswith(f"are spent on this request, and the budget is {prompt + 20}"), outcome.reason
    assert len(model.requests) == 1  # the fix request was never sent
    # ... nor kept: the conversation the next request builds on holds only what was sent.
    assert [m.role for m in outcome.messages] == ["system", "user", "assistant"]
    tiny, model = run([py("x = 1")], DictExecutor(), token_budget=prompt - 1)
    assert tiny.status == "over-budget" and model.requests == []


def test_user_interrupt_during_execution_undoes_the_attempt_then_stops() -> None:
    class Interrupted(DictExecutor):
        def execute(self, code: str) -> ExecutionResult:
            super().execute(code)
            raise KeyboardInterrupt

    ex = Interrupted({"rows": []})
    with pytest.raises(KeyboardInterrupt):
        run([py("rows.append(1)\nextra = 1")], ex)
    assert ex.ns["rows"] == [] and "extra" not in ex.ns and ex.log == ["checkpoint", "rollback"]


def test_executor_without_transactions_says_it_cannot_undo() -> None:
    class Plain:
        def execute(self, code: str) -> ExecutionResult:
            return ExecutionResult(error=ErrorInfo("ValueError", "x", ""))

    notices = Notices()
    outcome = drive(agent_loop("do it", "", LoopSettings(retries=0)), ScriptedClient([py("y = 1")]),
                    Plain(), notices)
    assert outcome.status == "failed" and "cannot undo" in notices.text("undone")


def test_async_driver_obeys_the_same_policy_and_transactions() -> None:
    ex = DictExecutor({"data": [1]})
    model = ScriptedClient([py("data.append(2)\n1/0"), py("data.append(3)")])
    outcome = asyncio.run(adrive(agent_loop("x", "", LoopSettings()), model, ex))
    assert outcome.status == "success" and ex.ns["data"] == [1, 3]
    refused = asyncio.run(adrive(agent_loop("x", "", LoopSettings()),
                                 ScriptedClient([py("eval('1')")]), DictExecutor()))
    assert refused.status == "refused"


def test_actions_come_in_order() -> None:
    seen: list[type] = []
    ex = DictExecutor()
    loop = agent_loop("x", "", LoopSettings())
    action = next(loop)
    replies = iter([py("a = 1")])
    from jupyter_ai_ci.events import Execute, ModelReply
    try:
        while True:
            seen.append(type(action))
            if isinstance(action, CallModel):
                result: Any = ModelReply(next(replies))
            elif isinstance(action, Execute):
                result = ex.execute(action.code)
            elif isinstance(action, Checkpoint):
                result = ex.checkpoint(action.code)
            elif isinstance(action, (Commit, Rollback, Install)):
                result = None
            else:
                result = None
            action = loop.send(result)
    except StopIteration:
        pass
    assert seen == [CallModel, Notice, Checkpoint, Execute, Commit]
