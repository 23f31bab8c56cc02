"""One request, the same for every driver: the guarantees around the loop.

``Run`` owns what must not depend on where the user typed: the settings the
loop obeys (policy, approval, install, budgets), the replay lookup and
record, the model client that masks every message, the conversation, usage
and provenance.  A driver makes a ``Run``, hands it a snapshot of the kernel
and its executor, reporter and approver (``run.flow``), and presents the
``Result``; it decides nothing that this module decides.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jupyter_ai_ci.context.build import Context
from jupyter_ai_ci.context.privacy import MaskingClient, longest_first, mask_messages, mask_secrets, secret_values
from jupyter_ai_ci.context.snapshot import Query, Snapshot
from jupyter_ai_ci.core.datarequest import about_data
from jupyter_ai_ci.core.loop import agent_loop
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.core.usage import Entry
from jupyter_ai_ci.errors import UsageProblem
from jupyter_ai_ci.events import CallModel, LoopGen, Message, Notice, Outcome
from jupyter_ai_ci.model import vision
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.notebook.replay import Record, ReplayStore, record_from_outcome, replaying
from jupyter_ai_ci.notebook.sinks import provenance
from jupyter_ai_ci.run import choose, lookup
from jupyter_ai_ci.run.drive import Approver, AsyncApprover
from jupyter_ai_ci.run.report import Timings
from jupyter_ai_ci.run.rules import AUTO_CHECK_SECONDS, candidates_for, check_size, judged_in, policy_of
from jupyter_ai_ci.run.session import KEEPABLE, Session
from jupyter_ai_ci.safety.approval import GrantAll, Vouched


@dataclass(frozen=True)
class Options:
    """What the user chose for this request (``%%ask`` flags, panel fields, CLI options)."""

    retries: int | None = None  # None: the settings' value
    steps: int | None = None
    run: bool = True
    model: str | None = None
    regenerate: bool = False  # skip the replay record
    new: bool = False  # forget the earlier exchanges first
    yes: bool = False  # approve what the policy would ask about
    answer: bool | None = None  # end with an answer in words; None: the settings' rule
    candidates: int | str | None = None  # candidates that must agree, or 'auto'; None: the settings' value
    use: int | None = None  # apply this candidate of the request's last vote ("use this one": run/choose.py)


@dataclass
class Result:
    outcome: Outcome
    endpoint: Endpoint
    provenance: dict[str, Any]  # cell metadata for the generated cells
    usage: Entry  # this request's line in the session's usage
    replayed: bool
    timings: Timings = field(default_factory=Timings)
    held: int = 0  # the notebook's generated cells hold the code: nothing ran here


def held_in_cells(n: int, answer: str = "", unanswered: bool = False) -> LoopGen:
    """The loop when the notebook's generated cells hold the code: they run it, in their
    turn; running it here too would apply every in-place step twice.  ``answer``: the
    answer in words the request ended with the first time (from its replay record);
    ``unanswered``: the model could not give it then (the cells run later, so it cannot be
    asked for here: their output is not there yet)."""
    said = "the generated cell below, which holds" if n == 1 else f"the {n} generated cells below, which hold"
    missing = "; its answer in words failed the first time" if unanswered else ""
    yield Notice("replay", f"replayed by {said} this request's code, so this cell runs nothing{missing} "
                           "(--regenerate asks the model again)")
    return Outcome("not-run", answer=answer, reason="held by its generated cells")


class Run:
    def __init__(self, session: Session, request: str, options: Options = Options(), *, thread: str = "",
                 replay_dir: str | os.PathLike[str] | None = None, source: str = "",
                 say: Callable[[str], None] = lambda text: None, held_by: Sequence[str] = ()) -> None:
        self.request = request.strip()
        if not self.request:
            raise UsageProblem("the request is empty: say what you want done")
        check_size(self.request, session.settings.max_request_kb)
        self.session, self.options, self.thread, self.source = session, options, thread, source
        # The generated cells the notebook already holds for this request (docs/reproducibility.md:
        # the cells are the code).  --regenerate asks the model whatever they hold.
        self.held_by = () if options.regenerate or options.use is not None else tuple(held_by)
        # "Use this one": the vote kept from the request's last run, and the group chosen of it.
        self.choice = choose.chosen(session.vote(thread, request), options.use) if options.use is not None else None
        s = session.settings
        budget, budget_words = session.token_budget()
        if options.new:
            session.conversation(thread).clear()
        self.endpoint, self.client = session.model(options.model, say)
        self.local = bool(getattr(self.client, "runs_locally", False))  # the [local] extra's model
        vision, ask_vision = self._figures()  # before the first request: the model's name decides
        self.settings = LoopSettings(
            retries=s.retries if options.retries is None else options.retries,
            steps=s.steps if options.steps is None else options.steps,
            run=options.run,
            max_output_chars=s.max_output_chars,
            max_traceback_chars=s.max_output_chars * 2,
            policy=policy_of(s),
            token_budget=budget,
            budget_words=budget_words,
            install_missing=s.install_missing,
            answer=s.answer if options.answer is None else ("always" if options.answer else "never"),
            # Never below the user's own temperature.
            repeat_temperature=max(s.repeat_temperature, s.temperature) if s.repeat_temperature else 0.0,
            # 'auto' is read in start(), where the request is known to be about data or not.
            candidates=1,
            candidate_temperature=max(s.candidate_temperature, s.temperature),
            fix_from_start=s.fix_from_start == "always" or (
                s.fix_from_start == "auto" and self.local),
            vision=vision,  # figures go as pictures too (model/vision.py)
            ask_vision=ask_vision,
            figures=self._figures if self.endpoint.vision == "auto" else None,
        )
        # Replay records live beside the notebook; a driver that knows no folder keeps none.
        # What goes wrong with the store (a read-only or full folder, a damaged record) is one
        # line in every driver, and never fails the run.
        self.store = ReplayStore(Path(replay_dir) / s.replay_file, say=say) \
            if replay_dir is not None and s.replay else None
        self.record: Record | None = None
        self.key = ""
        # Every secret value the run has been told of: the snapshot's, then those the kernel
        # held after each step (``keep``): a step's variable may be rolled back before its
        # output is sent (security review, #30).  Kept until the run ends, never stored.
        self._kept: set[str] = set()
        self.secrets: tuple[str, ...] = self._known_now()
        # The request as it may be written anywhere, masked before anything is: the panel puts
        # it into each cell it inserts, and a run that ends on a model error never gets the final
        # provenance (security review, #30).  ``interim`` is that metadata; start() masks it
        # again with the kernel's secrets, in place, so a driver may hold the dict.
        self.shown = mask_secrets(self.request, self.secrets)
        self.interim: dict[str, Any] = {"request": self.shown, "model": self.endpoint.model,
                                        "endpoint_host": self.endpoint.host, "source": source}
        self.vouching: Vouched | None = None  # the approver of this run (``approver``)
        self.context: Context | None = None  # the notebook context the loop was told (``start``)

    def _figures(self) -> tuple[bool, str]:
        # Whether figures go as pictures, and the hosted endpoint to ask first; asked again at the
        # first figure, when the endpoint's model list, read by then, may say what the model takes.
        return self.endpoint.takes_images, self.endpoint.host if self.endpoint.asks_for_images else ""

    def check(self) -> None:
        """Raise ``NoEndpoint`` (one line that says what to set) unless a model can be asked."""
        if not self.held_by:  # the generated cells run without a model
            self.endpoint.check()  # a local model's endpoint is always set

    def query(self) -> Query:
        """What to ask the kernel for (``context.snapshot``)."""
        s = self.session.settings
        return Query(self.request, tuple(self.session.conversation(self.thread)), s.max_context_tokens,
                     tuple(s.context_exclude))

    def approver(self, asker: Approver | AsyncApprover | None) -> Approver | AsyncApprover | None:
        """``asker`` (a person), behind ``--yes`` when given; it never approves code from a
        replay record this user did not sign (``GrantAll``).  None: nobody can be asked."""
        inner = GrantAll(asker) if self.options.yes else asker
        # Pictures to a hosted endpoint are asked about once: the answer holds in this process.
        self.vouching = Vouched(inner, vision.Answers(self.endpoint.base_url)) if inner is not None else None
        return self.vouching

    def keep(self, values: Sequence[str]) -> None:
        """Secrets the kernel holds now (called after each step): masked until the run ends."""
        self._kept.update(values)

    def _known_now(self, *more: Sequence[str]) -> tuple[str, ...]:
        """This process's environment, the key the client itself sends, the values kept, and
        ``more``: one tuple, longest first (a secret holding another is masked whole)."""
        found = {*secret_values({}, os.environ), *self._kept, *(v for values in more for v in values)}
        if self.endpoint.api_key:
            found.add(self.endpoint.api_key)
        return longest_first(found)

    def _known(self, snapshot: Snapshot, live: Callable[[], Sequence[str]] | None) -> Callable[[], Sequence[str]]:
        # The kernel's secrets (live in the magic, as of the snapshot elsewhere, and those kept
        # after each step), this process's environment, and the key the client itself sends.
        if live is None:
            return lambda: self._known_now(snapshot.secrets)
        return lambda: self._known_now(live(), snapshot.secrets)

    def start(self, snapshot: Snapshot, live_secrets: Callable[[], Sequence[str]] | None = None
              ) -> tuple[LoopGen, MaskingClient]:
        """The loop to drive (answered from the replay record when there is one) and the
        model client that masks every message it sends."""
        # The snapshot's secrets are the live ones: no code has run since it was taken.
        self.keep(snapshot.secrets)
        self.secrets = self._known_now()
        self.shown = self.interim["request"] = mask_secrets(self.request, self.secrets)
        if self.store is not None:  # the key serves only the replay record
            options = {"steps": self.settings.steps, "run": self.settings.run}
            # The command line's and the panel's thread is the notebook's path: one prompt run over
            # c.ipynb and d.ipynb asks for each (c's code, replayed into d, used c's names).
            self.key, record = lookup.find(self.store, self.request, options, self.endpoint.model, snapshot.named,
                                           self.session.conversation(self.thread), Path(self.thread).name)
            self.record = None if self.options.regenerate or self.choice else record
        # A question about data must be answered by code that ran, whatever the driver; with
        # nothing to run (--no-run, an explanation of a failed cell) words are the answer.
        self.settings = replace(self.settings, policy=judged_in(self.settings.policy, snapshot),
                                needs_code=self.settings.run and about_data(self.request, snapshot.named))
        # The record holds the winner's code alone: a replay never votes again.
        wanted = self.session.settings.candidates if self.options.candidates is None else self.options.candidates
        self.settings = replace(self.settings, candidates=1 if self.record is not None else candidates_for(
            wanted, self.settings.needs_code, self.local, self.settings.policy.mode == "ask"),
            check_within=AUTO_CHECK_SECONDS if wanted == "auto" else 0.0)
        if self.choice is not None:  # no retries: the person chose this code, not a fix of it
            self.settings = replace(self.settings, candidates=1, retries=0, answer="never")
        self.context = snapshot.context  # kept with the conversation, for a follow-up (``finish``)
        text, history = self.session.opening(self.thread, snapshot.context)
        loop = agent_loop(self.request, text, self.settings, history)
        if self.choice is not None:
            loop = choose.applying(loop, *self.choice, self.options.use or 0)
        elif self.held_by:
            loop.close()
            first = self._first_time()
            loop = held_in_cells(len(self.held_by), first.answer, first.unanswered)
        elif self.record is not None:
            loop = replaying(loop, self.record)
        return loop, MaskingClient(self.client, self._known(snapshot, live_secrets))

    def _first_time(self) -> Outcome:
        """How this request ended when it was first asked, from its replay record: only a
        record this user's key signed (another's answer would be shown as this notebook's)."""
        if self.record is None or self.record.unverified:
            return Outcome("not-run")
        return self.record.as_outcome()

    def preview(self, snapshot: Snapshot, fresh: bool = False) -> tuple[list[Message], str]:
        """Exactly what the first request would send, masked, and why it would stop instead (if so).
        ``fresh``: as if the conversation were new (``--new``), which the preview does not clear."""
        text, history = (snapshot.context.text, ()) if fresh else self.session.opening(self.thread, snapshot.context)
        loop = agent_loop(self.request, text, self.settings, history)
        try:
            action = next(loop)
            loop.close()
            messages = list(action.messages) if isinstance(action, CallModel) else []
            stopped = ""
        except StopIteration as stop:  # e.g. the token budget would refuse the request
            messages, stopped = list(stop.value.messages), stop.value.reason or stop.value.status
        return mask_messages(messages, self._known(snapshot, None)()), stopped

    def abandoned(self, model: MaskingClient) -> None:
        """A run that ended in an exception (Stop, Ctrl-C, an endpoint failing after an earlier
        call) still spent the tokens of the calls that were answered: they count in the usage.
        Found by a newcomer: after a Stop the panel's footer said "0 model calls"."""
        if model.calls:
            self.session.usage.add(self.request, self.endpoint.model,
                                   Outcome("failed", usage=model.spent, requests=model.calls), replayed=False)

    def finish(self, outcome: Outcome, timings: Timings | None = None) -> Result:
        """Record the outcome: usage, the replay record, the conversation, provenance."""
        # Replayed: answered from the record alone (a failed replay goes live, and is not).
        if self.held_by:  # nothing ran and nothing was asked: nothing to record
            # But remembered as if it had run: after Run All, a later request finds the same
            # conversation (its replay key includes the earlier requests) and can follow up on it.
            first = self._first_time()
            if first.status != "not-run":
                self.session.remember(self.thread, self.request, first)
            return Result(outcome, self.endpoint, {}, self.session.usage.add(
                self.request, self.endpoint.model, outcome, replayed=True), True, timings or Timings(),
                held=len(self.held_by))
        replayed = self.record is not None and outcome.requests == 0
        entry = self.session.usage.add(self.request, self.endpoint.model, outcome, replayed=replayed)
        # A secret typed into the request is masked at rest too (the record, the cell metadata),
        # with every secret the run was told of.
        self.secrets = self._known_now()
        shown = self.shown = mask_secrets(self.request, self.secrets)
        self.session.keep_vote(self.thread, self.request, outcome.consensus)
        if self.store is not None and outcome.status in KEEPABLE and (outcome.requests or self.choice):
            self.store.put(record_from_outcome(self.key, shown, outcome, self.endpoint.model, self.endpoint.host))
        elif self.store is not None and replayed and self.record is not None and self.record.unverified \
                and outcome.status == "success" and outcome.attempts and self.vouching is not None \
                and self.vouching.vouched:
            # A person approved its code and it worked: signed with this user's key, it now replays
            # silently.  Never merely for being served (--yes approves none of it: GrantAll).  Its
            # model and date were the author's claims: signed, they would read as verified.
            self.store.put(replace(self.record, model=f"{self.record.model or '?'} (made elsewhere, approved by you)",
                                   generated_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
        self.session.remember(self.thread, self.request, outcome, self.context)
        meta = provenance(shown, outcome, self.endpoint.model, self.endpoint.host)
        if self.source:
            meta["source"] = self.source
        return Result(outcome, self.endpoint, meta, entry, replayed, timings or Timings())
