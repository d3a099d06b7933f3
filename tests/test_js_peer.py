"""Our client and Agent tools against the official A2A JavaScript SDK server (@a2a-js/sdk 1.3)."""

from __future__ import annotations

import pytest

import toolnexus as tn
from toolnexus.client.agents import Agent
from toolnexus.protocol.model import TaskState

from .peers.js_peer import js_server


@pytest.mark.parametrize("compat", [False, True])
async def test_client_against_the_js_sdk_server(compat):
    async with js_server(compat=compat) as url:
        async with tn.A2AClient(url) as client:
            # the card asked for with the version we speak: a compat server serves its 1.0 card
            assert (
                "supportedInterfaces" in client.card.raw
                and "preferredTransport" not in client.card.raw
            )
            assert client.dialect.value == "1.0"
            task = await client.send("hello js", blocking=True)
            assert task.state is TaskState.COMPLETED and task.reply == "echo: hello js"
            streamed = [t async for t in client.stream("chunked reply please")]
            assert streamed[-1].reply == "echo: chunked reply please"  # three appends, one text
            question = await client.send("a question", blocking=True)
            assert question.state is TaskState.INPUT_REQUIRED
            # answered without blocking: the SDK first returns the task as it was (same question);
            # that is not a new question, the client follows it past the answer
            answered = await client.send(
                "blue", task_id=question.id, context_id=question.context_id
            )
            assert answered.state is TaskState.COMPLETED and answered.reply == "answered: blue"


async def test_agent_tool_answers_a_js_sdk_question_once():
    async with js_server() as url:
        tk = await tn.create_toolkit(builtins=False, agents=[Agent(card=url, poll_every=0.01)])
        async with tk:
            [tool] = [t.name for t in tk.tools()]
            first = await tk.execute(tool, {"task": "a question"})
            assert (
                first.pending is not None
                and first.pending.prompt == "What is your favourite colour?"
            )
            done = await tk.execute(
                tool,
                {"task": "a question"},
                tn.ToolContext(answer=tn.Answer(first.pending.id, True, "green")),
            )
            assert done.pending is None and done.output == "answered: green"


async def test_cli_answer_to_a_js_sdk_question_prints_the_answer_not_the_question(capsys):
    from toolnexus.cli import main

    async with js_server() as url:
        async with tn.A2AClient(url) as client:
            question = await client.send("a question", blocking=True)
        import asyncio

        code = await asyncio.to_thread(
            main, ["send", url, "red", "--task", question.id, "--context", question.context_id]
        )
    out = capsys.readouterr().out
    assert code in (0, None) and "answered: red" in out and "favourite colour" not in out
