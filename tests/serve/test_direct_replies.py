"""An agent that answers with a Message when no task is needed (A2A §3.1.1, ``A2AConfig.direct_replies``),
seen by the official a2a-sdk 1.x client on every binding and version we serve: JSON-RPC, HTTP+JSON
and gRPC, 1.0 and 0.3 (the SDK's compat transports), a blocking send and a stream; a run that asks
a question, or a send that does not wait, still gets its task."""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

import toolnexus as tn
from toolnexus.hosting import EXAMPLE_SKILLS

from ..helpers import read_until, run_cli, started_cli

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")
pytest.importorskip("grpc", reason="gRPC is a test peer: pip install -e '.[test]'")

from a2a.types import a2a_pb2 as pb  # noqa: E402

from .test_tenants import sdk_client  # noqa: E402

IN_MODULE = pytest.mark.asyncio(loop_scope="module")  # the async tests share the served agent

ROUTES = [
    ("JSONRPC", "1.0"),
    ("JSONRPC", "0.3"),
    ("HTTP+JSON", "1.0"),
    ("HTTP+JSON", "0.3"),
    ("GRPC", "1.0"),
    ("GRPC", "0.3"),
]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def direct():
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    a2a = tn.A2AConfig(name="direct", direct_replies=True, grpc="127.0.0.1:0")
    async with tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
        yield handle


def _message(text: str, **ids: str) -> pb.Message:
    return pb.Message(
        message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text=text)], **ids
    )


async def _send(client, message: pb.Message, **config) -> list[pb.StreamResponse]:
    request = pb.SendMessageRequest(
        message=message, configuration=pb.SendMessageConfiguration(**config)
    )
    return [ev async for ev in client.send_message(request)]


@IN_MODULE
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
@pytest.mark.parametrize(("binding", "version"), ROUTES)
async def test_the_sdk_client_gets_a_message_when_no_task_is_needed(
    direct, binding, version, streaming
):
    async with httpx.AsyncClient(timeout=30) as http:
        client = await sdk_client(direct.url, binding, "", http, version, streaming=streaming)
        try:
            (answer,) = await _send(client, _message("weather in Oslo"))
            assert answer.HasField("message"), answer
            said = answer.message
            assert said.role == pb.ROLE_AGENT
            assert said.parts[0].text.endswith("Oslo: light snow, -3°C.")
            assert said.context_id and not said.task_id  # no task to follow
            # the context goes on: the next message in it is answered alike
            (again,) = await _send(client, _message("greet Ada", context_id=said.context_id))
            assert again.message.context_id == said.context_id
            assert "Ada" in again.message.parts[0].text
            # a run that asks gets its task, which the answer then completes (a task, now)
            events = await _send(client, _message("please confirm the order"))
            asked = events[-1].task if events[-1].HasField("task") else None
            if asked is None:  # a stream's last frame: the task as it stopped
                asked = events[0].task
            assert asked.id and asked.status.state == pb.TASK_STATE_INPUT_REQUIRED, events
            events = await _send(
                client, _message("yes", task_id=asked.id, context_id=asked.context_id)
            )
            last = events[-1]
            state = (last.task if last.HasField("task") else last.status_update).status.state
            assert state == pb.TASK_STATE_COMPLETED
        finally:
            await client.close()


@IN_MODULE
@pytest.mark.parametrize(("binding", "version"), [("JSONRPC", "1.0"), ("HTTP+JSON", "0.3")])
async def test_a_send_that_does_not_wait_gets_its_task(direct, binding, version):
    async with httpx.AsyncClient(timeout=30) as http:
        client = await sdk_client(direct.url, binding, "", http, version)
        try:
            (answer,) = await _send(client, _message("weather in Oslo"), return_immediately=True)
            assert answer.HasField("task") and answer.task.id
            done = await client.get_task(pb.GetTaskRequest(id=answer.task.id))
            while done.status.state != pb.TASK_STATE_COMPLETED:
                done = await client.get_task(pb.GetTaskRequest(id=answer.task.id))
        finally:
            await client.close()


@IN_MODULE
async def test_our_client_and_the_raw_wire_read_a_direct_reply(direct):
    """Our client takes the message as the answer of a blocking send (one that does not wait gets
    the task); the wire says ``message`` in 1.0's result and ``kind: message`` in 0.3's."""
    async with tn.A2AClient(direct.url) as peer:
        assert (await peer.send("weather in Oslo")).id  # not waited for: a task
        task = await peer.send("weather in Oslo", blocking=True)
        assert not task.id
        assert task.state is tn.TaskState.COMPLETED
        assert task.reply.endswith("Oslo: light snow, -3°C.")
    async with httpx.AsyncClient(timeout=30) as http:
        part = {"text": "weather in Oslo"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
        body["params"] = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [part]}}
        r = await http.post(direct.url + "/", json=body, headers={"A2A-Version": "1.0"})
        result = r.json()["result"]
        assert set(result) == {"message"} and result["message"]["role"] == "ROLE_AGENT"
        body["method"] = "message/send"
        body["params"]["message"] = {
            "kind": "message",
            "messageId": "m2",
            "role": "user",
            "parts": [{"kind": "text", **part}],
        }
        result = (await http.post(direct.url + "/", json=body)).json()["result"]
        assert result["kind"] == "message" and result["role"] == "agent"
        assert "taskId" not in result


def test_toolnexus_serve_direct_replies():
    """The command line's flag, and its config key (a config file's ``a2a.directReplies``, which
    the flag's absence leaves as it is)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
    part = {"text": "greet Ada"}
    body["params"] = {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [part]}}
    with started_cli("serve", "--direct-replies", "--json") as proc:
        url = read_until(proc, "ready")[0]["url"]
        r = httpx.post(url + "/", json=body, headers={"A2A-Version": "1.0"}, timeout=30)
        assert "Ada" in r.json()["result"]["message"]["parts"][0]["text"]
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "c.json"
        config.write_text(json.dumps({"a2a": {"directReplies": True}}))
        with started_cli("serve", "--config", str(config), "--json") as proc:
            url = read_until(proc, "ready")[0]["url"]
            r = httpx.post(url + "/", json=body, headers={"A2A-Version": "1.0"}, timeout=30)
            assert set(r.json()["result"]) == {"message"}
        config.write_text(json.dumps({"a2a": {"directReplies": "yes"}}))
        done = run_cli("serve", "--config", str(config))
        assert done.returncode == 2 and "a2a.directReplies must be true or false" in done.stderr
