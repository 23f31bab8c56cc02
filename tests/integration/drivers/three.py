"""Run one request through each driver, for real, and say what it did.

- ``magic``: ``%%ask`` in a real kernel started with jupyter_client;
- ``sidebar``: the server extension over its websocket, in a real Jupyter server; the test
  plays the panel and runs every cell it is asked to run in the notebook's real kernel;
- ``cli``: ``jupyter ai-ci run`` as a subprocess on a notebook file.

Each starts from the same notebook (``setup`` cells, run in order, errors allowed) in its own
folder and returns a ``Seen``: the outcome, the driver's own usage report, the replay records
left beside the notebook, and the request bodies the scripted model received.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer

REPLAY_DIR = ".jupyter-ai-ci-replay"  # one JSON file per record
# After the run: which names the kernel holds, and IPython's record of the last exception.
PROBE = ("print(sorted(n for n in {names!r} if n in globals()))\n"
         "print(repr(getattr(__import__('sys'), 'last_value', None)))")


@dataclass
class Seen:
    driver: str
    status: str  # the loop's outcome: success, failed, …
    message: str  # what the user was told at the end
    usage: tuple[int, int, int]  # requests, prompt tokens, completion tokens, as the driver reports them
    records: list[dict[str, Any]]  # replay records beside the notebook
    requests: list[dict[str, Any]] = field(default_factory=list)  # bodies the model received
    names: list[str] = field(default_factory=list)  # which of the probed names the kernel holds after
    last_error: str = ""  # repr of sys.last_value in the kernel after the run
    approvals: list[dict[str, Any]] = field(default_factory=list)  # what the panel was asked to approve
    executes: list[dict[str, Any]] = field(default_factory=list)  # the panel's execute messages (cell metadata)
    told: str = ""  # what the person was shown on the way: the cell's text, the panel's notices, the terminal
    answer: str = ""  # the panel's and the MCP tool's answer in words (the others print it: message or told)

    def texts(self) -> list[str]:
        return ["\n".join(str(m["content"]) for m in r["messages"]) for r in self.requests]


def records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((folder / REPLAY_DIR).glob("*.json"))]


def _probed(stdout: str) -> tuple[list[str], str]:
    """The probe's two printed lines.  Blank lines are not among them: the two prints can come as
    two stream messages, which ``_text`` joins with a newline of its own (a loaded machine did)."""
    lines = [line for line in stdout.strip().splitlines() if line.strip()]
    return list(json.loads(lines[-2].replace("'", '"'))), lines[-1]


def asking(request: str | Sequence[str]) -> list[str]:
    """One request, or several asked one after another in the same notebook (a follow-up)."""
    return [request] if isinstance(request, str) else list(request)


async def magic(server: ScriptedOpenAIServer, folder: Path, setup: list[str], request: str | Sequence[str],
                replies: list[Reply], probe: tuple[str, ...] = (), allow_stdin: bool = True,
                options: str = "") -> Seen:
    from jupyter_client.manager import AsyncKernelManager

    folder.mkdir(exist_ok=True)
    server.script(*replies)
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "MPLBACKEND": "Agg"}
    km = AsyncKernelManager(kernel_name="python3")
    await km.start_kernel(cwd=str(folder), env=env)
    kc = km.client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        for code in setup:
            await _run_in(kc, code)
        status, _ = await _run_in(kc, "%load_ext jupyter_ai_ci")
        assert status == "ok"
        for asked in asking(request):  # each a cell of its own, the last one's outputs kept
            messages: list[dict[str, Any]] = []
            reply = await kc.execute_interactive(f"%%ask {options}\n" + asked, output_hook=messages.append,
                                                 timeout=180, allow_stdin=allow_stdin)
        outputs = _outputs(messages)
        ok = reply["content"]["status"] == "ok"
        # The cell's progress is one display updated in place; its first line is the status at the end.
        progress = [o for o in outputs if o["output_type"] == "display_data"
                    and "jupyter_ai_ci" in o.get("metadata", {})]
        told = progress[-1]["data"]["text/plain"] if progress else ""
        message = told.splitlines()[0] if ok else f"{reply['content']['ename']}: {reply['content']['evalue']}"
        _, usage_out = await _run_in(kc, "%ask_usage")
        lines = _text(usage_out).strip().splitlines()
        total = next((line for line in lines if line.split()[:1] == ["session"]), "")
        numbers = tuple(int(x) for x in total.split()[1:4]) if total else (0, 0, 0)
        _, probed = await _run_in(kc, PROBE.format(names=probe))
        names, last = _probed(_text(probed))
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
    return Seen("magic", "success" if ok else "failed", message, numbers, records(folder),  # type: ignore[arg-type]
                list(server.requests), names, last, told=told)


def _outputs(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """iopub messages as nbformat outputs, as the notebook would keep them."""
    out: list[dict[str, Any]] = []
    shown: dict[str, dict[str, Any]] = {}  # display_id -> its output, which updates replace in place
    for m in messages:
        kind, c = m["msg_type"], m["content"]
        display_id = (c.get("transient") or {}).get("display_id")
        if kind == "update_display_data" and display_id in shown:
            shown[display_id].update(data=c["data"], metadata=c.get("metadata", {}))
        elif kind == "stream":
            out.append({"output_type": "stream", "name": c["name"], "text": c["text"]})
        elif kind in ("execute_result", "display_data"):
            item = {"output_type": kind, "data": c["data"], "metadata": c.get("metadata", {})}
            if kind == "execute_result":
                item["execution_count"] = c.get("execution_count")
            if display_id:
                shown[display_id] = item
            out.append(item)
        elif kind == "error":
            out.append({"output_type": "error", "ename": c["ename"], "evalue": c["evalue"],
                        "traceback": c["traceback"]})
    return out


def _text(outputs: list[dict[str, Any]]) -> str:
    """A cell's output as the panel sends it with a request."""
    parts = []
    for o in outputs:
        if o["output_type"] == "stream":
            parts.append(o["text"])
        elif o["output_type"] == "error":
            parts.append(f"{o['ename']}: {o['evalue']}")
        else:
            parts.append(str(o["data"].get("text/plain", "")))
    return "\n".join(parts)


async def _run_in(client: Any, code: str) -> tuple[str, list[dict[str, Any]]]:
    messages: list[dict[str, Any]] = []
    reply = await client.execute_interactive(code, output_hook=messages.append, timeout=120)
    return reply["content"]["status"], _outputs(messages)


async def sidebar(server: ScriptedOpenAIServer, jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any,
                  folder: Path, setup: list[str], request: str | Sequence[str], replies: list[Reply],
                  probe: tuple[str, ...] = (), approve: bool = False, fields: dict[str, Any] | None = None) -> Seen:
    server.script(*replies)
    approvals, executes, notices = [], [], []
    r = await jp_fetch("api", "sessions", method="POST", body=json.dumps(
        {"path": "work.ipynb", "type": "notebook", "name": "work.ipynb", "kernel": {"name": "python3"}}))
    session = json.loads(r.body)
    client = jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"]).client()
    client.start_channels()
    try:
        await client.wait_for_ready(timeout=60)
        cells = []
        for code in setup:
            _, outputs = await _run_in(client, code)
            cells.append({"source": code, "output": _text(outputs)})
        ws = await jp_ws_fetch("jupyter-ai-ci", "run")
        ran = 0
        for asked in asking(request):  # the panel's cells stay as they were: the kernel holds the rest
            ws.write_message(json.dumps({"type": "ask", "request": asked, "path": session["path"],
                                         "kernel_id": session["kernel"]["id"], "cells": cells, **(fields or {})}))
            while True:
                msg = json.loads(await asyncio.wait_for(ws.read_message(), 180))
                if msg["type"] == "execute":  # as the panel does: a new cell, run in the notebook's kernel
                    executes.append(msg)
                    status, outputs = await _run_in(client, msg["code"])
                    ran += 1
                    ws.write_message(json.dumps({"type": "executed", "id": msg["id"], "status": status,
                                                 "cell_id": f"gen-{ran}", "outputs": outputs}))
                    # A later ask sends it; a fix's first cell takes the place of the failed attempt's.
                    cells = [c for c in cells if c.get("id") not in msg.get("replace", [])]
                    cells.append({"source": msg["code"], "output": _text(outputs), "id": f"gen-{ran}"})
                elif msg["type"] == "approve":  # as the user does: Approve or Reject
                    approvals.append(msg)
                    ws.write_message(json.dumps({"type": "approval", "id": msg["id"], "approved": approve}))
                elif msg["type"] == "notice":
                    notices.append(str(msg.get("text", "")))
                elif msg["type"] == "done":
                    break
        ws.close()
        _, outputs = await _run_in(client, PROBE.format(names=probe))
        names, last = _probed(_text(outputs))
    finally:
        client.stop_channels()
    use = msg.get("session", {})
    usage = (use.get("requests", 0), use.get("prompt", 0), use.get("completion", 0))
    return Seen("sidebar", msg["status"], msg["message"], usage, records(folder), list(server.requests), names,
                last, approvals, executes, told="\n".join(notices), answer=str(msg.get("answer") or ""))


def cli(server: ScriptedOpenAIServer, folder: Path, setup: list[str], request: str, replies: list[Reply],
        options: tuple[str, ...] = ()) -> Seen:
    folder.mkdir(exist_ok=True)
    server.script(*replies)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in setup]
    nbformat.write(nb, folder / "work.ipynb")
    proc = subprocess.run([sys.executable, "-m", "jupyter_ai_ci.drivers.cli", "run", "work.ipynb", "--run-existing",
                           "--prompt", request, "--json", "run.json", *options], cwd=folder, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert (folder / "run.json").exists(), proc.stderr
    result = json.loads((folder / "run.json").read_text())[0]
    usage = (result["requests"], result["prompt_tokens"], result["completion_tokens"])
    return Seen("cli", result["status"], result["message"], usage, records(folder), list(server.requests),
                told=proc.stdout + proc.stderr)


async def mcp(server: ScriptedOpenAIServer, folder: Path, setup: list[str], request: str | Sequence[str],
              replies: list[Reply], probe: tuple[str, ...] = (), candidates: int = 0) -> Seen:
    """``jupyter ai-ci mcp`` over stdio with the ``mcp`` SDK's client: the setup cells sent with ``run``
    (a failing one is rolled back, as ``run`` does), then ``ask`` (with ``candidates``, when given),
    then the probe with ``run``."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    folder.mkdir(exist_ok=True)
    server.script(*replies)
    nbformat.write(nbformat.v4.new_notebook(), folder / "work.ipynb")
    params = StdioServerParameters(command=sys.executable, env=dict(os.environ), cwd=str(folder),
                                   args=["-m", "jupyter_ai_ci.drivers.cli", "mcp", "--root-dir", str(folder)])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for code in setup:
            await session.call_tool("run", {"code": code, "notebook": "work.ipynb"})
        heard: list[str] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            heard.append(message or "")

        for each in asking(request):
            asked = await session.call_tool("ask", {"request": each, "notebook": "work.ipynb",
                                                    **({"candidates": candidates} if candidates else {})},
                                            progress_callback=progress)
        # PROBE's __import__ is asked about by the policy, which nobody can answer here.
        shown = await session.call_tool("run", {"code": "import sys\n" + PROBE.format(names=list(probe)).replace(
            "__import__('sys')", "sys"), "notebook": "work.ipynb"})
    data = asked.structured_content or {}
    status = {"done": "success", "not sure": "success", "failed": "failed"}.get(data.get("status", ""), "error")
    usage = (data.get("requests", 0), data.get("prompt_tokens", 0), data.get("completion_tokens", 0))
    names, last = _probed((shown.structured_content or {}).get("outputs", ""))
    return Seen("mcp", status, asked.content[0].text, usage, records(folder), list(server.requests), names, last,
                told="\n".join(heard), answer=str(data.get("answer") or ""))
