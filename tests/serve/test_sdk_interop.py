"""The official a2a-sdk 1.x client against a served toolkit, through its 1.0 JSON-RPC transport,
its 0.3 compat transport and its HTTP+JSON (REST) transport, over a real loopback port."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import httpx
import pytest

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

from a2a.client import ClientConfig, ClientFactory  # noqa: E402
from a2a.types import a2a_pb2 as pb  # noqa: E402
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

TRANSPORTS = ["1.0", "0.3", "rest", "rest-0.3"]


@contextlib.asynccontextmanager
async def sdk_client(handle, version: str, *, streaming: bool = False):
    """An official client for our card; for '0.3' the card keeps only its 0.3 interface, so the
    1.x SDK picks its compat transport exactly as it does for a 0.3-only agent; for 'rest' and
    'rest-0.3' only that HTTP+JSON interface, and the client is told it may speak that."""
    http = httpx.AsyncClient(timeout=30)
    bindings = ["HTTP+JSON"] if version.startswith("rest") else []
    factory = ClientFactory(
        ClientConfig(streaming=streaming, httpx_client=http, supported_protocol_bindings=bindings)
    )
    from a2a.client.card_resolver import A2ACardResolver

    card = await A2ACardResolver(http, handle.url).get_agent_card()
    assert card.name == handle.name
    if version != "1.0":
        binding, wanted = {
            "0.3": ("JSONRPC", "0.3"),
            "rest": ("HTTP+JSON", "1.0"),
            "rest-0.3": ("HTTP+JSON", "0.3"),
        }[version]
        keep = [
            i
            for i in card.supported_interfaces
            if (i.protocol_binding, i.protocol_version) == (binding, wanted)
        ]
        assert keep
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(keep)
    client = factory.create(card)
    if version.startswith("rest"):
        from a2a.client.transports.rest import RestTransport
        from a2a.compat.v0_3.rest_transport import CompatRestTransport

        assert isinstance(
            client._transport, RestTransport if version == "rest" else CompatRestTransport
        )
    try:
        yield client
    finally:
        await client.close()
        await http.aclose()


def message(text: str, *, context_id: str = "", task_id: str = "") -> pb.Message:
    return pb.Message(
        message_id=str(uuid.uuid4()),
        role=pb.ROLE_USER,
        parts=[pb.Part(text=text)],
        context_id=context_id,
        task_id=task_id,
    )


async def send(client, msg: pb.Message, *, immediately: bool = False) -> pb.Task:
    request = pb.SendMessageRequest(
        message=msg, configuration=pb.SendMessageConfiguration(return_immediately=immediately)
    )
    tasks = [ev.task async for ev in client.send_message(request) if ev.HasField("task")]
    assert len(tasks) == 1
    return tasks[0]


def reply(task: pb.Task) -> str:
    return "\n".join(p.text for a in task.artifacts for p in a.parts)


async def poll(client, task_id: str, until=(pb.TASK_STATE_COMPLETED,)) -> pb.Task:
    for _ in range(200):
        task = await client.get_task(pb.GetTaskRequest(id=task_id))
        if task.status.state in until:
            return task
        await asyncio.sleep(0.02)
    raise AssertionError(f"task {task_id} never reached {until}: {task.status.state}")


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_non_blocking_send_then_poll(demo_server, version):
    async with sdk_client(demo_server, version) as client:
        task = await send(client, message("hello from the sdk"), immediately=True)
        assert task.status.state in (
            pb.TASK_STATE_SUBMITTED,
            pb.TASK_STATE_WORKING,
            pb.TASK_STATE_COMPLETED,
        )
        assert task.context_id
        done = await poll(client, task.id)
        assert reply(done) == "You said: hello from the sdk"
        assert [m.role for m in done.history] == [pb.ROLE_USER, pb.ROLE_AGENT]


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_blocking_send_and_two_messages_in_one_context(demo_server, version):
    async with sdk_client(demo_server, version) as client:
        first = await send(client, message("first turn"))
        assert first.status.state == pb.TASK_STATE_COMPLETED
        assert reply(first) == "You said: first turn"
        second = await send(client, message("second turn", context_id=first.context_id))
        assert second.id != first.id and second.context_id == first.context_id
        assert reply(second) == "You said: second turn (message 2 of this conversation)"


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_streaming(demo_server, version):
    async with sdk_client(demo_server, version, streaming=True) as client:
        request = pb.SendMessageRequest(message=message("stream this"))
        events = [ev async for ev in client.send_message(request)]
    kinds = [ev.WhichOneof("payload") for ev in events]
    assert kinds[0] == "task"
    states = [ev.status_update.status.state for ev in events if ev.HasField("status_update")]
    assert states == [pb.TASK_STATE_WORKING, pb.TASK_STATE_COMPLETED]
    arts = [ev.artifact_update for ev in events if ev.HasField("artifact_update")]
    assert [p.text for a in arts for p in a.artifact.parts] == ["You said: stream this"]


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_cancel(demo_server, version):
    async with sdk_client(demo_server, version) as client:
        task = await send(client, message("slow 20"), immediately=True)
        canceled = await client.cancel_task(pb.CancelTaskRequest(id=task.id))
        assert canceled.status.state == pb.TASK_STATE_CANCELED
        again = await client.get_task(pb.GetTaskRequest(id=task.id))
        assert again.status.state == pb.TASK_STATE_CANCELED
        with pytest.raises(TaskNotCancelableError, match="already canceled"):  # -32002
            await client.cancel_task(pb.CancelTaskRequest(id=task.id))


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_unknown_task(demo_server, version):
    async with sdk_client(demo_server, version) as client:
        with pytest.raises(TaskNotFoundError):  # -32001
            await client.get_task(pb.GetTaskRequest(id="no-such-task"))


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_input_required_is_answered_on_the_same_task(demo_server, version):
    async with sdk_client(demo_server, version) as client:
        task = await send(client, message("please confirm the order"))
        assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert task.status.message.parts[0].text == "Do you approve: please confirm the order?"
        done = await send(client, message("yes", task_id=task.id, context_id=task.context_id))
        assert done.id == task.id
        assert done.status.state == pb.TASK_STATE_COMPLETED
        assert reply(done) == "Request approved (yes). You said: please confirm the order"


@pytest.mark.parametrize("version", TRANSPORTS)
async def test_request_metadata_is_kept_on_the_task(demo_server, version):
    """SendMessageRequest.metadata (the request's, beside the message's own) is the new task's
    metadata, and an answer's request metadata is set on the task it answers."""
    from google.protobuf import struct_pb2

    def meta(**fields) -> struct_pb2.Struct:
        out = struct_pb2.Struct()
        out.update(fields)
        return out

    async with sdk_client(demo_server, version) as client:
        request = pb.SendMessageRequest(
            message=message("please confirm the order"),
            metadata=meta(origin="sdk", trip={"legs": 2}),
        )
        (task,) = [ev.task async for ev in client.send_message(request) if ev.HasField("task")]
        assert task.status.state == pb.TASK_STATE_INPUT_REQUIRED
        assert dict(task.metadata) == {"origin": "sdk", "trip": {"legs": 2.0}}
        answer = pb.SendMessageRequest(
            message=message("yes", task_id=task.id, context_id=task.context_id),
            metadata=meta(answeredBy="sdk"),
        )
        [ev async for ev in client.send_message(answer)]
        done = await poll(client, task.id)
        assert dict(done.metadata) == {"origin": "sdk", "trip": {"legs": 2.0}, "answeredBy": "sdk"}
        assert not done.history[0].metadata  # the message's own metadata is not the request's
