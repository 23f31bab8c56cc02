"""One section of the ``%%ask`` cell's view: a model reply and what came of it.

``RunView`` (``magic_view.py``) keeps the run as a list of these and renders them; each renders
itself as HTML (cached: a run re-renders on every update) and has the title its fold shows.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Literal

from jupyter_ai_ci.core.pictures import ShownFigure
from jupyter_ai_ci.drivers.markdown import markdown_html, pre_html
from jupyter_ai_ci.events import ExecutionResult, PURPOSE_LABELS
from jupyter_ai_ci.text import fenced_lines, head_tail, python_blocks

SHOWN_CHARS = 4000  # of one output or traceback inside a section
LABELS: dict[str, str] = {**{str(k): v for k, v in PURPOSE_LABELS.items()}, "replayed": "replayed"}
# Class names of their own (aici-ask-*): the panel's stylesheet styles jp-aici-* in the same page.
MUTED = "color:var(--jp-ui-font-color2,#666)"
ERROR = "color:var(--jp-error-color1,#d32f2f)"



@dataclass
class Section:
    """One model reply and what came of it."""

    purpose: str
    text: str = ""
    attempt: int = 0
    blocks: list[tuple[str, ExecutionResult | None]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    failed: str = ""  # the error, in one line
    feedback: str = ""  # what went back to the model after this attempt failed
    verdict: str = ""  # a candidate's result and whether it agrees (core/consensus.py)
    figures: tuple[ShownFigure, ...] = ()  # what the next request told the model of this attempt's figures
    streaming: bool = True
    waiting: str = ""  # "waiting for the local model: 1 request ahead", shown until its text starts
    _cached: tuple[Any, str] = field(default=(None, ""), repr=False)
    _rendered: tuple[str, str] = field(default=("", ""), repr=False)

    @property
    def state(self) -> Literal["writing", "running", "failed", "ok", "text"]:
        if self.failed:
            return "failed"
        if self.streaming:
            return "writing"
        if not self.blocks:
            return "text"
        return "running" if self.blocks[-1][1] is None else "ok"

    def title(self, model: str) -> str:
        state = self.state
        if state == "writing":
            waiting = f" · {self.waiting}" if self.waiting and not self.text else ""
            return f"… {model} · {LABELS.get(self.purpose, self.purpose)}{waiting}"
        if state == "failed":
            return f"✗ attempt {self.attempt} · {self.failed}"
        if state == "running":
            # Not ▶: under the fold's own ▼ it read "▼ ▶ attempt 1", a second, closed section.
            return f"⟳ attempt {self.attempt} · running"
        if state == "ok" and self.verdict:  # not ✓: a candidate's result is what is being judged
            return f"◆ {self.verdict}"
        if state == "ok":
            n = len(self.blocks)
            spent = sum(r.seconds for _, r in self.blocks if r is not None)
            return f"✓ attempt {self.attempt} · {n} cell{'' if n == 1 else 's'} · {spent:.1f} s"
        # Code that was not run (--no-run, or the run stopped before it) is not "without code".
        plain = "reply, its code not run" if python_blocks(self.text) else "reply without code"
        return {"answer": "answer in words", "replayed": "↻ replayed reply"}.get(self.purpose, plain)

    def html(self, model: str, open_: bool, bare: bool = False) -> str:
        """``bare``: the body alone, its title being the run's head (the section under way)."""
        # Rendered again only when it changed: a run re-renders on every update, and Markdown
        # with highlighting is the costly part.
        key = (model, open_, bare, len(self.text), self.streaming, self.attempt, len(self.blocks),
               self.blocks[-1][1] is not None if self.blocks else False, self.failed, len(self.feedback),
               len(self.notes), len(self.figures))
        if self._cached[0] != key:
            self._cached = (key, self._html(model, open_, bare))
        return self._cached[1]

    def _as_ran(self) -> str:
        """The reply, its code as it ran: what the run mended by itself (an import added, a line that
        changed a copy run as an assignment: core/mends.py) shows in the code, not only in a note."""
        text = self.text
        # strict=False: an attempt under way has run fewer blocks than the reply holds.
        for written, ran in zip(python_blocks(text), (code for code, _ in self.blocks), strict=False):
            fenced, at = fenced_lines(text), text.find(written)
            while at >= 0 and text.count("\n", 0, at) not in fenced:  # the block, not a quote in the prose
                at = text.find(written, at + 1)
            if written != ran and at >= 0:
                text = text[:at] + ran + text[at + len(written):]
        return text

    def _markdown(self) -> str:
        text = self._as_ran()
        if self._rendered[0] != text:  # the same text shows again when the attempt runs or ends
            self._rendered = (text, markdown_html(text) if text.strip() else "")
        return self._rendered[1]

    def _html(self, model: str, open_: bool, bare: bool) -> str:
        head = [] if bare else [
            f"<details{' open' if open_ else ''}><summary>{html.escape(self.title(model))}</summary>"]
        parts = [*head, '<div style="margin-left:1.2em">' if head else "<div>", self._markdown()]
        for _code, result in self.blocks:
            if result is None:
                continue
            shown = _shown(result)
            if shown:
                parts += [f'<div style="{MUTED}">output</div>', pre_html(shown)]
            if result.error is not None:  # long, and mostly library frames: folded under its last line
                parts += [f'<details><summary style="{ERROR}">traceback · {html.escape(result.error.one_line())}'
                          "</summary>", pre_html(head_tail(result.error.traceback, SHOWN_CHARS * 2), ERROR),
                          "</details>"]
        if self.feedback:
            parts += ["<details><summary>sent back to the model</summary>",
                      pre_html(head_tail(self.feedback, SHOWN_CHARS * 3)), "</details>"]
        for figure in self.figures:  # the picture itself is in the cell's output: not a second copy
            parts += [f"<details><summary>{html.escape(figure_line(figure))}</summary>",
                      pre_html(figure.text) if figure.text else "", "</details>"]
        parts += [f'<div style="{MUTED}">{html.escape(note)}</div>' for note in self.notes]
        parts.append("</div></details>" if head else "</div>")
        return "".join(parts)


def figure_line(figure: ShownFigure) -> str:
    picture = "the model was sent the figure's picture" if figure.picture else ""
    if not figure.text:
        return picture
    told = f"What the model was told about the figure: {figure.text.splitlines()[0]} …"
    return f"{told} ({picture})" if picture else told


def _shown(result: ExecutionResult) -> str:
    """What a block showed, as text: printed output, its value, and stand-ins for pictures."""
    lines = [result.output.rstrip("\n")] if result.output.strip() else []
    lines += [f"[{d}]" for d in result.displays]
    if result.result is not None:
        lines.append(f"Out: {result.result}")
    return head_tail("\n".join(lines), SHOWN_CHARS)
