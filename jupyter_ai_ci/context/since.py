"""A follow-up told only what changed in the notebook since the request before it.

A follow-up in the same notebook ("now plot it") is sent after the earlier request's own
conversation, exactly as it was sent (its context, the code the model wrote, the fixes, the
answer), and then this: the context's pieces that the earlier request was not shown.  A model
server keeps the work done on the longest prefix a prompt shares with the one before it
(llama.cpp's prompt cache, OpenAI's prompt caching), so a follow-up is read from where the
earlier request ended: on a CPU, seconds instead of the whole prompt again (issue #37).

Sent whole again, the context would part from the earlier prompt right after the system text:
the earlier exchange used to travel as the request's words alone.  What is left out is only
what the model has already read: a piece of the earlier context unchanged, or a cell whose code
and output the conversation holds (the code the model wrote, run).  Everything else is written
as it would be in a full context, under its section's title (a one-line list that only grew,
such as the libraries loaded, as what it gained); and the hints a full context
ends with (no file loaded yet, ``pd`` is not pandas) are said again, next to the request.
"""

from __future__ import annotations

from collections.abc import Sequence

from jupyter_ai_ci.context.build import HINT, Context, cell_parts
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.tokens import count_tokens

__all__ = ["CHANGED", "UNCHANGED", "changes", "follows"]

CHANGED = "## Notebook context: what changed since the last request\n"
UNCHANGED = "## Notebook context: unchanged since the last request"


def _told(text: str, said: str) -> bool:
    """A cell the conversation has shown already: its code and its output are both in it."""
    parts = cell_parts(text)
    if parts is None:
        return False
    source, output = parts[0].strip(), parts[1].strip()
    return source in said and (not output or output in said)


def _grown(text: str, earlier: Sequence[str]) -> str:
    """A one-line list that only grew since (the libraries loaded: ``label: a, b, c``), told as
    what it gained; any other piece as it is."""
    label, colon, items = text.partition(": ")
    if not colon or "\n" in text:
        return text
    now = items.split(", ")
    for old in earlier:
        old_label, _, old_items = old.partition(": ")
        if old_label == label and "\n" not in old and set(had := old_items.split(", ")) <= set(now):
            return f"{label}, new since the last request: {', '.join(i for i in now if i not in had)}"
    return text


def changes(before: Context, now: Context, conversation: Sequence[Message]) -> str:
    """The pieces of ``now`` that ``before`` did not hold and ``conversation`` did not show,
    each under its section's title, in the order a full context writes them."""
    seen = set(before.pieces)
    said = "\n".join(m.content for m in conversation)
    lines: list[str] = []
    hints: list[str] = []
    titled: set[str] = set()
    for title, text in now.pieces:
        if title == HINT:  # said next to the request each time: a small model heeds what is near it
            hints.append(text)
        elif (title, text) not in seen and not _told(text, said):
            lines += [title] if title and title not in titled else []
            titled.add(title)
            lines.append(_grown(text, [old for t, old in before.pieces if t == title]))
    return "\n".join([CHANGED.rstrip("\n"), *lines, *hints] if lines else [UNCHANGED, *hints])


def follows(conversation: Sequence[Message], before: Context, now: Context, limit: int) -> str | None:
    """What to send after ``conversation`` (the earlier request's, system text first), or None
    when the conversation and the changes together would pass ``limit`` tokens: the follow-up
    is then sent as a first request is, with the full context (the cache is lost, the prompt
    stays bounded), and the conversation starts again from it."""
    if any(c.text and not c.pieces for c in (before, now)):  # a context that does not say its pieces
        return None
    text = changes(before, now, conversation[1:])
    used = sum(count_tokens(m.content) for m in conversation[1:]) + count_tokens(text)
    return text if used <= limit else None
