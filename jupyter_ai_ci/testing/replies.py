"""What the scripted server answers (``Reply``) and how it reads what it was sent: the text of a
message, the pictures of a request, and a rough count of tokens to report as usage."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """One scripted answer.  ``require``: serve it only when the request's
    messages contain this text; otherwise answer 400 and record the miss."""

    text: str = ""
    status: int = 200
    require: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering
    # Answer only once this is set: a request held in flight for as long as a test needs.
    until: threading.Event | None = None
    cut_after: int | None = None  # streamed: drop the connection after this many characters
    raw: str | None = None  # send this body as is (malformed replies)
    usage: bool = True
    tokens: tuple[int, int] | None = None  # (prompt, completion) to report instead of a count of the text
    # Choices 1.. of a request that asks for several (``n``), at most n - 1 of them served, as a
    # server that honours ``n`` does; none (the default): one choice, as one that ignores it.
    alternatives: tuple[str, ...] = ()

    def texts(self, n: Any) -> list[str]:
        """The choices served to a request whose ``n`` is ``n``, choice 0 first."""
        wanted = n if isinstance(n, int) and n > 1 else 1
        return [self.text, *self.alternatives[: wanted - 1]]


def content_text(content: Any) -> str:
    """A message's text: its content, or the text parts of a content with pictures."""
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return str(content or "")


def image_parts(body: dict[str, Any]) -> list[str]:
    """The data URLs of the pictures a request sent, in order."""
    return [p["image_url"]["url"] for m in body.get("messages", []) if isinstance(m.get("content"), list)
            for p in m["content"] if isinstance(p, dict) and p.get("type") == "image_url"]


def rough_tokens(text: str) -> int:
    """About four characters a token: the usage a scripted reply reports."""
    return (len(text) + 3) // 4
