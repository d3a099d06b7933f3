"""Auth a user can run (issue 50 item 6), with real peers on both sides: HTTP basic served (the
official a2a-sdk client calling through its httpx client's basic auth, JSON-RPC, HTTP+JSON and
gRPC alike) and sent (our client to the SDK's server behind basic auth)."""

from __future__ import annotations

import os
import sys

import httpx
import pytest

import toolnexus as tn
from toolnexus.secrets import basic_authorization

from ..peers.sdk_server import sdk_server
from ..serve.wire import v03_message

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

from a2a.client import ClientCallContext, ClientConfig, ClientFactory  # noqa: E402
from a2a.client.card_resolver import A2ACardResolver  # noqa: E402
from a2a.types import a2a_pb2 as pb  # noqa: E402

from ..serve.test_grpc import _sdk_client as grpc_client  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADA, BOB = ("ada", "pa55 w0rd:x"), ("bob", "hunter2")  # a space and a colon in a password


def _message(text: str) -> pb.Message:
    return pb.Message(message_id=text, role=pb.ROLE_USER, parts=[pb.Part(text=text)])


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
async def test_the_sdk_client_calls_an_agent_served_behind_basic_auth(binding):
    tk = await tn.create_toolkit(builtins=False)
    auth = tn.Auth.basic(":".join(ADA), ":".join(BOB))
    a2a = tn.A2AConfig(auth=auth, grpc="127.0.0.1:0")
    async with tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
        context, http = None, None
        if binding == "GRPC":  # the SDK's way to send a call's metadata
            client = await grpc_client(handle.url)
            context = ClientCallContext(
                service_parameters={"authorization": basic_authorization(*ADA)}
            )
        else:
            http = httpx.AsyncClient(auth=httpx.BasicAuth(*ADA), timeout=30)
            card = await A2ACardResolver(http, handle.url).get_agent_card()
            assert (
                card.security_schemes["basic"].http_auth_security_scheme.scheme.lower() == "basic"
            )
            config = ClientConfig(httpx_client=http, supported_protocol_bindings=[binding])
            client = ClientFactory(config).create(card)
        try:
            events = [
                ev
                async for ev in client.send_message(
                    pb.SendMessageRequest(message=_message("hello basic")), context=context
                )
            ]
        finally:
            await client.close()
            if http is not None:
                await http.aclose()
        final = events[-1].task if events[-1].HasField("task") else events[-1].status_update
        assert final.status.state == pb.TASK_STATE_COMPLETED
        async with httpx.AsyncClient() as raw:
            body = {"jsonrpc": "2.0", "id": 1, "method": "message/send"}
            body["params"] = {"message": v03_message("x")}
            r = await raw.post(handle.url + "/", json=body)
            assert r.status_code == 401
            assert r.headers["www-authenticate"] == 'Basic realm="toolnexus", charset="UTF-8"'
            assert r.json()["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
            wrong = {"authorization": basic_authorization("ada", "guess")}
            r = await raw.post(handle.url + "/", json=body, headers=wrong)
            assert r.status_code == 403
            bearer = {"authorization": "Bearer " + ":".join(ADA)}  # the right secret, wrong scheme
            assert (await raw.post(handle.url + "/", json=body, headers=bearer)).status_code == 401
        # two users: each sees only the tasks it made
        async with tn.A2AClient(handle.url, basic=BOB) as bob:
            assert (await bob.list_tasks())["tasks"] == []
        async with tn.A2AClient(handle.url, basic=ADA) as ada:
            assert len((await ada.list_tasks())["tasks"]) == 1


async def test_our_client_sends_basic_to_the_sdk_server_and_masks_it():
    async with sdk_server(basic=ADA) as url:
        async with tn.A2AClient(url, basic=ADA) as client:
            task = await client.send("echo me", blocking=True)
            assert task.reply == "echo: echo me"
            logged = repr([(e.request_headers, e.url) for e in client.traffic.events])
            assert ADA[1] not in logged and basic_authorization(*ADA)[6:] not in logged
        async with tn.A2AClient(url, basic=("ada", "nope")) as client:
            with pytest.raises(tn.PeerError, match="401"):
                await client.send("echo me")


async def test_toolnexus_send_basic_env():
    import asyncio

    async with sdk_server(basic=ADA) as url:
        env = {"PEER_LOGIN": ":".join(ADA)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "toolnexus.cli",
            "send",
            url,
            "hi",
            "--basic-env",
            "PEER_LOGIN",
            "--trace",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env},
        )
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err
    assert b"echo: hi" in out
    assert (
        ADA[1].encode() not in out + err and basic_authorization(*ADA)[6:].encode() not in out + err
    )
