"""Issue 59 item 8: gRPC's tenants and extensions under the attacks JSON-RPC's held: another
tenant's task reached by every operation that names a task, tenants not listed or not names, and
extension metadata oversized, malformed, repeated or binary. Each attack is made on both bindings,
raw (a generic gRPC call, an HTTP POST), and gets the same answer on both."""

from __future__ import annotations

import json
import os

import httpx
import pytest

import toolnexus as tn
from toolnexus.http.server import MAX_HEAD

from ..serve.wire import v10_message

try:
    import grpc
    from a2a.types import a2a_pb2 as pb
except ImportError as exc:  # a real part missing: CI fails, a laptop skips
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"the gRPC attack tests need grpcio and a2a-sdk ({exc})", allow_module_level=True)

pytestmark = pytest.mark.asyncio(loop_scope="module")

DEPTH = "https://toolnexus.example/ext/depth/v1"
"""Required by the agent under test."""
TIMING = "https://toolnexus.example/ext/timing/v1"

RPC = {-32001: "not found", -32008: "extension required", -32602: "invalid", None: "answered"}
GRPC = {
    "NOT_FOUND": "not found",
    "FAILED_PRECONDITION": "extension required",
    "INVALID_ARGUMENT": "invalid",
    "OK": "answered",
}


async def rpc(http, url: str, method: str, params: dict, headers=()) -> str:
    """What a JSON-RPC call comes to, in a word (see :data:`RPC`)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    hdrs = [("a2a-version", "1.0"), ("content-type", "application/json"), *headers]
    r = await http.post(url + "/", content=json.dumps(body), headers=hdrs)
    if r.status_code == 431:
        return "head too large"
    text = r.text
    if text.startswith("data:") or "\ndata:" in text:  # a stream: its first event
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
    error = json.loads(text).get("error")
    return RPC.get(error and error["code"], f"code {error and error['code']}")


async def call(channel, method: str, request, metadata=()) -> str:
    """What a gRPC call comes to, in a word (see :data:`GRPC`)."""
    path = f"/lf.a2a.v1.A2AService/{method}"
    try:
        if method == "SubscribeToTask":
            stream = channel.unary_stream(path, request_serializer=type(request).SerializeToString)
            async for _ in stream(request, metadata=metadata, timeout=30):
                break
        else:
            unary = channel.unary_unary(path, request_serializer=type(request).SerializeToString)
            await unary(request, metadata=metadata, timeout=30)
    except grpc.aio.AioRpcError as exc:
        if exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED:
            return "head too large"
        return GRPC.get(exc.code().name, exc.code().name)
    return "answered"


async def test_another_tenants_task_is_out_of_reach_on_grpc_as_on_json_rpc():
    tk = await tn.create_toolkit(builtins=False)
    a2a = tn.A2AConfig(grpc="127.0.0.1:0", tenants=("acme", "globex"))
    async with (
        tk.serve(client=tn.demo_client(), a2a=a2a) as h,
        httpx.AsyncClient(timeout=30) as http,
        grpc.aio.insecure_channel(h.grpc_target) as channel,
    ):
        made = await http.post(
            h.url + "/",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendMessage",
                "params": {"message": v10_message("hello acme"), "tenant": "acme"},
            },
            headers={"a2a-version": "1.0"},
        )
        task = made.json()["result"]["task"]["id"]
        hook = "https://example.com/hook"

        def attacks(tenant: str) -> list[tuple[str, dict, object]]:
            """(method, JSON-RPC params, gRPC request): each names acme's task."""
            message = v10_message("mine now", taskId=task)
            grpc_message = pb.Message(
                message_id=message["messageId"],
                role=pb.ROLE_USER,
                parts=[pb.Part(text="mine now")],
                task_id=task,
            )
            return [
                ("GetTask", {"id": task}, pb.GetTaskRequest(id=task, tenant=tenant)),
                ("CancelTask", {"id": task}, pb.CancelTaskRequest(id=task, tenant=tenant)),
                (
                    "SubscribeToTask",
                    {"id": task},
                    pb.SubscribeToTaskRequest(id=task, tenant=tenant),
                ),
                (
                    "SendMessage",
                    {"message": message},
                    pb.SendMessageRequest(message=grpc_message, tenant=tenant),
                ),
                (
                    "CreateTaskPushNotificationConfig",
                    {"taskId": task, "url": hook},
                    pb.TaskPushNotificationConfig(task_id=task, url=hook, tenant=tenant),
                ),
                (
                    "GetTaskPushNotificationConfig",
                    {"taskId": task, "id": "c1"},
                    pb.GetTaskPushNotificationConfigRequest(task_id=task, id="c1", tenant=tenant),
                ),
                (
                    "ListTaskPushNotificationConfigs",
                    {"taskId": task},
                    pb.ListTaskPushNotificationConfigsRequest(task_id=task, tenant=tenant),
                ),
                (
                    "DeleteTaskPushNotificationConfig",
                    {"taskId": task, "id": "c1"},
                    pb.DeleteTaskPushNotificationConfigRequest(
                        task_id=task, id="c1", tenant=tenant
                    ),
                ),
            ]

        said = {}
        for tenant in ("globex", "", "initech", "a" * 300, "ac\x00me", "acme/../globex"):
            for method, params, request in attacks(tenant):
                named = {**params, "tenant": tenant} if tenant else params
                said[(tenant, method)] = (
                    await rpc(http, h.url, method, named),
                    await call(channel, method, request),
                )
        listed = await call(channel, "ListTasks", pb.ListTasksRequest(tenant="globex"))
        unary = channel.unary_unary(
            "/lf.a2a.v1.A2AService/ListTasks",
            request_serializer=pb.ListTasksRequest.SerializeToString,
            response_deserializer=pb.ListTasksResponse.FromString,
        )
        seen = await unary(pb.ListTasksRequest(tenant="globex"), timeout=30)
        still = await call(channel, "GetTask", pb.GetTaskRequest(id=task, tenant="acme"))
    differ = {k: v for k, v in said.items() if v[0] != v[1]}
    assert not differ, differ
    for (tenant, method), (answer, _) in said.items():
        expected = "not found" if tenant in ("globex", "") else "invalid"
        assert answer == expected, (tenant, method, answer)
    assert listed == "answered" and task not in [t.id for t in seen.tasks]
    assert still == "answered"  # acme's own task, untouched


async def test_extension_metadata_oversized_malformed_repeated_or_binary_as_on_json_rpc():
    tk = await tn.create_toolkit(builtins=False)
    a2a = tn.A2AConfig(grpc="127.0.0.1:0", extensions=[{"uri": DEPTH, "required": True}, TIMING])
    others = [f"https://example.com/ext/{i}" for i in range(40)]
    attacks: dict[str, list[tuple[str, str]]] = {
        "none": [],
        "asked": [("a2a-extensions", DEPTH)],
        "among junk": [("a2a-extensions", f",, {DEPTH} ,x y, ,")],
        "after 40 others": [("a2a-extensions", ",".join([*others, DEPTH]))],
        "before 40 others": [("a2a-extensions", ",".join([DEPTH, *others]))],
        "too long a uri": [("a2a-extensions", DEPTH + "x" * 3000)],
        "prefix of it": [("a2a-extensions", DEPTH[:-1])],
        "two entries": [("a2a-extensions", TIMING), ("a2a-extensions", DEPTH)],
        "0.3's name": [("x-a2a-extensions", DEPTH)],
        "near the bound": [("a2a-extensions", DEPTH + "," + "," * (MAX_HEAD - 4096))],
        "past the bound": [("a2a-extensions", DEPTH + "," + "x" * (MAX_HEAD + 1))],
    }
    async with (
        tk.serve(client=tn.demo_client(), a2a=a2a) as h,
        httpx.AsyncClient(timeout=30) as http,
        grpc.aio.insecure_channel(h.grpc_target) as channel,
    ):
        said = {
            name: (
                await rpc(http, h.url, "GetTask", {"id": "nope"}, metadata),
                await call(channel, "GetTask", pb.GetTaskRequest(id="nope"), metadata),
            )
            for name, metadata in attacks.items()
        }
        binary = await call(
            channel,
            "GetTask",
            pb.GetTaskRequest(id="nope"),
            [("a2a-extensions-bin", DEPTH.encode())],
        )
        async with tn.A2AClient(h.url, binding="grpc", extensions=[DEPTH]) as client:  # serving
            assert (await client.send("hello", blocking=True)).state.terminal
    differ = {k: v for k, v in said.items() if v[0] != v[1]}
    assert not differ, differ
    answers = {name: answer for name, (answer, _) in said.items()}
    assert answers == {
        "none": "extension required",
        "asked": "not found",  # the extension activated: the call ran, and found no such task
        "among junk": "not found",
        "after 40 others": "extension required",  # past the 32 read
        "before 40 others": "not found",
        "too long a uri": "extension required",
        "prefix of it": "extension required",
        "two entries": "not found",  # each entry read, as two header lines are
        "0.3's name": "not found",
        "near the bound": "not found",
        "past the bound": "head too large",
    }, answers
    assert binary == "extension required"  # a binary entry is not the header
