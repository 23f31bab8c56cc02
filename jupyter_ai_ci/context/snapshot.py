"""What a run needs from the kernel, taken inside the kernel, for every driver.

The variables, the user's last error and the secrets to mask live in the
kernel's memory.  The magic runs in that kernel and calls ``take`` directly;
the sidebar's server and the command line sit outside it and evaluate
``expression(query)`` as a silent user expression, getting the same
``Snapshot`` back as JSON (``kernel_side`` / ``from_reply``).  So the context
the model sees, the secrets masked and the replay key's inputs are built by
one piece of code whichever driver asked.

The secrets travel only to the process that called the model (the kernel's
own, or the Jupyter server / command line of the same user), are kept in
memory for one run and are never written anywhere.
"""

from __future__ import annotations

import ast
import json
import os
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_ai_ci import inkernel
from jupyter_ai_ci.context.build import Context, build_context
from jupyter_ai_ci.context.describe import describe
from jupyter_ai_ci.context.kernel_state import gather_context
from jupyter_ai_ci.context.privacy import secret_values
from jupyter_ai_ci.events import CellRecord, Message
from jupyter_ai_ci.notebook.reader import session_notebook
from jupyter_ai_ci.safety.kernelnames import risky_bindings
from jupyter_ai_ci.tokens import counter_name

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Query:
    """What the run asks the kernel for."""

    request: str
    conversation: tuple[Message, ...] = ()  # earlier exchanges; fitted to the budget in the kernel
    budget: int = 3000
    exclude: tuple[str, ...] = ()
    notebook: tuple[CellRecord, ...] | None = None  # the driver's view of the notebook, if it has one


@dataclass(frozen=True)
class Snapshot:
    context: Context
    named: tuple[str, ...] = ()  # descriptions of the variables the request names (part of the replay key)
    secrets: tuple[str, ...] = field(default=(), repr=False)  # values to mask; never stored
    note: str = ""  # why the context is poorer than usual (the kernel could not be asked)
    moved: str = ""  # the kernel's working directory from its notebook's folder (``moved``)
    bindings: tuple[tuple[str, str], ...] = ()  # names the kernel binds to risky calls (safety/kernelnames.py)
    folders: tuple[str, str] | None = None  # the kernel's current directory and working folder (``folders``)


def named_variables(request: str, ns: Mapping[str, Any]) -> tuple[str, ...]:
    """Full descriptions of the variables the request names: the context replay depends on."""
    words = set(_WORD.findall(request))
    return tuple(describe(name, ns[name], full=True) for name in sorted(words) if name in ns
                 and not name.startswith("_") and not isinstance(ns[name], types.ModuleType))


def take(shell: Any, query: Query) -> Snapshot:
    """The snapshot, taken in the kernel that holds ``shell``."""
    ns = shell.user_ns
    secrets = secret_values(ns, os.environ)  # the context's masking and the run's: found once
    context = gather_context(shell, query.request, query.conversation, query.budget, query.exclude,
                             notebook=query.notebook, secrets=secrets)
    notebook = session_notebook(ns=ns)
    return Snapshot(context, named_variables(query.request, ns), secrets, moved=moved(notebook),
                    bindings=risky_bindings(ns, shell), folders=folders(notebook))


def moved(notebook: Path | None) -> str:
    """Where the kernel's working directory is, from the folder of its notebook: "" there (or
    when the notebook is unknown), else the relative path ("..", "data"), "?" when none leads
    there.  A relative write is judged from it (``safety.writes``): code that moved the kernel
    out of the notebook's folder -- a ``%cd ..`` approved in an earlier request, or hidden from
    the scan -- no longer makes ``open('x.csv', 'w')`` land outside it unasked."""
    if notebook is None:
        return ""
    try:
        path = os.path.relpath(os.path.realpath(os.getcwd()), os.path.realpath(notebook.parent))
    except (OSError, ValueError):  # another drive, or a working directory that is gone
        return "?"
    return "" if path == "." else path.replace(os.sep, "/")


def folders(notebook: Path | None) -> tuple[str, str] | None:
    """The kernel's current directory and its working folder (the notebook's, else the same),
    absolute: a relative write through a link that leads out of the folder is judged by where it
    lands (``safety.links``).  None when the current directory is gone."""
    try:
        current = os.getcwd()
    except OSError:
        return None
    return current, str(notebook.parent) if notebook is not None else current


def without_kernel(query: Query, note: str) -> Snapshot:
    """A poorer snapshot from the driver's cells alone, when the kernel cannot answer."""
    text = build_context(query.request, [], list(query.notebook or ()), query.budget)
    context = Context(text, (), 0, query.budget, counter_name())
    return Snapshot(context, (), secret_values({}, os.environ), note)


# ---- across the kernel boundary -------------------------------------------

def _message(m: Message) -> dict[str, str]:
    return {"role": m.role, "content": m.content}


def expression(query: Query) -> str:
    """The user expression that takes the snapshot in a kernel with jupyter_ai_ci installed."""
    payload = json.dumps({
        "request": query.request,
        "conversation": [_message(m) for m in query.conversation],
        "budget": query.budget,
        "exclude": list(query.exclude),
        "notebook": None if query.notebook is None else [
            {"source": c.source, "output": c.output, "kind": c.kind, "label": c.label} for c in query.notebook],
    })
    return inkernel.call("jupyter_ai_ci.context.snapshot", payload)  # never a look-alike from the working directory


def _roles(items: Any) -> tuple[Message, ...]:
    out = []
    for m in items or ():
        if isinstance(m, dict) and m.get("role") in ("system", "user", "assistant"):
            out.append(Message(m["role"], str(m.get("content", ""))))
    return tuple(out)


def kernel_side(payload: str) -> str:
    """Runs inside the kernel: the snapshot as JSON."""
    from IPython.core.getipython import get_ipython

    data: dict[str, Any] = json.loads(payload)
    notebook = data.get("notebook")
    query = Query(
        request=str(data.get("request", "")),
        conversation=_roles(data.get("conversation")),
        budget=int(data.get("budget", 3000)),
        exclude=tuple(str(x) for x in data.get("exclude") or ()),
        notebook=None if notebook is None else tuple(
            CellRecord(str(c.get("source", "")), str(c.get("output", "")), str(c.get("kind", "code")),
                       str(c.get("label", ""))) for c in notebook if isinstance(c, dict)),
    )
    shell: Any = get_ipython()  # type: ignore[no-untyped-call]
    snapshot = take(shell, query)
    c = snapshot.context
    return json.dumps({
        "text": c.text, "history": [_message(m) for m in c.history], "tokens": c.tokens, "budget": c.budget,
        "counter": c.counter, "pieces": [list(pair) for pair in c.pieces],
        "named": list(snapshot.named), "secrets": list(snapshot.secrets),
        "moved": snapshot.moved, "bindings": [list(pair) for pair in snapshot.bindings],
        "folders": list(snapshot.folders) if snapshot.folders is not None else None,
    })


def from_reply(user_expression: Mapping[str, Any]) -> Snapshot:
    """The snapshot from the kernel's ``user_expressions`` entry; ValueError if there is none."""
    if user_expression.get("status") != "ok":
        raise ValueError(f"{user_expression.get('ename')}: {user_expression.get('evalue')}")
    text = ast.literal_eval(user_expression["data"]["text/plain"])
    if not isinstance(text, str):
        raise ValueError(f"the kernel answered a {type(text).__name__}, not text")
    data = json.loads(text)
    context = Context(str(data["text"]), _roles(data.get("history")), int(data["tokens"]), int(data["budget"]),
                      str(data["counter"]), _pairs(data.get("pieces")))
    return Snapshot(context, _strings(data.get("named")), _strings(data.get("secrets")),
                    moved=str(data.get("moved", "")), bindings=_pairs(data.get("bindings")),
                    folders=next(iter(_pairs([data.get("folders")])), None))


def _strings(items: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in items or ())


def _pairs(items: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(p[0]), str(p[1])) for p in items or () if isinstance(p, list) and len(p) == 2)

