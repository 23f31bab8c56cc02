"""Models named ``local:hf:OWNER/REPO/FILE.gguf``: a GGUF file from the Hugging Face Hub.

The file is fetched through ``huggingface_hub``'s own cache (``HF_HOME`` /
``HF_HUB_CACHE``), so a model downloaded once -- by us, by ``hf download`` or by any
other tool -- is found again without the network, and ``HF_HUB_OFFLINE=1`` is
honoured.  Our cache holds only a link to it, at the path the rest of the local model
code uses (``address``): the server, its log and the idle timer know nothing of the Hub.

``huggingface_hub`` is imported on the first request for such a model only; it is not a
dependency of the package (the ``[local]`` extra brings it).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from jupyter_ai_ci.model.weights import WeightsError, cache_dir

PREFIX = "hf:"


def parse(spec: str) -> tuple[str, str]:
    """``hf:OWNER/REPO/FILE.gguf`` -> (``OWNER/REPO``, ``FILE.gguf``); a clear error otherwise.
    The file may sit in a folder of the repository; it may not climb out of it."""
    parts = spec[len(PREFIX):].split("/")
    if len(parts) < 3 or not all(parts) or any(p in (".", "..") for p in parts) \
            or not parts[-1].lower().endswith(".gguf"):
        raise WeightsError(f"local:{spec} is not a Hub model: write local:hf:OWNER/REPO/FILE.gguf, "
                           "e.g. local:hf:Qwen/Qwen2.5-Coder-7B-Instruct-GGUF/qwen2.5-coder-7b-instruct-q4_k_m.gguf")
    return "/".join(parts[:2]), "/".join(parts[2:])


def address(spec: str) -> Path:
    """Where the model is served from: a link in our cache to the Hub cache's file."""
    repo, filename = parse(spec)
    return cache_dir() / "hf" / repo.replace("/", "--") / filename


def is_address(path: Path) -> bool:
    return (cache_dir() / "hf") in path.parents


def fetch(path: Path, say: Callable[[str], None] = lambda text: None) -> Path:
    """The model at ``path`` (an ``address``) ready to load: fetched into the Hub cache when it
    is not there yet, and linked.  Run on the first request, never at ``%load_ext``."""
    if path.exists():  # a link whose target is still there (a removed target: fetched again)
        return path
    relative = path.relative_to(cache_dir() / "hf")
    repo, filename = relative.parts[0].replace("--", "/", 1), "/".join(relative.parts[1:])
    try:
        import huggingface_hub
    except ImportError:
        raise WeightsError(f"local:hf:{repo}/{filename} needs huggingface_hub: "
                           "pip install 'jupyter-ai-ci[local]' (or huggingface_hub)") from None
    say(f"· fetching {repo}/{filename} into the Hugging Face cache (once)\n")
    try:
        found = Path(huggingface_hub.hf_hub_download(repo, filename))
    except Exception as exc:  # offline and not cached, a wrong name, no network, a refused token
        raise WeightsError(
            f"could not get {repo}/{filename} from the Hugging Face Hub or its cache ({type(exc).__name__}): "
            f"check the name, or download it where the network allows (hf download {repo} {filename}) "
            "and set HF_HOME to that cache, or use local:PATH.gguf") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    link = path.with_name(f".{path.name}.{os.getpid()}.link")
    link.unlink(missing_ok=True)
    link.symlink_to(found)
    os.replace(link, path)  # atomic: a concurrent first request sees the old state or the link
    return path
