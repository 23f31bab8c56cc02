"""Plain data exchanged between the agent loop and its drivers.

The loop yields *actions* (call the model, execute code, tell the user
something) and is sent *results* (a model reply, an execution result).  Nothing
here does I/O, so the loop can be tested in memory and driven by any driver.

Three modules, one job each: ``exchange`` (what the model and the kernel send back), ``actions``
(what the loop asks for) and ``outcome`` (what it records and returns); every type is named here.
"""

from __future__ import annotations

from jupyter_ai_ci.events.actions import (
    Action, Approval, AskApproval, CallModel, Checkpoint, Commit, Execute, FailureNotes, Hold, ImportSource,
    Inspect, Install, KernelNames, Notice, PURPOSE_LABELS, Rollback, TransactionReport,
)
from jupyter_ai_ci.events.exchange import (
    NO_ANSWER, STOPPED, CellRecord, ErrorInfo, ExecutionResult, Message, ModelReply, Usage,
)
from jupyter_ai_ci.events.outcome import Attempt, Cell, Consensus, Group, LoopGen, Outcome

__all__ = [
    "Action", "Approval", "AskApproval", "Attempt", "CallModel", "Cell", "CellRecord", "Checkpoint", "Commit",
    "Consensus", "ErrorInfo", "Execute", "ExecutionResult", "FailureNotes", "Group", "Hold", "ImportSource",
    "Inspect", "Install", "KernelNames", "LoopGen", "Message", "ModelReply", "NO_ANSWER", "Notice", "Outcome",
    "PURPOSE_LABELS",
    "Rollback", "STOPPED", "TransactionReport", "Usage",
]
