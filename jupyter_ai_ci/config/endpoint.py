"""The endpoint's settings: which model, where, with which key, and how a request is sent.

Mixed into ``AICISettings`` (``config/__init__.py``), so each is ``c.AICISettings.x`` like every
other setting; kept apart because they are read by the model layer, not the loop.
"""

from __future__ import annotations

import json
import os
from typing import Any

from traitlets import Any as AnyTrait
from traitlets import Bool, CFloat, CInt, Dict, HasTraits, List, TraitError, Unicode, default, validate

DEFAULT_MODEL = "gpt-4o-mini"
MODEL_ENV = "JUPYTER_AI_CI_MODEL"

# Request fields jupyter-ai-ci sets itself: one of the user's would break the request or its reading.
OWN_REQUEST_FIELDS = ("model", "messages", "stream", "stream_options")


class JSONValue(AnyTrait):
    """Any JSON value; from the command line (``key=value``) the value is read as JSON, so
    ``repeat_penalty=1.0`` is the number 1.0 and ``stop='["x"]'`` a list, else it stays text."""

    def from_string(self, s: str) -> Any:
        try:
            return json.loads(s)
        except ValueError:
            return s




class EndpointSettings(HasTraits):
    model = Unicode(
        help=f"Model name sent to the endpoint. Default: ${MODEL_ENV}, else {DEFAULT_MODEL!r}."
    ).tag(config=True)

    @default("model")
    def _default_model(self) -> str:
        return os.environ.get(MODEL_ENV) or DEFAULT_MODEL

    models = List(
        Unicode(),
        help="The models the chat sidebar may use: its model picker lists them, and a request "
        "for any other name is refused (the panel's messages are untrusted; a name like "
        "'local:/some/path' would start a process). Empty: only AICISettings.model.",
    ).tag(config=True)

    def offered_models(self) -> list[str]:
        """The sidebar's allow-list, the default first: ``models``, else ``[model]``."""
        offered = list(dict.fromkeys(m for m in self.models if m)) or [self.model]
        if self.model in offered:
            offered.remove(self.model)
            offered.insert(0, self.model)
        return offered

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

    # Not configurable: True when the server moved OPENAI_API_KEY into api_key
    # (keep_key_from_kernels), so a rejected key's error names the variable the user set.
    api_key_from_env = Bool(False)

    keep_key_from_kernels = Bool(
        True,
        help="Jupyter server and `jupyter ai-ci run`: take OPENAI_API_KEY out of the process's "
        "environment when the extension loads or the command starts (on Linux also blanking it in "
        "the environment the process started with, which /proc/<pid>/environ shows), so kernels it "
        "starts (which inherit that environment) cannot read or print it; the process's own model "
        "client keeps using it. False: kernels see it as before.",
    ).tag(config=True)

    request_timeout = CFloat(
        120.0, min=1.0, help="Seconds to wait for the model before giving up on a request."
    ).tag(config=True)

    max_request_retries = CInt(
        3,
        min=0,
        help="Times the client retries a request on 429/5xx/connection errors, with "
        "exponential backoff (honouring Retry-After), before reporting the error.",
    ).tag(config=True)

    local_fallback = Bool(
        True,
        help="With no endpoint or key configured, use the packaged local coder model when the "
        "[local] extra is installed. False: say how to configure an endpoint instead.",
    ).tag(config=True)

    local_idle_minutes = CFloat(
        10.0,
        min=0.0,
        help="Minutes without a request (from any of your processes: the server is shared) after "
        "which the managed local model server stops, freeing its memory and removing its log; the "
        "next request starts it again (a few seconds). 0: it runs while any process that used it "
        "is alive. The process that starts the server decides.",
    ).tag(config=True)

    max_reply_tokens = CInt(
        0,
        min=0,
        help="Longest reply, in tokens, asked of the model (max_tokens); 0 leaves it to the "
        "server. The local model uses 1024 when this is 0, so a rambling small model stops.",
    ).tag(config=True)

    stream = Bool(True, help="Stream the model's text as it arrives.").tag(config=True)

    request_extra = Dict(
        value_trait=JSONValue(),
        help="Extra fields for every chat request, merged last (over the fields jupyter-ai-ci sends, "
        "yours win), e.g. {'top_k': 20} or {'repeat_penalty': 1.05}. A llama.cpp server is found "
        "by itself and sent repeat_penalty 1.0; OpenAI refuses fields it does not know. "
        "model, messages, stream and stream_options cannot be set here.",
    ).tag(config=True)

    @validate("request_extra")
    def _check_request_extra(self, proposal: Any) -> dict[str, Any]:
        extra = dict(proposal["value"])
        for key in extra:
            if not isinstance(key, str):
                raise TraitError(f"AICISettings.request_extra: field names are text, not {key!r}")
            if key in OWN_REQUEST_FIELDS:
                raise TraitError(f"AICISettings.request_extra cannot set {key!r}: jupyter-ai-ci sends it "
                                 "itself; remove it (the model is AICISettings.model, streaming .stream)")
        try:
            json.dumps(extra, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TraitError(f"AICISettings.request_extra must be JSON (numbers, text, true/false, "
                             f"null, lists, objects): {exc}") from None
        return extra
