"""Which server is behind an OpenAI-compatible endpoint, and the request fields that help code there.

The same weights answer worse behind a user's own ``llama_cpp.server`` than as the managed
local model: llama-cpp-python applies ``repeat_penalty`` 1.1 unless told otherwise, and a
penalty on repeated tokens hurts code, which repeats names and brackets by nature (on the
success suite, 32/43/43 % against 38/51/51 % with 1.0).  So the first request to an endpoint
asks its ``/v1/models`` once, and a llama.cpp server is sent ``repeat_penalty`` 1.0.

- OpenAI and Azure OpenAI are never asked and never sent a field of ours: they refuse unknown
  fields (400) and their models need none.
- llama.cpp says who it is: llama-server sends ``Server: llama.cpp`` and lists its models as
  ``owned_by: "llamacpp"`` (with a ``meta`` object); llama-cpp-python lists ``owned_by: "me"``
  with a ``permissions`` list, and a model file's path as the id unless an alias is set.
- Ollama lists ``owned_by`` as the model name's namespace, ``"library"`` for the models it
  ships.  Its ``/v1/chat/completions`` reads only the OpenAI fields it knows and drops the
  rest (``repeat_penalty``, ``options``), so nothing of ours would arrive: its
  ``repeat_penalty`` (1.1 unless the model's Modelfile says otherwise) is set with
  ``PARAMETER repeat_penalty 1`` in a Modelfile (docs/configuration.md).
- Anything else, or a probe that fails or is slow: ``unknown``, sent nothing extra.

What the list says each model takes (images) is kept too, for ``vision = 'auto'`` (model/listed.py).

Candidates (core/consensus.py) ask for several choices in one request, ``n``: neither llama.cpp
nor Ollama is ever sent it (they give one choice), every other server is (``takes_n``) until it
refuses it: one that answers ``n`` > 1 with a 400 (Groq: "'n' : number must be at most 1") is
asked again without it, and that model there is never sent it again in this process
(``refuses_n``): a proxy such as OpenRouter may take ``n`` for one model and not another.

A probe that could not connect, or was answered "not now" (a server still loading its model,
a rejected key, 5xx), is not remembered: the request itself fails or waits the same way, and the
next one asks again.  Any other answer is remembered for the process.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from jupyter_ai_ci.model import listed, transport

__all__ = ["LLAMA_CPP", "OLLAMA", "OPENAI", "PROBE_TIMEOUT", "UNKNOWN", "adetect", "detect", "fields_for",
           "forget", "kind_from_models", "openai_hosted", "refused_n", "refuses_n",
           "takes_n"]

LLAMA_CPP, OLLAMA, OPENAI, UNKNOWN = "llama.cpp", "ollama", "openai", "unknown"
PROBE_TIMEOUT = 2.0  # seconds: a local server answers /v1/models in milliseconds

# What each kind is sent on top of the OpenAI fields.  Ollama: nothing, it would be dropped.
_FIELDS: dict[str, tuple[tuple[str, object], ...]] = {
    LLAMA_CPP: (("repeat_penalty", 1.0),),
}

# Kinds that answer one choice whatever ``n`` asks (llama-server, llama-cpp-python, Ollama's
# /v1): never sent ``n``.  K candidates there are K requests, which share the prompt's cached
# prefix (the server keeps it from one request to the next), so the prompt is not paid K times.
_ONE_CHOICE = frozenset({LLAMA_CPP, OLLAMA})

_kinds: dict[str, str] = {}
_no_n: set[tuple[str, str]] = set()  # (base URL, model) pairs that refused n > 1
_lock = threading.Lock()


def openai_hosted(base_url: str | None) -> bool:
    """True for OpenAI's and Azure's own endpoints (no base URL: the SDK's api.openai.com)."""
    if not base_url:
        return True
    host = (urlparse(base_url).hostname or "").lower().rstrip(".")
    return host == "api.openai.com" or host.endswith((".openai.com", ".openai.azure.com"))


def kind_from_models(payload: Any, headers: Mapping[str, str]) -> str:
    """The kind of server that answered ``GET /models`` with ``payload`` (parsed JSON) and
    ``headers``.  Tolerant: any shape that is not recognised is ``unknown``."""
    server = ",".join(v for k, v in headers.items() if k.lower() == "server").lower()
    if any(part.strip().startswith("llama.cpp") for part in server.split(",")):
        return LLAMA_CPP
    models = payload.get("data") if isinstance(payload, dict) else None
    for model in models if isinstance(models, list) else ():
        if not isinstance(model, dict):
            continue
        owner = str(model.get("owned_by", "")).lower()
        if owner == "llamacpp" or (owner == "me" and ("permissions" in model
                                                      or str(model.get("id", "")).endswith(".gguf"))):
            return LLAMA_CPP
        if owner in ("library", "ollama"):
            return OLLAMA
    return UNKNOWN


def fields_for(kind: str) -> tuple[tuple[str, object], ...]:
    """The request fields that help code on a server of this kind."""
    return _FIELDS.get(kind, ())


def takes_n(kind: str, base_url: str | None, model: str) -> bool:
    """Whether a request for ``model`` to a server of this kind at ``base_url`` may ask for
    several choices (``n``) at once.  Any other server is asked: one that ignores ``n`` gives one
    choice, and is asked again; one that refused it for this model is not asked again."""
    with _lock:
        refused = (str(base_url), model) in _no_n
    return kind not in _ONE_CHOICE and not refused


def refused_n(exc: Exception, n: int) -> bool:
    """Whether ``exc``, the answer to a request for ``n`` choices, may be a refusal of ``n``: a
    400 or 422 to ``n`` > 1.  The request is then sent again for one choice; a 400 with another
    cause fails again there and is raised as it is."""
    import openai

    return n > 1 and isinstance(exc, openai.APIStatusError) and exc.status_code in (400, 422)


def refuses_n(base_url: str | None, model: str) -> None:
    """The server at ``base_url`` answered ``n`` > 1 for ``model`` with an error and ``n`` = 1
    without: remembered."""
    with _lock:
        _no_n.add((str(base_url), model))


def detect(sdk: Any, base_url: str | None) -> str:
    """The kind of server at ``base_url``, asked at most once a process with ``sdk`` (an
    ``openai.OpenAI``: its key, proxies and TLS settings) and remembered."""
    kind = _known(base_url)
    if kind is not None:
        return kind
    try:
        reply = sdk.get("/models", cast_to=transport.http_library().Response, options=_PROBE_OPTIONS)
        return _read(str(base_url), reply)
    except Exception as exc:  # noqa: BLE001 -- any failure is "unknown": the request goes out plain
        return _failed(str(base_url), exc)


async def adetect(sdk: Any, base_url: str | None) -> str:
    """``detect`` with an ``openai.AsyncOpenAI``."""
    kind = _known(base_url)
    if kind is not None:
        return kind
    try:
        reply = await sdk.get("/models", cast_to=transport.http_library().Response, options=_PROBE_OPTIONS)
        return _read(str(base_url), reply)
    except Exception as exc:  # noqa: BLE001
        return _failed(str(base_url), exc)


_PROBE_OPTIONS = {"timeout": PROBE_TIMEOUT, "max_retries": 0}


def _read(base_url: str, reply: Any) -> str:
    """The kind the list in ``reply`` shows, remembered, with what it says its models take."""
    try:
        payload = reply.json()
    except ValueError:
        payload = None
    kind = kind_from_models(payload, reply.headers)
    listed.learn(base_url, payload, serves_one=kind == LLAMA_CPP)
    return _remember(base_url, kind)


def _known(base_url: str | None) -> str | None:
    if openai_hosted(base_url):
        return OPENAI  # never asked: it costs OpenAI's users nothing
    with _lock:
        return _kinds.get(str(base_url))


def _remember(base_url: str, kind: str) -> str:
    with _lock:
        return _kinds.setdefault(base_url, kind)  # two first requests at once: the first answer


def _failed(base_url: str, exc: Exception) -> str:
    import openai

    if isinstance(exc, openai.APIStatusError):
        # llama-server names itself even in the 503 it answers while it loads the model.
        kind = kind_from_models(None, exc.response.headers)
        if kind != UNKNOWN or exc.status_code not in _NOT_YET:
            return _remember(base_url, kind)
        return UNKNOWN  # not ready, or the key is being fixed: ask again next time
    if isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError):
        return UNKNOWN  # nothing listens yet: ask again once it does
    return _remember(base_url, UNKNOWN)


# Answers that say nothing about the server yet (still loading, overloaded, a key being fixed).
_NOT_YET = frozenset({401, 403, 408, 429, 500, 502, 503, 504})


def forget() -> None:
    """Ask every endpoint again (tests; a server replaced by another at the same address)."""
    with _lock:
        _kinds.clear()
        _no_n.clear()
    listed.forget()
