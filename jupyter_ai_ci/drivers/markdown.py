"""The model's Markdown as HTML that is safe to show, with highlighted code.

The model's text is untrusted (it can be prompt-injected by data in the
notebook), and an output the kernel sends during a session is *trusted* by
JupyterLab: its HTML is not sanitized.  So no HTML of the model's reaches the
page: raw HTML in its text is escaped, links with a ``javascript:`` or
``data:`` URL lose it, and images become their alt text (a picture from
anywhere would tell that server the notebook was opened).  Code blocks are
highlighted with pygments (inline styles: they survive JupyterLab's sanitizer
when the notebook is reopened untrusted).

mistune comes with nbconvert (jupyter_server needs it); pygments with IPython.
Both are imported on the first render, never at ``%load_ext``.
"""

from __future__ import annotations

import html
from functools import lru_cache
from typing import Any

CODE_STYLE = ("margin:0.3em 0;padding:0.4em 0.6em;border-radius:3px;overflow-x:auto;"
              "background:var(--jp-cell-editor-background,#f5f5f5);"
              "font-family:var(--jp-code-font-family,monospace);font-size:var(--jp-code-font-size,12px)")


@lru_cache(maxsize=32)
def _lexer(language: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(language or "text")
    except ClassNotFound:
        return get_lexer_by_name("text")


@lru_cache(maxsize=1)
def _formatter() -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(noclasses=True, nowrap=True)  # building its style table costs more than a block


def code_html(code: str, language: str = "python") -> str:
    """One highlighted block (``<pre>``); unknown languages stay plain, escaped."""
    from pygments import highlight

    body = highlight(code, _lexer(language), _formatter())
    # The page's own style for inline code (a box of its own) must not apply inside the block.
    return f'<pre style="{CODE_STYLE}"><code style="background:none;padding:0">{body.rstrip()}</code></pre>\n'


def pre_html(text: str, style: str = "") -> str:
    """Plain text (an output, a traceback) in a ``<pre>``, escaped."""
    return f'<pre style="{CODE_STYLE};{style}">{html.escape(text)}</pre>\n'


@lru_cache(maxsize=1)
def _markdown() -> Any:
    import mistune

    class SafeRenderer(mistune.HTMLRenderer):  # type: ignore[misc,name-defined]
        def block_code(self, code: str, info: str | None = None) -> str:
            language = (info or "").split()[0].lower() if (info or "").strip() else "text"
            return code_html(code.rstrip("\n"), language)

        def image(self, *args: Any, **kwargs: Any) -> str:
            # mistune 2 passes (src, alt, title), mistune 3 (text, url, title): never fetch it.
            alt = kwargs.get("alt") or kwargs.get("text") or (args[1] if len(args) > 1 and
                                                              mistune.__version__.startswith("2") else
                                                              args[0] if args else "")
            return f"[image: {html.escape(str(alt))}]"

    return mistune.create_markdown(escape=True, renderer=SafeRenderer(escape=True),
                                   plugins=["strikethrough", "table"])


def markdown_html(text: str) -> str:
    """The model's Markdown, rendered; anything that fails to render is shown escaped."""
    try:
        return str(_markdown()(text))
    except Exception:  # noqa: BLE001 -- a renderer bug must never hide the model's text
        return pre_html(text)
