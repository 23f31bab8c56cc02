"""Tokens and requests per ``%%ask`` and for the session, with an optional cost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from jupyter_ai_ci.core.pictures import IMAGE_TOKENS
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import Consensus, Message, Outcome, Usage
from jupyter_ai_ci.tokens import estimate_usage


@dataclass(frozen=True)
class Entry:
    request: str
    model: str
    requests: int
    prompt_tokens: int
    completion_tokens: int
    replayed: bool
    agreement: str = ""  # with candidates: "3/3 agree", "disagree 2/3", … ("" without a vote)
    sure: bool = True


def agreement(c: Consensus | None) -> str:
    """How sure a request was, in a table's few characters."""
    if c is None:
        return ""
    if c.chosen:
        return "chosen by you"
    if c.note:
        return f"1 ({c.note})"
    if c.agreed:
        return f"{c.counted}/{c.counted} agree"
    if len(c.groups) > 1:
        return f"disagree {c.groups[0].count}/{c.counted}"
    return "not confirmed"


@dataclass
class UsageLog:
    entries: list[Entry] = field(default_factory=list)

    def add(self, request: str, model: str, outcome: Outcome, replayed: bool) -> Entry:
        vote = outcome.consensus
        entry = Entry(request, model, outcome.requests, outcome.usage.prompt_tokens,
                      outcome.usage.completion_tokens, replayed, agreement(vote), vote is None or vote.sure)
        self.entries.append(entry)
        return entry

    def total(self) -> tuple[int, int, int]:
        return (sum(e.requests for e in self.entries), sum(e.prompt_tokens for e in self.entries),
                sum(e.completion_tokens for e in self.entries))


def cost(entry: Entry, prices: Mapping[str, Sequence[float]]) -> float | None:
    """USD, from prices per million tokens ``{model: [input, output]}``."""
    price = prices.get(entry.model)
    if not price or len(price) != 2:
        return None
    return (entry.prompt_tokens * price[0] + entry.completion_tokens * price[1]) / 1_000_000


def render(log: UsageLog, prices: Mapping[str, Sequence[float]]) -> str:
    if not log.entries:
        return "no %%ask requests in this session yet"
    voted = [e for e in log.entries if e.agreement]
    lines = [f"{'#':>3}  {'request':<40} {'model':<18} {'calls':>5} {'in':>7} {'out':>6}  {'cost':>8}"
             + ("  candidates" if voted else "")]
    total_cost: float | None = 0.0
    for i, e in enumerate(log.entries, 1):
        c = cost(e, prices)
        total_cost = None if c is None or total_cost is None else total_cost + c
        first = e.request.strip().splitlines()[0] if e.request.strip() else ""
        # " (replayed)" fits inside the column: added after it, it pushed the row out of line.
        room = 40 - (len(" (replayed)") if e.replayed else 0)
        label = (first[:room - 2] + "…") if len(first) > room - 1 else first
        label += " (replayed)" if e.replayed else ""
        lines.append(f"{i:>3}  {label:<40} {e.model[:18]:<18} {e.requests:>5} {e.prompt_tokens:>7} "
                     f"{e.completion_tokens:>6}  {'' if c is None else f'${c:.4f}':>8}"
                     + (f"  {e.agreement}" if voted else "").rstrip())
    calls, tin, tout = log.total()
    money = "" if total_cost is None or not prices else f"${total_cost:.4f}"
    lines.append(f"{'':>3}  {'session':<40} {'':<18} {calls:>5} {tin:>7} {tout:>6}  {money:>8}"
                 + (f"  {sum(e.sure for e in voted)} of {len(voted)} sure" if voted else ""))
    if not prices:
        lines.append("(set %config AICISettings.prices = {'model': [usd_per_1M_in, usd_per_1M_out]} for costs)")
    return "\n".join(lines)


def over_budget(settings: LoopSettings, spent: Usage, messages: Sequence[Message]) -> str:
    """Why the next model call, carrying ``messages``, would go over the request's token budget
    ("" when it would not, or there is none)."""
    if not settings.token_budget:
        return ""
    need = spent.total + sum(estimate_usage(m.content) + IMAGE_TOKENS * len(m.images) for m in messages)
    if need <= settings.token_budget:
        return ""
    # A newcomer read "0 tokens spent, … the budget is 94" of a session's 900: say which budget.
    budget = settings.budget_words or f"the budget is {settings.token_budget}"
    return (f"token budget reached: the next model call needs about {need - spent.total} tokens, "
            f"{spent.total} are spent on this request, and {budget}")
