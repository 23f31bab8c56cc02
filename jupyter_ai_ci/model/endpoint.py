"""Where requests go: the endpoint, as the person's settings name it, and what to say when none is.

Its own module so that what depends only on where requests go (the local model, the session, the
error a request maps to) does not import the SDK's client.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from jupyter_ai_ci.errors import NoEndpoint
from jupyter_ai_ci.model import vision

__all__ = ["KEY_KEPT_ENV", "KEY_KEPT_HELP", "NO_ENDPOINT_HELP", "Endpoint"]

if TYPE_CHECKING:
    from jupyter_ai_ci.config import AICISettings

NO_ENDPOINT_HELP = (
    "no model endpoint is configured: set OPENAI_API_KEY to use OpenAI, or OPENAI_BASE_URL "
    "to use any OpenAI-compatible server (Ollama: http://localhost:11434/v1, vLLM, llama.cpp, "
    "Azure …), or pip install 'jupyter-ai-ci[local]' for a small offline model"
)

# Set by the Jupyter server extension in the environment kernels inherit when it kept
# OPENAI_API_KEY out of them (drivers/server/__init__.py): the magic there says why it has no
# key, instead of "set OPENAI_API_KEY" or silently using the tiny local model.
KEY_KEPT_ENV = "JUPYTER_AI_CI_KEY_KEPT"
KEY_KEPT_HELP = (
    "the Jupyter server kept OPENAI_API_KEY out of this kernel so code here cannot read it "
    "(c.AICISettings.keep_key_from_kernels): use the jupyter-ai-ci sidebar, or give this kernel "
    "a key on purpose (c.AICISettings.api_key, or keep_key_from_kernels = False)"
)


@dataclass(frozen=True)
class Endpoint:
    model: str
    base_url: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    timeout: float = 120.0
    max_retries: int = 3
    stream: bool = True
    max_tokens: int = 0  # 0: let the server decide
    # Server-specific request fields (e.g. llama.cpp's repeat_penalty), as pairs to stay hashable.
    extra_body: tuple[tuple[str, object], ...] = ()
    # The user's own fields (AICISettings.request_extra) as a JSON object, sent last, over all.
    request_extra: str = ""
    # Ask the server what it is (model/dialect.py) and send the fields that help code there;
    # False where the fields are known already (the managed local model).
    probe: bool = True
    # The server's kind (model/dialect.py) when it is known without asking: the managed local
    # model is llama.cpp.  "": asked when ``probe``, else unknown.
    kind: str = ""
    # Whether figures go as pictures (model/vision.py): AICISettings.vision and figures_to_hosted.
    vision: str = "auto"
    figures_to_hosted: str = "ask"
    # Where the base URL and the key were set, for the error that asks to check them: the
    # environment, or the configuration (%config, jupyter_*_config.py).  Not part of the identity.
    base_url_from: str = field(default="OPENAI_BASE_URL", compare=False)
    api_key_from: str = field(default="OPENAI_API_KEY", compare=False)

    @classmethod
    def from_settings(cls, s: AICISettings, model: str | None = None) -> Endpoint:
        base_url = s.base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = s.api_key or os.environ.get("OPENAI_API_KEY") or None
        return cls(
            model=model or s.model,
            base_url=base_url,
            api_key=api_key,
            temperature=s.temperature,
            timeout=s.request_timeout,
            max_retries=s.max_request_retries,
            stream=s.stream,
            max_tokens=s.max_reply_tokens,
            request_extra=json.dumps(s.request_extra, sort_keys=True) if s.request_extra else "",
            vision=s.vision,
            figures_to_hosted=s.figures_to_hosted,
            base_url_from="the configured base_url" if s.base_url else "OPENAI_BASE_URL",
            api_key_from="the configured api_key" if s.api_key and not s.api_key_from_env else "OPENAI_API_KEY",
        )

    @property
    def takes_images(self) -> bool:
        return vision.takes_images(self.vision, self.base_url, self.model, self.figures_to_hosted)

    @property
    def asks_for_images(self) -> bool:
        """The person is asked once before a figure's picture goes to this (hosted) endpoint."""
        return vision.asks(self.vision, self.base_url, self.model, self.figures_to_hosted)

    @property
    def host(self) -> str:
        """Where requests go, for messages and provenance: never the key."""
        return _host(self.base_url) if self.base_url else "api.openai.com"

    def check(self) -> None:
        if not self.base_url and not self.api_key:
            raise NoEndpoint(KEY_KEPT_HELP if os.environ.get(KEY_KEPT_ENV) else NO_ENDPOINT_HELP)


@functools.lru_cache(maxsize=16)
def _host(base_url: str) -> str:
    # Asked for every request and its provenance; parsing the URL each time was most of it.
    url = urlparse(base_url)  # hostname drops any user:password@
    return f"{url.hostname}:{url.port}" if url.port else str(url.hostname)
