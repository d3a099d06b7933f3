"""ProtoJSON on the way in: a 1.0 request may name a field by its proto name (``task_id``, as the
official TCK sends it) as well as by its JSON name (``taskId``), on JSON-RPC and HTTP+JSON alike;
a caller's own keys (metadata, data parts) are never renamed, and naming one field both ways is a
clear -32602. The requests are the official SDK's own messages, written with proto names."""

from __future__ import annotations

import uuid

import httpx
import pytest
import pytest_asyncio

import toolnexus as tn

pytest.importorskip("a2a")
from a2a.types import a2a_pb2 as pb  # noqa: E402
from google.protobuf import json_format  # noqa: E402

V10 = {"A2A-Version": "1.0"}
pytestmark = pytest.mark.asyncio(loop_scope="module")


def proto_names(message) -> dict:  # type: ignore[no-untyped-def]
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def served():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(name="protojson", push_notifications=True)
    ) as handle:
        yield handle


async def _rpc(http: httpx.AsyncClient, method: str, params: dict) -> dict:
    r = await http.post("/", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    return r.json()


async def test_proto_field_names_are_read_on_jsonrpc_and_the_callers_own_keys_are_kept(served):
    context = str(uuid.uuid4())
    send = pb.SendMessageRequest(
        message=pb.Message(
            message_id=str(uuid.uuid4()),
            context_id=context,
            role=pb.ROLE_USER,
            parts=[pb.Part(text="hello")],
        ),
        configuration=pb.SendMessageConfiguration(
            history_length=1, accepted_output_modes=["text/plain"]
        ),
    )
    params = proto_names(send)
    params["message"]["metadata"] = {"snake_key": {"inner_key": 1}}
    assert "message_id" in params["message"] and "history_length" in params["configuration"]
    async with httpx.AsyncClient(base_url=served.url, headers=V10, timeout=30) as http:
        sent = await _rpc(http, "SendMessage", params)
        task = sent["result"]["task"]
        assert task["contextId"] == context and task["status"]["state"] == "TASK_STATE_COMPLETED"
        assert len(task["history"]) == 1  # history_length was read
        got = await _rpc(
            http, "GetTask", proto_names(pb.GetTaskRequest(id=task["id"], history_length=5))
        )
        assert got["result"]["history"][0]["metadata"] == {
            "snake_key": {"inner_key": 1}
        }  # never renamed
        listed = await _rpc(
            http,
            "ListTasks",
            proto_names(
                pb.ListTasksRequest(context_id=context, page_size=1, include_artifacts=True)
            ),
        )
        assert [t["id"] for t in listed["result"]["tasks"]] == [task["id"]]
        assert listed["result"]["tasks"][0]["artifacts"]  # include_artifacts was read
        # the push-config methods, as the TCK calls them (PUSH-CREATE-001: task_id)
        config = pb.TaskPushNotificationConfig(
            task_id=task["id"], id="hook-1", url="http://127.0.0.1:9/hook", token="tok"
        )
        created = await _rpc(http, "CreateTaskPushNotificationConfig", proto_names(config))
        assert created["result"]["taskId"] == task["id"] and created["result"]["id"] == "hook-1", (
            created
        )
        fetched = await _rpc(
            http,
            "GetTaskPushNotificationConfig",
            proto_names(pb.GetTaskPushNotificationConfigRequest(task_id=task["id"], id="hook-1")),
        )
        assert fetched["result"]["url"] == "http://127.0.0.1:9/hook", fetched
        listed = await _rpc(
            http,
            "ListTaskPushNotificationConfigs",
            proto_names(pb.ListTaskPushNotificationConfigsRequest(task_id=task["id"])),
        )
        assert [c["id"] for c in listed["result"]["configs"]] == ["hook-1"], listed
        deleted = await _rpc(
            http,
            "DeleteTaskPushNotificationConfig",
            proto_names(
                pb.DeleteTaskPushNotificationConfigRequest(task_id=task["id"], id="hook-1")
            ),
        )
        assert "error" not in deleted, deleted


async def test_one_field_named_both_ways_is_a_clear_invalid_params(served):
    async with httpx.AsyncClient(base_url=served.url, headers=V10, timeout=30) as http:
        both = await _rpc(
            http, "GetTaskPushNotificationConfig", {"task_id": "a", "taskId": "b", "id": "c"}
        )
        assert both["error"]["code"] == -32602
        assert (
            both["error"]["message"]
            == "Invalid params: task_id and taskId name the same field; send one"
        )
        rest = await http.post(
            "/message:send",
            json={
                "message": {
                    "message_id": "m1",
                    "messageId": "m2",
                    "role": "ROLE_USER",
                    "parts": [{"text": "hi"}],
                }
            },
        )
        assert (
            rest.status_code == 400
            and "message_id and messageId" in rest.json()["error"]["message"]
        )


async def test_proto_field_names_are_read_on_http_json(served):
    send = pb.SendMessageRequest(
        message=pb.Message(
            message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text="over rest")]
        ),
        configuration=pb.SendMessageConfiguration(return_immediately=False),
    )
    async with httpx.AsyncClient(base_url=served.url, headers=V10, timeout=30) as http:
        r = await http.post("/message:send", json=proto_names(send))
        assert r.status_code == 200, r.text
        task = r.json()["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        config = proto_names(
            pb.TaskPushNotificationConfig(id="rest-hook", url="http://127.0.0.1:9/h")
        )
        created = await http.post(f"/tasks/{task['id']}/pushNotificationConfigs", json=config)
        assert created.status_code == 200 and created.json()["id"] == "rest-hook", created.text
