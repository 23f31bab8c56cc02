"""Reading server-sent events ourselves (model/reply.py): what the SDK's stream reads, and the
several choices of a request that asks for ``n``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from jupyter_ai_ci.errors import ModelServerError
from jupyter_ai_ci.events import Message
from jupyter_ai_ci.model.endpoint import Endpoint
from jupyter_ai_ci.model.failures import map_error
from jupyter_ai_ci.model.reply import Accumulator, StreamError, aevents, events
from jupyter_ai_ci.tokens import estimate_usage


def chunk(text: str | None = None, finish: str | None = None) -> str:
    delta = {"content": text} if text is not None else {}
    return "data: " + json.dumps({"model": "m", "choices": [{"delta": delta, "finish_reason": finish}]})


def test_events_up_to_done_with_comments_fields_and_split_data() -> None:
    lines = [": keep-alive", "event: message", "id: 7", chunk("a"), "", "retry: 100",
             'data: {"x":', "data: 1}", "", "data:" + chunk("b")[5:], "", "data: [DONE]", "",
             chunk("never")]
    got = list(events(lines))
    assert [e.get("x") for e in got] == [None, 1, None]
    assert got[0]["choices"][0]["delta"]["content"] == "a"
    assert got[2]["choices"][0]["delta"]["content"] == "b"


def test_last_event_without_a_blank_line_still_counts() -> None:
    assert [e["choices"][0]["finish_reason"] for e in events([chunk("a"), "", chunk(finish="stop")])] == [
        None, "stop"]


def test_async_events_read_the_same() -> None:
    lines = [chunk("a"), "", ": comment", chunk("b", "stop"), "", "data: [DONE]", ""]

    async def gen() -> AsyncIterator[str]:
        for line in lines:
            yield line

    async def collect() -> list[object]:
        return [e async for e in aevents(gen())]

    assert asyncio.run(collect()) == list(events(lines))


def test_accumulator_text_usage_and_finish() -> None:
    pieces: list[str] = []
    acc = Accumulator(pieces.append)
    for e in events([chunk("he"), "", chunk("llo", "stop"), "",
                     'data: {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}', ""]):
        acc.add_chunk(e)
    acc.check_complete("h")
    reply = acc.reply([], "fallback")
    assert (reply.text, reply.model, reply.finish_reason) == ("hello", "m", "stop")
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (5, 2)
    assert pieces == ["he", "llo"]


def test_an_error_event_mid_stream_is_one_line() -> None:
    acc = Accumulator(None)
    with pytest.raises(StreamError) as caught:
        for e in events([chunk("he"), "", 'data: {"error": {"message": "overloaded"}}', ""]):
            acc.add_chunk(e)
    error = map_error(caught.value, Endpoint(model="m", base_url="http://h:1/v1"))
    assert isinstance(error, ModelServerError) and "h:1 reported an error" in str(error)


def test_no_finish_reason_is_a_cut_off_reply() -> None:
    acc = Accumulator(None)
    acc.add_chunk(next(events([chunk("he"), ""])))
    with pytest.raises(ModelServerError, match="cut off mid-stream"):
        acc.check_complete("h")


@pytest.mark.parametrize("bad", ["[1, 2]", '"text"'])
def test_an_event_that_is_not_an_object_is_malformed(bad: str) -> None:
    with pytest.raises(ValueError):
        Accumulator(None).add_chunk(next(events([f"data: {bad}", ""])))


def choice_chunk(index: int, text: str | None = None, finish: str | None = None) -> dict[str, object]:
    delta = {"content": text} if text is not None else {}
    return {"model": "m", "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def test_streamed_choices_interleave_and_are_collected_by_index() -> None:
    # A request with n = 3 (candidates): chunks of the three choices arrive in turn, choice 2's
    # before choice 1's, the finish reasons last, then the usage of the whole request.
    pieces: list[str] = []
    acc = Accumulator(pieces.append)
    for e in (choice_chunk(0, "a = "), choice_chunk(2, "c = "), choice_chunk(1, "b = "), choice_chunk(0, "1"),
              choice_chunk(1, "2"), choice_chunk(2, "3"), choice_chunk(2, finish="stop"),
              choice_chunk(0, finish="stop"), choice_chunk(1, finish="length"),
              {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9}}):
        acc.add_chunk(e)
    acc.check_complete("h")
    reply = acc.reply([], "fallback")
    assert (reply.text, reply.alternatives) == ("a = 1", ("b = 2", "c = 3"))
    assert pieces == ["a = ", "1"]  # only choice 0 streams to the driver
    assert reply.finish_reason == "stop"  # choice 0's
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (50, 9)  # the request's, once


def test_one_choice_without_a_finish_reason_is_a_cut_off_reply() -> None:
    acc = Accumulator(None)
    for e in (choice_chunk(0, "a"), choice_chunk(1, "b"), choice_chunk(0, finish="stop")):
        acc.add_chunk(e)
    with pytest.raises(ModelServerError, match="cut off mid-stream"):
        acc.check_complete("h")


def test_a_whole_reply_with_several_choices_in_any_order() -> None:
    pieces: list[str] = []
    acc = Accumulator(pieces.append)
    acc.add_whole({"model": "m", "choices": [
        {"index": 1, "finish_reason": "stop", "message": {"role": "assistant", "content": "second"}},
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "first"}},
        {"index": 2, "finish_reason": "stop", "message": {"role": "assistant", "content": None}},
    ]})
    reply = acc.reply([Message("user", "x" * 400)], "fallback")
    assert (reply.text, reply.alternatives, reply.finish_reason) == ("first", ("second", ""), "stop")
    assert pieces == ["first"]
    # No usage from the server: estimated, the prompt once and every choice's text.
    assert reply.usage.prompt_tokens == estimate_usage("x" * 400)
    assert reply.usage.completion_tokens == estimate_usage("first") + estimate_usage("second") + estimate_usage("")


def test_choices_without_an_index_are_numbered_by_their_place() -> None:
    acc = Accumulator(None)
    acc.add_whole({"choices": [{"message": {"content": "one"}}, {"message": {"content": "two"}}]})
    assert acc.reply([], "m").alternatives == ("two",)
    acc = Accumulator(None)  # streamed, a server that leaves the index out sends one choice
    for e in ({"choices": [{"delta": {"content": "on"}}]}, {"choices": [{"delta": {"content": "e"},
                                                                          "finish_reason": "stop"}]}):
        acc.add_chunk(e)
    acc.check_complete("h")
    assert (acc.reply([], "m").text, acc.reply([], "m").alternatives) == ("one", ())
