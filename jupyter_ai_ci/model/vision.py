"""Which models are sent a figure's picture, and a model that refuses pictures (issue #40).

``AICISettings.vision``: ``off`` never; ``on`` always (the person said so, for this endpoint,
hosted or not); ``auto`` when the endpoint's model list says the model takes images
(model/listed.py) or, where it says nothing, the model's name is of a family that does (GPT-4o,
4.1, 5, Claude, Gemini, Qwen-VL, LLaVA and the like) and the endpoint is the person's own -- a
loopback or private address -- or the person allows a hosted one: a picture cannot be masked,
so sending what a chart shows to a third party is the person's call (docs/safety.md).
``AICISettings.figures_to_hosted``: ``yes``, ``no``, or ``ask`` -- once per endpoint in a
process, before the first picture would go (``asks``); the answer is kept here (``Answers``).

A model that answers a request with pictures by a 400 that names images is asked again without
them, and that model at that endpoint is not sent pictures again in this process (as
``dialect.refuses_n`` remembers a refused ``n``); its figures' descriptions still go.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from collections.abc import Sequence
from dataclasses import replace
from urllib.parse import urlparse

from jupyter_ai_ci.events import Approval, AskApproval, Message
from jupyter_ai_ci.model import dialect, listed
from jupyter_ai_ci.model.transport import loopback

VisionMode = str  # "auto" | "on" | "off" (config.AICISettings.vision)

# Names of models that take images.  A name that is no family's is sent none under ``auto``.
_FAMILIES = re.compile(
    r"gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-4-vision|gpt-5|chatgpt-4o|\bo[134](?:-|$)|claude|gemini|gemma-?3|"
    r"qwen[\d.]*-?vl|-vl\b|llava|bakllava|pixtral|llama-?3\.2-?vision|llama-?4|vision|minicpm-?v|moondream|"
    r"internvl|phi-?[34](?:\.\d)?-vision|mistral-(?:small|medium)-3",
    re.IGNORECASE,
)
_refused: set[tuple[str, str]] = set()  # (base URL, model) pairs that refused pictures
_answers: dict[str, bool] = {}  # a hosted base URL -> whether the person let pictures go there
_lock = threading.Lock()


def family_takes_images(model: str) -> bool:
    return bool(_FAMILIES.search(model.rsplit("/", 1)[-1]))


def _sees(base_url: str | None, model: str) -> bool:
    """Whether ``model`` takes images, by what the endpoint's model list said of it where it said
    anything (model/listed.py; read with the first request), else by its family's name."""
    said = listed.takes_images(base_url, model)
    return family_takes_images(model) if said is None else said


def own_endpoint(base_url: str | None) -> bool:
    """A loopback or private-network endpoint: the person's own machine or network."""
    if loopback(base_url):
        return True
    host = (urlparse(base_url or "").hostname or "").strip("[]")
    try:
        return ipaddress.ip_address(host).is_private
    except ValueError:
        return host.endswith((".local", ".internal", ".lan"))


def takes_images(mode: VisionMode, base_url: str | None, model: str, to_hosted: str = "no") -> bool:
    """Whether a request for ``model`` at ``base_url`` carries figures as pictures.
    ``to_hosted``: AICISettings.figures_to_hosted ("yes", "no", "ask")."""
    with _lock:
        if (str(base_url), model) in _refused:
            return False
        said = _answers.get(str(base_url))
    if mode == "on":
        return True
    if mode != "auto" or not _sees(base_url, model):
        return False
    return own_endpoint(base_url) or to_hosted == "yes" or (to_hosted == "ask" and said is True)


def asks(mode: VisionMode, base_url: str | None, model: str, to_hosted: str) -> bool:
    """Whether the person is to be asked before a picture goes to this hosted endpoint: it would
    take them, the setting says ``ask``, and nobody answered for this endpoint in this process."""
    if to_hosted != "ask" or mode != "auto" or own_endpoint(base_url) or not _sees(base_url, model):
        return False
    with _lock:
        return (str(base_url), model) not in _refused and str(base_url) not in _answers


class Answers:
    """The person's answer about pictures to ``base_url``, for the run's approver
    (``safety.approval.Vouched``): recalled before asking, kept when a person gave it."""

    def __init__(self, base_url: str | None) -> None:
        self.base_url = str(base_url)

    def recall(self, request: AskApproval) -> Approval | None:
        with _lock:
            said = _answers.get(self.base_url) if request.kind == "pictures" else None
        return None if said is None else Approval(said, "" if said else "you said no for this endpoint", asked=True)

    def heard(self, request: AskApproval, approval: Approval) -> None:
        if request.kind == "pictures" and approval.asked:  # nobody to ask is asked again next time
            with _lock:  # kept for this process
                _answers[self.base_url] = approval.granted


def has_images(messages: Sequence[Message]) -> bool:
    return any(m.images for m in messages)


def without_images(messages: Sequence[Message]) -> tuple[Message, ...]:
    return tuple(replace(m, images=()) if m.images else m for m in messages)


def refused_images(exc: Exception, messages: Sequence[Message]) -> bool:
    """Whether ``exc`` answers a request with pictures by refusing them: a 400 or 422 that names
    an image.  The request is sent again without them; another 400 is raised as it is."""
    import openai

    return (has_images(messages) and isinstance(exc, openai.APIStatusError) and exc.status_code in (400, 422)
            and "image" in str(exc).lower())


def refuses_images(base_url: str | None, model: str) -> None:
    with _lock:
        _refused.add((str(base_url), model))


def for_model(messages: Sequence[Message], takes: bool) -> Sequence[Message]:
    """The messages as this model may see them: pictures only for a model that takes them."""
    return messages if takes or not has_images(messages) else without_images(messages)


def resend(exc: Exception, messages: Sequence[Message], n: int) -> tuple[Sequence[Message], int] | None:
    """What to send instead after ``exc``: without pictures to a model that refused them, for
    one choice to one that refused ``n``; None: ``exc`` stands."""
    if refused_images(exc, messages):
        return without_images(messages), n
    if dialect.refused_n(exc, n):
        return messages, 1
    return None


def remember(base_url: str | None, model: str, sent: Sequence[Message], n: int,
             instead: tuple[Sequence[Message], int]) -> None:
    """``instead`` was answered where ``sent`` was refused: what was left out is not sent to this
    model there again (a request refused again for another cause remembers nothing)."""
    if instead[0] is not sent:
        refuses_images(base_url, model)
    if instead[1] != n:
        dialect.refuses_n(base_url, model)


def forget() -> None:
    """Forget the refusals and the answers (tests)."""
    with _lock:
        _refused.clear()
        _answers.clear()
