"""A figure's picture and a hosted endpoint (issue #40): asked once, in a real kernel.

The hosted endpoint is ``http://hosted.example/v1`` with the scripted model as the HTTP proxy
(``HTTP_PROXY``), so the client sends to a name that is neither this machine nor a private
network, exactly as it would to a provider, and the scripted server sees the URL it was sent to.
The person answers the magic's question over the kernel's stdin channel, as JupyterLab's
input box does.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from jupyter_ai_ci.testing import Reply, ScriptedOpenAIServer
from jupyter_ai_ci.testing.replies import image_parts

from .kernel_helpers import CellRun, start_kernel

pytestmark = pytest.mark.timeout(180)

HOSTED = "http://hosted.example/v1"
BARS = ("import matplotlib.pyplot as plt\n"
        "plt.bar(['jan', 'feb', 'mar'], [4, 9, 2])\n"
        "plt.show()")
DESCRIBED = "3 bars left to right: jan=4, feb=9, mar=2"
QUESTION = "a figure's picture would go to hosted.example, a hosted endpoint"
REQUEST = "%%ask\nwhich month peaks? plot sales by month"
AGAIN = "%%ask\nwhich month is the lowest? plot sales by month"  # another request: the first replays


def py(code: str) -> str:
    return f"Here you go.\n```python\n{code}\n```\n"


@pytest.fixture
def kernel(_server: ScriptedOpenAIServer) -> Iterator[Any]:
    """A kernel whose endpoint is hosted (a gpt-4o, which takes images); a fresh one per test,
    as the answer is kept for the kernel's life."""
    proxy = _server.base_url.removesuffix("/v1")
    km, kc = start_kernel({"OPENAI_BASE_URL": HOSTED, "OPENAI_API_KEY": "", "JUPYTER_AI_CI_MODEL": "gpt-4o",
                           "HTTP_PROXY": proxy, "http_proxy": proxy, "NO_PROXY": "", "no_proxy": ""})
    try:
        assert ask(kc, "%load_ext jupyter_ai_ci", []).status == "ok"
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def ask(kc: Any, code: str, answers: list[str] | None, prompts: list[str] | None = None) -> CellRun:
    """Run ``code``; each question on stdin is answered from ``answers`` (None: no stdin, as a
    headless run has)."""
    messages: list[dict[str, Any]] = []

    def answer(msg: dict[str, Any]) -> None:
        if prompts is not None:
            prompts.append(msg["content"]["prompt"])
        assert answers, f"asked what no answer was given for: {msg['content']['prompt']!r}"
        kc.input(answers.pop(0))

    reply = kc.execute_interactive(code, output_hook=messages.append, timeout=90, allow_stdin=answers is not None,
                                   stdin_hook=answer)
    return CellRun(reply, messages)


def chart(model_server: ScriptedOpenAIServer) -> None:
    model_server.script(py(BARS), Reply("February peaks, at 9.", require=DESCRIBED))


def test_asked_once_allowed_the_picture_goes_and_is_not_asked_about_again(
        kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    chart(model_server)
    prompts: list[str] = []
    run = ask(kernel, REQUEST, ["y"], prompts)
    assert run.status == "ok", run.reply
    assert prompts == ["Send pictures there? [y/N] "]
    assert f"⚠ {QUESTION}" in run.stdout
    assert all(p.startswith(HOSTED) for p in model_server.posts)  # sent to the hosted name
    first, answer = model_server.requests
    assert image_parts(first) == [] and len(image_parts(answer)) == 1
    assert "February peaks, at 9." in run.shown
    # The next request in this kernel: not asked again, the picture goes.
    chart(model_server)
    run = ask(kernel, AGAIN, [])
    assert run.status == "ok", run.reply
    assert QUESTION not in run.stdout and len(image_parts(model_server.requests[1])) == 1


def test_refused_the_words_go_alone_and_it_is_not_asked_again(kernel: Any,
                                                                model_server: ScriptedOpenAIServer) -> None:
    chart(model_server)
    run = ask(kernel, REQUEST, ["n"])
    assert run.status == "ok", run.reply
    assert [len(image_parts(r)) for r in model_server.requests] == [0, 0]
    assert DESCRIBED in model_server.request_texts()[1]  # its description goes either way
    assert "figures go to hosted.example in words only (rejected by the user)" in run.shown
    chart(model_server)
    run = ask(kernel, AGAIN, [])
    assert run.status == "ok" and QUESTION not in run.stdout
    assert [len(image_parts(r)) for r in model_server.requests] == [0, 0]


def test_no_stdin_no_picture_and_yes_up_front_is_no_answer(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    chart(model_server)
    run = ask(kernel, REQUEST, None)  # a headless run: nobody to ask
    assert run.status == "ok", run.reply
    assert [len(image_parts(r)) for r in model_server.requests] == [0, 0]
    assert ("figures go to hosted.example in words only (nobody can be asked here; "
            "%config AskMagics.figures_to_hosted = 'yes' sends them)") in run.shown
    # --yes approves code, not pictures: the person is still asked.
    chart(model_server)
    prompts: list[str] = []
    run = ask(kernel, AGAIN.replace("%%ask", "%%ask --yes"), ["y"], prompts)
    assert run.status == "ok" and prompts == ["Send pictures there? [y/N] "]
    assert len(image_parts(model_server.requests[1])) == 1


def test_the_setting_says_yes_or_no_and_nobody_is_asked(kernel: Any, model_server: ScriptedOpenAIServer) -> None:
    for setting, sent in (("no", 0), ("yes", 1)):
        assert ask(kernel, f"%config AskMagics.figures_to_hosted = '{setting}'", None).status == "ok"
        chart(model_server)
        run = ask(kernel, REQUEST if setting == "no" else AGAIN, [])
        assert run.status == "ok" and QUESTION not in run.stdout, setting
        assert [len(image_parts(r)) for r in model_server.requests] == [0, sent], setting


def test_the_command_line_asks_on_its_terminal_and_without_one_sends_the_words(
        tmp_path: Path, model_server: ScriptedOpenAIServer) -> None:
    import asyncio
    import os

    from jupyter_ai_ci.drivers.terminal import TerminalApprover
    from jupyter_ai_ci.events import AskApproval

    # A real terminal (a pseudo-terminal): the question, then the person's "y".
    request = AskApproval((), (f"{QUESTION}, and a picture cannot be masked",), 1, kind="pictures")
    master, slave = os.openpty()
    with os.fdopen(slave, "r") as tty, (tmp_path / "said.txt").open("w+") as said:
        os.write(master, b"y\n")
        approval = asyncio.run(TerminalApprover("a.ipynb: ", said, asyncio.Lock(), tty).aapprove(request))
        said.seek(0)
        assert said.read() == f"a.ipynb: ⚠ {request.reasons[0]}.\na.ipynb: Send pictures there? [y/N] "
    os.close(master)
    assert approval.granted and approval.asked

    # No terminal (CI, a pipe): nobody is asked, the picture stays, the line says how to allow it.
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "a.ipynb")
    chart(model_server)
    proxy = model_server.base_url.removesuffix("/v1")
    env = {**os.environ, "OPENAI_BASE_URL": HOSTED, "JUPYTER_AI_CI_MODEL": "gpt-4o", "HTTP_PROXY": proxy,
           "http_proxy": proxy, "NO_PROXY": "", "no_proxy": ""}
    proc = subprocess.run([sys.executable, "-m", "jupyter_ai_ci.drivers.cli", "run", "a.ipynb",
                           "--prompt", "which month peaks? plot sales by month"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=150, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert [len(image_parts(r)) for r in model_server.requests] == [0, 0]
    assert ("figures go to hosted.example in words only (nobody can be asked (stdin is not a terminal); "
            "c.AICISettings.figures_to_hosted = 'yes' sends them)") in proc.stderr + proc.stdout
