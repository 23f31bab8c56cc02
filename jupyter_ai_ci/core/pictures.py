"""The pictures of an attempt's figures, for a model that takes images (issue #40).

The PNGs the step's outputs hold, at most ``MAX_PICTURES`` a request (the newest) and at most
``MAX_SIDE`` pixels a side: a larger one is scaled down with Pillow (matplotlib's own
dependency, so wherever figures are drawn it is there); without Pillow a larger picture is
left out and its description alone goes.  What a model is sent as a picture is counted in the
token budget at ``IMAGE_TOKENS`` (OpenAI's price of a 1024-px picture in detail: 85 + 4 × 170).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

from jupyter_ai_ci.events import ExecutionResult
from jupyter_ai_ci.notebook.reader import png_size

MAX_PICTURES = 3
MAX_SIDE = 1024
IMAGE_TOKENS = 765


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


def pictures(results: Sequence[ExecutionResult]) -> tuple[str, ...]:
    """The newest ``MAX_PICTURES`` PNGs the results showed, fitted."""
    found: list[str] = []
    for result in results:
        for output in result.outputs:
            png = (output.get("data") or {}).get("image/png")
            png = "".join(png) if isinstance(png, list) else png  # nbformat may split it in lines
            if isinstance(png, str) and png:
                found.append(png.replace("\n", ""))
    kept = [f for f in (fitted(p) for p in found[-MAX_PICTURES:]) if f]
    # The inline backend shows a figure that is a cell's last value twice: sent once.
    return tuple(dict.fromkeys(kept))
