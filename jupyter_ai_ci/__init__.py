"""jupyter-ai-ci: the notebook as a code interpreter.

``%load_ext jupyter_ai_ci`` registers ``%%ask`` and ``%ask``.  Importing this
package stays cheap: the openai SDK is imported on the first request.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    from jupyter_ai_ci.drivers.magic import AskMagics, keep_question_marks

    ipython.register_magics(AskMagics)
    if keep_question_marks not in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.append(keep_question_marks)


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "jupyter_ai_ci.drivers.server"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-ai-ci"}]


def unload_ipython_extension(ipython: Any) -> None:
    # IPython has no public way to unregister magics; drop ours by name.
    from jupyter_ai_ci.context.kernel_state import forget
    from jupyter_ai_ci.drivers.magic import keep_question_marks

    forget(ipython)  # stop recording assignment order
    for kind in ("line", "cell"):
        ipython.magics_manager.magics[kind].pop("ask", None)
    if keep_question_marks in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.remove(keep_question_marks)
