"""What the ``%%ask`` cell shows in a notebook: one output, updated as the run goes.

``RunView`` keeps the run as sections, one per model reply (the attempt that
ran its code, its outputs, the traceback of a failure and what went back to
the model), and renders it twice: HTML for frontends that render it
(JupyterLab, Notebook 7, VS Code), and plain text -- with no tag in it -- for
everything else that reads ``text/plain`` (nbconvert to script, logs, a
console).  ``RichReporter`` feeds it from the loop's events and updates one
display (``display_id``), at most every ``INTERVAL`` seconds while text
streams, and at once when something happens.

At the end the view is one line (``✓ done in 2 attempts · 1.3k tokens ·
3.4 s``) whose details fold under it, and the answer in words below.
"""

from __future__ import annotations

import html
import time
from typing import Any

from jupyter_ai_ci.core.pictures import shown_figures
from jupyter_ai_ci.drivers.magic_section import ERROR, MUTED, Section, figure_line
from jupyter_ai_ci.drivers.markdown import markdown_html, pre_html
from jupyter_ai_ci.events import CallModel, ExecutionResult, Notice
from jupyter_ai_ci.model.turns import waiting

INTERVAL = 0.1  # seconds between display updates while the model's text streams
METADATA = {"jupyter_ai_ci": {"role": "progress"}}  # tells the kernel tracker this is not the user's output


class RunView:
    """The run as sections, rendered to a MIME bundle."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.sections: list[Section] = []
        self.notes: list[str] = []  # about the whole run: context, replay, steps
        self.final = ""  # the one-line status, once the run is over
        self.answer = ""
        # The other results of candidates that disagreed: (candidate number, result, how many, code).
        self.others: list[tuple[int, str, int, tuple[str, ...]]] = []
        self.undo = ""  # the id %ask undo knows this request by: the labextension's Undo button

    @property
    def current(self) -> Section | None:
        return self.sections[-1] if self.sections else None

    def started(self, call: CallModel) -> None:
        last = next((s for s in reversed(self.sections) if s.attempt), None)
        if last is not None and call.messages and call.purpose in ("fix", "next-step", "answer"):
            if call.purpose == "fix":
                last.feedback = call.messages[-1].content
            ran = [result for _, result in last.blocks if result is not None]
            last.figures = shown_figures(call.messages[-1], ran) or last.figures
        self.sections.append(Section(call.purpose))

    def replayed(self, text: str, purpose: str = "replayed") -> None:
        """A reply's text no model call streamed: a replay record's, or another choice of the
        last reply (``purpose`` "candidate"): a section of its own, as a reply's."""
        self.sections.append(Section(purpose, text, streaming=False))

    def notice(self, notice: Notice) -> None:
        section = self.current
        if notice.kind == "attempt" and section is not None:
            section.attempt = notice.attempt
            section.failed = ""  # the same code again after an install is a new attempt
            section.blocks.clear()  # its cells as they run now: once, not once per attempt (a mend, an install)
            return
        if notice.kind == "retrying" and section is not None and section.attempt:
            error = next((r.error for _, r in section.blocks if r is not None and r.error is not None), None)
            section.failed = error.one_line() if error is not None else notice.text
            return
        if notice.kind == "candidate":  # the first candidate is no longer "checking…" once another is in
            for earlier in self.sections:
                earlier.verdict = earlier.verdict.removesuffix(" — checking…")
        if notice.kind == "candidate" and notice.text.startswith("applying"):
            # The winner run again: a section of its own, not the last candidate's.
            self.sections.append(Section("applied", streaming=False, verdict=notice.text))
            return
        # The candidate's own section, which need not be the last: the answer in words comes between
        # the first candidate and its "checking…" (core/check.py).
        owner = next((s for s in reversed(self.sections) if notice.attempt and s.attempt == notice.attempt
                      and s.state == "ok"), None) if notice.kind == "candidate" else None
        if owner is not None:
            owner.verdict = notice.text
            return
        if notice.kind in ("undone", "not-undoable", "install", "other-languages", "no-code", "again", "repeated",
                           "candidate") and section:
            section.notes.append(notice.text)
            return
        self.notes.append(notice.text)

    def head(self) -> str:
        if self.final:
            return self.final
        section = self.current
        return section.title(self.model) if section is not None else f"… {self.model} · starting"

    def text(self) -> str:
        """Plain text: the status, a line per attempt, the answer."""
        lines = [self.head()]
        lines += [f"  {note}" for note in self.notes]
        # While running, the head is the current section's title: not twice.
        for section in self.sections if self.final else self.sections[:-1]:
            if section.attempt:
                lines.append(f"  {section.title(self.model)}")
            lines += [f"    {note}" for note in section.notes]
            lines += [f"    {figure_line(figure)}" for figure in section.figures]
        if not self.final and self.current is not None:
            lines += [f"    {note}" for note in self.current.notes]
        for number, shown, count, _ in self.others:
            lines.append(f"  other result: {shown} ({_of(count)}) — %%ask --use {number} applies it")
        if self.answer:
            lines += ["", self.answer]
        return "\n".join(lines)

    def html(self) -> str:
        done = bool(self.final)
        last = len(self.sections) - 1
        body = [f'<div style="{MUTED}">{html.escape(n)}</div>' for n in self.notes]
        # At the end the answer is shown whole, below: not again in a section.
        # While running, the head is the current section's title (as in ``text``): its body
        # follows the head bare, not under the same title again.
        body += [s.html(self.model, open_=not done and i == last, bare=not done and i == last)
                 for i, s in enumerate(self.sections)
                 if not (done and (s.purpose == "answer" or self.answer and s.text.strip() == self.answer
                                   # a call that never answered (a 401, a stop): no "reply without code"
                                   or not s.text and not s.blocks))]
        head = html.escape(self.head())
        if done and self.final.startswith("✗"):
            head = f'<span style="{ERROR}">{head}</span>'
        parts = ['<div class="aici-ask-run">', f"<details{'' if done else ' open'}>",
                 f"<summary><b>{head}</b></summary>", '<div style="margin-left:1.2em">', *body, "</div></details>"]
        for number, shown, count, code in self.others:  # side by side with the applied one, a click away
            parts.append(f'<details class="aici-ask-other"><summary>other result: <b>{html.escape(shown)}</b> '
                         f'({_of(count)}) — <code>%%ask --use {number}</code> applies it</summary>'
                         f'{pre_html(chr(10).join(code))}</details>')
        if self.answer:
            parts.append(f'<div class="aici-ask-answer">{markdown_html(self.answer)}</div>')
        parts.append("</div>")
        return "".join(parts)

    def bundle(self) -> dict[str, str]:
        return {"text/plain": self.text(), "text/html": self.html()}

    def metadata(self) -> dict[str, Any]:
        """The display's metadata: the labextension puts a "use this one" button under the cell
        for each other result (labextension/src/candidates.ts)."""
        if not self.others and not self.undo:
            return METADATA
        meta: dict[str, Any] = {**METADATA["jupyter_ai_ci"]}
        if self.undo:
            meta["undo"] = self.undo
        if self.others:
            meta["others"] = [{"candidate": n, "shown": shown, "count": count} for n, shown, count, _ in self.others]
            meta["sure"] = not self.final.startswith("⚠")  # a person chose: the others are options, not doubts
        return {"jupyter_ai_ci": meta}


def _of(count: int) -> str:
    return f"{count} candidate{'' if count == 1 else 's'}"


class RichReporter:
    """The loop's events into one display that is updated in place (see the module doc)."""

    def __init__(self, model: str, display: Any) -> None:
        self.view = RunView(model)
        self.display = display  # IPython.core.display_functions.display
        self.handle: Any = None
        self.last = 0.0

    @property
    def model(self) -> str:
        return self.view.model

    @model.setter
    def model(self, name: str) -> None:
        self.view.model = name

    def refresh(self, force: bool = False) -> None:
        """Show the view now (``force``: before a wait -- a model call, running code -- and at
        the end), or if the last update is older than ``INTERVAL``."""
        now = time.perf_counter()
        if not force and now - self.last < INTERVAL:
            return
        self.last = now
        if self.handle is None:
            self.handle = self.display(self.view.bundle(), raw=True, display_id=True, metadata=self.view.metadata())
        else:
            self.handle.update(self.view.bundle(), raw=True, metadata=self.view.metadata())

    def say(self, text: str) -> None:
        """Lines the approver asks with (its question is on stdin, below this output)."""
        print(text, end="", flush=True)

    def said(self, text: str) -> None:
        """A line the run says outside the loop: a wait for the local model goes in the head line
        of the call it holds up, until its reply starts (printed, each change of the count stayed
        in the cell's output for good); any other line is printed."""
        section, wait = self.view.current, waiting(text)
        if wait is not None and section is not None and section.streaming and not section.text:
            section.waiting = wait  # "": the wait is over
            self.refresh(force=True)
            return
        print(text, end="", flush=True)

    def model_started(self, call: CallModel) -> None:
        self.view.started(call)
        self.refresh(force=True)

    def model_text(self, text: str) -> None:
        section = self.view.current
        if section is not None:
            section.text += text
            self.refresh()

    def model_finished(self) -> None:
        section = self.view.current
        if section is not None:
            section.streaming = False
            if not section.text:
                # A call that failed (after the SDK's retries) or was interrupted ends here too:
                # shown now, it read "reply without code" until the error line came.  An empty
                # reply that did come is drawn with whatever comes next (a notice, the end).
                return
        self.refresh()

    def notice(self, notice: Notice) -> None:
        if notice.kind == "refused":
            return  # the cell's error says it, once
        if notice.kind in ("replayed-text", "candidate-text"):
            self.view.replayed(notice.text, "replayed" if notice.kind == "replayed-text" else "candidate")
        else:
            self.view.notice(notice)
        self.refresh()

    def executing(self, action: Any) -> None:
        section = self.view.current
        if section is not None:
            section.blocks.append((action.code, None))
            self.refresh(force=True)

    def executed(self, action: Any, result: ExecutionResult) -> None:
        section = self.view.current
        if section is not None and section.blocks:
            section.blocks[-1] = (section.blocks[-1][0], result)
            section.notes.extend(result.notes)
            if result.error is not None:  # failed now, whether or not a retry follows (the last has none)
                section.failed = result.error.one_line()
        self.refresh()

    def finish(self, line: str, answer: str = "", others: list[tuple[int, str, int, tuple[str, ...]]] | None = None,
               undo: str = "") -> None:
        self.view.others = others or []
        self.view.undo = undo
        self.view.final = line
        self.view.answer = answer.strip()
        self.refresh(force=True)
