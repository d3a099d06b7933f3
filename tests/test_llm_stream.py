"""The model loop streams: OpenAI-style and Anthropic-style SSE stubs written from the providers'
documented event shapes, on real loopback ports; in-process models that stream; and the rule for a
stream cut mid-way (retried like a failed request, what it said taken back first)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from toolnexus import ModelError, SkillDef, create_toolkit, tool
from toolnexus.llm import create_client, create_in_process_client, demo_client

from .stubs import (
    ScriptedServer,
    anthropic_stream,
    anthropic_text,
    openai_stream,
    openai_text,
)


class Heard:
    """A TextSink that keeps what it was told, with the loop's time of each piece."""

    def __init__(self) -> None:
        self.said: list[Any] = []
        self.times: list[float] = []

    def text(self, piece: str) -> None:
        self.said.append(piece)
        self.times.append(asyncio.get_running_loop().time())

    def retry(self) -> None:
        self.said.append(("retry",))

    def end(self, final: bool) -> None:
        self.said.append(("end", final))

    def pieces(self) -> list[str]:
        return [p for p in self.said if isinstance(p, str)]


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@pytest.fixture
async def toolkit():  # as test_llm's (a fixture imported from another module reads as unused)
    return await create_toolkit(
        builtins=False, tools=[add], skills=[SkillDef("math", "does arithmetic", "Add.")]
    )


async def test_openai_deltas_arrive_as_the_model_sends_them(toolkit):
    async with ScriptedServer([openai_stream("The ", "answer ", "is ", "4.", gap=0.15)]) as srv:
        client = create_client(srv.url, "openai", model="m", api_key="k", retries=0)
        heard = Heard()
        result = await client.run("2+2?", toolkit, sink=heard)
        await client.aclose()
    body = srv.requests[0]["json"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert heard.pieces() == ["The ", "answer ", "is ", "4."]
    assert heard.said[-1] == ("end", True)
    assert result.text == "The answer is 4."
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (3, 2)
    assert result.model == "stub-model"
    # each piece reached the sink before the stub sent the next (events: role, 4 pieces, ...)
    for i in range(3):
        assert heard.times[i] < srv.sent[i + 2]


async def test_openai_tool_call_arguments_are_assembled_by_index(toolkit):
    script = [
        openai_stream(
            "Let me add. ",
            calls=(("c1", "add", '{"a": 2, "b": 3}'), ("c2", "add", '{"a": 1, "b": 1}')),
            usage=(10, 4),
        ),
        openai_stream("5 and 2", usage=(20, 3)),
    ]
    async with ScriptedServer(script) as srv:
        client = create_client(srv.url, "openai", model="m", api_key="k", retries=0)
        heard = Heard()
        result = await client.run("add", toolkit, sink=heard)
        await client.aclose()
    assert [c["output"] for c in result.tool_calls] == ["5", "2"]
    assert [c["args"] for c in result.tool_calls] == [{"a": 2, "b": 3}, {"a": 1, "b": 1}]
    # the first turn's text was provisional: it went on to call tools
    assert heard.said == ["Let me add. ", ("end", False), "5 and 2", ("end", True)]
    assert result.text == "5 and 2"
    assert result.usage.total_tokens == 37
    second = srv.requests[1]["json"]["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}


async def test_an_endpoint_that_ignores_stream_and_answers_json_still_works(toolkit):
    async with ScriptedServer([openai_text("whole")]) as srv:
        client = create_client(srv.url, "openai", model="m", api_key="k", retries=0)
        heard = Heard()
        result = await client.run("hi", toolkit, sink=heard)
        await client.aclose()
    assert srv.requests[0]["json"]["stream"] is True
    assert result.text == "whole" and heard.pieces() == []


async def test_a_run_nobody_listens_to_is_asked_whole(toolkit):
    async with ScriptedServer([openai_text("whole")]) as srv:
        client = create_client(srv.url, "openai", model="m", api_key="k", retries=0)
        assert (await client.run("hi", toolkit)).text == "whole"
        await client.aclose()
    assert "stream" not in srv.requests[0]["json"]


async def test_stream_false_asks_whole_even_when_somebody_listens(toolkit):
    async with ScriptedServer([openai_text("whole")]) as srv:
        client = create_client(srv.url, "openai", model="m", api_key="k", stream=False)
        assert (await client.run("hi", toolkit, sink=Heard())).text == "whole"
        await client.aclose()
    assert "stream" not in srv.requests[0]["json"]


async def test_a_stream_cut_midway_is_retried_and_what_it_said_is_taken_back(toolkit):
    script = [openai_stream("half ", "a ", "reply", cut_after=3), openai_stream("whole ", "reply")]
    async with ScriptedServer(script) as srv:
        client = create_client(srv.url, "openai", model="m", api_key="k", retry_base_ms=1)
        heard = Heard()
        result = await client.run("hi", toolkit, sink=heard)
        await client.aclose()
    assert len(srv.requests) == 2
    assert heard.said == ["half ", "a ", ("retry",), "whole ", "reply", ("end", True)]
    assert result.text == "whole reply"


async def test_a_stream_that_ends_without_its_end_is_a_cut(toolkit):
    script = [openai_stream("half", done=False, cut_after=2)] * 3
    async with ScriptedServer(list(script)) as srv:
        client = create_client(
            srv.url, "openai", model="m", api_key="k", retries=2, retry_base_ms=1
        )
        heard = Heard()
        with pytest.raises(ModelError) as caught:
            await client.run("hi", toolkit, sink=heard)
        await client.aclose()
    assert "cut its stream" in str(caught.value) and "after 3 attempts" in str(caught.value)
    assert caught.value.retryable
    # every attempt's words were taken back; the turn never ended, so it was never an answer
    assert ("end", True) not in heard.said and heard.said.count(("retry",)) == 3


async def test_a_stream_without_done_but_finished_is_whole(toolkit):
    async with ScriptedServer([openai_stream("no ", "done", done=False)]) as srv:
        client = create_client(srv.url, "openai", model="m", api_key="k", retries=0)
        result = await client.run("hi", toolkit, sink=Heard())
        await client.aclose()
    assert result.text == "no done"


async def test_an_error_status_on_a_streamed_request_is_as_before(toolkit):
    async with ScriptedServer([openai_text("x")]) as srv:
        srv.replies = []  # no reply left: the stub answers 500
        client = create_client(srv.url, "openai", model="m", api_key="k", retries=0)
        with pytest.raises(ModelError, match="HTTP 500: .*no scripted reply left"):
            await client.run("hi", toolkit, sink=Heard())
        await client.aclose()


async def test_anthropic_text_and_tool_use_stream(toolkit):
    script = [
        anthropic_stream(
            "Adding ", "now.", calls=(("tu1", "add", '{"a": 4, "b": 5}'),), usage=(9, 7)
        ),
        anthropic_stream("It is ", "9.", usage=(12, 3)),
    ]
    async with ScriptedServer(script) as srv:
        client = create_client(srv.url, "anthropic", model="m", api_key="k", retries=0)
        heard = Heard()
        result = await client.run("4+5", toolkit, sink=heard)
        await client.aclose()
    assert srv.requests[0]["json"]["stream"] is True
    assert heard.said == ["Adding ", "now.", ("end", False), "It is ", "9.", ("end", True)]
    assert result.text == "It is 9." and result.tool_calls[0]["output"] == "9"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (21, 10)
    assert result.model == "claude-stub"
    blocks = srv.requests[1]["json"]["messages"][1]["content"]
    assert blocks == [
        {"type": "text", "text": "Adding now."},
        {"type": "tool_use", "id": "tu1", "name": "add", "input": {"a": 4, "b": 5}},
    ]


async def test_anthropic_overloaded_error_event_is_retried_other_errors_are_not(toolkit):
    script = [anthropic_stream("par", error="overloaded_error"), anthropic_stream("full")]
    async with ScriptedServer(script) as srv:
        client = create_client(srv.url, "anthropic", model="m", api_key="k", retry_base_ms=1)
        heard = Heard()
        assert (await client.run("hi", toolkit, sink=heard)).text == "full"
        await client.aclose()
    assert heard.said == ["par", ("retry",), "full", ("end", True)]
    async with ScriptedServer([anthropic_stream("x", error="invalid_request_error")]) as srv:
        client = create_client(srv.url, "anthropic", model="m", api_key="k", retry_base_ms=1)
        with pytest.raises(ModelError, match="invalid_request_error") as caught:
            await client.run("hi", toolkit, sink=Heard())
        await client.aclose()
    assert not caught.value.retryable and len(srv.requests) == 1


async def test_anthropic_endpoint_answering_json_to_a_stream_still_works(toolkit):
    async with ScriptedServer([anthropic_text("whole")]) as srv:
        client = create_client(srv.url, "anthropic", model="m", api_key="k", retries=0)
        assert (await client.run("hi", toolkit, sink=Heard())).text == "whole"
        await client.aclose()


async def test_an_in_process_model_may_be_an_async_generator(toolkit):
    async def speak(request: dict[str, Any]):
        yield "one "
        await asyncio.sleep(0)
        yield "two"
        yield {"usage": {"prompt_tokens": 1, "completion_tokens": 2}}

    client = create_in_process_client(speak)
    heard = Heard()
    result = await client.run("hi", toolkit, sink=heard)
    assert heard.said == ["one ", "two", ("end", True)]
    assert result.text == "one two" and result.usage.total_tokens == 3
    assert (await client.run("hi", toolkit)).text == "one two"  # nobody listening: joined


async def test_an_in_process_stream_of_the_wrong_things_is_a_clear_error(toolkit):
    async def speak(request: dict[str, Any]):
        yield 42

    with pytest.raises(ModelError, match="streamed int"):
        await create_in_process_client(speak).run("hi", toolkit, sink=Heard())


async def test_the_demo_says_its_answer_word_by_word_at_its_pace(toolkit):
    heard = Heard()
    result = await demo_client(pace=0.05).run("hello there you", toolkit, sink=heard)
    assert "".join(heard.pieces()) == result.text == "You said: hello there you"
    assert heard.pieces() == ["You ", "said: ", "hello ", "there ", "you"]
    gaps = [b - a for a, b in zip(heard.times, heard.times[1:], strict=False)]
    assert all(g > 0 for g in gaps)  # one at a time, never all at once


def test_the_demos_pace_is_checked(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TOOLNEXUS_DEMO_PACE", "fast")
    with pytest.raises(ValueError, match="TOOLNEXUS_DEMO_PACE must be seconds"):
        demo_client()
    with pytest.raises(ValueError, match="from 0 to 10"):
        demo_client(pace=-1)
