"""Every figure the kernel displays carries its description in the output's metadata.

A figure's picture is made by IPython's display formatter (``display(fig)``, the inline
backend at the end of a cell, a figure as a cell's last value); the formatter is the one
place that has the live object and the output together.  Wrapped here, it adds the
description (``context/figures.py``) under ``figuretext.FIGURE_KEY`` in the metadata, so it
travels with the output to every executor -- in-process, over the messaging protocol, through
the browser -- with no request of its own and no doubt about which output it belongs to.

Started with the kernel tracker at ``%load_ext``, so this module stays cheap: the standard
library only; the describer is imported when a figure is first displayed.  An object is a
figure by its type's module name, so a kernel that never plotted imports no plotting library.
"""

from __future__ import annotations

from typing import Any

from jupyter_ai_ci.notebook.figuretext import FIGURE_KEY
_LIBRARIES = ("matplotlib.", "plotly.")


def _figure_like(obj: Any) -> bool:
    return type(obj).__module__.startswith(_LIBRARIES)


def watch(shell: Any) -> None:
    """Wrap ``shell.display_formatter.format`` (once); ``unwatch`` puts it back."""
    formatter = getattr(shell, "display_formatter", None)
    original = getattr(formatter, "format", None)
    if formatter is None or not callable(original) or hasattr(original, "__wrapped__"):
        return

    def format(obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A001 -- the name IPython calls
        formatted = original(obj, *args, **kwargs)
        if not _figure_like(obj):
            return formatted
        try:
            from jupyter_ai_ci.context.figures import describe

            text = describe(obj)
            data, metadata = formatted
            if text:
                if not any(k.startswith("image/") or "plotly" in k for k in data):
                    text += "\n(the figure did not render: no image was made)"
                metadata = {**(metadata or {}), FIGURE_KEY: text}
            return data, metadata
        except Exception:  # noqa: BLE001 -- describing must never cost the user their figure
            return formatted

    format.__wrapped__ = original  # type: ignore[attr-defined]
    formatter.format = format


def unwatch(shell: Any) -> None:
    formatter = getattr(shell, "display_formatter", None)
    original = getattr(getattr(formatter, "format", None), "__wrapped__", None)
    if original is not None:
        formatter.format = original  # type: ignore[union-attr]
