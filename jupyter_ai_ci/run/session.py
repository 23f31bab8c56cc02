"""What lasts between the requests of one driver: conversations, usage, model clients.

A driver keeps one ``Session``: the magic one per kernel, the sidebar one per
panel, the command line one per command.  Conversations are kept per thread
(the sidebar's notebook path; the magic and the command line use one each),
so follow-ups ("now plot it") see the earlier exchange wherever they are typed.
"""

from __future__ import annotations

from collections.abc import Callable

from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.core.usage import UsageLog
from jupyter_ai_ci.errors import BudgetExceeded
from jupyter_ai_ci.events import Consensus, Message, Outcome
from jupyter_ai_ci.model.client import AsyncModelClient, Endpoint, ModelClient, OpenAIClient

# Outcomes worth remembering and replaying: not failures, refusals or budget stops.
KEEPABLE = ("success", "answered", "not-run")
CONVERSATION_TURNS = 3  # earlier exchanges sent with a request


class Session:
    def __init__(self, settings: AICISettings,
                 fixed_model: tuple[Endpoint, ModelClient | AsyncModelClient] | None = None) -> None:
        self.settings = settings
        self.fixed_model = fixed_model  # a benchmark's shared client: every request uses it
        self.usage = UsageLog()
        self._conversations: dict[str, list[Message]] = {}
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

    def remember(self, thread: str, request: str, outcome: Outcome) -> None:
        """Keep the request and what worked (the code, or the answer in words)."""
        if outcome.status not in KEEPABLE:
            return
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
