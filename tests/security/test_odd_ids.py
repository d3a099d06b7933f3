"""Odd ids (a NUL byte, a lone surrogate, 3,000 characters) are refused where they are parsed, by
one rule, with a clear -32602 / 400 / INVALID_ARGUMENT on every binding and every store; nothing
is stored, no traceback is logged, and the agent keeps serving."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

import toolnexus as tn
from toolnexus.protocol.dialects import MAX_ID

grpc = pytest.importorskip("grpc")
from a2a.types import a2a_pb2 as pb  # noqa: E402
from a2a.types import a2a_pb2_grpc  # noqa: E402

ODD = {"nul": "ctx\x00id", "long": "c" * 3000, "control": "a\x1b[2Jb", "surrogate": "x\ud800y"}
V10 = {"A2A-Version": "1.0"}


def message(**ids: str) -> dict:
    return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": "hi"}], **ids}


def body(payload: dict) -> bytes:
    return json.dumps(payload, ensure_ascii=True).encode()  # a lone surrogate travels as \ud800


@pytest.fixture
async def agent(store_spec: str):
    """The agent on each kind of store (``store_spec``: every kind ``toolnexus.stores.KINDS`` lists)."""
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="ids", description="d", grpc="127.0.0.1:0", store=store_spec),
    ) as handle:
        yield handle


@pytest.mark.parametrize("odd", list(ODD))
async def test_an_odd_id_is_invalid_params_on_every_binding_and_store(agent, odd, caplog):
    value = ODD[odd]
    before = len(await agent.tasks(limit=100))
    async with httpx.AsyncClient(base_url=agent.url, headers=V10, timeout=30) as http:
        for where, params in (
            ("contextId", {"message": message(contextId=value)}),
            ("taskId", {"message": message(taskId=value)}),
            ("messageId", {"message": {**message(), "messageId": value}}),
        ):
            r = await http.post(
                "/",
                content=body(
                    {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
                ),
                headers={"Content-Type": "application/json"},
            )
            error = r.json()["error"]
            rest = await http.post(
                "/message:send", content=body(params), headers={"Content-Type": "application/json"}
            )
            assert rest.status_code == 400, rest.text
            if (
                odd == "surrogate"
            ):  # not even JSON to our parser: a parse error, before any id is read
                assert error["code"] == -32700, error
                continue
            assert error["code"] == -32602 and where in error["message"], (where, error)
            assert where in rest.json()["error"]["message"], rest.text
        for method in ("GetTask", "CancelTask", "ListTaskPushNotificationConfigs"):
            key = "taskId" if method.startswith("List") else "id"
            r = await http.post(
                "/",
                content=body({"jsonrpc": "2.0", "id": 2, "method": method, "params": {key: value}}),
                headers={"Content-Type": "application/json"},
            )
            assert r.json()["error"]["code"] == (-32700 if odd == "surrogate" else -32602), (
                method,
                r.text,
            )
        listed = await http.post(
            "/",
            content=body(
                {"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {"contextId": value}}
            ),
            headers={"Content-Type": "application/json"},
        )
        assert listed.json()["error"]["code"] == (-32700 if odd == "surrogate" else -32602)
        if odd != "surrogate":  # a URL path cannot carry one
            path = await http.get(
                "/tasks/" + "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in value)
            )
            assert path.status_code == 400, path.text
    if odd != "surrogate":  # protobuf strings are UTF-8: a lone surrogate cannot be sent at all
        async with grpc.aio.insecure_channel(agent.grpc_target) as channel:
            stub = a2a_pb2_grpc.A2AServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.SendMessage(
                    pb.SendMessageRequest(
                        message=pb.Message(
                            message_id=str(uuid.uuid4()),
                            role=pb.ROLE_USER,
                            context_id=value,
                            parts=[pb.Part(text="hi")],
                        )
                    ),
                    metadata=(("a2a-version", "1.0"),),
                )
            assert (
                refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                and "contextId" in refused.value.details()
            )
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.GetTask(pb.GetTaskRequest(id=value), metadata=(("a2a-version", "1.0"),))
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert len(await agent.tasks(limit=100)) == before  # nothing stored
    assert "Traceback" not in caplog.text and "-32603" not in caplog.text
    async with tn.A2AClient(agent.url) as peer:  # and it keeps serving, an id at the limit included
        task = await peer.send("still here", context_id="k" * MAX_ID, blocking=True)
        assert task.reply == "You said: still here" and task.context_id == "k" * MAX_ID
