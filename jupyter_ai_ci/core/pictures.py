"""The pictures of an attempt's figures, for a model that takes images (issue #40).

The PNGs the step's outputs hold, at most ``MAX_PICTURES`` a request (the newest) and at most
``MAX_SIDE`` pixels a side: a larger one is scaled down with Pillow (matplotlib's own
dependency, so wherever figures are drawn it is there); without Pillow a larger picture is
left out and its description alone goes.  What a model is sent as a picture is counted in the
token budget at ``IMAGE_TOKENS`` (OpenAI's price of a 1024-px picture in detail: 85 + 4 × 170).

``shown_figures`` says, for the drivers, which of an attempt's figures a request included: the
panel and the magic show the words the model read (and the picture, when it went) with the
attempt that drew them.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import Action, AskApproval, ExecutionResult, Message, Notice
from jupyter_ai_ci.notebook.reader import figure_words, png_size

MAX_PICTURES = 3
MAX_SIDE = 1024
IMAGE_TOKENS = 765


@dataclass(frozen=True)
class ShownFigure:
    """A figure a model request included: the output that holds it (``block``: the index of the
    result, ``output``: of the output in it), the words the model read ("" when only its picture
    went), and whether its picture went too."""

    block: int
    output: int
    text: str
    picture: bool


# Cached: the loop fits a picture for the request, and the driver asks again which went.
@lru_cache(maxsize=8)
def fitted(png: str) -> str | None:
    """``png`` (base64) at most ``MAX_SIDE`` a side; None when it is not a PNG, or too large
    with no Pillow to scale it."""
    size = png_size(png)
    if size is None:
        return None
    if max(size) <= MAX_SIDE:
        return png
    try:
        from PIL import Image
    except ImportError:
        return None
    with Image.open(io.BytesIO(base64.b64decode(png))) as image:
        image.thumbnail((MAX_SIDE, MAX_SIDE))
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=True)
    return base64.b64encode(out.getvalue()).decode("ascii")


def _pngs(results: Sequence[ExecutionResult]) -> Iterator[tuple[int, int, str]]:
    """Each PNG the results showed, with where it is: (result, output, base64)."""
    for block, result in enumerate(results):
        for index, output in enumerate(result.outputs):
            png = (output.get("data") or {}).get("image/png")
            png = "".join(png) if isinstance(png, list) else png  # nbformat may split it in lines
            if isinstance(png, str) and png:
                yield block, index, png.replace("\n", "")


def pictures(results: Sequence[ExecutionResult]) -> tuple[str, ...]:
    """The newest ``MAX_PICTURES`` PNGs the results showed, fitted."""
    found = [png for _, _, png in _pngs(results)]
    kept = [f for f in (fitted(p) for p in found[-MAX_PICTURES:]) if f]
    # The inline backend shows a figure that is a cell's last value twice: sent once.
    return tuple(dict.fromkeys(kept))


def seeing(settings: LoopSettings) -> LoopSettings:
    """``settings`` with ``vision`` and ``ask_vision`` as they are now, decided once: the run
    decided them before its first request, which reads the endpoint's model list."""
    if settings.figures is None:
        return settings
    vision, ask = settings.figures()
    return replace(settings, vision=vision, ask_vision="" if vision else ask, figures=None)


def allowed(results: Sequence[ExecutionResult], settings: LoopSettings,
            attempt: int) -> Generator[Action, Any, tuple[tuple[str, ...], LoopSettings]]:
    """The pictures a message about ``results`` carries, and the settings from then on.  Before
    the first picture would go to a hosted endpoint (``settings.ask_vision``) the person is asked,
    once (a refusal, or nobody to ask, sends the descriptions alone)."""
    settings = seeing(settings)
    if not settings.sees:
        return (), settings
    images = pictures(results)
    if images and not settings.vision:
        approval = yield AskApproval((), (f"a figure's picture would go to {settings.ask_vision}, a hosted "
                                          "endpoint, and a picture cannot be masked (its description in "
                                          "words goes either way)",), attempt, kind="pictures")
        host, settings = settings.ask_vision, replace(settings, vision=approval.granted, ask_vision="")
        if not approval.granted:
            if approval.why:  # "": no request goes (a replay), nothing to say
                yield Notice("context", f"figures go to {host} in words only ({approval.why})", attempt=attempt)
            images = ()
    return images, settings


def shown_figures(message: Message, results: Sequence[ExecutionResult]) -> tuple[ShownFigure, ...]:
    """The figures of ``results`` that ``message`` (a request's last message, as the loop built it)
    told the model of: in words, when it holds their description (its first lines: a long one may
    be cut in the middle), and as a picture, when its picture is among the message's images."""
    newest = list(_pngs(results))[-MAX_PICTURES:] if message.images else []
    sent = {(b, o) for b, o, png in newest if fitted(png) in message.images}
    figures: list[ShownFigure] = []
    for block, result in enumerate(results):
        for index, output in enumerate(result.outputs):
            if output.get("output_type") not in ("display_data", "execute_result"):
                continue
            words = figure_words(output.get("data") or {}, output.get("metadata"))
            told = bool(words) and "\n".join(words.split("\n")[:2]) in message.content
            figure = ShownFigure(block, index, words if told else "", (block, index) in sent)
            # The inline backend shows a figure that is a cell's last value twice: said once.
            if (told or figure.picture) and not any((f.text, f.picture) == (figure.text, figure.picture)
                                                    for f in figures):
                figures.append(figure)
    return tuple(figures)
