"""What lasts between the requests of one driver: conversations, usage, model clients.

A driver keeps one ``Session``: the magic one per kernel, the sidebar one per
panel, the command line one per command.  Conversations are kept per thread
(the sidebar's notebook path; the magic and the command line use one each),
so follow-ups ("now plot it") see the earlier exchange wherever they are typed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.context.build import Context
from jupyter_ai_ci.context.since import follows
from jupyter_ai_ci.core.usage import UsageLog
from jupyter_ai_ci.errors import BudgetExceeded
from jupyter_ai_ci.events import Consensus, Message, Outcome
from jupyter_ai_ci.model.client import AsyncModelClient, ModelClient, OpenAIClient
from jupyter_ai_ci.model.endpoint import Endpoint

# Outcomes worth remembering and replaying: not failures, refusals or budget stops.
KEEPABLE = ("success", "answered", "not-run")
CONVERSATION_TURNS = 3  # earlier exchanges sent with a request


@dataclass(frozen=True)
class Followed:
    """The last request of a thread exactly as it was sent: a follow-up goes after it
    (``context/since.py``)."""

    request: str
    messages: tuple[Message, ...]  # the system text first, the last reply last
    context: Context  # the notebook context it was told


def _as_sent(outcome: Outcome) -> tuple[Message, ...]:
    """The run's conversation, or () when it does not lead to what ran: a vote's winner other
    than the first candidate (its reply is not in it), a run answered from a record."""
    messages = outcome.messages
    if outcome.requests == 0 or not messages or messages[0].role != "system":
        return ()
    replies = "\n".join(m.content for m in messages if m.role == "assistant")
    # Import lines aside: the loop puts a missing conventional import on top (core/imports.py).
    if any(line not in replies for cell in outcome.cells for line in cell.code.splitlines()
           if line.strip() and not line.startswith(("import ", "from "))):
        return ()
    # Pictures are not kept: a request carries at most a few, those of its own results.
    return tuple(replace(m, images=()) if m.images else m for m in messages)


class Session:
    def __init__(self, settings: AICISettings,
                 fixed_model: tuple[Endpoint, ModelClient | AsyncModelClient] | None = None) -> None:
        self.settings = settings
        self.fixed_model = fixed_model  # a benchmark's shared client: every request uses it
        self.usage = UsageLog()
        self._conversations: dict[str, list[Message]] = {}
        self._followed: dict[str, Followed] = {}
        self._clients: dict[Endpoint, OpenAIClient] = {}
        # The last vote whose candidates disagreed, per thread and request: "use this one" applies
        # one of its other groups (``Options.use``).  Kept in memory only, like the conversation.
        self._votes: dict[tuple[str, str], Consensus] = {}

    def keep_vote(self, thread: str, request: str, consensus: Consensus | None) -> None:
        key = (thread, request.strip())
        if consensus is not None and len(consensus.groups) > 1:
            self._votes[key] = consensus
        elif consensus is None or not consensus.chosen:  # asked anew: its old vote is gone
            self._votes.pop(key, None)

    def vote(self, thread: str, request: str) -> Consensus | None:
        return self._votes.get((thread, request.strip()))

    def conversation(self, thread: str = "") -> list[Message]:
        return self._conversations.setdefault(thread, [])

    def followed(self, thread: str) -> Followed | None:
        """The thread's last request as it was sent, while it is the conversation's last turn
        (New chat, ``--new`` and an undo clear the conversation, and so this)."""
        followed, history = self._followed.get(thread), self.conversation(thread)
        if followed is None or len(history) < 2 or history[-2].content.strip() != followed.request:
            return None
        return followed

    def opening(self, thread: str, context: Context) -> tuple[str, tuple[Message, ...]]:
        """The context text and the earlier messages a request is sent with: after the thread's last
        request as it was sent, with what changed since (a model server's prompt cache then reads
        only what is new), while the two fit one and a half times the context's budget (room is left
        for a fix's traceback in the local model's window); else the full context after the
        earlier exchanges in words."""
        if (followed := self.followed(thread)) is not None:
            text = follows(followed.messages, followed.context, context, context.budget * 3 // 2)
            if text is not None:
                return text, followed.messages[1:]  # the system text is the loop's own
        return context.text, context.history

    def remember(self, thread: str, request: str, outcome: Outcome, context: Context | None = None) -> None:
        """Keep the request and what worked (the code, or the answer in words); and, with the
        ``context`` it was told, the run's conversation as it was sent, for a follow-up."""
        if outcome.status not in KEEPABLE:
            return
        if context is not None and (sent := _as_sent(outcome)):
            self._followed[thread] = Followed(request.strip(), sent, context)
        else:  # a turn this thread's conversation holds in words only: a follow-up starts afresh
            self._followed.pop(thread, None)
        code = "\n\n".join(c.code for c in outcome.cells)
        # The code that worked, then the answer in words if the run ended with one.
        answer = "\n\n".join(part for part in (f"```python\n{code}\n```" if code else "", outcome.answer.strip())
                             if part)
        history = self.conversation(thread)
        if len(history) >= 2 and history[-2].content.strip() == request.strip():
            # The same request run again (a cell re-run, Run All in the same kernel): one turn, the
            # latest, so a later request's replay key sees what a fresh run would.
            del history[-2:]
        history += [Message("user", request), Message("assistant", answer.strip())]
        del history[: -2 * CONVERSATION_TURNS]

    def forget(self, thread: str, request: str) -> None:
        """An undone request leaves the conversation too: a follow-up must not build on it."""
        history = self.conversation(thread)
        if len(history) >= 2 and history[-2].content.strip() == request.strip():
            del history[-2:]
        self._votes.pop((thread, request.strip()), None)

    def token_budget(self) -> tuple[int, str]:
        """The smaller of the per-request budget and what the session has left (0: none), and
        which one it is, in words for the line that stops a request over it."""
        s = self.settings
        limits = [(s.max_tokens_per_request, f"the request's budget is {s.max_tokens_per_request}")] \
            if s.max_tokens_per_request else []
        if s.max_tokens_per_session:
            _, prompt, completion = self.usage.total()
            left = s.max_tokens_per_session - prompt - completion
            if left <= 0:
                raise BudgetExceeded(
                    f"the session's token budget ({s.max_tokens_per_session}) is spent "
                    f"({prompt + completion} used); raise AICISettings.max_tokens_per_session "
                    "or start a new session")
            limits.append((left, f"the session has {left} of its {s.max_tokens_per_session} left"))
        return min(limits, key=lambda limit: limit[0]) if limits else (0, "")

    def model(self, name: str | None, say: Callable[[str], None]) -> tuple[Endpoint, ModelClient | AsyncModelClient]:
        """The endpoint and its client: as configured, or the managed local model when
        nothing is configured and the ``[local]`` extra is installed.  Starts and checks
        nothing: ``Run.check`` says when no endpoint is configured."""
        from jupyter_ai_ci.model import local  # starts processes; only when a request needs a model

        if self.fixed_model is not None:
            return self.fixed_model
        endpoint = Endpoint.from_settings(self.settings, model=name)
        path = local.target(endpoint, self.settings.local_fallback)
        if path is not None:
            client = local.LocalClient(endpoint, path, say, self.settings.local_idle_minutes * 60)
            return client.endpoint, client
        # One client per endpoint: the SDK's connection pool is reused across requests.
        if endpoint not in self._clients:
            self._clients[endpoint] = OpenAIClient(endpoint)
        return endpoint, self._clients[endpoint]
