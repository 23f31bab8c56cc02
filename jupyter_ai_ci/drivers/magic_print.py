"""What ``%%ask`` prints where no rich display is at hand (the IPython terminal, a frontend
without the comm): the model's text as it streams, one marked line per notice."""

from __future__ import annotations

import sys

from jupyter_ai_ci.events import CallModel, Execute, ExecutionResult, Notice, PURPOSE_LABELS


class PrintReporter:
    """Tells the user what happens by printing: works in every frontend
    (JupyterLab, Notebook, VS Code, the IPython terminal)."""

    def __init__(self, model: str) -> None:
        self.model = model

    def _say(self, text: str, flush: bool = True) -> None:
        sys.stdout.write(text)
        if flush:
            sys.stdout.flush()

    say = _say  # the approver's question: shown at once
    said = _say  # a line the run says outside the loop (the local model's first use, its queue)

    def flush(self) -> None:
        sys.stdout.flush()

    def model_started(self, call: CallModel) -> None:
        self._say(f"── {self.model}: {PURPOSE_LABELS[call.purpose]} ──\n")

    def model_text(self, text: str) -> None:
        self._say(text)

    # A line that only ends what is shown, or a notice between two steps, waits in the buffer
    # for the next flush: before the model is asked, before code runs, and when the loop ends
    # (``run.drive`` calls ``flush``): before anything the user could be kept waiting for.
    def model_finished(self) -> None:
        self._say("\n", flush=False)

    def notice(self, notice: Notice) -> None:
        if notice.kind == "candidate-text":  # another choice of the last reply: where it would stream
            self._say(f"── {self.model}: another candidate, from the same reply ──\n")
        if notice.kind in ("replayed-text", "candidate-text"):
            self._say(notice.text.rstrip("\n") + "\n")
            return
        if notice.kind == "refused":
            return  # the cell's error says it, once
        mark = {"retrying": "✗", "attempt": "▶", "replay": "↻", "undone": "↺",
                "not-undoable": "!", "candidate": "◆"}.get(notice.kind, "·")
        self._say(f"{mark} {notice.text}\n", flush=False)

    def executing(self, action: Execute) -> None:
        sys.stdout.flush()

    def executed(self, action: Execute, result: ExecutionResult) -> None:
        for note in result.notes:
            self._say(f"· {note}\n", flush=False)
