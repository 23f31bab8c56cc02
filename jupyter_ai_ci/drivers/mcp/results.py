"""What an agent gets back: structured content, and a text line that reads like the magic's.

Many clients show only text, so every result starts with the line the magic would show
(``✓ done in 2 attempts · 1.3k tokens · 3.4 s``); the structured content has the rest.  Every
string is masked with every secret the run knew of, exactly as a request to the model is;
figures go as image content (at most ``MAX_IMAGES``, each under ``MAX_IMAGE_BYTES``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mcp.types import CallToolResult, ContentBlock, ImageContent, TextContent
from pydantic import BaseModel

from jupyter_ai_ci.events import Attempt, ExecutionResult, Outcome

MAX_IMAGES = 3
MAX_IMAGE_BYTES = 1 << 20  # base64 characters; a larger figure is named, not sent
Mask = Callable[[str], str]


class AttemptInfo(BaseModel):
    number: int
    step: int
    code: str
    error: str = ""  # the error in one line ("" when it ran cleanly)
    undone: str = ""  # what its rollback put back


class AskResult(BaseModel):
    status: str  # done, not sure, failed, not answered
    line: str  # the magic's status line
    attempts: list[AttemptInfo] = []
    code: str = ""  # the code applied (kept in the kernel and the notebook)
    outputs: str = ""  # its text outputs (figures are image content)
    answer: str = ""  # the answer in words
    candidates: list[str] = []  # the other candidates' results, when they did not agree
    cells: list[str] = []  # ids of the cells written into the notebook
    requests: int = 0  # model requests made (0: replayed)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


class RunCodeResult(BaseModel):
    status: str  # committed, rolled back, refused
    line: str
    outputs: str = ""
    error: str = ""  # the traceback, when it raised
    undone: str = ""  # what the rollback put back, and what it could not
    cells: list[str] = []


class ContextResult(BaseModel):
    line: str
    context: str  # exactly what the model would be sent, masked
    tokens: int


class FixResult(BaseModel):
    status: str  # offered, accepted, rejected (a fix not found is an error line)
    line: str
    cell: str = ""  # the failed cell's id
    label: str = ""  # In [n]
    error: str = ""  # how it failed
    before: str = ""
    after: str = ""  # the fix, which has run without error
    diff: str = ""
    outputs: str = ""  # what the fix printed (figures are image content)


class UndoResult(BaseModel):
    ok: bool
    line: str
    cells: list[str] = []  # the cells taken out of the notebook


def text_of(result: ExecutionResult) -> str:
    """A cell's output as text: printed, its value, its displays (figures by kind), its error."""
    parts = [result.output.rstrip("\n"), result.result or "", *result.displays, *result.notes]
    if result.error is not None:
        parts.append(result.error.traceback or result.error.one_line())
    return "\n".join(p for p in parts if p)


def images(results: Sequence[ExecutionResult]) -> list[ContentBlock]:
    """The figures the code drew, as image content; larger or further ones are said in words."""
    blocks: list[ContentBlock] = []
    for out in (o for r in results for o in r.outputs):
        data = out.get("data", {}) if isinstance(out, dict) else {}
        png = data.get("image/png") if isinstance(data, dict) else None
        if not isinstance(png, str):
            continue
        png = png.replace("\n", "")
        if len(blocks) >= MAX_IMAGES * 2:
            continue
        if len(png) > MAX_IMAGE_BYTES or sum(isinstance(b, ImageContent) for b in blocks) >= MAX_IMAGES:
            blocks.append(TextContent(type="text", text=f"(a figure of {len(png) * 3 // 4:,} bytes was not sent)"))
            continue
        # By its wire names: the 1.x SDK (Jupyter AI 3.2's server) knows no ``mime_type``.
        blocks.append(ImageContent.model_validate({"type": "image", "data": png, "mimeType": "image/png"}))
    return blocks


def attempts(outcome: Outcome) -> list[AttemptInfo]:
    """Each attempt as the agent sees it (masked with the rest of the result: ``masked``)."""
    return [AttemptInfo(number=a.number, step=a.step, code="\n\n".join(a.code),
                        error=a.error.one_line() if a.error is not None else "",
                        undone=undone(a)) for a in outcome.attempts]


def undone(attempt: Attempt) -> str:
    """What a failed attempt's rollback put back, and what it could not."""
    u = attempt.undone
    if u is None:
        return ""
    if not u.supported:
        return "this kernel cannot undo: its changes stay"
    parts = ([f"restored {', '.join(u.restored)}"] if u.restored else []) + (
        [f"removed {', '.join(u.dropped)}"] if u.dropped else []) + (
        [f"NOT undone: {', '.join(u.not_saved)}"] if u.not_saved else [])
    return "; ".join(parts) or "nothing had changed"


def tool_result(model: BaseModel, extra: Sequence[ContentBlock] = (), error: bool = False) -> CallToolResult:
    """The line first (what text-only clients show), the structured content beside it."""
    data = model.model_dump(mode="json")
    return CallToolResult.model_validate({"content": [TextContent(type="text", text=str(data["line"])), *extra],
                                          "structuredContent": data, "isError": error})


def masked(model: BaseModel, mask: Mask) -> Any:
    """``model`` with every string masked (a secret never leaves in any field)."""
    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return mask(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        return value

    return type(model).model_validate(walk(model.model_dump()))
