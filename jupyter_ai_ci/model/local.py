"""A managed local model: llama.cpp's OpenAI-compatible server, one per person and model.

With no endpoint configured and the ``[local]`` extra installed, the first request of any
of the person's processes (a kernel, the Jupyter server, the command line) starts
``python -m llama_cpp.server`` with Qwen2.5-Coder-1.5B-Instruct (assembled once from its
installed parts: ``weights.py``); every other process finds it through its runtime file and
uses it too (``llama_server.py``, ``runtime.py``).  It stops after ``idle_timeout`` seconds
without a request (the next request starts it again), not with the process that started it;
its log file goes with it.
``JUPYTER_AI_CI_MODEL=local:PATH`` runs any GGUF model the same way,
``local:qwen2.5-coder-0.5b`` the lighter model of ``[local-small]``, and
``local:hf:OWNER/REPO/FILE.gguf`` a file from the Hugging Face Hub's cache (``hub.py``).  Nothing
here is imported at ``%load_ext``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from jupyter_ai_ci.errors import ModelError
from jupyter_ai_ci.events import Message, ModelReply
from jupyter_ai_ci.model import dialect, ended, hub, runtime, turns, weights
from jupyter_ai_ci.model.client import OpenAIClient, TextCallback
from jupyter_ai_ci.model.endpoint import KEY_KEPT_ENV, Endpoint
from jupyter_ai_ci.model.llama_server import LocalModelError, LocalServer, PortTaken, _servers, server_for, stop_all

__all__ = ["LocalClient", "LocalModelError", "LocalServer", "PortTaken", "bundled_model", "localized",
           "materialize", "server_for", "stop_all", "target"]

LOCAL_PREFIX = "local:"
# Told once, on the first request that falls back to the local model.  Measured (docs/benchmarks.md):
# the 1.5B model gets 51 % of our pandas task suite and 85 % of 13 held-out questions right
# within three attempts.
TINY_MODEL_NOTE = (
    "using {name}, a small local model (llama.cpp on this machine's CPU, offline): fine for everyday "
    "pandas, often wrong on harder analysis; set OPENAI_API_KEY or OPENAI_BASE_URL for a stronger model"
)


def llama_server_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


# ---- which model file (kept apart from the server's launch) ----------------

def split_model(path: Path) -> weights.SplitModel | None:
    """The packaged model whose assembled file ``path`` is, if it is one."""
    return next((m for m in weights.MODELS if path == weights.cache_dir() / m.file_name), None)


def bundled_model() -> Path | None:
    """The packaged model used with no endpoint: where its assembled GGUF is (or will be, on first
    use); found without importing anything."""
    model = weights.installed()
    return weights.cache_dir() / model.file_name if model is not None else None


def materialize(path: Path, say: Callable[[str], None] = lambda text: None) -> Path:
    """``path`` ready to load: a packaged model is assembled and verified on first use, a Hub
    model fetched into the Hub's cache (or found there) and linked."""
    model = split_model(path)
    if model is not None:
        return weights.ready(model, say)
    return hub.fetch(path, say) if hub.is_address(path) else path


def model_title(path: Path) -> str:
    model = split_model(path)
    return model.title if model is not None else path.name



def target(endpoint: Endpoint, fallback: bool = True) -> Path | None:
    """The GGUF file ``endpoint`` should be served from, or None; starts nothing.

    A ``local:PATH`` model (or ``local:NAME`` of a packaged one) always; the
    packaged coder model when no endpoint or key is configured and the local extra
    is installed."""
    if endpoint.model.startswith(LOCAL_PREFIX):
        spec = endpoint.model[len(LOCAL_PREFIX):]
        model = weights.by_name(spec)
        if model is not None:
            return weights.cache_dir() / model.file_name
        return hub.address(spec) if spec.startswith(hub.PREFIX) else Path(spec).expanduser()
    if fallback and not endpoint.base_url and not endpoint.api_key and llama_server_installed() \
            and not os.environ.get(KEY_KEPT_ENV):  # a key exists, kept from this kernel: say so instead
        return bundled_model()
    return None


def localized(endpoint: Endpoint, path: Path) -> Endpoint:
    """The model name users see and replay records keep for a local model."""
    return replace(endpoint, model=path.stem, base_url="http://127.0.0.1/v1", api_key="local",
                   timeout=max(endpoint.timeout, 600.0),  # two slow cores, maybe a busy machine
                   max_tokens=endpoint.max_tokens or 1024,  # a whole analysis in code, not a story
                   # Always streamed, whatever AICISettings.stream says: the server then stops a
                   # request whose kernel died at the next token it cannot send, where a whole
                   # reply would be generated for nobody while other notebooks wait in line.
                   stream=True,
                   extra_body=(("repeat_penalty", 1.0),),  # llama.cpp's 1.1 default hurts code
                   probe=False,  # known to be llama-cpp-python: no need to ask it
                   kind=dialect.LLAMA_CPP,  # so it is never sent n (model/dialect.py)
                   base_url_from="the local model server's port", api_key_from="the local model server's key")


class LocalClient:
    """``ModelClient`` that starts (or restarts) the local server on first use."""

    # A model small enough for this machine's CPU: fixes are asked from the start (fix_from_start).
    runs_locally = True

    def __init__(self, endpoint: Endpoint, path: Path, say: Callable[[str], None],
                 idle_timeout: float = 0.0) -> None:
        self.endpoint = localized(endpoint, path)
        self.idle_timeout = idle_timeout
        self.path = path
        self.say = say
        self.bundled = not endpoint.model.startswith(LOCAL_PREFIX)

    def _server(self) -> tuple[LocalServer, runtime.Lease]:
        """The person's server for this model (found or started) and a lease on it: it is not
        stopped for idleness until ``lease.end()``, or this process's death."""
        first = self.path not in _servers
        if first:
            materialize(self.path, self.say)
        lease = runtime.Lease(self.path)
        try:
            server = server_for(self.path, self.idle_timeout, self.say)
        except BaseException:
            lease.end()
            raise
        if first:
            what = TINY_MODEL_NOTE.format(name=model_title(self.path)) if self.bundled else \
                f"using the local model {model_title(self.path)} (llama.cpp)"
            self.say(f"· {what}\n")
        return server, lease

    def _client(self) -> OpenAIClient:
        """The SDK client of the running server (found or started if need be)."""
        server, lease = self._server()
        lease.end()
        return server.client(self.endpoint)

    def complete(self, messages: Sequence[Message], on_text: TextCallback | None = None,
                 temperature: float | None = None, n: int = 1) -> ModelReply:
        with turns.Ticket(self.path) as ticket:  # one request at a time, in arrival order (turns.py)
            ticket.wait(self.say, patience=self.endpoint.timeout)
            server, lease = self._server()
            with lease:
                try:
                    return server.client(self.endpoint).complete(messages, on_text, temperature, n=n)
                except ModelError as exc:
                    raise _ended(exc, server) from None

    async def acomplete(self, messages: Sequence[Message], on_text: TextCallback | None = None,
                        temperature: float | None = None, n: int = 1) -> ModelReply:
        with turns.Ticket(self.path) as ticket:
            await ticket.await_turn(self.say, patience=self.endpoint.timeout)
            # Starting the server (or waiting for its lock) blocks for seconds: off the event loop.
            starting = asyncio.get_running_loop().run_in_executor(None, self._server)
            try:
                server, lease = await asyncio.shield(starting)
            except asyncio.CancelledError:  # Stop while it starts: the start goes on, its lease must end
                starting.add_done_callback(_end_lease)
                raise
            with lease:
                try:
                    return await server.client(self.endpoint).acomplete(messages, on_text, temperature, n=n)
                except ModelError as exc:  # the panel's and the command line's requests are told the same
                    raise await asyncio.get_running_loop().run_in_executor(None, _ended, exc, server) from None


def _ended(error: ModelError, server: LocalServer) -> ModelError:
    """``error``, or, when the server this request used died under it, how it ended and what to do
    (``ended.py``).  Read holding the request's turn and lease: no other request starts the next
    server before the keeper has said how this one ended."""
    return error if server.alive else LocalModelError(ended.reason(server.model_path, server.pid))


def _end_lease(started: asyncio.Future[tuple[LocalServer, runtime.Lease]]) -> None:
    """A start nobody waits for any more: the server stays for the next request, the lease goes."""
    if not started.cancelled() and started.exception() is None:
        started.result()[1].end()
