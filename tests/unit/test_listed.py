"""What an endpoint's model list says a model takes (model/listed.py), and that ``vision = 'auto'``
follows it both ways -- read from a real HTTP server's ``/v1/models`` by the first request."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model import dialect, listed, vision
from jupyter_ai_ci.model.client import OpenAIClient
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.testing import ScriptedOpenAIServer
from jupyter_ai_ci.testing.replies import image_parts

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
WITH_PICTURE = [Message("user", "which month peaks?", images=(PNG,))]

# /v1/models as each lists what a model takes (trimmed): OpenRouter, Mistral, and a llama.cpp server
# (one model, whatever name is asked) whose list names its capabilities as Ollama's details do.
OPENROUTER = {"data": [
    {"id": "acme/charts-1", "canonical_slug": "acme/charts-1-2026",
     "architecture": {"modality": "text+image->text", "input_modalities": ["text", "image"]}},
    {"id": "openai/gpt-4o-text", "architecture": {"input_modalities": ["text"], "output_modalities": ["text"]}},
    {"id": "old/one", "architecture": {"modality": "text+image->text"}},
    {"id": "old/two", "architecture": {"modality": "text->text+image"}},  # draws images, reads none
]}
MISTRAL = {"object": "list", "data": [{"id": "pixtral-large-latest", "capabilities": {"vision": True}},
                                       {"id": "codestral-latest", "capabilities": {"vision": False}}]}
LLAMA_SERVER = {"models": [{"name": "gemma.gguf", "model": "gemma.gguf", "capabilities": ["completion", "multimodal"]}],
                "object": "list", "data": [{"id": "gemma.gguf", "object": "model", "owned_by": "llamacpp"}]}


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    dialect.forget()
    vision.forget()
    yield
    dialect.forget()
    vision.forget()


@pytest.mark.parametrize(("entry", "said"), [
    (OPENROUTER["data"][0], True), (OPENROUTER["data"][1], False), (OPENROUTER["data"][2], True),
    (OPENROUTER["data"][3], False), (MISTRAL["data"][0], True), (MISTRAL["data"][1], False),
    (LLAMA_SERVER["models"][0], True), ({"id": "x", "capabilities": ["completion", "tools"]}, False),
    ({"id": "qwen2-vl", "type": "vlm"}, True), ({"id": "qwen-coder", "type": "llm"}, False),
    ({"id": "x", "input_modalities": ["image", "text"]}, True),
    # Says nothing: no field, or a field of another shape (the list is untrusted input).
    ({"id": "x", "object": "model"}, None), ({"id": "x", "architecture": {"input_modalities": "image"}}, None),
    ({"id": "x", "capabilities": {"vision": "yes"}}, None), ({"id": "x", "capabilities": [1, 2]}, None),
    ({"id": "x", "architecture": {"modality": "image"}}, None), ({"id": "x", "type": "embeddings"}, None),
    ("a string", None), (None, None), ([{"vision": True}], None),
])
def test_what_one_entry_says(entry: Any, said: bool | None) -> None:
    assert listed.said_of(entry) is said


def test_a_list_is_read_by_any_of_a_models_names_and_garbage_says_nothing() -> None:
    listed.learn("http://h/v1", OPENROUTER)
    assert listed.takes_images("http://h/v1", "acme/charts-1") is True
    assert listed.takes_images("http://h/v1", "ACME/Charts-1-2026") is True  # its canonical slug, any case
    assert listed.takes_images("http://h/v1", "openai/gpt-4o-text") is False
    assert listed.takes_images("http://h/v1", "unlisted") is None
    assert listed.takes_images("http://other/v1", "acme/charts-1") is None  # per endpoint
    for junk in (None, [], "x", {"data": "x"}, {"data": [1, None, {"id": 3, "type": "vlm"}]},
                 {"data": [{"id": f"m{i}", "type": "vlm"} for i in range(6000)]}):  # no model list is that long
        listed.learn("http://junk/v1", junk)
        assert listed.takes_images("http://junk/v1", "m1") is None


def test_a_server_that_serves_one_model_answers_for_any_name() -> None:
    listed.learn("http://l/v1", LLAMA_SERVER, serves_one=True)
    assert listed.takes_images("http://l/v1", "whatever-name-was-asked") is True
    listed.learn("http://o/v1", MISTRAL, serves_one=True)  # two models that differ: no one answer
    assert listed.takes_images("http://o/v1", "whatever") is None


def _client(server: ScriptedOpenAIServer, model: str) -> OpenAIClient:
    return OpenAIClient(Endpoint(model=model, base_url=server.base_url, max_retries=0, timeout=5.0))


@pytest.mark.parametrize(("models", "model", "pictures"), [
    (OPENROUTER, "acme/charts-1", 1),  # named like no family: the list says it sees
    (OPENROUTER, "openai/gpt-4o-text", 0),  # named like a vision family: the list says text only
    (OPENROUTER, "gpt-4o", 1),  # not listed: its family's name decides, as before
    (None, "acme/charts-1", 0),  # a list that says nothing: the name decides
    (LLAMA_SERVER, "local-model", 1),  # one model served, whatever name is asked
])
def test_the_first_request_reads_the_list_and_pictures_follow_it(models: Any, model: str, pictures: int) -> None:
    with ScriptedOpenAIServer() as server:
        server.models = models
        server.models_headers = {"Server": "llama.cpp"} if models is LLAMA_SERVER else {}
        server.script("February.", "February.")
        client = _client(server, model)
        assert client.endpoint.takes_images is vision.family_takes_images(model)  # before any request: the name
        client.complete(WITH_PICTURE)
        client.complete(WITH_PICTURE)
        assert [len(image_parts(body)) for body in server.requests] == [pictures] * 2
        assert server.gets == ["/v1/models"]  # read once, with the request it was read for
        assert client.endpoint.takes_images is bool(pictures)


def test_a_hosted_model_the_list_says_sees_is_asked_about_before_a_picture_goes() -> None:
    hosted = "https://openrouter.example/api/v1"
    listed.learn(hosted, OPENROUTER)
    assert vision.asks("auto", hosted, "acme/charts-1", "ask")
    assert not vision.takes_images("auto", hosted, "acme/charts-1", "ask")  # not before the answer
    assert vision.takes_images("auto", hosted, "acme/charts-1", "yes")
    assert not vision.asks("auto", hosted, "openai/gpt-4o-text", "ask")  # text only: nothing to ask
    assert vision.takes_images("on", hosted, "openai/gpt-4o-text", "no")  # 'on': the person's word wins
