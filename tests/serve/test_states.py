"""Every state an agent can reach and every field a send carries, served and spoken: a tool that
asks for authorization (``auth-required``, answered on the same task like a question) and one that
refuses the work (``rejected``), the request's own ``metadata`` kept on the task; through the
official a2a-sdk 1.x client on each of its transports and through ours."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import pytest_asyncio

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

from a2a.types import a2a_pb2 as pb  # noqa: E402

import toolnexus as tn  # noqa: E402
from toolnexus.errors import UnsupportedOperationError  # noqa: E402
from toolnexus.protocol.model import TaskState  # noqa: E402

from ..helpers import write_skill  # noqa: E402
from .test_sdk_interop import TRANSPORTS, message, poll, sdk_client, send  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

SIGN_IN = "Sign in to the vault at https://vault.example/authorize, then say done"


@tn.tool
def vault(ctx: tn.ToolContext) -> tn.ToolResult:
    """Open the vault: it needs the caller's authorization first."""
    if ctx.answer is None:
        return tn.ToolResult.needs_auth(SIGN_IN, url="https://vault.example/authorize")
    return tn.ToolResult(f"vault opened ({ctx.answer.data})")


@tn.tool
def gate(what: str) -> tn.ToolResult:
    """Refuse what this agent will not do."""
    return tn.ToolResult.reject(f"this agent does not do {what}")


def script(request: dict[str, Any]) -> dict[str, Any]:
    """The model: "vault" calls the vault tool, "forbidden" the gate; then says what it got."""
    messages = request["messages"]
    last = max(i for i, m in enumerate(messages) if m["role"] == "user")
    prompt = messages[last]["content"]
    results = [m["content"] for m in messages[last + 1 :] if m["role"] == "tool"]
    if results:
        return {"content": results[-1]}
    if "vault" in prompt:
        return {"tool_calls": [{"name": "vault", "arguments": {}}]}
    if "forbidden" in prompt:
        return {"tool_calls": [{"name": "gate", "arguments": {"what": prompt}}]}
    return {"content": f"You said: {prompt}"}


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def states_server(tmp_path_factory):
    skills = tmp_path_factory.mktemp("skills")
    write_skill(skills / "vault", "vault", "Open the vault.", description="Opens the vault")
    tk = await tn.create_toolkit(skills, builtins=False, tools=[vault, gate])
    seen: list[dict] = []
    handle = await tk.serve(
        "127.0.0.1:0",
        client=tn.create_in_process_client(generate=script),
        a2a=tn.A2AConfig(name="states-desk"),
        on_task=seen.append,
    )
    handle.on_task_calls = seen  # type: ignore[attr-defined]
    yield handle
    await handle.stop()
    await tk.close()


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_auth_required_is_answered_on_the_same_task(states_server, version):
    async with sdk_client(states_server, version) as client:
        task = await send(client, message("open the vault"))
        assert task.status.state == pb.TASK_STATE_AUTH_REQUIRED
        assert task.status.message.parts[0].text == SIGN_IN
        done = await send(client, message("done", task_id=task.id, context_id=task.context_id))
        assert done.id == task.id
        done = await poll(client, task.id)
        assert done.artifacts[0].parts[0].text == "vault opened (done)"
        states = [e["state"] for e in states_server.on_task_calls if e["id"] == task.id]
        assert states == ["auth-required", "completed"]


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_a_tool_rejects_the_task(states_server, version):
    async with sdk_client(states_server, version) as client:
        task = await send(client, message("something forbidden"))
        assert task.status.state == pb.TASK_STATE_REJECTED
        assert task.status.message.parts[0].text == "this agent does not do something forbidden"
        again = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert again.status.state == pb.TASK_STATE_REJECTED
        assert not again.artifacts


async def test_our_client_reads_both_and_answers_authorization(states_server):
    async with tn.A2AClient(states_server.url) as peer:
        asked = await peer.send("open the vault", blocking=True, request_metadata={"run": 7})
        assert asked.state is TaskState.AUTH_REQUIRED and asked.status.message.text == SIGN_IN
        assert asked.metadata == {"run": 7}
        done = await peer.send(
            "signed in", task_id=asked.id, context_id=asked.context_id, blocking=True
        )
        assert done.state is TaskState.COMPLETED and done.reply == "vault opened (signed in)"
        refused = await peer.send("forbidden fruit", blocking=True)
        assert refused.state is TaskState.REJECTED
        with pytest.raises(UnsupportedOperationError):  # rejected is terminal: no answer
            await peer.send("please", task_id=refused.id, blocking=True)


async def test_an_agent_tool_passes_auth_required_on(states_server):
    """A served task whose A2A tool's remote task asks for authorization asks its own caller in
    turn (A2A §7.6.2): a chain of auth-required tasks, answered from the top."""
    front = await tn.create_toolkit(builtins=False, agents=[tn.Agent(card=states_server.url)])
    tool_name = front.tools()[0].name

    def relay(request: dict[str, Any]) -> dict[str, Any]:
        messages = request["messages"]
        last = max(i for i, m in enumerate(messages) if m["role"] == "user")
        results = [m["content"] for m in messages[last + 1 :] if m["role"] == "tool"]
        if results:
            return {"content": results[-1]}
        return {"tool_calls": [{"name": tool_name, "arguments": {"task": "open the vault"}}]}

    relayed = tn.create_in_process_client(generate=relay)
    async with front.serve(client=relayed, a2a=tn.A2AConfig()) as handle:
        async with tn.A2AClient(handle.url) as peer:
            asked = await peer.send("relay it", blocking=True)
            assert asked.state is TaskState.AUTH_REQUIRED, asked.reply
            assert asked.status.message.text == SIGN_IN
            done = await peer.send("done", task_id=asked.id, blocking=True)
            for _ in range(100):
                if done.state.terminal:
                    break
                await asyncio.sleep(0.05)
                done = await peer.get(done.id)
            assert done.state is TaskState.COMPLETED and "vault opened (done)" in done.reply
    await front.close()


async def test_a_refusal_over_mcp_is_the_calls_error_never_a_question():
    from mcp import Client

    tk = await tn.create_toolkit(builtins=False, tools=[gate])
    async with await tk.serve(mcp=tn.MCPServeConfig()) as handle, Client(handle.mcp_url) as mcp:
        refused = await mcp.call_tool("gate", {"what": "that"})
        assert refused.is_error
        assert [c.text for c in refused.content] == ["rejected: this agent does not do that"]
    await tk.close()
