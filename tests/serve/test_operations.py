"""The table of operations (toolnexus.protocol.operations) against the specification's own service and a
real served agent: every operation the official a2a.v1.A2AService declares is a row, and every
row is served on every binding it names; the checks before an operation are the same on all of
them (auth first, then the version, then the body's type and size)."""

from __future__ import annotations

import os
import re
import uuid

import httpx
import pytest

import toolnexus as tn
from toolnexus.protocol.operations import OPERATIONS, V03_METHODS, V10_METHODS

try:
    import grpc
    from a2a.types import a2a_pb2 as pb
    from a2a.types import a2a_pb2_grpc
except ImportError as exc:  # a real part missing: CI fails, a laptop skips
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(
        f"these tests need grpcio and a2a-sdk: pip install -e '.[test]' ({exc})",
        allow_module_level=True,
    )

TOKEN = "ops-secret-2718"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_every_rpc_of_the_official_service_is_a_row_with_its_messages():
    service = pb.DESCRIPTOR.services_by_name["A2AService"]
    rows = {op.v10: op for op in OPERATIONS.values()}
    assert set(rows) == {m.name for m in service.methods}
    for method in service.methods:
        op = rows[method.name]
        assert (op.grpc_request, op.grpc_response) == (
            method.input_type.name,
            method.output_type.name,
        )
        assert op.streams == method.server_streaming
    # every name a dialect has leads back to its row, and no two rows share one
    assert all(
        V10_METHODS[op.v10] is op and (op.v03 is None or V03_METHODS[op.v03] is op)
        for op in OPERATIONS.values()
    )


def test_every_rpc_of_the_03_service_is_a_row_with_its_messages():
    from a2a.compat.v0_3 import a2a_v0_3_pb2

    service = a2a_v0_3_pb2.DESCRIPTOR.services_by_name["A2AService"]
    assert service.full_name == "a2a.v1.A2AService"  # 1.0's is lf.a2a.v1: one server has both
    rows = {op.v03_grpc[0]: (op, op.v03_grpc) for op in OPERATIONS.values() if op.v03_grpc}
    assert set(rows) == {m.name for m in service.methods}
    for method in service.methods:
        op, (_, request, response) = rows[method.name]
        assert (request, response) == (method.input_type.name, method.output_type.name)
        assert op.streams == method.server_streaming


async def test_every_row_of_03_is_served_over_grpc(served):
    from a2a.compat.v0_3 import a2a_v0_3_pb2, a2a_v0_3_pb2_grpc

    async with grpc.aio.insecure_channel(served.grpc_target) as channel:
        stub = a2a_v0_3_pb2_grpc.A2AServiceStub(channel)
        for op in OPERATIONS.values():
            if op.v03_grpc is None:
                continue
            rpc, request, _ = op.v03_grpc
            message = getattr(a2a_v0_3_pb2, request)()
            failed = await _call_empty(getattr(stub, rpc), message, op)
            if failed is not None:  # what an empty request deserves
                assert failed.code() != grpc.StatusCode.UNIMPLEMENTED, rpc
                # 0.3's details name the A2A error as its SDKs did, and nothing else
                assert re.fullmatch(r"[A-Za-z]+Error: .+", failed.details() or ""), (rpc, failed)
                assert "Traceback" not in (failed.details() or "")


async def _call_empty(call, message, op):
    """Call an RPC with ``message`` (an empty request), as the agent's owner; its failure or None."""
    try:
        reply = call(message, metadata=[("authorization", AUTH["Authorization"])])
        if op.streams:
            async for _ in reply:
                pass
        else:
            await reply
    except grpc.aio.AioRpcError as failed:
        return failed
    return None


@pytest.fixture(scope="module")
def served():
    """One served agent with auth and gRPC, shared by the module (its own loop in a thread)."""
    from toolnexus.http.server import LoopThread

    loop = LoopThread()

    async def start():
        tk = await tn.create_toolkit(builtins=False)
        handle = await tk.serve(
            client=tn.demo_client(),
            a2a=tn.A2AConfig(auth=tn.Auth.bearer(TOKEN), grpc="127.0.0.1:0", max_body=64 * 1024),
        )
        return tk, handle

    tk, handle = loop.run(start())
    yield handle
    loop.run(handle.stop())
    loop.run(tk.close())
    loop.close()


async def _slow_task(http: httpx.AsyncClient) -> str:
    body = {
        "message": {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_USER",
            "parts": [{"text": "slow 30"}],
        },
        "configuration": {"returnImmediately": True},
    }
    sent = await http.post("/message:send", json=body, headers=AUTH)
    assert sent.status_code == 200
    return sent.json()["task"]["id"]


async def test_every_row_is_served_on_every_binding(served):
    async with httpx.AsyncClient(
        base_url=served.url, timeout=30, headers={"A2A-Version": "1.0", **AUTH}
    ) as http:
        for op in OPERATIONS.values():
            for method in filter(None, (op.v10, op.v03, *op.aliases)):
                r = await http.post(
                    "/",
                    json={"jsonrpc": "2.0", "id": 1, "method": method, "params": {}},
                    headers={"A2A-Version": "0.3" if method == op.v03 else "1.0"},
                )
                error = r.json().get("error") or {}
                assert error.get("code") != -32601, (method, r.text)
            for route, v03 in ((op.route, False), (op.v03_route, True)):
                if route is None:
                    continue
                path = route.replace("{id}", "nosuch").replace("{taskId}", "nosuch")
                r = await http.request(
                    op.verb,
                    path,
                    json={} if op.verb == "POST" else None,
                    headers={"A2A-Version": "0.3" if v03 else "1.0"},
                )
                assert r.status_code not in (404, 405) or "TASK_NOT_FOUND" in r.text, (
                    op.verb,
                    path,
                    r.text,
                )
                assert "Traceback" not in r.text
    async with grpc.aio.insecure_channel(served.grpc_target) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        for op in OPERATIONS.values():
            failed = await _call_empty(getattr(stub, op.v10), getattr(pb, op.grpc_request)(), op)
            if failed is not None:  # what an empty request deserves, never "no such RPC"
                assert failed.code() != grpc.StatusCode.UNIMPLEMENTED, op.v10
                assert not re.search(r"[A-Z][a-z]+(Error|Exception)\b", failed.details() or ""), (
                    failed
                )


async def test_cancel_and_subscribe_bodies_pass_the_same_checks_as_every_other_route(served):
    async with httpx.AsyncClient(
        base_url=served.url, timeout=30, headers={"A2A-Version": "1.0", **AUTH}
    ) as http:
        task = await _slow_task(http)
        for verb in (":cancel", ":subscribe"):
            plain = await http.post(
                f"/tasks/{task}{verb}", content=b"cancel it", headers={"Content-Type": "text/plain"}
            )
            assert (
                plain.status_code == 415 and plain.json()["error"]["status"] == "INVALID_ARGUMENT"
            )
            huge = await http.post(
                f"/tasks/{task}{verb}",
                content=b"{" + b" " * (200 * 1024) + b"}",
                headers={"Content-Type": "application/json"},
            )
            assert huge.status_code == 413
            bad = await http.post(
                f"/tasks/{task}{verb}",
                content=b"{not json",
                headers={"Content-Type": "application/json"},
            )
            assert bad.status_code == 400 and "not valid JSON" in bad.text
        # none of them did anything: the task still runs, and a bodiless POST cancels it
        assert (await http.get(f"/tasks/{task}")).json()["status"]["state"] == "TASK_STATE_WORKING"
        canceled = await http.post(f"/tasks/{task}:cancel")
        assert (
            canceled.status_code == 200
            and canceled.json()["status"]["state"] == "TASK_STATE_CANCELED"
        )
        # a JSON body is read as the request (the path's id wins), on 0.3's routes too
        other = await _slow_task(http)
        with_body = await http.post(
            f"/v1/tasks/{other}:cancel",
            json={"name": f"tasks/{other}"},
            headers={"A2A-Version": "0.3"},
        )
        assert (
            with_body.status_code == 200
            and with_body.json()["status"]["state"] == "TASK_STATE_CANCELLED"
        )


async def test_an_unauthenticated_caller_learns_nothing_before_auth_on_any_binding(served):
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as http:
        for verb, path, version in (
            ("GET", "/v1/tasks/x", "1.0"),
            ("GET", "/tasks/x", "0.3"),
            ("POST", "/tasks/x:cancel", "9.9"),
            ("POST", "/v1/message:send", "1.0"),
        ):
            r = await http.request(
                verb,
                path,
                headers={"A2A-Version": version, "Content-Type": "text/plain"},
                content=b"x" * (200 * 1024) if verb == "POST" else None,
            )
            assert r.status_code == 401 and r.json()["error"]["status"] == "UNAUTHENTICATED", (
                path,
                r.text,
            )
        rpc = await http.post(
            "/",
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
            headers={"A2A-Version": "9.9"},
        )
        assert rpc.status_code == 401
    async with grpc.aio.insecure_channel(served.grpc_target) as channel:
        stub = a2a_pb2_grpc.A2AServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetTask(pb.GetTaskRequest(id="x"), metadata=[("a2a-version", "0.3")])
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
