"""Each notebook's chat, kept in the server: its run session and what its panel showed.

A panel's page can be reloaded (or opened in a second tab) at any time; the
conversation belongs to the notebook, not to the page.  So the server keeps,
per notebook path, one ``Session`` (the earlier exchanges a follow-up builds
on, usage, budgets: like the magic's one per kernel) and a transcript of the
messages its panel displayed, which a reloaded panel asks for and shows again.

Memory is bounded: a few hundred notebooks (least recently used dropped), the
last runs of each, and text cut at a length no panel needs.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.drivers.server.protocol import session_usage
from jupyter_ai_ci.run.session import Session

MAX_NOTEBOOKS = 200
MAX_RUNS = 30  # per notebook
MAX_MESSAGES = 400  # per run
MAX_TEXT = 40_000  # characters of a message's text or code
# What a panel displays; ``execute`` and ``provenance`` act on the notebook and are never replayed.
# ``undone``: a panel Undo's line, kept after the run it ends the chat with (drivers/server/undo.py).
# ``figures``: what the model was told of an attempt's figures, shown with that attempt.
SHOWN = frozenset({"model", "text", "notice", "running", "ran", "figures", "approve", "decided", "done", "undone"})


def _cut(value: Any) -> Any:
    return value[:MAX_TEXT] + "\n…" if isinstance(value, str) and len(value) > MAX_TEXT else value


@dataclass
class Transcript:
    """One request and the messages its panel was sent."""

    request: str
    messages: list[dict[str, Any]] = field(default_factory=list)

    def record(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind not in SHOWN:
            return
        last = self.messages[-1] if self.messages else None
        if kind == "text" and last is not None and last.get("type") == "text":
            # Streamed text arrives in many small pieces: keep one message per reply.
            last["text"] = _cut(str(last["text"]) + str(message.get("text", "")))
            return
        if len(self.messages) < MAX_MESSAGES or kind in ("done", "undone"):
            self.messages.append({k: _cut(v) for k, v in message.items()})

    def as_json(self) -> dict[str, Any]:
        return {"request": self.request, "messages": self.messages}


@dataclass
class Chat:
    session: Session
    runs: list[Transcript] = field(default_factory=list)

    def begin(self, request: str) -> Transcript:
        run = Transcript(_cut(request))
        self.runs.append(run)
        del self.runs[:-MAX_RUNS]
        return run

    def history(self) -> list[dict[str, Any]]:
        return [run.as_json() for run in self.runs]

    def record(self, message: dict[str, Any]) -> None:
        """A message of no run of its own (an Undo's line): after the chat's last run, where the
        panel showed it, so a reloaded panel shows it there too."""
        if self.runs:
            self.runs[-1].record(message)


class Chats:
    """The chats of the notebooks this server's panels have worked on, by notebook path."""

    def __init__(self, settings: AICISettings, limit: int = MAX_NOTEBOOKS) -> None:
        self.settings = settings
        self.limit = limit
        self._chats: OrderedDict[str, Chat] = OrderedDict()

    def get(self, path: str) -> Chat:
        """The chat of ``path``, started on first use."""
        chat = self._chats.pop(path, None) or Chat(Session(self.settings))
        self._chats[path] = chat
        while len(self._chats) > self.limit:
            self._chats.popitem(last=False)
        return chat

    def history(self, path: str) -> list[dict[str, Any]]:
        chat = self._chats.get(path)
        return chat.history() if chat is not None else []

    def usage(self, path: str) -> dict[str, int] | None:
        """The session's usage for the panel's footer (a reloaded page after New chat had no run
        to read it from, and the footer vanished); None before the first request."""
        chat = self._chats.get(path)
        return session_usage(chat.session) if chat is not None else None

    def forget(self, path: str) -> None:
        """"New chat": the transcript and the earlier exchanges go; usage stays counted."""
        chat = self._chats.get(path)
        if chat is not None:
            chat.runs.clear()
            chat.session.conversation(path).clear()
