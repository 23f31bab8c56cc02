"""Transactions for executors that drive a kernel from outside.

The CLI's kernel executor and the sidebar's frontend executor send code to a
kernel; they cannot hold Python objects in it.  They send an
``execute_request`` with empty code and one user expression built by
``expression(...)``; the kernel (which has jupyter_ai_ci in its environment)
runs ``kernel_side`` and answers with JSON that ``parse`` turns back into a
``TransactionReport``.  The snapshot lives in the kernel, on the shell.

    kc.execute("", silent=True, user_expressions={"tx": expression("checkpoint", code)})
    report = parse(reply["content"]["user_expressions"]["tx"])
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from typing import Any

from jupyter_ai_ci import inkernel
from jupyter_ai_ci.events import TransactionReport
from jupyter_ai_ci.safety import undostack
from jupyter_ai_ci.safety.transaction import Transaction
from jupyter_ai_ci.safety.undostack import Limits

ATTRIBUTE = "_jupyter_ai_ci_transaction"
LAST_ERROR = "_jupyter_ai_ci_last_error"  # IPython's record of the last exception, as at the checkpoint
# The numbers of the history's cells that an attempt ran and a rollback undid.  These executors run
# an attempt's cells as the kernel's own (stored in its history, as cells the panel inserts are),
# so a later request's context would list a failed attempt's code and output among the cells
# that ran (context/kernel_state.py leaves them out); the magic runs its attempts unstored.  Kept
# with the history's session: a reset that opens a new one numbers cells anew (the shell's
# ``reset()``; not ``%reset``, which keeps the history).
_UNDONE_CELLS = "_jupyter_ai_ci_undone_cells"  # (session number, {cell numbers})
_ATTEMPT_CELLS = "_jupyter_ai_ci_attempt_cells"  # [first, end]: the open attempt's, end set when held
_REQUEST_START = "_jupyter_ai_ci_request_start"  # (request id, history length at its first checkpoint)
_LAST = ("last_type", "last_value", "last_traceback", "last_exc")


def expression(op: str, code: Sequence[str] = (), max_bytes: int = 1 << 30, only_changed: bool = False,
               request: str = "", limits: Limits | None = None, **extra: Any) -> str:
    """The user expression that performs ``op`` (checkpoint, rollback, commit, hold; undo and note
    for ``%ask undo``) in the kernel.  ``request``: the id that groups a request's attempts for an
    undo; ``limits``: the person's undo settings."""
    lim = limits or Limits()
    request = json.dumps({"op": op, "code": list(code), "max_bytes": max_bytes, "only_changed": only_changed,
                          "request": request, "limits": [lim.keep, lim.memory, lim.file_cap], **extra})
    return inkernel.call("jupyter_ai_ci.safety.remote", request)  # never a look-alike from the working directory


def kernel_side(request: str) -> str:
    """Runs inside the kernel."""
    from IPython.core.getipython import get_ipython

    # Any: IPython 8 leaves get_ipython untyped, IPython 9 types it as possibly None.
    shell: Any = get_ipython()  # type: ignore[no-untyped-call]
    args = json.loads(request)
    tx: Transaction | None = getattr(shell, ATTRIBUTE, None)
    if not isinstance(tx, Transaction) or tx.ns is not shell.user_ns:  # none yet, or the model's code set it
        tx = Transaction(shell.user_ns, args["max_bytes"])
        setattr(shell, ATTRIBUTE, tx)
    keep, memory, tx.file_cap = args.get("limits") or (10, 1 << 30, 256 << 20)
    if args["op"] in ("undo", "note"):
        return json.dumps(undo_in_kernel(shell, args, Limits(keep, memory, tx.file_cap)))
    request = str(args.get("request") or "")
    if args["op"] == "checkpoint":
        if _request_start(shell, request) is None:  # the request's first attempt
            setattr(shell, _REQUEST_START, (request, _cells_now(shell)))
        tx.max_bytes = args["max_bytes"]
        report = tx.begin(args["code"])
        setattr(shell, LAST_ERROR, {name: getattr(sys, name, None) for name in _LAST})
        setattr(shell, _ATTEMPT_CELLS, [_cells_now(shell), None])
    elif args["op"] == "rollback":
        report = tx.rollback(only_changed=bool(args.get("only_changed")))
        if report.supported:  # an attempt was open: its cells are undone (nothing else's)
            _forget_cells(shell)
        # The failed attempt's exception is not the user's: the next request's context
        # must still tell the user's own last error (context/last_error.py), not ours.
        for name, value in (getattr(shell, LAST_ERROR, None) or {}).items():
            if value is None:
                if hasattr(sys, name):
                    delattr(sys, name)
            else:
                setattr(sys, name, value)
    elif args["op"] == "hold":
        report = tx.seal()
        if isinstance(cells := getattr(shell, _ATTEMPT_CELLS, None), list) and len(cells) == 2:
            cells[1] = _cells_now(shell)  # the person's cells run after this are theirs
    else:
        setattr(shell, _ATTEMPT_CELLS, None)
        first = _request_start(shell, request)
        kept = tx.handover()
        stack = undostack.stack_of(shell, keep, memory)
        if keep > 0 and request:
            stack.add(request, kept, len(undostack.history_of(shell)), first, undostack.history_session(shell))
        elif kept is not None:
            kept.journal.discard()
        why = stack.notes.pop(request, "")
        report = TransactionReport(not_saved=(why,) if why else ())
    return json.dumps(asdict(report))


def _cells_now(shell: Any) -> int:
    """The number the next cell stored in the history will have (its position in the history, as
    context/kernel_state.py reads it)."""
    return len(undostack.history_of(shell))


def _request_start(shell: Any, request: str) -> int | None:
    """Where ``request``'s first attempt began in the history; None when not known.  It lives on the
    shell, where the model's code can reach it: anything but this request's place in the history
    is not used (an undo's reach is at stake)."""
    start = getattr(shell, _REQUEST_START, None)
    if type(start) is tuple and len(start) == 2 and type(start[0]) is str and start[0] == request \
            and type(start[1]) is int and 0 <= start[1] <= _cells_now(shell):
        return start[1]
    return None


def _forget_cells(shell: Any) -> None:
    """Record the open attempt's cells as undone, and close its range.  The range lives on the shell,
    where the attempt's own code could have changed it: anything but two numbers within the history
    is not used (what a later request is told is at stake, not the undo)."""
    cells = getattr(shell, _ATTEMPT_CELLS, None)
    setattr(shell, _ATTEMPT_CELLS, None)
    now = _cells_now(shell)
    if not (isinstance(cells, list) and len(cells) == 2 and type(cells[0]) is int
            and (cells[1] is None or type(cells[1]) is int)):
        return
    first, end = cells[0], now if cells[1] is None else cells[1]
    if 0 <= first <= end <= now:
        _mark_undone(shell, range(first, end))


def undone_cells(shell: Any) -> frozenset[int]:
    """The numbers of this history session's cells that ran code since undone (what the model's
    code may have put there instead is read as none)."""
    kept = getattr(shell, _UNDONE_CELLS, None)
    if type(kept) is tuple and len(kept) == 2 and type(kept[1]) is set \
            and kept[0] is not None and kept[0] == undostack.history_session(shell):
        return frozenset(n for n in kept[1] if type(n) is int)
    return frozenset()


def _mark_undone(shell: Any, numbers: Iterable[int]) -> None:
    setattr(shell, _UNDONE_CELLS, (undostack.history_session(shell), set(undone_cells(shell)) | set(numbers)))


def undo_in_kernel(shell: Any, args: dict[str, Any], limits: Limits) -> dict[str, Any]:
    """``undo`` (the last ``n`` requests) or ``note`` (the driver's part of a request's entry)."""
    stack = undostack.stack_of(shell, limits.keep, limits.memory)
    if args["op"] == "note":
        request = str(args.get("request", ""))
        stack.note(request, dict(args.get("meta") or {}))
        # The panel's Undo button shows only for a request kept; its note says why one was not.
        return {"kept": any(e.request == request for e in stack.entries), "note": stack.notes.pop(request, "")}
    return asdict(undo_requests(shell, stack, max(1, int(args.get("n", 1))), str(args.get("only", ""))))


def undo_requests(shell: Any, stack: undostack.UndoStack, n: int, only: str = "") -> undostack.Undone:
    """The last ``n`` requests (or ``only`` that one) taken back, and the history cells that ran
    their code left out of what a later request is told (context/kernel_state.py)."""
    busy = bool(getattr(getattr(shell, ATTRIBUTE, None), "open", False))
    done = stack.undo(n, shell.user_ns, undostack.history_of(shell), busy=busy, only=only,
                      session=undostack.history_session(shell))
    _mark_undone(shell, done.history)
    return done


def parse_json(user_expression: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON object an ``undo`` or ``note`` expression answered; None when the kernel could not."""
    if user_expression.get("status") != "ok":
        return None
    try:
        data = json.loads(ast.literal_eval(user_expression["data"]["text/plain"]))
    except (ValueError, SyntaxError, KeyError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def parse(user_expression: dict[str, Any]) -> TransactionReport:
    """The report from a user_expressions entry; "cannot undo" when the kernel could not."""
    if user_expression.get("status") != "ok":
        return TransactionReport(supported=False)
    try:
        data = json.loads(ast.literal_eval(user_expression["data"]["text/plain"]))
        fields = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return TransactionReport(**fields)  # type: ignore[arg-type]
    except (ValueError, SyntaxError, KeyError, TypeError):
        return TransactionReport(supported=False)
