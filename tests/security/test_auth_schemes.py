"""Auth a user can run (issue 50 item 6), with real peers on both sides: HTTP basic served (the
official a2a-sdk client calling through its httpx client's basic auth, JSON-RPC, HTTP+JSON and
gRPC alike) and sent (our client to the SDK's server behind basic auth); OAuth 2 client
credentials and OpenID Connect discovery run by our client from the SDK server's card, against a
local authorization server written for the tests (``tests/peers/authorization_server.py``)."""

from __future__ import annotations

import os
import sys

import httpx
import pytest

import toolnexus as tn
from toolnexus.secrets import basic_authorization

from ..peers.authorization_server import authorization_server
from ..peers.sdk_server import BEARER, sdk_server
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


SECRET = "cl1ent-s3cret/+"  # characters the form encoding of §2.3.1 must escape


async def test_our_client_runs_client_credentials_from_the_sdk_servers_card():
    """The card of the official SDK's server names a token endpoint (a local authorization
    server); our client fetches a token with the client's credentials, keeps it while it is good,
    sends it, and never shows the secret or the token."""
    async with authorization_server("desk", SECRET, BEARER) as auth:
        async with sdk_server(token_url=auth.url + "/token") as url:
            grant = tn.ClientCredentials("desk", SECRET, scopes=["a2a"])
            async with tn.A2AClient(url, oauth=grant) as client:
                one = await client.send("echo one", blocking=True)
                again = await client.get(one.id)
                logged = repr(client.traffic.events)
        assert one.reply == "echo: echo one" and again.id == one.id
        assert auth.grants == [{"grant_type": "client_credentials", "scope": "a2a"}]  # kept
        assert SECRET not in logged and BEARER not in logged and "oauth" in logged

    async with authorization_server(
        "desk", SECRET, BEARER, expires_in=5
    ) as auth:  # expires within EARLY
        async with sdk_server(token_url=auth.url + "/token") as url:
            async with tn.A2AClient(url, oauth=tn.ClientCredentials("desk", SECRET)) as client:
                await client.send("echo one", blocking=True)
                await client.send("echo two", blocking=True)
        assert len(auth.grants) == 2  # fetched again before each call


async def test_openid_connect_discovery_finds_the_token_endpoint():
    async with authorization_server("desk", SECRET, BEARER) as auth:
        discovery = auth.url + "/.well-known/openid-configuration"
        async with sdk_server(oidc_url=discovery) as url:
            async with tn.A2AClient(url, oauth=tn.ClientCredentials("desk", SECRET)) as client:
                task = await client.send("echo oidc", blocking=True)
                methods = [e.method for e in client.traffic.events if e.rpc_method == "oauth"]
    assert task.reply == "echo: echo oidc" and methods == ["GET", "POST"]
    assert len(auth.grants) == 1


async def test_the_client_secret_goes_only_where_the_user_meant():
    async with authorization_server("desk", SECRET, BEARER) as auth:
        elsewhere = auth.url.replace("127.0.0.1", "localhost") + "/token"  # another host
        async with sdk_server(token_url=elsewhere) as url:
            async with tn.A2AClient(url, oauth=tn.ClientCredentials("desk", SECRET)) as client:
                with pytest.raises(tn.PeerError, match="is not on 127.0.0.1, the host you named"):
                    await client.send("echo")
            assert auth.grants == []  # nothing was sent there
            named = tn.ClientCredentials("desk", SECRET, token_url=elsewhere)  # the user says so
            async with tn.A2AClient(url, oauth=named) as client:
                assert (await client.send("echo named", blocking=True)).reply == "echo: echo named"
            wrong = tn.ClientCredentials("desk", "not-it", token_url=elsewhere)
            async with tn.A2AClient(url, oauth=wrong) as client:
                with pytest.raises(tn.PeerError, match="check the client id and secret"):
                    await client.send("echo", blocking=True)


async def test_a_basic_password_is_compared_as_it_was_sent():
    """Issue 59 item 7: the credentials were compared after strip(), so a password ending (or
    starting) with a space never matched, on any binding; and one without the space did."""
    tk = await tn.create_toolkit(builtins=False)
    eve, ray = ("eve", "ends with a space "), ("ray", " starts with one")
    a2a = tn.A2AConfig(auth=tn.Auth.basic(":".join(eve), ":".join(ray)), grpc="127.0.0.1:0")
    async with tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send"}
        body["params"] = {"message": v03_message("x")}
        said = {}
        async with httpx.AsyncClient(timeout=30) as raw:
            for user, password in [eve, ray, ("eve", eve[1].strip()), ("ray", ray[1].strip())]:
                headers = {"authorization": basic_authorization(user, password)}
                r = await raw.post(handle.url + "/", json=body, headers=headers)
                said[(user, password)] = r.status_code
        client = await grpc_client(handle.url)
        try:
            for user, password in [eve, ("eve", eve[1].strip())]:
                context = ClientCallContext(
                    service_parameters={"authorization": basic_authorization(user, password)}
                )
                try:
                    [
                        _
                        async for _ in client.send_message(
                            pb.SendMessageRequest(message=_message("hi")), context=context
                        )
                    ]
                    said[("grpc", password)] = "ok"
                except Exception as exc:  # the SDK's error for PERMISSION_DENIED
                    said[("grpc", password)] = type(exc).__name__
        finally:
            await client.close()
    assert said[eve] == said[ray] == 200, said
    assert said[("eve", eve[1].strip())] == said[("ray", ray[1].strip())] == 403, said
    assert said[("grpc", eve[1])] == "ok" and said[("grpc", eve[1].strip())] != "ok", said
