"""A served model's words go out as it says them: the official SDK clients streaming from ours on
every binding (JSON-RPC 1.0 and its 0.3 compat, HTTP+JSON 1.0 and 0.3, gRPC) receive the reply in
appends, spaced as the model spaced them, closed by the whole artifact (``append: false,
lastChunk: true``: ADK's client keeps only that one), whatever the model's style; a subscriber
that joins mid-reply gets the text so far, then the rest; a poll shows the text so far; the bus and
``on_text`` carry it; a model stream cut and retried starts the reply over, a failed one never
ends it; a caller that goes away mid-stream leaves the task running."""

from __future__ import annotations

import asyncio
import json
import socket
import uuid
from typing import Any

import httpx
import pytest

import toolnexus as tn
from toolnexus.events import TextEvent
from toolnexus.llm import create_client, create_in_process_client

from ..helpers import eventually
from ..peers import field
from ..stubs import ScriptedServer, anthropic_stream, openai_stream
from .test_sdk_interop import TRANSPORTS, sdk_client
from .wire import envelope

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

from a2a.types import a2a_pb2 as pb  # noqa: E402

WORDS = ["The ", "weather ", "in ", "Lisbon ", "is ", "sunny."]


class Paced:
    """An in-process model that says ``words`` ``gap`` seconds apart, noting when it said each."""

    def __init__(self, words: list[str], gap: float) -> None:
        self.words, self.gap = words, gap
        self.said: list[float] = []
        self.started = asyncio.Event()
        self.halfway = asyncio.Event()

    async def __call__(self, request: dict[str, Any]):
        self.said = []
        self.started.set()
        for i, word in enumerate(self.words):
            if i:
                await asyncio.sleep(self.gap)
            self.said.append(asyncio.get_running_loop().time())
            if i == len(self.words) // 2:
                self.halfway.set()
            yield word


def message(text: str, **ids: str) -> pb.Message:
    return pb.Message(
        message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text=text)], **ids
    )


def text_of(update: Any) -> str:
    return "".join(p.text for p in update.artifact.parts)


def closed(updates: list[Any], text: str) -> None:
    """Only the last update is the last chunk, and it is the whole artifact, replacing."""
    assert not any(u.last_chunk for u in updates[:-1])
    last = updates[-1]
    assert last.last_chunk and not last.append and text_of(last) == text, last


def joined(updates: list[Any], text: str = "") -> str:
    """The text an A2A client holds after these artifact updates (append or replace) to ``text``."""
    for update in updates:
        piece = "".join(p.text for p in update.artifact.parts)
        text = text + piece if update.append else piece
    return text


async def serve(model: Any, **options: Any):
    tk = await tn.create_toolkit(builtins=False)
    return await tk.serve(
        client=create_in_process_client(model) if not isinstance(model, tn.Client) else model,
        a2a=tn.A2AConfig(name="demo-desk", **options),
    )


async def collect(events: Any) -> tuple[list[Any], list[float]]:
    got, times = [], []
    async for ev in events:
        got.append(ev)
        times.append(asyncio.get_running_loop().time())
    return got, times


def check_spaced(model: Paced, got: list[Any], times: list[float]) -> list[Any]:
    """The artifact updates, at least three, each received before the model said the next word."""
    updates = [
        (ev.artifact_update, t)
        for ev, t in zip(got, times, strict=True)
        if ev.HasField("artifact_update")
    ]
    assert len(updates) >= 3, [ev.WhichOneof("payload") for ev in got]
    for i in range(3):
        assert updates[i][1] < model.said[i + 1], f"chunk {i} arrived after word {i + 1} was said"
    closed([u for u, _ in updates], "".join(model.words))
    return [u for u, _ in updates]


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_the_sdk_client_streams_the_words_as_the_model_says_them(version):
    model = Paced(WORDS, 0.25)
    handle = await serve(model)
    try:
        async with sdk_client(handle, version, streaming=True) as client:
            got, times = await collect(
                client.send_message(pb.SendMessageRequest(message=message("weather?")))
            )
            updates = check_spaced(model, got, times)
            assert got[-1].status_update.status.state == pb.TASK_STATE_COMPLETED
            task = await client.get_task(pb.GetTaskRequest(id=got[0].task.id))
            assert [a.artifact_id for a in task.artifacts] == [updates[0].artifact.artifact_id]
            assert joined(updates) == task.artifacts[0].parts[0].text == "".join(WORDS)
    finally:
        await handle.stop()


async def test_the_sdk_grpc_client_streams_the_words_as_the_model_says_them():
    pytest.importorskip("grpc")
    from .test_grpc import _message, _sdk_client

    model = Paced(WORDS, 0.25)
    handle = await serve(model, grpc="127.0.0.1:0")
    client = await _sdk_client(handle.url)
    try:
        got, times = await collect(
            client.send_message(pb.SendMessageRequest(message=_message("weather?")))
        )
        updates = check_spaced(model, got, times)
        task = await client.get_task(pb.GetTaskRequest(id=got[0].task.id))
        assert joined(updates) == task.artifacts[0].parts[0].text == "".join(WORDS)
    finally:
        await client.close()
        await handle.stop()


SAID = ["It ", "is ", "17", "°C."]


def styled(style: str, stub: ScriptedServer | None) -> tn.Client:
    """A model of ``style`` saying ``SAID`` (the demo says its own words): its stream ends as that
    style's do (the demo's with its last word, a provider's with a closing event and no text)."""
    if style == "demo":
        return tn.demo_client(pace=0.03)
    assert stub is not None
    return create_client(stub.url, style, model="m", api_key="k", retries=0)


@pytest.mark.parametrize("style", ["demo", "openai", "anthropic"])
async def test_every_model_style_closes_its_reply_with_the_whole_artifact(style):
    """Each binding and dialect, each model style: the last chunk is the whole reply."""
    pytest.importorskip("grpc")
    from .test_grpc import _sdk_client

    stream = {"openai": openai_stream, "anthropic": anthropic_stream}.get(style, openai_stream)
    bindings = [*TRANSPORTS, "grpc-1.0", "grpc-0.3"]
    async with ScriptedServer([stream(*SAID, gap=0.03) for _ in bindings]) as stub:
        handle = await serve(styled(style, stub), grpc="127.0.0.1:0")
        whole = "You said: hello there" if style == "demo" else "".join(SAID)
        try:
            for binding in bindings:
                request = pb.SendMessageRequest(message=message("hello there"))
                if binding.startswith("grpc"):
                    client = await _sdk_client(handle.url, version=binding[5:])
                    try:
                        got, _ = await collect(client.send_message(request))
                    finally:
                        await client.close()
                else:
                    async with sdk_client(handle, binding, streaming=True) as client:
                        got, _ = await collect(client.send_message(request))
                updates = [ev.artifact_update for ev in got if ev.HasField("artifact_update")]
                assert len(updates) >= 2, (binding, updates)  # words as they came, then the close
                assert all(u.append for u in updates[1:-1]), binding
                closed(updates, whole)
                assert got[-1].status_update.status.state == pb.TASK_STATE_COMPLETED, binding
        finally:
            await handle.stop()


async def test_an_adk_agent_calling_ours_keeps_the_whole_streamed_reply():
    """ADK's RemoteA2aAgent (google-adk, its own venv) keeps a ``lastChunk`` update as the whole
    artifact: closed with the last word, it kept "hello" and "conversation)" of the demo's
    replies; closed with the whole artifact, it keeps each reply whole."""
    handle = await serve(tn.demo_client(pace=0.05))
    try:
        got = await field.client("adk", handle.url, ["hello", "again"])
        assert got.get("replies") == [
            "You said: hello",
            "You said: again (message 2 of this conversation)",
        ], got
    finally:
        await handle.stop()


@pytest.mark.parametrize("version", ["1.0", "0.3", "rest"])
async def test_a_subscriber_joining_mid_reply_gets_the_text_so_far_then_the_rest(version):
    model = Paced(WORDS, 0.2)
    handle = await serve(model)
    try:
        async with (
            sdk_client(handle, version) as client,
            sdk_client(handle, version, streaming=True) as follower,
        ):
            request = pb.SendMessageRequest(
                message=message("weather?"),
                configuration=pb.SendMessageConfiguration(return_immediately=True),
            )
            sent = [ev async for ev in client.send_message(request)]
            task_id = next(ev.task.id for ev in sent if ev.HasField("task"))
            await asyncio.wait_for(model.halfway.wait(), 10)
            await asyncio.sleep(0.05)  # the half said is told
            polled = await client.get_task(pb.GetTaskRequest(id=task_id))
            assert polled.status.state == pb.TASK_STATE_WORKING
            so_far = polled.artifacts[0].parts[0].text
            assert "".join(WORDS).startswith(so_far) and 0 < len(so_far) < len("".join(WORDS))
            got, _ = await collect(follower.subscribe(pb.SubscribeToTaskRequest(id=task_id)))
            first = got[0].task
            assert first.artifacts, "the task the subscriber gets first carries the text so far"
            seen = first.artifacts[0].parts[0].text
            assert "".join(WORDS).startswith(seen) and len(seen) >= len(so_far)
            updates = [ev.artifact_update for ev in got if ev.HasField("artifact_update")]
            assert all(u.append for u in updates[:-1]), "nothing sent twice: the rest appends"
            closed(updates, "".join(WORDS))  # then the whole artifact
            done = await client.get_task(pb.GetTaskRequest(id=task_id))
            assert "".join(WORDS).startswith(seen + joined(updates[:-1]))
            assert done.artifacts[0].parts[0].text == "".join(WORDS)
    finally:
        await handle.stop()


async def test_a_fast_model_costs_a_frame_per_interval_not_per_piece():
    pieces = [f"w{i} " for i in range(300)]

    async def fast(request: dict[str, Any]):
        for i, piece in enumerate(pieces):
            if i % 50 == 0:
                await asyncio.sleep(0)  # a model whose tokens come in bursts
            yield piece

    handle = await serve(fast)
    try:
        async with sdk_client(handle, "1.0", streaming=True) as client:
            got, _ = await collect(
                client.send_message(pb.SendMessageRequest(message=message("go")))
            )
        updates = [ev.artifact_update for ev in got if ev.HasField("artifact_update")]
        assert 2 <= len(updates) <= 10, len(updates)
        assert joined(updates) == "".join(pieces)
    finally:
        await handle.stop()


async def test_the_bus_and_on_text_carry_the_words_and_the_store_gets_them_whole():
    model = Paced(WORDS, 0.05)
    heard: list[dict[str, Any]] = []
    tk = await tn.create_toolkit(builtins=False)
    handle = await tk.serve(
        client=create_in_process_client(model), a2a=tn.A2AConfig(name="d"), on_text=heard.append
    )
    texts: list[TextEvent] = []

    async def watch() -> None:
        async for ev in handle.events.subscribe(replay=False):
            if isinstance(ev, TextEvent):
                texts.append(ev)
            elif getattr(ev, "state", None) is tn.TaskState.COMPLETED:
                return

    watching = asyncio.ensure_future(watch())
    try:
        await asyncio.sleep(0.05)
        async with tn.A2AClient(handle.url) as peer:
            task = await peer.send("weather?", blocking=True)
        await asyncio.wait_for(watching, 10)
        assert len(texts) >= 3 and texts[-1].last and texts[-1].text == "".join(WORDS)
        for before, after in zip(texts, texts[1:], strict=False):  # growing; the last may add none
            assert after.text.startswith(before.text)
            assert len(after.text) > len(before.text) or after.last
        assert {t.artifact_id for t in texts} == {task.artifacts[0].artifact_id}
        await eventually(lambda: heard and heard[-1]["last"])  # hooks run in the background
        assert heard[-1]["text"] == "".join(WORDS) and heard[-1]["last"] is True
        assert heard[0]["id"] == task.id and len(heard) == len(texts)
        stored = await handle.runner.store.get(task.id)
        assert [a.text for a in stored.artifacts] == ["".join(WORDS)]
        assert handle.events.history() and not any(
            isinstance(e, TextEvent) for e in handle.events.history()
        )
    finally:
        watching.cancel()
        await handle.stop()


async def _sse_lines(url: str) -> list[str]:
    """A SendStreamingMessage's SSE lines (JSON-RPC 1.0), pings included, to the stream's end."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }
    async with httpx.AsyncClient(timeout=10) as http:
        async with http.stream("POST", url + "/", json=body, headers={"A2A-Version": "1.0"}) as r:
            return [line async for line in r.aiter_lines() if line]


async def test_a_reader_of_task_events_alone_gets_no_words_and_none_are_published_for_it():
    """A bus subscriber that takes only ``task`` events (``toolnexus serve``'s log) is not
    woken for the words, and with no subscriber taking ``text`` none is published at all (the
    bus's sequence has no gaps); a stream still gets every word, and a reader of everything
    that comes later gets them."""
    model = Paced(WORDS, 0.02)
    handle = await serve(model)

    async def read(**kinds: Any) -> list[Any]:
        got = []
        async for ev in handle.events.subscribe(replay=False, **kinds):
            got.append(ev)
            if getattr(ev, "state", None) is tn.TaskState.COMPLETED:
                return got
        return got

    try:
        for everything in (False, True):
            tasks_only = asyncio.ensure_future(read(kinds=("task",)))
            everyone = asyncio.ensure_future(read()) if everything else None
            await asyncio.sleep(0.05)
            lines = await _sse_lines(handle.url)
            assert sum("artifactUpdate" in line for line in lines) >= 3, lines
            assert "TASK_STATE_COMPLETED" in lines[-1], lines
            got = await asyncio.wait_for(tasks_only, 10)
            assert got and {ev.kind for ev in got} == {"task"}, got
            seqs = [ev.seq for ev in got]
            if everyone is None:  # nothing between the task events: no word was published
                assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), seqs
            else:
                texts = [ev for ev in await asyncio.wait_for(everyone, 10) if ev.kind == "text"]
                assert texts and texts[-1].text == "".join(WORDS)
    finally:
        await handle.stop()


async def test_pings_come_only_in_a_silence_as_long_as_keepalive(
    monkeypatch: pytest.MonkeyPatch,
):
    """A stream pings after ``KEEPALIVE`` seconds with nothing said, however long the stream has
    been open: words coming faster than that are never interleaved with pings."""
    from toolnexus.serve import a2a

    monkeypatch.setattr(a2a, "KEEPALIVE", 0.4)

    async def model(request: dict[str, Any]) -> Any:
        for i in range(8):  # 1.2 s of words 0.15 s apart: three KEEPALIVEs, no silence
            await asyncio.sleep(0.15)
            yield f"w{i} "
        await asyncio.sleep(1.0)  # then a silence: pings
        yield "end"

    handle = await serve(model)
    try:
        lines = [
            line
            for line in await _sse_lines(handle.url)
            if line == ": ping" or "artifactUpdate" in line
        ]
        pings = [i for i, line in enumerate(lines) if line == ": ping"]
        said_w7 = next(i for i, line in enumerate(lines) if "w7" in line)
        assert pings and pings[0] > said_w7, lines  # none among the words, some in the silence
        assert pings[-1] < len(lines) - 1, lines  # and the last word after them
    finally:
        await handle.stop()


async def test_a_model_stream_cut_and_retried_starts_the_reply_over():
    script = [
        openai_stream("Half ", "a ", "reply", gap=0.1, cut_after=4),
        openai_stream("A ", "whole ", "reply.", gap=0.1),
    ]
    async with ScriptedServer(script) as stub:
        model = create_client(stub.url, "openai", model="m", api_key="k", retry_base_ms=1)
        handle = await serve(model)
        try:
            async with sdk_client(handle, "1.0", streaming=True) as client:
                got, _ = await collect(
                    client.send_message(pb.SendMessageRequest(message=message("go")))
                )
            updates = [ev.artifact_update for ev in got if ev.HasField("artifact_update")]
            texts = ["".join(p.text for p in u.artifact.parts) for u in updates]
            assert texts[0] == "Half " and any(not u.append for u in updates[1:])
            assert joined(updates) == "A whole reply."
            assert got[-1].status_update.status.state == pb.TASK_STATE_COMPLETED
        finally:
            await handle.stop()


async def test_a_model_stream_that_fails_never_ends_the_reply():
    script = [openai_stream("Half ", "a ", "reply", gap=0.05, cut_after=4)]
    async with ScriptedServer(script) as stub:
        model = create_client(stub.url, "openai", model="m", api_key="k", retries=0)
        handle = await serve(model)
        try:
            async with sdk_client(handle, "1.0", streaming=True) as client:
                got, _ = await collect(
                    client.send_message(pb.SendMessageRequest(message=message("go")))
                )
                updates = [ev.artifact_update for ev in got if ev.HasField("artifact_update")]
                assert updates and not any(u.last_chunk for u in updates)
                assert got[-1].status_update.status.state == pb.TASK_STATE_FAILED
                task = await client.get_task(pb.GetTaskRequest(id=got[0].task.id))
                assert list(task.artifacts) == []  # half a reply is never kept as the answer
        finally:
            await handle.stop()


async def test_a_caller_that_goes_away_mid_stream_leaves_the_task_running():
    model = Paced(WORDS, 0.1)
    handle = await serve(model)
    try:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "weather?"}]}
            },
        }
        async with httpx.AsyncClient(timeout=10) as http:
            async with http.stream(
                "POST", handle.url + "/", json=body, headers={"A2A-Version": "1.0"}
            ) as r:
                lines = r.aiter_lines()
                async for line in lines:
                    if "artifactUpdate" in line:
                        break
        # the connection is closed mid-reply: the run goes on, and nothing is left listening
        for _ in range(200):
            done = [t for t in (await handle.runner.store.list()).tasks if t.state.terminal]
            if done and not handle.runner._watchers:
                break
            await asyncio.sleep(0.05)
        assert done and done[0].state is tn.TaskState.COMPLETED
        assert done[0].artifacts[0].text == "".join(WORDS)
        assert handle.runner._watchers == {} and handle.runner._replies == {}
    finally:
        await handle.stop()


async def test_a_quiet_stream_is_kept_alive_with_pings_and_then_goes_on(
    monkeypatch: pytest.MonkeyPatch,
):
    """While the model says nothing for ``KEEPALIVE`` seconds the stream sends ``: ping``; the
    words that come after still arrive, and the stream ends with the task."""
    from toolnexus.serve import a2a

    monkeypatch.setattr(a2a, "KEEPALIVE", 0.1)
    model = Paced(["one ", "two"], 0.5)  # half a second of silence between the words
    handle = await serve(model)
    try:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
            },
        }
        seen: list[str] = []
        async with httpx.AsyncClient(timeout=10) as http:
            async with http.stream(
                "POST", handle.url + "/", json=body, headers={"A2A-Version": "1.0"}
            ) as r:
                async for line in r.aiter_lines():
                    if line == ": ping":
                        seen.append("ping")
                    elif "artifactUpdate" in line:
                        seen.append("words")
                    elif "TASK_STATE_COMPLETED" in line:
                        seen.append("completed")
        first, last = seen.index("words"), len(seen) - 1 - seen[::-1].index("words")
        assert "ping" in seen[first:last], seen  # pings in the silence between the words
        assert seen[-1] == "completed", seen
    finally:
        await handle.stop()


async def test_a_subscriber_through_another_worker_gets_the_same_words_as_live(postgres):
    pytest.importorskip("asyncpg")
    words = [f"word{i} " for i in range(12)]
    model = Paced(words, 0.15)
    running = await serve(model, store=postgres)
    other = await serve(Paced(["unused"], 0), store=postgres)
    try:
        async with tn.A2AClient(running.url) as peer:
            task = await peer.send("go")  # answered at once; it runs on `running`
        await asyncio.wait_for(model.started.wait(), 10)
        await asyncio.sleep(0.5)  # some words said before the subscriber joins
        async with sdk_client(other, "1.0", streaming=True) as follower:
            got, times = await collect(follower.subscribe(pb.SubscribeToTaskRequest(id=task.id)))
            done = await follower.get_task(pb.GetTaskRequest(id=task.id))
        updates = [ev.artifact_update for ev in got if ev.HasField("artifact_update")]
        first = got[0].task
        seen = "".join(p.text for a in first.artifacts for p in a.parts)
        # the reply so far, then each piece as it came (several, before the task's end), nothing twice
        live = [
            t
            for ev, t in zip(got, times, strict=True)
            if ev.HasField("artifact_update") and t < model.said[-1]
        ]
        assert len(live) >= 3, [ev.WhichOneof("payload") for ev in got]
        assert joined(updates, seen) == done.artifacts[0].parts[0].text == "".join(words)
        closed(updates, "".join(words))
    finally:
        await other.stop()
        await running.stop()


async def test_a_webhook_hears_each_state_and_the_whole_reply_not_its_words():
    model = Paced(WORDS, 0.1)
    handle = await serve(model)
    try:
        async with tn.WebhookReceiver() as hook, tn.A2AClient(handle.url) as peer:
            task = await peer.send("weather?", push=hook.target())
            await hook.wait(task.id, state=tn.TaskState.COMPLETED, timeout=20)
            got = hook.received(task.id)
        bodies = [n.body for n in got]
        updates = [b["artifactUpdate"] for b in bodies if "artifactUpdate" in b]
        states = [n.state for n in got if "statusUpdate" in n.body or "task" in n.body]
        assert states[-1] is tn.TaskState.COMPLETED and tn.TaskState.WORKING in states
        # one update: the finished reply, whole; none of the pieces it was said in
        assert [u["artifact"]["parts"][0]["text"] for u in updates] == ["".join(WORDS)]
    finally:
        await handle.stop()


async def test_words_before_a_question_are_provisional_and_the_answers_reply_replaces_them():
    from toolnexus.llm.demo import approval_tool

    async def model(request: dict[str, Any]):
        if not any(m.get("role") == "tool" for m in request["messages"]):
            yield "Let me ask first. "
            yield {"tool_calls": [{"name": "ask_approval", "arguments": {"question": "OK?"}}]}
        else:
            yield "Approved: "
            yield "done."

    tk = await tn.create_toolkit(builtins=False)
    handle = await tk.serve(
        client=create_in_process_client(model, tools=[approval_tool()]),
        a2a=tn.A2AConfig(name="demo-desk"),
    )
    try:
        async with sdk_client(handle, "1.0", streaming=True) as client:
            asked, _ = await collect(
                client.send_message(pb.SendMessageRequest(message=message("do it")))
            )
            assert asked[-1].status_update.status.state == pb.TASK_STATE_INPUT_REQUIRED
            first = [ev.artifact_update for ev in asked if ev.HasField("artifact_update")]
            assert joined(first) == "Let me ask first. " and not first[-1].last_chunk
            task = asked[0].task
            answer = message("yes", task_id=task.id, context_id=task.context_id)
            done, _ = await collect(client.send_message(pb.SendMessageRequest(message=answer)))
            again = [ev.artifact_update for ev in done if ev.HasField("artifact_update")]
            assert not again[0].append  # it starts over: the provisional words are replaced
            assert joined(first + again) == "Approved: done."
            final = await client.get_task(pb.GetTaskRequest(id=task.id))
            assert [a.parts[0].text for a in final.artifacts] == ["Approved: done."]
            assert final.artifacts[0].artifact_id == first[0].artifact.artifact_id
    finally:
        await handle.stop()


async def test_a_remote_agent_used_as_a_tool_reports_its_reply_so_far_as_progress():
    """A streams its reply; B uses A as a tool and serves it over MCP: the official MCP client
    calling it hears A's text growing as notifications/progress, then the whole reply."""
    from mcp import Client

    model = Paced(WORDS, 0.2)
    skills = [tn.SkillDef("forecast", "tells the weather", "Say the weather.")]
    remote = await (await tn.create_toolkit(builtins=False, skills=skills)).serve(
        client=create_in_process_client(model), a2a=tn.A2AConfig(name="weather-desk")
    )
    try:
        kit = await tn.create_toolkit(
            builtins=False, agents=[tn.Agent(card=remote.url, poll_every=0.05)]
        )
        async with kit, await kit.serve(mcp=True) as gateway, Client(gateway.mcp_url) as mcp:
            (tool,) = [t.name for t in kit.tools()]
            heard: list[tuple[float, str | None]] = []

            async def progress(done: float, total: float | None, message: str | None) -> None:
                heard.append((asyncio.get_running_loop().time(), message))

            result = await mcp.call_tool(tool, {"task": "weather?"}, progress_callback=progress)
        texts = [m for _, m in heard if m]
        assert "".join(c.text for c in result.content) == "".join(WORDS)
        assert len(texts) >= 3 and all("".join(WORDS).startswith(t) for t in texts), texts
        assert heard[0][0] < model.said[-1]  # heard while the remote model still spoke
    finally:
        await remote.stop()


async def test_subscribers_that_never_read_hold_a_bounded_queue_and_the_others_get_every_word():
    """Issue 59 item 8: subscribers that never read while the model streams huge words (each
    50 KB, 4 MB in all) beside many that read, on one task. What the server holds for each reader
    is bounded: its queue coalesces the words (a newer text replaces an older one not read yet), so
    it holds the task's transitions and one text at most; what waits in a socket that is not read
    is what one frame writes past the transport's high-water mark (the last, the whole artifact,
    is the largest), never the words that came since. Every reader gets the whole reply."""
    go = asyncio.Event()
    words = [f"{i:05d}" + "w" * 50_000 + " " for i in range(80)]
    reply = "".join(words)

    async def huge(request: dict[str, Any]):
        await go.wait()
        for word in words:
            await asyncio.sleep(0)
            yield word

    handle = await serve(huge)
    sockets: list[asyncio.StreamWriter] = []
    try:
        async with sdk_client(handle, "1.0") as client:
            request = pb.SendMessageRequest(
                message=message("go"),
                configuration=pb.SendMessageConfiguration(return_immediately=True),
            )
            sent = [ev async for ev in client.send_message(request)]
            task_id = next(ev.task.id for ev in sent if ev.HasField("task"))
            port = int(handle.url.rsplit(":", 1)[1].rstrip("/"))
            body = json.dumps(envelope("SubscribeToTask", {"id": task_id})).encode()
            for _ in range(3):  # never read
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.transport.get_extra_info("socket").setsockopt(
                    socket.SOL_SOCKET, socket.SO_RCVBUF, 4096
                )
                writer.write(
                    b"POST / HTTP/1.1\r\nhost: 127.0.0.1:%d\r\ncontent-type: application/json\r\n"
                    b"a2a-version: 1.0\r\naccept: text/event-stream\r\ncontent-length: %d\r\n\r\n%s"
                    % (port, len(body), body)
                )
                sockets.append(writer)
            readers = []
            for _ in range(12):  # many that read, on the same task
                reader = sdk_client(handle, "1.0", streaming=True)
                follower = await reader.__aenter__()
                readers.append((reader, follower))
            runner = handle.runner
            watchers = lambda: runner._watchers.get(task_id, [])  # noqa: E731
            async with asyncio.timeout(30):
                while len(watchers()) < 3:  # the three that never read are listening
                    await asyncio.sleep(0.01)
            reads = [
                asyncio.ensure_future(collect(f.subscribe(pb.SubscribeToTaskRequest(id=task_id))))
                for _, f in readers
            ]
            async with asyncio.timeout(30):
                while len(watchers()) < 15:
                    await asyncio.sleep(0.01)
            go.set()
            most = 0
            while not all(r.done() for r in reads):
                most = max([most, *(q.qsize() for q in watchers())])
                await asyncio.sleep(0.005)
            got = [r.result()[0] for r in reads]
            buffered = [w.transport.get_write_buffer_size() for w in sockets]  # ours: nothing
            held = [
                c.transport.get_write_buffer_size()
                for c in handle._server._server.server_state.connections
            ]
    finally:
        for reader, _ in locals().get("readers", []):
            await reader.__aexit__(None, None, None)
        for w in sockets:
            w.close()
        await handle.stop()
    for events in got:
        updates = [ev.artifact_update for ev in events if ev.HasField("artifact_update")]
        assert (
            joined(
                updates,
                events[0].task.artifacts[0].parts[0].text if events[0].task.artifacts else "",
            )
            == reply
        )
    assert most <= 4, most  # transitions and one text, never the words
    assert buffered == [0, 0, 0]
    # one frame past the high-water mark at most: the whole artifact, as JSON, and a little more
    assert max(held) < len(reply) + 2**20, (max(held), len(reply))  # 3.97 MB of 4.0 measured
