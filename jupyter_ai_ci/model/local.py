"""A managed local model: llama.cpp's OpenAI-compatible server, started on demand.

With no endpoint configured and the ``[local]`` extra installed, the first
request starts ``python -m llama_cpp.server`` with Qwen2.5-Coder-1.5B-Instruct
(assembled once from its installed parts: ``weights.py``), on a free loopback
port; later requests reuse it; it stops after ``idle_timeout`` seconds without a
request (the next request starts it again) and with the process that started it
(the kernel, the Jupyter server), also when that process is killed; its log file
goes with it.
``JUPYTER_AI_CI_MODEL=local:PATH`` runs any GGUF model the same way,
``local:qwen2.5-coder-0.5b`` the lighter model of ``[local-small]``, and
``local:hf:OWNER/REPO/FILE.gguf`` a file from the Hugging Face Hub's cache (``hub.py``).  Nothing
here is imported at ``%load_ext``.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from jupyter_ai_ci.errors import ModelError, ModelUnreachable
from jupyter_ai_ci.events import Message, ModelReply
from jupyter_ai_ci.model import dialect, hub, weights
from jupyter_ai_ci.model.client import KEY_KEPT_ENV, Endpoint, OpenAIClient, TextCallback
from jupyter_ai_ci.model.local_auth import NotOurs, Secrets, child_env, new_secrets, ready

LOCAL_PREFIX = "local:"
# Told once, on the first request that falls back to the local model.  Measured (docs/benchmarks.md):
# the 1.5B model gets 51 % of our pandas task suite and 85 % of 13 held-out questions right
# within three attempts.
TINY_MODEL_NOTE = (
    "using {name}, a small local model (llama.cpp on this machine's CPU, offline): fine for everyday "
    "pandas, often wrong on harder analysis; set OPENAI_API_KEY or OPENAI_BASE_URL for a stronger model"
)


class LocalModelError(ModelUnreachable):
    """The local model could not be started or stopped answering."""


class PortTaken(LocalModelError):
    """Something other than our server listens on its port (model/local_auth.py)."""


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


STOP_GRACE = 5.0  # seconds a server may take to exit on SIGTERM before it is killed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    # Linux: the server is killed when its parent dies, even by SIGKILL, so a killed kernel
    # leaves no orphan server behind.  SIGKILL, not SIGTERM: on SIGTERM the server finishes the
    # generation in flight first -- minutes of a core and 2-3 GB for nobody (review #38, item 6).
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@dataclass
class LocalServer:
    model_path: Path
    threads: int = max(2, min(os.cpu_count() or 2, 8))
    context: int = 8192  # a fix request carries the first request, the code and the notes
    startup_timeout: float = 120.0
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None
    # Seconds without a request after which the server stops (0: never); in a Jupyter server
    # it would otherwise hold ~0.5 GB until the server stops, long after its kernel is gone.
    idle_timeout: float = 0.0
    busy: int = 0  # requests in flight: never stopped under one
    last_used: float = field(default_factory=time.monotonic)
    timer: threading.Timer | None = field(default=None, repr=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # This start's API key and secret alias (model/local_auth.py): never on the command line.
    secrets: Secrets = field(default_factory=new_secrets, repr=False)
    # SDK clients for this server, one per endpoint: making one costs ~33 ms, and each keeps
    # its connection pool.  A restarted server is a new LocalServer, so its clients are new too.
    clients: dict[Endpoint, OpenAIClient] = field(default_factory=dict, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def client(self, endpoint: Endpoint) -> OpenAIClient:
        """The client that sends ``endpoint``'s requests to this server."""
        endpoint = replace(endpoint, base_url=self.base_url, api_key=self.secrets.key)
        if endpoint not in self.clients:
            self.clients[endpoint] = OpenAIClient(endpoint)
        return self.clients[endpoint]

    def start(self) -> None:
        if not self.model_path.is_file():
            raise LocalModelError(
                f"local model file not found: {self.model_path} — check JUPYTER_AI_CI_MODEL=local:/path/to/model.gguf"
            )
        self.port = self.port or _free_port()
        self.secrets = new_secrets()
        try:
            self._launch()
        except LocalModelError as exc:
            if not isinstance(exc, PortTaken) and "address already in use" not in self._last_log_line().lower():
                raise
            # The port was taken between choosing and binding it (nothing was sent there):
            # once more elsewhere.  Taken again, PortTaken says so.
            self._remove_log()
            self.port = _free_port()
            self._launch()

    def launch_args(self) -> list[str]:
        """The model and how it is served.  ``--interrupt_requests False``: llama-cpp-python's server
        otherwise aborts a reply mid-stream when a second request arrives (two kernels, the
        benchmark's jobs), and the first caller sees a dropped connection."""
        return ["--model", str(self.model_path), "--host", "127.0.0.1", "--port", str(self.port),
                "--n_ctx", str(self.context), "--n_threads", str(self.threads), "--interrupt_requests", "False"]

    def _launch(self) -> None:
        fd, log = tempfile.mkstemp(prefix="jupyter-ai-ci-llama-", suffix=".log")
        self.log_path = Path(log)
        command = [sys.executable, "-m", "llama_cpp.server", *self.launch_args()]
        self.process = subprocess.Popen(command, stdout=fd, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=child_env(self.secrets, "127.0.0.1", self.port),
                                        preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        os.close(fd)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if not self.alive:
                said = self._last_log_line()
                if "address already in use" not in said.lower():  # start() retries that, reading the log
                    self.stop()
                raise LocalModelError(
                    f"the local model server exited ({said}): is {self.model_path} a valid GGUF file?"
                )
            try:
                if ready(self.base_url, self.port, self.process.pid, self.secrets):  # type: ignore[union-attr]
                    return
            except NotOurs as exc:
                self.stop()
                raise PortTaken(
                    f"port {self.port} was taken by another process ({exc}), so the local model was not "
                    "started there and nothing was sent to it; try again (a new port is chosen) — if it keeps "
                    "happening, another user on this machine may be trying to intercept your requests"
                ) from None
            time.sleep(0.2)
        self.stop()
        raise LocalModelError(f"the local model server did not start within {self.startup_timeout:g} s")

    def _last_log_line(self) -> str:
        try:
            lines = [x for x in (self.log_path or Path()).read_text(errors="replace").splitlines() if x.strip()]
        except OSError:
            return "no log"
        errors = [x for x in lines if "rror" in x or "failed" in x or "in use" in x]
        return (errors or lines or ["no output"])[-1].strip()[:200]

    def begin(self) -> None:
        """A request starts: the idle clock stops until it ends."""
        with self.lock:
            self.busy += 1

    def end(self) -> None:
        """A request ended: stop after ``idle_timeout`` seconds unless another comes."""
        with self.lock:
            self.busy = max(0, self.busy - 1)
            self.last_used = time.monotonic()
            self._arm(self.idle_timeout)

    def _arm(self, delay: float) -> None:
        if self.idle_timeout <= 0 or not self.alive:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.timer = threading.Timer(delay, self._idle)
        self.timer.daemon = True
        self.timer.start()

    def _idle(self) -> None:
        with self.lock:
            if self.busy:  # end() re-arms
                return
            left = self.last_used + self.idle_timeout - time.monotonic()
            if left > 0.05:
                self._arm(left)
                return
            if _servers.get(self.model_path) is self:
                del _servers[self.model_path]
        self.stop()

    def _remove_log(self) -> None:
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                # It waits for the reply in flight before it exits: 5 s, then it is killed.
                self.process.wait(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None
        self.clients.clear()  # their pooled connections went with the server
        self._remove_log()  # its prompts' traces stay nowhere


_servers: dict[Path, LocalServer] = {}


def server_for(path: Path, idle_timeout: float = 0.0) -> LocalServer:
    """The running server for ``path``; started (again) when absent, dead or stopped idle."""
    server = _servers.get(path)
    if server is None or not server.alive:
        if server is not None:
            server.stop()  # dead: its log goes too
        server = LocalServer(path, idle_timeout=idle_timeout)
        server.start()
        _servers[path] = server
    server.idle_timeout = idle_timeout
    return server


@atexit.register
def stop_all() -> None:
    for server in list(_servers.values()):
        server.stop()
    _servers.clear()


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

    def _server(self) -> LocalServer:
        first = self.path not in _servers
        if first:
            materialize(self.path, self.say)
        server = server_for(self.path, self.idle_timeout)
        if first:
            what = TINY_MODEL_NOTE.format(name=model_title(self.path)) if self.bundled else \
                f"using the local model {model_title(self.path)} (llama.cpp)"
            self.say(f"· {what}\n")
        server.begin()
        return server

    def _client(self) -> OpenAIClient:
        """The SDK client of the running server (started if need be), idle from now."""
        server = self._server()
        server.end()
        return server.client(self.endpoint)

    def complete(self, messages: Sequence[Message], on_text: TextCallback | None = None,
                 temperature: float | None = None, n: int = 1) -> ModelReply:
        try:
            server = self._server()
            try:
                return server.client(self.endpoint).complete(messages, on_text, temperature, n=n)
            finally:
                server.end()
        except ModelError:
            if self.path in _servers and not _servers[self.path].alive:  # not when it never started
                raise LocalModelError("the local model server stopped unexpectedly; "
                                      "it will be restarted on the next request") from None
            raise

    async def acomplete(self, messages: Sequence[Message], on_text: TextCallback | None = None,
                        temperature: float | None = None, n: int = 1) -> ModelReply:
        import asyncio

        # Starting the server blocks for a second or two: keep it off the event loop.
        server = await asyncio.get_running_loop().run_in_executor(None, self._server)
        try:
            return await server.client(self.endpoint).acomplete(messages, on_text, temperature, n=n)
        finally:
            server.end()
