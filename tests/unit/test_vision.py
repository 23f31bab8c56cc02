"""Which models are sent figures' pictures (model/vision.py), and how they are sent."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from traitlets import TraitError

from jupyter_ai_ci.context.privacy import mask_messages
from jupyter_ai_ci.core.chartcheck import CHART_ENAME
from jupyter_ai_ci.core.fixes import fix_request
from jupyter_ai_ci.core.pictures import MAX_PICTURES, MAX_SIDE, ShownFigure, fitted, pictures, shown_figures
from jupyter_ai_ci.config import AICISettings
from jupyter_ai_ci.core.loop import agent_loop
from jupyter_ai_ci.core.settings import LoopSettings
from jupyter_ai_ci.events import Approval, AskApproval, ErrorInfo, ExecutionResult, Message, Notice
from jupyter_ai_ci.model.client import ScriptedClient
from jupyter_ai_ci.notebook.figuretext import FIGURE_KEY
from jupyter_ai_ci.model.vision import Answers, asks, family_takes_images, forget, own_endpoint, takes_images
from jupyter_ai_ci.run.drive import drive
from jupyter_ai_ci.run.report import SilentReporter
from jupyter_ai_ci.safety.approval import GrantAll, Vouched
from jupyter_ai_ci.notebook.reader import png_size


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4o-mini", "gpt-4.1-nano", "gpt-5", "claude-3-5-sonnet-latest",
                                   "gemini-2.0-flash", "qwen2.5-vl-7b-instruct", "Qwen/Qwen2-VL-2B", "llava:13b",
                                   "llama3.2-vision", "openrouter/anthropic/claude-sonnet-4"])
def test_families_that_take_images(model: str) -> None:
    assert family_takes_images(model)


@pytest.mark.parametrize("model", ["gpt-3.5-turbo", "gpt-4", "qwen2.5-coder-1.5b-instruct", "SmolLM2-135M-Instruct",
                                   "deepseek-coder", "scripted-model", "llama3.1:8b"])
def test_models_that_do_not(model: str) -> None:
    assert not family_takes_images(model)


def test_auto_sends_pictures_to_the_persons_own_endpoint_only_unless_allowed() -> None:
    assert own_endpoint("http://127.0.0.1:8080/v1") and own_endpoint("http://192.168.1.20:11434/v1")
    assert not own_endpoint(None) and not own_endpoint("https://api.openai.com/v1")
    assert takes_images("auto", "http://localhost:11434/v1", "llava")
    assert not takes_images("auto", None, "gpt-4o")  # hosted: a picture cannot be masked
    assert takes_images("auto", None, "gpt-4o", to_hosted="yes")
    assert not takes_images("auto", "http://localhost:8080/v1", "qwen2.5-coder")
    assert takes_images("on", None, "my-own-name") and not takes_images("off", "http://localhost/v1", "llava")


def test_a_message_with_pictures_is_sent_as_parts_and_masking_keeps_them() -> None:
    message = Message("user", "The code ran. key sk-abcdefghijklmnopqrstuvwxyz123456", ("iVBORw0KGgo=",))
    masked = mask_messages([message])[0]
    assert masked.images == message.images and "sk-abcdefghijklmnopqrstuvwxyz123456" not in masked.content
    assert masked.as_dict() == {"role": "user", "content": [
        {"type": "text", "text": masked.content},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}
    assert Message("user", "plain").as_dict() == {"role": "user", "content": "plain"}


def png(width: int, height: int, color: str = "white") -> str:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), color).save(out, format="PNG")
    return base64.b64encode(out.getvalue()).decode()


def test_a_large_picture_is_scaled_to_1024_px_and_a_small_one_kept() -> None:
    small = png(640, 480)
    assert fitted(small) == small
    big = fitted(png(3000, 1500))
    assert big is not None and png_size(big) == (MAX_SIDE, 512)
    assert fitted("bm90IGEgcG5n") is None  # not a PNG


BARS = "Matplotlib figure: 1 axes\naxes 1: bars\n3 bars left to right: a=1, b=2, c=3; ascending"


def drawn(*pngs: str, text: str = BARS) -> ExecutionResult:
    """A block that printed a line, then showed each picture as a described figure."""
    outputs = [{"output_type": "stream", "name": "stdout", "text": "ok\n"}]
    outputs += [{"output_type": "display_data", "metadata": {FIGURE_KEY: f"{text}\n#{i}"},
                 "data": {"image/png": p, "text/plain": "<Figure>"}} for i, p in enumerate(pngs)]
    return ExecutionResult(outputs=tuple(outputs), figures=tuple(f"{text}\n#{i}" for i in range(len(pngs))))


def chart_fix(results: list[ExecutionResult], vision: bool) -> Message:
    """The fix request the loop sends after a chart that contradicts the request."""
    failed = [*results[:-1], replace(results[-1], error=ErrorInfo(CHART_ENAME, "ascend", ""))]
    text = fix_request(["plot()"] * len(failed), failed, LoopSettings())
    return Message("user", text, pictures(failed) if vision else ())


def test_shown_figures_name_what_a_request_told_the_model_and_which_pictures_went() -> None:
    results = [drawn(png(40, 30))]
    assert shown_figures(chart_fix(results, vision=False), results) == (ShownFigure(0, 1, f"{BARS}\n#0", False),)
    assert shown_figures(chart_fix(results, vision=True), results) == (ShownFigure(0, 1, f"{BARS}\n#0", True),)
    # A message that says nothing of them (a request for code again): none.
    assert shown_figures(Message("user", "Reply with code."), results) == ()


def test_only_the_newest_pictures_went_and_a_figure_shown_twice_is_named_once() -> None:
    colors = ["red", "green", "blue", "black", "gray"]
    results = [drawn(png(20, 20, colors[0]), text="another chart"), drawn(*(png(20, 20, c) for c in colors[1:]))]
    shown = shown_figures(chart_fix(results, vision=True), results)
    assert [f.picture for f in shown] == [False] * (len(colors) - MAX_PICTURES) + [True] * MAX_PICTURES
    assert [(f.block, f.output) for f in shown] == [(0, 1), (1, 1), (1, 2), (1, 3), (1, 4)]
    # The inline backend shows a figure that is a cell's last value twice: one line.
    twice = ExecutionResult(outputs=drawn(png(20, 20)).outputs * 2, figures=(f"{BARS}\n#0",))
    assert len(shown_figures(chart_fix([twice], vision=True), [twice])) == 1


# ---- a hosted endpoint: asked once (figures_to_hosted 'ask', the default) ----------------------

HOSTED = "https://api.example.com/v1"


@pytest.fixture
def fresh_answers() -> Iterator[None]:
    forget()
    yield
    forget()


def test_a_hosted_endpoint_is_asked_about_once_and_the_answer_kept(fresh_answers: None) -> None:
    assert asks("auto", HOSTED, "gpt-4o", "ask") and not takes_images("auto", HOSTED, "gpt-4o", "ask")
    # Never asked: its own endpoint, a model that takes no images, 'yes'/'no', vision on/off.
    assert not asks("auto", "http://127.0.0.1:8080/v1", "gpt-4o", "ask")
    assert not asks("auto", HOSTED, "qwen2.5-coder", "ask")
    assert not asks("auto", HOSTED, "gpt-4o", "yes") and takes_images("auto", HOSTED, "gpt-4o", "yes")
    assert not asks("auto", HOSTED, "gpt-4o", "no") and not takes_images("auto", HOSTED, "gpt-4o", "no")
    assert not asks("on", HOSTED, "gpt-4o", "ask") and not asks("off", HOSTED, "gpt-4o", "ask")
    heard = Answers(HOSTED).heard
    heard(AskApproval(("x = 1",), ("runs a process",), 1), Approval(True))  # about code: not kept
    assert asks("auto", HOSTED, "gpt-4o", "ask")
    heard(AskApproval((), ("a picture",), 1, kind="pictures"), Approval(False, "nobody can be asked here"))
    assert asks("auto", HOSTED, "gpt-4o", "ask")  # nobody answered: asked again next time
    heard(AskApproval((), ("a picture",), 1, kind="pictures"), Approval(True, "approved", asked=True))
    assert not asks("auto", HOSTED, "gpt-4o", "ask") and takes_images("auto", HOSTED, "gpt-4o", "ask")
    assert takes_images("auto", HOSTED, "gpt-4.1", "ask")  # the endpoint's answer, whichever model
    assert asks("auto", "https://other.example/v1", "gpt-4o", "ask")  # another endpoint: its own question
    heard(AskApproval((), ("a picture",), 1, kind="pictures"), Approval(False, "rejected by the user", asked=True))
    assert not asks("auto", HOSTED, "gpt-4o", "ask") and not takes_images("auto", HOSTED, "gpt-4o", "ask")
    assert takes_images("auto", HOSTED, "gpt-4o", "yes")  # the setting still wins


def test_the_setting_takes_ask_yes_no_and_the_booleans_it_was() -> None:
    s = AICISettings()
    assert s.figures_to_hosted == "ask"
    s.figures_to_hosted = True
    assert s.figures_to_hosted == "yes"
    s.figures_to_hosted = "NO"
    assert s.figures_to_hosted == "no"
    with pytest.raises(TraitError):
        s.figures_to_hosted = "maybe"


def test_yes_up_front_does_not_send_pictures_a_person_was_not_asked_about() -> None:
    pictures_ = AskApproval((), ("a figure's picture would go to api.example.com",), 1, kind="pictures")
    assert GrantAll().approve(AskApproval(("x = 1",), ("reason",), 1)).granted
    assert not GrantAll().approve(pictures_).granted  # nobody behind --yes to ask

    class Person:
        def approve(self, request: AskApproval) -> Approval:
            return Approval(request.kind == "pictures", "asked")

    assert GrantAll(Person()).approve(pictures_) == Approval(True, "asked")


def charted_loop(settings: LoopSettings, answers: list[bool], wrap: Any = None,
                 model: ScriptedClient | None = None) -> tuple[list[Any], ScriptedClient]:
    """The loop on a request that draws a chart then is answered in words; ``answers``: the
    person's, in order. Returns what the person was asked (and told) and the model's requests."""
    drew = drawn(png(64, 48))
    model = model or ScriptedClient(["```python\nplot()\n```", "February peaks."])
    asked: list[Any] = []

    class Person:
        def approve(self, request: AskApproval) -> Approval:
            asked.append(request)
            return Approval(answers.pop(0), "asked", asked=True)

    class Reporter(SilentReporter):
        def notice(self, notice: Notice) -> None:
            asked.append(notice)

    class Executor:
        def execute(self, code: str) -> ExecutionResult:
            return drew

    loop = agent_loop("which month peaks? plot it", "ctx", settings)
    outcome = drive(wrap(loop) if wrap else loop, model, Executor(),  # type: ignore[arg-type]
                    reporter=Reporter(), approver=Person())  # type: ignore[arg-type]
    assert outcome.status == "success"
    return asked, model


def test_the_loop_asks_before_the_first_picture_to_a_hosted_endpoint_and_sends_it_when_allowed() -> None:
    asked, model = charted_loop(LoopSettings(ask_vision="api.example.com"), [True])
    (question,) = [a for a in asked if isinstance(a, AskApproval)]
    assert question.kind == "pictures" and question.code == ()
    assert question.reasons[0].startswith("a figure's picture would go to api.example.com, a hosted endpoint")
    assert [len(m[-1].images) for m in model.requests] == [0, 1]  # the answer's request carries it


def test_a_refusal_sends_the_description_alone_and_says_so() -> None:
    asked, model = charted_loop(LoopSettings(ask_vision="api.example.com"), [False])
    assert [len(m[-1].images) for m in model.requests] == [0, 0]
    assert BARS in model.requests[1][-1].content  # the words go either way
    (notice,) = [a for a in asked if isinstance(a, Notice) and a.kind == "context"]
    assert notice.text == "figures go to api.example.com in words only (asked)"


def test_nothing_is_asked_where_pictures_go_or_never_go() -> None:
    for settings, sent in ((LoopSettings(vision=True), 1), (LoopSettings(), 0)):
        asked, model = charted_loop(settings, [])
        assert not [a for a in asked if isinstance(a, AskApproval)]
        assert [len(m[-1].images) for m in model.requests] == [0, sent]


def test_whether_pictures_go_is_decided_at_the_first_figure_after_the_first_request() -> None:
    # The run decides before its first request; that request reads the endpoint's model list,
    # which may say the model sees (model/listed.py): the loop asks again at the first figure.
    model = ScriptedClient(["```python\nplot()\n```", "February peaks."])
    calls: list[int] = []

    def figures() -> tuple[bool, str]:
        calls.append(len(model.requests))
        return True, ""

    asked, _ = charted_loop(LoopSettings(figures=figures), [], model=model)
    assert calls == [1]  # once, after the first request
    assert [len(m[-1].images) for m in model.requests] == [0, 1]
    assert not [a for a in asked if isinstance(a, AskApproval)]
    asked, model = charted_loop(LoopSettings(vision=True, figures=lambda: (False, "")), [])
    assert [len(m[-1].images) for m in model.requests] == [0, 0]  # what is known then wins
    asked, model = charted_loop(LoopSettings(figures=lambda: (False, "api.example.com")), [True])
    assert [a.kind for a in asked if isinstance(a, AskApproval)] == ["pictures"]  # a hosted one: asked
    assert [len(m[-1].images) for m in model.requests] == [0, 1]


def test_two_runs_at_once_ask_one_question_and_the_second_takes_its_answer(fresh_answers: None) -> None:
    import asyncio

    question = AskApproval((), ("a figure's picture would go to api.example.com",), 1, kind="pictures")
    asked: list[AskApproval] = []

    class SlowPerson:  # answers after a while, as a person at the panel's card does
        async def aapprove(self, request: AskApproval) -> Approval:
            asked.append(request)
            await asyncio.sleep(0.05)
            return Approval(True, "approved in the panel", asked=True)

    async def both() -> list[Approval]:
        runs = [Vouched(SlowPerson(), Answers(HOSTED)) for _ in range(2)]
        return list(await asyncio.gather(*(r.aapprove(question) for r in runs)))

    first, second = asyncio.run(both())
    assert len(asked) == 1 and first.granted and second.granted
    # Dismissed (no answer) or nobody there: nothing kept, the next run asks again.
    forget()
    memo = Answers(HOSTED)
    memo.heard(question, Approval(False, "declined through the MCP client"))  # dismissed: asked False
    assert memo.recall(question) is None


def test_a_replayed_request_asks_nothing_about_pictures() -> None:
    from jupyter_ai_ci.notebook.replay import Record, replaying

    record = Record(key="k", request="which month peaks? plot it", model="gpt-4o", endpoint_host="api.example.com",
                    replies=("```python\nplot()\n```", "February peaks."), attempts=1, prompt_tokens=1,
                    completion_tokens=1, requests=2, generated_at="2026-11-28T00:00:00Z")
    asked, model = charted_loop(LoopSettings(ask_vision="api.example.com"), [],
                                wrap=lambda loop: replaying(loop, record))
    assert not [a for a in asked if isinstance(a, AskApproval)] and model.requests == []
    assert not [a for a in asked if isinstance(a, Notice) and a.kind == "context"]
