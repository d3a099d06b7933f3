"""The outbound client and agents-as-tools against every real peer: our server in each dialect, the
official a2a-sdk 1.x server (default and 0.3 compat), and a stub of the toolnexus legacy dialect."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

import toolnexus as tn
from toolnexus.client.agents import Agent
from toolnexus.protocol.model import TaskState

from .conftest import EXAMPLE_SKILLS
from .helpers import write_skill
from .peers.legacy_stub import legacy_stub
from .stubs import Reply, ScriptedServer

sdk = pytest.importorskip(
    "a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'"
)
from .peers.sdk_server import sdk_server  # noqa: E402


def reply(text: str):
    return tn.create_in_process_client(
        lambda req: {
            "content": text,
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
    )


# -- the seeds' examples, in Python ------------------------------------------------------------------


async def test_seed_two_a_real_round_trip_between_two_toolkits(tmp_path: Path):
    write_skill(
        tmp_path / "skills" / "answer",
        "answer",
        body="Answer it.",
        description="answers a question",
    )
    served = await tn.create_toolkit(tmp_path / "skills", builtins=False)
    async with served.serve(
        "127.0.0.1:0", client=reply("42"), a2a=tn.A2AConfig(name="answer-desk")
    ) as handle:
        caller = await tn.create_toolkit(
            builtins=False, agents=[tn.Agent(card=handle.card_url, poll_every=0.005)]
        )
        async with caller:
            res = await caller.execute("answer-desk_answer", {"task": "what is 6*7?"})
    assert not res.is_error, res.output
    assert res.output == "42"
    assert res.metadata["agent"] == "answer-desk" and res.metadata["state"] == "completed"
    assert res.metadata["dialect"] == "1.0" and res.metadata["taskId"]


async def test_seed_three_on_task_telemetry_provider_and_skill_filter(tmp_path: Path):
    write_skill(
        tmp_path / "s" / "hello-world", "hello-world", body="Say hello.", description="says hello"
    )
    write_skill(tmp_path / "s" / "hidden", "hidden", description="not advertised")
    tk = await tn.create_toolkit(tmp_path / "s", builtins=False)
    states: list[dict] = []
    a2a = tn.A2AConfig(
        name="video-desk",
        skills=["hello-world"],
        provider=tn.Provider(organization="acme", url="https://acme.example"),
    )
    async with tk.serve(
        "127.0.0.1:0", client=reply("TRANSCRIBED"), a2a=a2a, on_task=states.append
    ) as handle:
        tools = await tn.agent_tools(tn.Agent(card=handle.card_url, poll_every=0.005))
        hello = next(t for t in tools if t.name == "video-desk_hello-world")
        assert [t.name for t in tools] == ["video-desk_hello-world"]
        res = await hello.execute({"task": "do it"})
        for _ in range(100):
            if states:
                break
            await asyncio.sleep(0.005)
    assert res.output == "TRANSCRIBED" and not res.is_error
    assert states[0]["state"] == "completed"
    assert states[0]["result"].usage.total_tokens == 5
    assert states[0]["skill"] == "hello-world"


# -- our client against our server, every dialect ---------------------------------------------------


@pytest.fixture
async def ours():
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    async with tk.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(name="demo-desk", description="demo")
    ) as h:
        yield h


@pytest.mark.parametrize("dialect", ["auto", "0.3", "1.0", "legacy"])
async def test_our_client_against_our_server(ours, dialect):
    async with tn.A2AClient(ours.url, dialect=dialect) as client:
        assert client.dialect.value == ("1.0" if dialect == "auto" else dialect)
        task = await client.send("hello there")
        assert task.id and task.context_id
        events = [ev async for ev in client.watch(task.id, poll_every=0.01)]
        assert events[-1].state is TaskState.COMPLETED
        assert events[-1].task.reply == "You said: hello there"
        blocking = await client.send("again", context_id=task.context_id, blocking=True)
        assert blocking.reply == "You said: again (message 2 of this conversation)"
        got = await client.get(blocking.id, history_length=1)
        assert len(got.history) == 1 and got.history[0].role == "agent"
        slow = await client.send("slow 20")
        canceled = await client.cancel(slow.id)
        assert canceled.state is TaskState.CANCELED
        with pytest.raises(tn.errors.TaskNotFoundError):
            await client.get("no-such-task")
        methods = {ev.rpc_method for ev in client.traffic.events}
    expected = {"0.3": "message/send", "legacy": "SendMessage"}.get(dialect, "SendMessage")
    assert expected in methods


@pytest.mark.parametrize("dialect", ["auto", "0.3"])
async def test_streaming_from_our_server(ours, dialect):
    async with tn.A2AClient(ours.url, dialect=dialect) as client:
        states = [t.state async for t in client.stream("stream please")]
        last = [t async for t in client.stream("stream again")][-1]
    assert states[0] is TaskState.SUBMITTED and states[-1] is TaskState.COMPLETED
    assert TaskState.WORKING in states
    assert last.reply == "You said: stream again"


@pytest.mark.parametrize("dialect", ["auto", "0.3", "legacy"])
async def test_agent_tool_answers_input_required_on_our_server(ours, dialect):
    tk = await tn.create_toolkit(
        builtins=False, agents=[Agent(card=ours.card_url, poll_every=0.01, dialect=dialect)]
    )
    async with tk:
        first = await tk.execute("demo-desk_report", {"task": "please approve the budget"})
        request = first.pending
        assert (
            request is not None
            and request.prompt
            == "Publish this report?\n\nBudget\n- Done: nothing listed yet (list it after a colon: "
            '"draft the weekly report: shipped the login page, fixed search")\n'
            "- Next: what is still open\n- Blocks: none reported"
        )
        assert first.metadata["state"] == "input-required"
        done = await tk.execute(
            "demo-desk_report",
            {"task": "please approve the budget"},
            tn.ToolContext(answer=tn.Answer(request.id, True, "yes")),
        )
    assert not done.is_error and done.metadata["taskId"] == first.metadata["taskId"]
    assert "Request approved (yes)" in done.output


async def test_tool_errors_timeouts_and_cancel(ours):
    """A failed task, a timed-out one, a cancelled call. Only the timeout is tried with a short
    one: the failure and the cancel had it too, 0.5 s, and a loaded machine's send and polls of a
    task that fails at once can take longer ("timed out" where "failed" was asked); and 2 s, not
    0.5, for the task to be seen working before it times out (the message names the state seen)."""
    tk = await tn.create_toolkit(
        builtins=False, agents=[Agent(card=ours.card_url, poll_every=0.01, timeout=30)]
    )
    hasty = await tn.create_toolkit(
        builtins=False, agents=[Agent(card=ours.card_url, poll_every=0.01, timeout=2)]
    )
    async with tk, hasty:
        failed = await tk.execute("demo-desk_greet", {"task": "please fail"})
        assert failed.is_error
        assert (
            failed.output
            == f"A2A task {failed.metadata['taskId']} failed: model error: demo model: asked to fail"
        )
        slow = await hasty.execute("demo-desk_greet", {"task": "slow 10"})
        assert slow.is_error and slow.output.startswith(
            f"A2A task {slow.metadata['taskId']} timed out after 2000ms"
        )
        assert "(state=working)" in slow.output
        tool = tk.get("demo-desk_greet")
        working = sum(t.state is TaskState.WORKING for t in await ours.tasks())
        call = asyncio.ensure_future(tool.execute({"task": "slow 10"}))
        async with asyncio.timeout(10):  # the peer has the task (a loaded machine takes its time)
            while sum(t.state is TaskState.WORKING for t in await ours.tasks()) <= working:
                await asyncio.sleep(0.02)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        async with asyncio.timeout(10):  # the cancel the tool sent as it was cancelled arrives
            while not any(t.state is TaskState.CANCELED for t in await ours.tasks()):
                await asyncio.sleep(0.02)


async def test_unreachable_agent_is_isolated(caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING):
        tk = await tn.create_toolkit(builtins=False, agents=[Agent(card="http://127.0.0.1:1/")])
    assert tk.tools() == []
    assert "cannot be used" in caplog.text
    assert await tn.agent_tools(Agent(card="http://127.0.0.1:1/")) == []


async def test_config_agents_block_and_add_agent(ours, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TN_TEST_AGENT_TOKEN", "hunter2")
    cfg = {
        "builtins": False,
        "agents": {
            "demo": {
                "card": ours.card_url,
                "pollEvery": 10,
                "timeout": 5000,
                "headers": {"Authorization": "Bearer ${TN_TEST_AGENT_TOKEN}"},
            },
            "off": {"card": "http://127.0.0.1:1/", "enabled": False},
        },
    }
    tk = await tn.create_toolkit(config=cfg)
    async with tk:
        assert sorted(t.name for t in tk.tools()) == [
            "demo-desk_greet",
            "demo-desk_report",
            "demo-desk_weather",
        ]
        source = tk.agents()[0]
        assert source.agent.poll_every == 0.01 and source.agent.timeout == 5.0
        res = await tk.execute("demo-desk_greet", {"task": "hi"})
        assert res.output.startswith('Using the "greet" skill')
        wire = list(source.client.traffic.events)
        assert all(ev.request_headers.get("authorization") == "Bearer ***" for ev in wire)
        assert all("hunter2" not in str(vars(ev)) for ev in wire)
        second = await tn.create_toolkit(builtins=False)
        added = await second.add_agent(Agent(card=ours.url, name="again"))
        assert [t.name for t in added] == ["again_greet", "again_report", "again_weather"]
        await second.close()
    with pytest.raises(tn.ConfigError, match="needs a card URL"):
        await tn.create_toolkit(config={"agents": {"x": {}}})


# -- the official a2a-sdk 1.x server -------------------------------------------------------------------


@pytest.mark.parametrize("compat, dialect", [(False, "auto"), (True, "auto"), (True, "0.3")])
async def test_against_the_official_sdk_server(compat, dialect):
    async with sdk_server(compat=compat) as url:
        async with tn.A2AClient(url, dialect=dialect) as client:
            assert client.dialect.value == ("1.0" if dialect == "auto" else "0.3")
            task = await client.send("hello sdk", blocking=True)
            assert task.state is TaskState.COMPLETED and task.reply == "echo: hello sdk"
            pending = await client.send("slow one")
            canceled = await client.cancel(pending.id)
            assert canceled.state is TaskState.CANCELED
            streamed = [t async for t in client.stream("streamed")]
            assert (
                streamed[-1].state is TaskState.COMPLETED and streamed[-1].reply == "echo: streamed"
            )
            chunked = [
                t async for t in client.stream("chunked reply please")
            ]  # three appends, one text
            assert chunked[-1].reply == "echo: chunked reply please"
            assert [len(a.parts) for a in chunked[-1].artifacts] == [1]
            fetched = await client.get(
                chunked[-1].id
            )  # as the peer keeps it: the three pieces as parts
            assert (
                len(fetched.artifacts[0].parts) == 3 and fetched.reply == chunked[-1].reply
            )  # read the same
        tk = await tn.create_toolkit(
            builtins=False, agents=[Agent(card=url, poll_every=0.01, dialect=dialect)]
        )
        async with tk:
            assert [t.name for t in tk.tools()] == ["sdk-echo_echo"]
            res = await tk.execute("sdk-echo_echo", {"task": "via a tool"})
            assert res.output == "echo: via a tool"
            first = await tk.execute("sdk-echo_echo", {"task": "a question"})
            assert (
                first.pending is not None
                and first.pending.prompt == "What is your favourite colour?"
            )
            done = await tk.execute(
                "sdk-echo_echo",
                {"task": "a question"},
                tn.ToolContext(answer=tn.Answer(first.pending.id, True, "blue")),
            )
            assert (
                done.output == "answered: blue"
                and done.metadata["taskId"] == first.metadata["taskId"]
            )
            failed = await tk.execute("sdk-echo_echo", {"task": "please fail"})
            assert failed.is_error and failed.output.endswith("failed: the agent could not do it")


# -- the toolnexus legacy dialect ------------------------------------------------------------------------


async def test_against_a_legacy_peer_auto_falls_back_once():
    async with legacy_stub() as stub:
        async with tn.A2AClient(stub.url) as client:
            assert client.dialect.value == "0.3"
            task = await client.send("what is 6*7?")
            assert client.dialect.value == "legacy"
            assert "-32601" in client.dialect_reason
            assert task.state is TaskState.SUBMITTED
            events = [ev async for ev in client.watch(task.id, poll_every=0.01)]
            assert events[-1].task.reply == "echo: what is 6*7?"
            await client.send("again")  # remembered: no second message/send
        assert stub.methods.count("message/send") == 1
        assert stub.methods[:3] == ["message/send", "SendMessage", "GetTask"]
        assert all("a2a-version" not in h for h in stub.headers)
        tk = await tn.create_toolkit(builtins=False, agents=[Agent(card=stub.url, poll_every=0.01)])
        async with tk:
            res = await tk.execute("legacy-desk_answer", {"task": "what is 6*7?"})
            assert res.output == "echo: what is 6*7?" and res.metadata["dialect"] == "legacy"
            first = await tk.execute("legacy-desk_answer", {"task": "a question"})
            assert first.pending.prompt == "Which colour?"
            done = await tk.execute(
                "legacy-desk_answer",
                {"task": "a question"},
                tn.ToolContext(answer=tn.Answer(first.pending.id, True, "red")),
            )
            assert done.output == "answered: red"
            failed = await tk.execute("legacy-desk_answer", {"task": "fail"})
            assert (
                failed.is_error
                and failed.output
                == f"A2A task {failed.metadata['taskId']} failed: model error: asked to fail"
            )
            sent = stub.methods.count("SendMessage")
            call = asyncio.ensure_future(tk.execute("legacy-desk_answer", {"task": "slow"}))
            async with asyncio.timeout(10):  # the peer has the task and answered it
                while (
                    stub.methods.count("SendMessage") <= sent or "GetTask" not in stub.methods[-1:]
                ):
                    await asyncio.sleep(0.01)
            call.cancel()  # the legacy dialect has no cancel: the call still ends at once
            with pytest.raises(asyncio.CancelledError):
                await call
        assert "CancelTask" in stub.methods


# -- the client's fallbacks, one place for every transport ------------------------------------------


async def test_a_stream_to_a_peer_that_cannot_stream_is_a_send_then_followed():
    """An upstream toolnexus port answers message/stream with -32601 (and then speaks only the
    legacy dialect): the stream is a blocking send, polled until it settles, and says so."""
    async with legacy_stub() as stub:
        async with tn.A2AClient(stub.url) as client:
            tasks = [t async for t in client.stream("what is 6*7?")]
            assert tasks[-1].state is TaskState.COMPLETED
            assert tasks[-1].reply == "echo: what is 6*7?"
            assert client.dialect.value == "legacy"
            assert any(
                "-32601" in w and "blocking send instead of a stream" in w for w in client.warnings
            )
            # known now: the next stream goes straight to the send, and says why
            again = [t async for t in client.stream("again")]
            assert again[-1].reply == "echo: again"
            assert any("the legacy dialect has no streams" in w for w in client.warnings)
        assert stub.methods[:3] == ["message/stream", "message/send", "SendMessage"]
        assert stub.methods.count("message/stream") == 1


async def test_a_stream_that_ends_finished_without_its_reply_is_followed_by_a_get():
    """Some peers stream only the states: the reply, kept on the task, is fetched once at the end."""

    def frame(result: dict) -> bytes:
        return (
            b"data: " + json.dumps({"jsonrpc": "2.0", "id": 1, "result": result}).encode() + b"\n\n"
        )

    stream = (
        frame({"kind": "task", "id": "t1", "contextId": "c1", "status": {"state": "submitted"}})
        + frame(
            {
                "kind": "status-update",
                "taskId": "t1",
                "contextId": "c1",
                "status": {"state": "working"},
                "final": False,
            }
        )
        + frame(
            {
                "kind": "status-update",
                "taskId": "t1",
                "contextId": "c1",
                "status": {"state": "completed"},
                "final": True,
            }
        )
    )
    kept = {
        "kind": "task",
        "id": "t1",
        "contextId": "c1",
        "status": {"state": "completed"},
        "artifacts": [{"artifactId": "a1", "parts": [{"kind": "text", "text": "the reply"}]}],
    }
    async with ScriptedServer() as peer:
        peer.replies[:] = [
            Reply(
                body={
                    "name": "states-only",
                    "url": peer.url + "/",
                    "version": "1",
                    "protocolVersion": "0.3.0",
                    "capabilities": {"streaming": True},
                    "defaultInputModes": ["text"],
                    "defaultOutputModes": ["text"],
                    "skills": [],
                }
            ),
            Reply(raw=stream, headers={"content-type": "text/event-stream"}),
            Reply(body={"jsonrpc": "2.0", "id": 1, "result": kept}),
        ]
        async with tn.A2AClient(peer.url) as client:
            tasks = [t async for t in client.stream("hello")]
    assert [t.state.value for t in tasks] == ["submitted", "working", "completed", "completed"]
    assert tasks[-1].reply == "the reply"
    assert [r["json"]["method"] for r in peer.requests[1:]] == ["message/stream", "tasks/get"]


# -- the conversation the TUI and the notebook run -----------------------------------------------------


@pytest.mark.parametrize("dialect", ["auto", "0.3", "legacy"])
async def test_a_conversation_keeps_its_context_and_answers_a_question_on_its_task(ours, dialect):
    chat = tn.Conversation(peer=ours.url)
    seen: list[tn.TurnState | None] = []
    async with tn.A2AClient(ours.url, dialect=dialect) as client:
        first = chat.say("hello there")
        assert [t.role for t in chat.turns] == [
            "user",
            "agent",
        ] and first.state is tn.TurnState.SENDING
        await chat.run(client, first, on_change=lambda t: seen.append(t.state), poll_every=0.01)
        assert first.text == "You said: hello there" and first.task_state is TaskState.COMPLETED
        assert seen[-1] is tn.TurnState.FINISHED and chat.context_id == first.task.context_id
        asked = chat.say("please approve the budget")
        await chat.run(client, asked, poll_every=0.01)
        assert (
            asked.state is tn.TurnState.ASKED and chat.waiting_task == asked.task_id == chat.running
        )
        assert chat.question == asked.text and chat.question and chat.answering
        chat.answering = False  # the user's choice: a new task; the question stays open
        aside = chat.say("hello meanwhile")
        await chat.run(client, aside, poll_every=0.01)
        assert aside.task_id != asked.task_id and aside.task_state is TaskState.COMPLETED
        assert aside.task.context_id == asked.task.context_id and aside.text.startswith(
            "You said: hello meanwhile"
        )
        assert (
            chat.waiting_task == asked.task_id
            and chat.question == asked.text
            and not chat.answering
        )
        chat.answering = True
        answered = chat.say("yes")
        await chat.run(client, answered, poll_every=0.01)
        assert answered.task_id == asked.task_id and "Request approved (yes)" in answered.text
        assert chat.waiting_task is None and chat.running is None
        slow = chat.say("slow 20")
        runner = asyncio.create_task(chat.run(client, slow, poll_every=0.01))
        while chat.running is None:
            await asyncio.sleep(0.01)
        await chat.cancel(client, chat.running)
        await runner
        assert slow.task_state is TaskState.CANCELED and slow.state is tn.TurnState.FINISHED
        assert len({t.task.context_id for t in chat.turns if t.task}) == 1
    with pytest.raises(ValueError, match="nothing to say"):
        chat.say("")
    assert chat.to_dict()["turns"][1] == {
        "role": "agent",
        "text": "You said: hello there",
        "state": "finished",
        "task": first.task_id,
        "taskState": "completed",
    }


async def test_a_conversation_cut_by_a_dead_peer_is_lost_and_a_retry_follows_its_task():
    async with sdk_server() as url:
        chat = tn.Conversation(peer=url)
        client = tn.A2AClient(url)
        reply = chat.say("a question")
        await chat.run(client, reply, poll_every=0.01)
        assert reply.state is tn.TurnState.ASKED and reply.text == "What is your favourite colour?"
        task_id = reply.task_id
        await client.aclose()
    dead = tn.A2AClient(url, timeout=2)
    answer = chat.say("blue")
    await chat.run(dead, answer)  # the peer is gone: the turn says so, nothing raises
    await dead.aclose()
    assert answer.state is tn.TurnState.LOST and chat.lost is answer and answer.task_id is None
    assert (
        chat.waiting_task == task_id
    )  # the question is still open: nothing the peer saw changed it
    again = chat.retry()
    assert again is answer and again.state is tn.TurnState.SENDING and chat.lost is None
    assert (
        again.follow is None and again.message is not None
    )  # never reached the peer: it is sent again
    assert chat.retry() is None
    bad = chat.say("to nowhere")
    await chat.run(tn.A2AClient("http://127.0.0.1:1/not-a-card", timeout=1), bad)
    assert bad.state in (tn.TurnState.LOST, tn.TurnState.ERROR) and bad.text


async def test_a_call_cancelled_while_its_send_is_on_its_way_cancels_the_task_it_made():
    """The peer (the official SDK) makes the task a second after the send arrives: a call cancelled
    meanwhile knew no task id, so the task ran on there with nobody watching it."""
    async with sdk_server() as url:
        tk = await tn.create_toolkit(builtins=False, agents=[Agent(card=url, poll_every=0.05)])
        async with tk, tn.A2AClient(url) as client:
            tool = next(t for t in tk.tools() if t.source == "a2a")
            call = asyncio.ensure_future(tool.execute({"task": "late and slow"}))
            await asyncio.sleep(0.3)  # the send is out, its answer a second away
            assert not call.done()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            async with asyncio.timeout(10):  # the task made, and the cancel the call sent after it
                while [t.state for t in (await client.list_tasks())["tasks"]] != [
                    TaskState.CANCELED
                ]:
                    await asyncio.sleep(0.05)
