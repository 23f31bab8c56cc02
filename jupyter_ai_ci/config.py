"""Settings shared by the magic, the server extension and the command line.

Every setting is a traitlet with ``help=`` and ``config=True``, so it works
from ``%config``, ``ipython_config.py`` / ``jupyter_server_config.py`` and the
command line alike.  ``c.AICISettings.x`` reaches every driver;
``c.AskMagics.x`` only the magic.
"""

from __future__ import annotations

import os

from traitlets import Bool, CFloat, CInt, Dict, List, Unicode, default
from traitlets.config import Configurable

DEFAULT_MODEL = "gpt-4o-mini"
MODEL_ENV = "JUPYTER_AI_CI_MODEL"


class AICISettings(Configurable):
    model = Unicode(
        help=f"Model name sent to the endpoint. Default: ${MODEL_ENV}, else {DEFAULT_MODEL!r}."
    ).tag(config=True)

    @default("model")
    def _default_model(self) -> str:
        return os.environ.get(MODEL_ENV) or DEFAULT_MODEL

    base_url = Unicode(
        "",
        help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1. "
        "Empty: the openai SDK's own OPENAI_BASE_URL (or api.openai.com).",
    ).tag(config=True)

    api_key = Unicode(
        "",
        help="API key. Empty: the openai SDK's own OPENAI_API_KEY. Prefer the environment "
        "variable; a key in a config file is easy to leak.",
    ).tag(config=True)

    retries = CInt(
        2,
        min=0,
        help="Fix attempts after a failed attempt (per step): at most retries+1 attempts.",
    ).tag(config=True)

    steps = CInt(
        1,
        min=1,
        help="Steps per request. With more than one, a successful step's output goes back to "
        "the model, which writes the next step or ends with prose.",
    ).tag(config=True)

    temperature = CFloat(0.0, min=0.0, max=2.0, help="Sampling temperature.").tag(config=True)

    request_timeout = CFloat(
        120.0, min=1.0, help="Seconds to wait for the model before giving up on a request."
    ).tag(config=True)

    max_request_retries = CInt(
        3,
        min=0,
        help="Times the client retries a request on 429/5xx/connection errors, with "
        "exponential backoff (honouring Retry-After), before reporting the error.",
    ).tag(config=True)

    max_output_chars = CInt(
        4000,
        min=200,
        help="Characters of a cell's output (and of a traceback, doubled) fed back to the "
        "model; longer text keeps its head and tail with a marker.",
    ).tag(config=True)

    max_context_tokens = CInt(
        3000,
        min=200,
        help="Token budget for the notebook context sent with each request: variables, recent "
        "cells, earlier requests and the environment, in that priority. Counted with tiktoken "
        "when it is installed and its encoding is on disk, else estimated at 3.5 characters a "
        "token. The request and a retry's traceback are sent whole, outside this budget.",
    ).tag(config=True)

    context_exclude = List(
        Unicode(),
        help="Variable names kept from the model: not described, and cells that mention them "
        "left out. Shell-style patterns work (e.g. ['raw_*', 'customers']). Names that look "
        "like secrets (key, token, secret, password) are always masked.",
    ).tag(config=True)

    stream = Bool(True, help="Stream the model's text as it arrives.").tag(config=True)

    replay = Bool(
        True,
        help="Re-running an unchanged %%ask (same request, options, model, and named variables' "
        "schema) reuses the code that worked instead of calling the model. --regenerate skips it.",
    ).tag(config=True)

    replay_file = Unicode(
        ".jupyter-ai-ci-replay.json",
        help="Where replay records live, relative to the kernel's working directory (the "
        "notebook's folder). Delete it, or run %ask_replay --clear, to forget them.",
    ).tag(config=True)

    prices = Dict(
        value_trait=List(CFloat(), minlen=2, maxlen=2),
        help="USD per million tokens, {model: [input, output]}, for the cost column of %ask_usage.",
    ).tag(config=True)
