"""What an endpoint's model list says of each model: whether it takes images (issue #40).

``vision = 'auto'`` knows the common families by name (model/vision.py); where the endpoint's
``GET /models`` -- asked once anyway by model/dialect.py -- says what a model takes, that wins,
both ways: a model named like no family that the list says takes images is sent pictures, one
named like a vision family that the list says reads text only is not.  The fields read:

- OpenRouter (and proxies that copy it): ``architecture.input_modalities`` (``["text", "image"]``),
  or its older ``architecture.modality`` (``"text+image->text"``);
- Mistral: ``capabilities.vision`` (a boolean);
- a ``capabilities`` list holding ``"vision"`` or ``"multimodal"`` (Ollama's own model details say it
  so) and a ``type`` of ``"vlm"`` or ``"llm"`` (LM Studio's own list): read where an OpenAI-style
  list carries them.  A server that serves one model whatever name is asked (llama-server) answers
  for every name with what its list says of that one model.

The list is untrusted input: any shape that is not one of these says nothing, and nothing
here raises.  What is learnt is kept for the process, per base URL, like the server's kind.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["forget", "learn", "takes_images"]

_MAX_MODELS = 5000  # a proxy lists hundreds; more than this is not a model list
_said: dict[str, dict[str, bool]] = {}  # base URL -> model id (lower case) -> takes images
_only: dict[str, bool] = {}  # base URL -> what its one model takes, for a server that serves one
_lock = threading.Lock()


def _modalities(value: Any) -> bool | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value) and value:
        return any(v.lower() == "image" for v in value)
    return None


def said_of(entry: Any) -> bool | None:
    """Whether one entry of a model list says its model takes images (None: it does not say)."""
    if not isinstance(entry, dict):
        return None
    arch = entry.get("architecture")
    if isinstance(arch, dict):
        said = _modalities(arch.get("input_modalities"))
        modality = arch.get("modality")
        if said is None and isinstance(modality, str) and "->" in modality:
            said = "image" in modality.split("->", 1)[0].lower()
        if said is not None:
            return said
    said = _modalities(entry.get("input_modalities"))
    if said is not None:
        return said
    caps = entry.get("capabilities")
    if isinstance(caps, dict) and isinstance(caps.get("vision"), bool):
        return bool(caps["vision"])
    if isinstance(caps, list) and caps and all(isinstance(c, str) for c in caps):
        return any(c.lower() in ("vision", "multimodal") for c in caps)
    kind = entry.get("type")
    if kind in ("vlm", "llm"):
        return str(kind) == "vlm"
    return None


def _names(entry: dict[str, Any]) -> set[str]:
    return {v.lower() for k in ("id", "name", "model", "canonical_slug") if isinstance(v := entry.get(k), str) and v}


def learn(base_url: str | None, payload: Any, serves_one: bool = False) -> None:
    """Keep what ``payload`` (the parsed answer to ``GET /models``) says of its models.
    ``serves_one``: the server answers every model name with its one model (llama-server)."""
    said: dict[str, bool] = {}
    one: list[bool] = []
    if isinstance(payload, dict):
        for key in ("data", "models"):
            entries = payload.get(key)
            if not isinstance(entries, list) or len(entries) > _MAX_MODELS:
                continue
            for entry in entries:
                takes = said_of(entry)
                if takes is None:
                    continue
                one.append(takes)
                for name in _names(entry):
                    said[name] = takes
    with _lock:
        _said[str(base_url)] = said
        if serves_one and one and len(set(one)) == 1:
            _only[str(base_url)] = one[0]


def takes_images(base_url: str | None, model: str) -> bool | None:
    """What the endpoint's list said of ``model``; None: it said nothing, or was not read."""
    with _lock:
        said = _said.get(str(base_url), {}).get(model.lower())
        return _only.get(str(base_url)) if said is None else said


def forget() -> None:
    """Forget every list (tests)."""
    with _lock:
        _said.clear()
        _only.clear()
