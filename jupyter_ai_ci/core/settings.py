"""What one run of the agent loop may do: retries, steps, policy, budget.

Its own module so that the loop and its sub-generators (``attempt.py``) can
both read it without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from jupyter_ai_ci.core.answer import AnswerMode
from jupyter_ai_ci.safety.policy import PolicySettings


@dataclass(frozen=True)
class LoopSettings:
    retries: int = 2  # fix attempts after a failed attempt, per step
    steps: int = 1
    run: bool = True
    max_output_chars: int = 4000  # of a step's output fed back to the model
    max_traceback_chars: int = 8000
    policy: PolicySettings = field(default_factory=PolicySettings)
    token_budget: int = 0  # tokens this request may spend (0: no limit); checked before each call
    budget_words: str = ""  # which budget that is: "the session has 94 of its 900 left"
    install_missing: bool = True  # offer to %pip install a missing module, then re-run
    answer: AnswerMode = "auto"  # end with an answer in words: see core/answer.py
    # The request after the model sent back code that already failed is sampled at this
    # temperature (the run keeps it at or above the endpoint's): at temperature 0 the same
    # prompt gets the same code.  0: not sampled.
    repeat_temperature: float = 0.7
    # A failed attempt in the first step is fixed by asking the request anew, the failure said in
    # words, instead of in the conversation that shows the failed code (a small model copies it).
    fix_from_start: bool = False
    # The request is about data (it names a data file or a variable, or asks for a number, a
    # table or a test): an answer in words with no code is no answer (core/datarequest.py).
    needs_code: bool = False
    # Candidates that must agree (core/consensus.py): 1 runs the first working attempt alone.
    candidates: int = 1
    candidate_temperature: float = 0.7  # the candidates after the first are sampled at it
    # Seconds the first candidate's code may take for the others to be asked (0: any): a check the
    # person did not ask for ('auto') must not run a slow cell again (run/rules.py).
    check_within: float = 0.0
    # The model takes images (model/vision.py): the figures a step drew go with the next request
    # (the next step, the answer) as pictures too, beside their descriptions (core/pictures.py).
    vision: bool = False
    # The hosted endpoint (its host) to ask about once, before a figure's picture first goes there
    # (AICISettings.figures_to_hosted 'ask'); "" asks nothing.  Granted, ``vision`` turns on.
    ask_vision: str = ""
    # ``vision`` and ``ask_vision`` asked again at the first figure (core/pictures.py): by then the
    # first request has read the endpoint's model list, which may say what the model takes.
    figures: Callable[[], tuple[bool, str]] | None = field(default=None, compare=False)

    @property
    def sees(self) -> bool:
        """The model may be shown pictures (or will be asked whether it may)."""
        return self.vision or bool(self.ask_vision)
