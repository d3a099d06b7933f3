"""Extensions (A2A §4.6): declared on the card, asked for in ``A2A-Extensions`` (0.3's
``X-A2A-Extensions``), answered as activated in the same header, a required one refused with
-32008 when not asked for, on every binding; ``Message.extensions`` and ``Artifact.extensions``
kept through every dialect and store. The official a2a-sdk 1.3 on the other side both ways."""

from __future__ import annotations

import os
import uuid

import httpx
import pytest

import toolnexus as tn
from toolnexus.errors import ConfigError, ExtensionSupportRequiredError, InvalidParamsError
from toolnexus.protocol.model import Message, Part, TaskState

from ..peers.sdk_server import sdk_server
from .test_tenants import sdk_client

try:
    from a2a.client import ClientCallContext
    from a2a.types import a2a_pb2 as pb
    from a2a.utils import errors as sdk_errors
except ImportError as exc:  # a real part missing: CI fails, a laptop skips
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"the extension tests need grpcio and a2a-sdk ({exc})", allow_module_level=True)

DEPTH = "https://toolnexus.example/ext/depth/v1"
"""Required by the agent under test."""
TIMING = "https://toolnexus.example/ext/timing/v1"
"""Declared, optional."""
BINDINGS = ["JSONRPC", "HTTP+JSON", "GRPC"]
EVERY_WAY = [(b, d) for b in ("jsonrpc", "http+json", "grpc") for d in ("1.0", "0.3")]
"""Every binding our client speaks, in each dialect."""


async def _served(store: str = "memory"):
    tk = await tn.create_toolkit(builtins=False)
    return await tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(
            name="extended",
            grpc="127.0.0.1:0",
            store=store,
            extensions=[
                {"uri": DEPTH, "required": True, "description": "a depth", "params": {"max": 3}},
                TIMING,
            ],
        ),
    )


def _asking(*uris: str) -> ClientCallContext:
    return ClientCallContext(service_parameters={"A2A-Extensions": ",".join(uris)})


@pytest.mark.parametrize("binding", BINDINGS)
async def test_the_sdk_client_needs_the_required_extension_and_its_message_keeps_its_own(binding):
    handle = await _served()
    http = httpx.AsyncClient(timeout=30)
    client = await sdk_client(handle.url, binding, "", http)
    try:
        message = pb.Message(
            message_id=str(uuid.uuid4()),
            role=pb.ROLE_USER,
            parts=[pb.Part(text="hello")],
            extensions=[DEPTH, TIMING],
        )
        request = pb.SendMessageRequest(message=message)
        with pytest.raises(sdk_errors.ExtensionSupportRequiredError):  # -32008 in its binding
            _ = [ev async for ev in client.send_message(request)]
        with pytest.raises(sdk_errors.ExtensionSupportRequiredError):
            await client.get_task(pb.GetTaskRequest(id="x"), context=_asking(TIMING))
        events = [ev async for ev in client.send_message(request, context=_asking(DEPTH))]
        task = events[0].task
        assert task.status.state == pb.TASK_STATE_COMPLETED
        got = await client.get_task(pb.GetTaskRequest(id=task.id), context=_asking(DEPTH))
        assert list(got.history[0].extensions) == [DEPTH, TIMING]
    finally:
        await client.close()
        await http.aclose()
        await handle.stop()


async def test_the_card_declares_them_and_the_answer_names_the_activated(tmp_path):
    handle = await _served(store=f"file:{tmp_path}")
    try:
        async with httpx.AsyncClient(base_url=handle.url) as http:
            card = (await http.get("/.well-known/agent-card.json")).json()
            assert card["capabilities"]["extensions"] == [
                {"uri": DEPTH, "description": "a depth", "required": True, "params": {"max": 3}},
                {"uri": TIMING},
            ]
            call = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
            refused = await http.post("/", json=call, headers={"A2A-Version": "1.0"})
            assert refused.json()["error"]["code"] == -32008
            assert DEPTH in refused.json()["error"]["message"]
            asked = f"{DEPTH}, https://unknown.example/x, {TIMING}"
            answered = await http.post(
                "/", json=call, headers={"A2A-Version": "1.0", "A2A-Extensions": asked}
            )
            assert answered.json()["error"]["code"] == -32001  # past the check
            assert answered.headers["a2a-extensions"] == f"{DEPTH}, {TIMING}"
            rest = await http.get("/tasks", headers={"A2A-Extensions": DEPTH})
            assert rest.status_code == 200 and rest.headers["a2a-extensions"] == DEPTH
            bare = await http.get("/tasks")
            assert bare.status_code == 400
            assert bare.json()["error"]["details"][0]["reason"] == "EXTENSION_SUPPORT_REQUIRED"
            legacy = await http.post(  # 0.3: its header name, answered under both
                "/",
                json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "x"}},
                headers={"X-A2A-Extensions": DEPTH},
            )
            assert legacy.json()["error"]["code"] == -32001
            assert legacy.headers["x-a2a-extensions"] == DEPTH
            odd = await http.post(
                "/",
                json={
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "SendMessage",
                    "params": {
                        "message": {
                            "messageId": "m1",
                            "role": "ROLE_USER",
                            "parts": [{"text": "x"}],
                            "extensions": "not-a-list",
                        }
                    },
                },
                headers={"A2A-Version": "1.0", "A2A-Extensions": DEPTH},
            )
            assert odd.json()["error"]["code"] == -32602
            assert "extensions" in odd.json()["error"]["message"]
        # our client: the header on every binding and dialect, what was activated read back, the
        # message's own extensions kept through the file store
        for binding, dialect in EVERY_WAY:
            async with tn.A2AClient(
                handle.url, binding=binding, dialect=dialect, extensions=[DEPTH]
            ) as client:
                sent = Message("user", [Part.of_text("hi")], extensions=[TIMING])
                task = await client.send(sent, blocking=True)
                assert client.activated == [DEPTH], (binding, dialect)
                assert task.state is TaskState.COMPLETED
                got = await client.get(task.id)
                assert got.history[0].extensions == [TIMING], (binding, dialect)
            async with tn.A2AClient(handle.url, binding=binding, dialect=dialect) as bare:
                with pytest.raises(ExtensionSupportRequiredError):
                    await bare.get(task.id)
    finally:
        await handle.stop()


@pytest.mark.parametrize("binding", BINDINGS)
async def test_our_client_asks_the_sdk_server_and_keeps_its_artifacts_extensions(binding):
    async with sdk_server(binding=binding) as url:
        async with tn.A2AClient(url, extensions=[DEPTH, TIMING]) as client:
            task = await client.send("which extensions", blocking=True)
            assert task.reply == f"extensions: {DEPTH} {TIMING}"
            assert task.artifacts[0].extensions == [DEPTH, TIMING]
            assert (await client.get(task.id)).artifacts[0].extensions == [DEPTH, TIMING]


async def test_extensions_are_checked_where_they_are_given():
    for bad in ("https://x", [{"uri": ""}], [{"uri": "a,b"}], [{"uri": "u", "required": "yes"}]):
        with pytest.raises(ConfigError):
            tn.A2AConfig(extensions=bad).check()
    with pytest.raises(ConfigError):
        tn.A2AConfig(extensions=[TIMING, {"uri": TIMING}]).check()
    with pytest.raises(ValueError):
        tn.A2AClient("http://127.0.0.1:9", extensions="https://x")
    with pytest.raises(InvalidParamsError):
        from toolnexus.protocol.dialects import parse_message

        parse_message(
            {"messageId": "m", "role": "user", "parts": [{"text": "x"}], "extensions": [7]}
        )
