"""A task that fails says why where every client looks: in its status message (the spec's place,
what the official SDKs, the JS SDK and ours read) and as its history's last message, the agent's,
once (Microsoft Agent Framework's client and a2a-handler read a task's text from its history:
without it MAF gave back the user's own words as the reply, a2a-handler showed no reason), on every
store and in every dialect."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from typing import Any

import httpx
import pytest

import toolnexus as tn
from toolnexus.errors import ModelError
from toolnexus.llm import create_in_process_client

from ..peers import field

REASON = "model error: the model ran out of credit"


async def broke(request: dict[str, Any]):
    """A model that fails: the task fails saying why (the runner's words for a ModelError)."""
    raise ModelError("the model ran out of credit")
    yield ""  # pragma: no cover - a model is a generator


async def serve(**options: Any) -> tn.ServeHandle:
    tk = await tn.create_toolkit(builtins=False)
    return await tk.serve(
        client=create_in_process_client(broke), a2a=tn.A2AConfig(name="failing", **options)
    )


async def rpc(http: httpx.AsyncClient, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    headers = {} if "/" in method else {"A2A-Version": "1.0"}
    answer = (await http.post("/", json=body, headers=headers)).json()
    assert "result" in answer, answer
    return answer["result"]


def said_why(task: dict[str, Any], agent: str) -> None:
    """The status message is the reason, and so is the history's last message, once."""
    why = task["status"]["message"]
    assert [p["text"] for p in why["parts"]] == [REASON] and why["role"] == agent
    assert task["history"][-1] == why
    texts = [p.get("text") for m in task["history"] for p in m["parts"]]
    assert texts.count(REASON) == 1, task["history"]


async def test_a_failed_task_says_why_in_its_history_on_every_store_and_dialect(store_spec):
    handle = await serve(store=store_spec)
    try:
        async with httpx.AsyncClient(base_url=handle.url, timeout=30) as http:
            m10 = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}]}
            task = (await rpc(http, "SendMessage", {"message": m10}))["task"]
            assert task["status"]["state"] == "TASK_STATE_FAILED"
            said_why(task, "ROLE_AGENT")
            said_why(await rpc(http, "GetTask", {"id": task["id"]}), "ROLE_AGENT")
            said_why(await rpc(http, "tasks/get", {"id": task["id"]}), "agent")
            m03 = {
                "kind": "message",
                "messageId": str(uuid.uuid4()),
                "role": "user",
                "parts": [{"kind": "text", "text": "hi"}],
            }
            send = {"message": m03, "configuration": {"blocking": True}}
            old = await rpc(http, "message/send", send)
            assert old["kind"] == "task" and old["status"]["state"] == "failed"
            said_why(old, "agent")
        stored = await handle.runner.store.get(task["id"])
        assert stored is not None and stored.history[-1].role == "agent"
        assert stored.history[-1].text == REASON == stored.status.message.text
    finally:
        await handle.stop()


async def test_clients_that_read_the_status_or_the_history_show_the_reason_once(tmp_path):
    """Ours and the official SDK read the status message; a2a-handler (its CLI, from PyPI) the
    history: each shows the reason, once."""
    pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer")
    from a2a.types import a2a_pb2 as pb

    from .test_sdk_interop import sdk_client

    handle = await serve()
    try:
        async with tn.A2AClient(handle.url) as ours:
            task = await ours.send("hi", blocking=True)
        assert task.state is tn.TaskState.FAILED and task.reply == REASON
        assert [m.text for m in task.history if m.role == "agent"] == [REASON]
        for version in ("1.0", "0.3"):
            async with sdk_client(handle, version) as client:
                request = pb.SendMessageRequest(
                    message=pb.Message(
                        message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text="hi")]
                    )
                )
                got = [ev async for ev in client.send_message(request)]
                sdk_task = got[-1].task
                assert sdk_task.status.message.parts[0].text == REASON, version
                agent = [m for m in sdk_task.history if m.role == pb.ROLE_AGENT]
                assert [m.parts[0].text for m in agent] == [REASON], version
        field.need("handler")
        handler = field.HERE / "handler" / ".venv" / "bin" / "handler"
        done = await asyncio.to_thread(
            subprocess.run,
            [str(handler), "message", "send", "--url", handle.url, "--text", "hi"],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "HOME": str(tmp_path)},
        )
        assert done.stdout.count(REASON) == 1, (done.stdout, done.stderr[-2000:])
    finally:
        await handle.stop()
