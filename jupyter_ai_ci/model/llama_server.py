"""The managed llama.cpp server: one per person and model, found through its runtime file.

Whichever process needs the model first (a kernel, the Jupyter server's panel, the command
line, the MCP server) starts ``python -m llama_cpp.server`` under its keeper (keeper.py), on a
free loopback port, with a per-start secret (local_auth.py), and writes the runtime file
(runtime.py); every other process finds it there.  A file is used only when it is ours and 0600,
its server alive and, before any prompt, proves it knows the secret -- else a new server starts
and replaces the file.  The keeper stops the server after ``idle_timeout`` seconds without a
request (0: once no process that used it is left); a kernel that dies takes nothing down.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from jupyter_ai_ci.errors import ModelUnreachable
from jupyter_ai_ci.model import runtime
from jupyter_ai_ci.model.client import OpenAIClient
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.model.keeper import STOP_GRACE
from jupyter_ai_ci.model.local_auth import NotOurs, Secrets, child_env, new_secrets, ready

# How long a found server may take to prove it is ours: llama-cpp-python answers /v1/models only
# between generations, and another notebook's may take minutes on a CPU.  Only a server that
# holds the port as our process (Linux: checked before any byte) or on a platform that cannot
# tell is asked; our own request would wait for that generation anyway.
FOUND_WAIT = 600.0


class LocalModelError(ModelUnreachable):
    """The local model could not be started or stopped answering."""


class PortTaken(LocalModelError):
    """Something other than our server listens on its port (model/local_auth.py)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalServer:
    model_path: Path
    threads: int = max(2, min(os.cpu_count() or 2, 8))
    context: int = 8192  # a fix request carries the first request, the code and the notes
    startup_timeout: float = 120.0
    port: int = 0
    pid: int = 0  # the llama.cpp server's process
    keeper: int = 0  # its keeper's (keeper.py)
    log_path: Path | None = None
    # Seconds without a request after which the keeper stops the server (0: when no process that
    # used it is left); the setting of whichever process starts it.
    idle_timeout: float = 0.0
    # This start's API key and secret alias (model/local_auth.py): never on the command line.
    secrets: Secrets = field(default_factory=new_secrets, repr=False)
    # SDK clients for this server, one per endpoint: making one costs ~33 ms, and each keeps
    # its connection pool.  A restarted server is a new LocalServer, so its clients are new too.
    clients: dict[Endpoint, OpenAIClient] = field(default_factory=dict, repr=False)

    @classmethod
    def found(cls, entry: runtime.Entry) -> LocalServer:
        return cls(Path(entry.model), port=entry.port, pid=entry.pid, keeper=entry.keeper,
                   log_path=Path(entry.log), secrets=Secrets(entry.key, entry.alias))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def alive(self) -> bool:
        return runtime.running(self.pid)

    @property
    def entry(self) -> runtime.Entry:
        return runtime.Entry(model=str(self.model_path.resolve()), port=self.port, pid=self.pid, keeper=self.keeper,
                             key=self.secrets.key, alias=self.secrets.alias, uid=getattr(os, "getuid", lambda: 0)(),
                             log=str(self.log_path or ""))

    def current(self) -> bool:
        """Alive, and still the one the runtime file names (its keeper removes the file first)."""
        return self.alive and runtime.names(self.model_path, self.pid)

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
        benchmark's jobs), and the first caller sees a dropped connection.  ``--logits_all False``:
        its default keeps every position's logits (for logprobs, which nothing here asks for) in an
        ``n_ctx`` x vocabulary array of floats, 4.6 GB at 8,192 positions, resident as far as the
        longest prompt yet reached: the server grew with use (bench/bench_server_growth.py)."""
        return ["--model", str(self.model_path.resolve()), "--host", "127.0.0.1", "--port", str(self.port),
                "--n_ctx", str(self.context), "--n_threads", str(self.threads), "--interrupt_requests", "False",
                "--logits_all", "False"]

    def _launch(self) -> None:
        fd, log = tempfile.mkstemp(prefix="jupyter-ai-ci-llama-", suffix=".log")
        self.log_path = Path(log)
        command = [sys.executable, "-m", "jupyter_ai_ci.model.keeper", "--model", str(self.model_path.resolve()),
                   "--idle", str(self.idle_timeout), "--log", log, "--starter", str(os.getpid()), "--",
                   sys.executable, "-m", "llama_cpp.server", *self.launch_args()]
        # A session of its own and the root folder: no kernel's kill or folder holds it.
        keeper = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=fd, stdin=subprocess.DEVNULL,
                                  env=child_env(self.secrets, "127.0.0.1", self.port), cwd=os.sep,
                                  start_new_session=True)
        os.close(fd)
        assert keeper.stdout is not None
        with keeper.stdout:
            said = keeper.stdout.readline()
        keeper.wait()  # its first process exits at once: the keeper runs on, nobody's child
        try:
            pids = json.loads(said)
            self.keeper, self.pid = int(pids["keeper"]), int(pids["server"])
        except (ValueError, KeyError, TypeError):
            raise LocalModelError(f"the local model server's keeper did not start ({self._last_log_line()})") from None
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
                if ready(self.base_url, self.port, self.pid, self.secrets):
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

    def _remove_log(self) -> None:
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None

    def stop(self) -> None:
        """Stop the server for everyone (tests, a failed start): its keeper removes the runtime
        file and the log; killed if it does not go within the grace."""
        if self.keeper and runtime.running(self.keeper):
            os.kill(self.keeper, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE + 5
        while (runtime.running(self.keeper) or self.alive) and time.monotonic() < deadline:
            time.sleep(0.05)
        for pid in (self.keeper, self.pid):  # the server dies with its keeper (PR_SET_PDEATHSIG)
            if runtime.running(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        self.clients.clear()  # their pooled connections went with the server
        self._remove_log()  # its prompts' traces stay nowhere


# This process's view: the server it last used for each model (checked before each use).
_servers: dict[Path, LocalServer] = {}


def _found(path: Path, say: Callable[[str], None]) -> LocalServer | None:
    """The server the runtime file names, when it is ours, alive and proves it; else None."""
    try:
        entry = runtime.read(path)
    except runtime.Refused as exc:
        say(f"· {exc}\n")
        return None
    if entry is None or not runtime.running(entry.pid):
        return None  # stale: its server died (nothing is sent to whatever holds its port now)
    server = LocalServer.found(entry)
    try:
        return server if ready(server.base_url, server.port, server.pid, server.secrets, FOUND_WAIT) else None
    except (NotOurs, OSError):
        return None  # not ours, or not answering: a new one replaces it


def server_for(path: Path, idle_timeout: float = 0.0, say: Callable[[str], None] = lambda text: None) -> LocalServer:
    """The running server for ``path``: this process's, the one the runtime file names, or a new one."""
    server = _servers.get(path)
    if server is not None and server.current():
        return server
    with runtime.Lease(path), runtime.start_lock(path):
        runtime.register_user(path)
        server = _found(path, say)
        if server is None:
            server = LocalServer(path, idle_timeout=idle_timeout)
            server.start()
            try:
                runtime.write(server.entry)
            except OSError as exc:
                server.stop()
                raise LocalModelError(f"cannot write {runtime.file_for(path)} ({exc.strerror}): remove it, or set "
                                      "JUPYTER_RUNTIME_DIR to a folder of your own") from None
    _servers[path] = server
    return server


def stop_all() -> None:
    """Stop every server this process used, for every process (tests, benchmarks)."""
    for server in list(_servers.values()):
        server.stop()
    _servers.clear()
