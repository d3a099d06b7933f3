"""An agent behind an OAuth 2 resource server (issue 62 item 1): its card declares the flows a
client gets a token by (authorization code with PKCE, client credentials, device code, the server's
metadata URL; OpenID Connect's discovery URL) in 0.3's and 1.0's shapes, and it takes only JWT
access tokens its issuer signed for its audience, checked against a JWKS served by a real local
authorization server (``tests/peers/authorization_server.py``, keys made in the test). The official a2a-sdk
1.3 client (its own AuthInterceptor, picking the scheme from our card) on every binding, and ours
getting its token by the card's client-credentials flow."""

from __future__ import annotations

import copy
import os
import uuid

import httpx
import httpx2
import jwt
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

import toolnexus as tn
from toolnexus.errors import ConfigError
from toolnexus.protocol.signing import card_view

from ..peers.authorization_server import AUDIENCE, SECRET, authorization_server, new_key, public_jwk
from ..serve.test_tenants import sdk_client
from ..serve.wire import v03_message

try:
    import grpc
    from a2a.client import ClientCallContext
    from a2a.client.auth.credentials import CredentialService
    from a2a.client.auth.interceptor import AuthInterceptor
    from a2a.client.card_resolver import parse_agent_card
    from a2a.compat.v0_3 import types as v03
    from a2a.types import a2a_pb2 as pb
except ImportError as exc:  # a real part missing: CI fails, a laptop skips
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"the OAuth tests need grpcio and a2a-sdk ({exc})", allow_module_level=True)

pytestmark = pytest.mark.asyncio(loop_scope="module")

FLOWS = {
    "authorizationCode": {
        "authorizationUrl": "https://login.example/authorize",
        "tokenUrl": "https://login.example/token",
        "scopes": {"a2a": "call the agent", "ledger:read": "read the ledger"},
        "pkceRequired": True,
    },
    "clientCredentials": {"tokenUrl": "TOKEN", "scopes": {"a2a": "call the agent"}},
    "deviceCode": {
        "deviceAuthorizationUrl": "https://login.example/device",
        "tokenUrl": "https://login.example/token",
        "scopes": {"a2a": "call the agent"},
    },
}


def _auth(issuer, **options) -> tn.Auth:
    flows = {**FLOWS, "clientCredentials": {**FLOWS["clientCredentials"]}}
    flows["clientCredentials"]["tokenUrl"] = issuer.url + "/token"
    return tn.Auth.oauth2(
        issuer=issuer.url,
        audience=AUDIENCE,
        jwks_url=issuer.url + "/jwks",
        flows=flows,
        metadata_url=issuer.url + "/.well-known/oauth-authorization-server",
        **options,
    )


async def _served(auth: tn.Auth):
    tk = await tn.create_toolkit(builtins=False)
    a2a = tn.A2AConfig(name="guarded", auth=auth, grpc="127.0.0.1:0")
    return await tk.serve("127.0.0.1:0", client=tn.demo_client(), a2a=a2a)


class _Tokens(CredentialService):
    """One token for whichever scheme the card names (the SDK asks by scheme name)."""

    def __init__(self, token: str) -> None:
        self.token, self.asked = token, []

    async def get_credentials(self, security_scheme_name, context):
        self.asked.append(security_scheme_name)
        return self.token


def _message(text: str) -> pb.Message:
    return pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text=text)])


async def test_the_card_declares_every_flow_in_both_shapes():
    async with authorization_server() as issuer:
        handle = await _served(_auth(issuer, scopes=["a2a"]))
        try:
            async with httpx.AsyncClient() as http:
                raw = (await http.get(handle.url + "/.well-known/agent-card.json")).json()
        finally:
            await handle.stop()
    names = ["oauth2-authorizationCode", "oauth2-clientCredentials", "oauth2-deviceCode"]
    assert list(raw["securitySchemes"]) == names
    assert raw["security"] == [{n: ["a2a"]} for n in names]
    # the official 1.x SDK's reading (0.3's fields folded into 1.0's, one flow a scheme)
    card = parse_agent_card(copy.deepcopy(raw))
    schemes = {n: card.security_schemes[n].oauth2_security_scheme for n in names}
    assert [s.flows.WhichOneof("flow") for s in schemes.values()] == [
        "authorization_code",
        "client_credentials",
        "device_code",
    ]
    code = schemes["oauth2-authorizationCode"].flows.authorization_code
    assert code.pkce_required and code.authorization_url == "https://login.example/authorize"
    assert dict(code.scopes) == FLOWS["authorizationCode"]["scopes"]
    assert schemes["oauth2-clientCredentials"].flows.client_credentials.token_url == (
        issuer.url + "/token"
    )
    device = schemes["oauth2-deviceCode"].flows.device_code
    assert device.device_authorization_url == "https://login.example/device"
    assert all(
        s.oauth2_metadata_url == issuer.url + "/.well-known/oauth-authorization-server"
        for s in schemes.values()
    )
    assert [dict(r.schemes) for r in card.security_requirements] == [
        {n: pb.StringList(list=["a2a"])} for n in names
    ]
    # the 1.0 wrapper alone (a reader of 1.0's shape) says the same as the folded view
    wrapped = card_view(raw, fold_v03=False)["securitySchemes"]
    assert wrapped == card_view(raw)["securitySchemes"]
    # the 0.3 SDK's model
    old = v03.AgentCard.model_validate(raw)
    flows = old.security_schemes["oauth2-authorizationCode"].root.flows
    assert flows.authorization_code.token_url == "https://login.example/token"
    assert old.security_schemes["oauth2-clientCredentials"].root.flows.client_credentials
    assert old.security == [{n: ["a2a"]} for n in names]


async def test_openid_connect_is_declared_and_its_keys_discovered():
    async with authorization_server() as issuer:
        discovery = issuer.url + "/.well-known/openid-configuration"
        auth = tn.Auth.openid(url=discovery, issuer=issuer.url, audience=AUDIENCE)
        handle = await _served(auth)
        try:
            async with httpx.AsyncClient() as http:
                raw = (await http.get(handle.url + "/.well-known/agent-card.json")).json()
            card = parse_agent_card(copy.deepcopy(raw))
            scheme = card.security_schemes["openIdConnect"].open_id_connect_security_scheme
            assert scheme.open_id_connect_url == discovery
            oidc = v03.AgentCard.model_validate(raw).security_schemes["openIdConnect"].root
            assert oidc.open_id_connect_url == discovery
            # our client finds the token endpoint by discovery; the agent its keys the same way
            grant = tn.ClientCredentials("desk", SECRET)
            async with tn.A2AClient(handle.url, oauth=grant) as client:
                task = await client.send("hello", blocking=True)
            assert task.state.value == "completed"
            assert issuer.fetches == 1
        finally:
            await handle.stop()


@pytest.mark.parametrize(
    ("binding", "version"),
    [("JSONRPC", "1.0"), ("JSONRPC", "0.3"), ("HTTP+JSON", "1.0"), ("GRPC", "1.0")],
)
async def test_the_sdk_client_calls_with_an_access_token(binding, version):
    async with authorization_server() as issuer:
        handle = await _served(_auth(issuer, scopes=["a2a"]))
        http = httpx.AsyncClient(timeout=30)
        try:
            tokens = _Tokens(issuer.mint("ada", "a2a"))
            client = await sdk_client(
                handle.url, binding, "", http, version, [AuthInterceptor(tokens)]
            )
            context = ClientCallContext(state={"sessionId": "s"})
            request = pb.SendMessageRequest(message=_message("hello"))
            events = [ev async for ev in client.send_message(request, context=context)]
            final = events[-1].task if events[-1].HasField("task") else events[-1].status_update
            assert final.status.state == pb.TASK_STATE_COMPLETED
            assert tokens.asked[0] == "oauth2-authorizationCode"  # the card's first scheme
            for token, status in (
                (issuer.mint("ada", "other"), "403"),  # without the scope every call needs
                (issuer.mint("ada", "a2a", aud="x"), "401"),  # for another audience
            ):
                tokens.token = token
                with pytest.raises(Exception) as refused:
                    async for _ in client.send_message(request, context=context):
                        pass
                said = str(refused.value).lower()
                if binding == "GRPC":  # its status, the words ours
                    status = "insufficient scope" if status == "403" else "invalid access token"
                assert status in said, said
            await client.close()
        finally:
            await http.aclose()
            await handle.stop()


async def test_a_refused_token_gets_a_401_that_says_nothing_more():
    async with authorization_server() as issuer:
        handle = await _served(_auth(issuer))
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send"}
        body["params"] = {"message": v03_message("x")}
        good = issuer.mint("ada")
        other_key = new_key()
        header, payload, _ = good.split(".")
        refused = {
            "expired": issuer.mint("ada", expires_in=-120),
            "another audience": issuer.mint("ada", aud="https://elsewhere/"),
            "another issuer": issuer.mint("ada", iss="https://evil.example"),
            "another key, same kid": issuer.mint("ada", key=other_key),
            "an unknown kid": issuer.mint("ada", key=other_key, kid="made-up"),
            "no sub": jwt.encode(
                {
                    k: v
                    for k, v in jwt.decode(good, options={"verify_signature": False}).items()
                    if k != "sub"
                },
                issuer.keys[issuer.kid],
                algorithm="ES256",
                headers={"kid": issuer.kid},
            ),
            "alg none": jwt.encode(
                jwt.decode(good, options={"verify_signature": False}),
                None,
                algorithm="none",
                headers={"kid": issuer.kid},
            ),
            # HS256 keyed with the public key's JWK: the algorithm confusion attack
            "HS256 with the public key": jwt.encode(
                jwt.decode(good, options={"verify_signature": False}),
                str(public_jwk(issuer.kid, issuer.keys[issuer.kid])),
                algorithm="HS256",
                headers={"kid": issuer.kid},
            ),
            "a bad signature": f"{header}.{payload}.AAAA",
            "not a JWT": "not-a-jwt",
        }
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                r = await http.post(handle.url + "/", json=body)
                assert r.status_code == 401
                assert r.headers["www-authenticate"] == 'Bearer realm="toolnexus"'
                answers = set()
                for why, token in refused.items():
                    headers = {"authorization": f"Bearer {token}"}
                    r = await http.post(handle.url + "/", json=body, headers=headers)
                    assert r.status_code == 401, why
                    challenge = r.headers["www-authenticate"]
                    assert challenge == 'Bearer realm="toolnexus", error="invalid_token"', why
                    answers.add(r.text)
                assert len(answers) == 1  # the same words for every fault: nothing leaks
                assert "invalid access token" in answers.pop()
                r = await http.post(
                    handle.url + "/", json=body, headers={"authorization": f"Bearer {good}"}
                )
                assert r.status_code == 200 and r.json()["result"]["status"]["state"]
                r = await http.post(handle.url + "/message:send", json={"message": {}})
                assert r.status_code == 401  # HTTP+JSON alike
            assert issuer.fetches <= 2  # an unknown kid asked once, not per token
            channel = grpc.aio.insecure_channel(handle.grpc_target)
            try:
                call = channel.unary_unary("/lf.a2a.v1.A2AService/GetTask")
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await call(
                        pb.GetTaskRequest(id="x").SerializeToString(),
                        metadata=(("authorization", "Bearer " + refused["expired"]),),
                    )
                assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED
            finally:
                await channel.close()
        finally:
            await handle.stop()


async def test_rotated_keys_are_fetched_again_at_most_so_often():
    async with authorization_server() as issuer:
        auth = _auth(issuer)
        handle = await _served(auth)
        url = handle.url + "/"
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send"}
        body["params"] = {"message": v03_message("x")}

        async def status(token: str) -> int:
            r = await http.post(url, json=body, headers={"authorization": f"Bearer {token}"})
            return r.status_code

        try:
            async with httpx.AsyncClient(timeout=30) as http:
                assert await status(issuer.mint("ada")) == 200
                assert issuer.fetches == 1
                old = issuer.kid
                issuer.rotate(kind="RSA", keep_old=True)  # the server rotates: a new kid
                for _ in range(5):  # within refetch_every of the last fetch: not fetched again
                    assert await status(issuer.mint("ada")) == 401
                assert issuer.fetches == 1
                assert auth.tokens is not None
                auth.tokens.refetch_every = 0  # as when that time has passed
                assert await status(issuer.mint("ada")) == 200  # RS256, the new kid
                assert await status(issuer.mint("ada", kid=old)) == 200  # both published
                assert issuer.fetches == 2
        finally:
            await handle.stop()


async def test_our_client_gets_its_token_by_the_cards_flow_and_each_subject_is_apart():
    async with authorization_server() as issuer:
        handle = await _served(_auth(issuer))
        try:
            grant = tn.ClientCredentials("desk", SECRET, scopes=["a2a"])
            async with tn.A2AClient(handle.url, oauth=grant) as client:
                task = await client.send("hello", blocking=True)
                assert task.state.value == "completed"
                assert len((await client.list_tasks())["tasks"]) == 1
            other = tn.ClientCredentials("robot", SECRET)
            async with tn.A2AClient(handle.url, oauth=other) as client:
                assert (await client.list_tasks())["tasks"] == []  # another subject's space
        finally:
            await handle.stop()


async def test_the_config_file_keys():
    block = {
        "auth": {
            "oauth2": {
                "issuer": "https://login.example",
                "audience": AUDIENCE,
                "jwksUrl": "https://login.example/jwks",
                "flows": {"clientCredentials": {"tokenUrl": "https://login.example/token"}},
                "scopes": ["a2a"],
            }
        }
    }
    config = tn.A2AConfig.from_config(block).check()
    assert config.auth is not None and config.auth.names == ("oauth2",)
    assert config.auth.flows["clientCredentials"]["scopes"] == {}
    oidc = {"url": "https://login.example/.well-known/openid-configuration"}
    oidc |= {"issuer": "https://login.example", "audience": AUDIENCE}
    assert tn.A2AConfig.from_config({"auth": {"openIdConnect": oidc}}).check().auth is not None
    wrong = [
        ({**block["auth"]["oauth2"], "algorithms": ["none"]}, "not accepted"),
        ({**block["auth"]["oauth2"], "algorithms": ["HS256"]}, "not accepted"),
        ({**block["auth"]["oauth2"], "jwks": "x"}, "not a known option"),
        ({"issuer": "https://login.example", "audience": AUDIENCE}, "needs issuer"),
        ({**block["auth"]["oauth2"], "flows": {"implicit": {}}}, "not a flow offered"),
        ({**block["auth"]["oauth2"], "flows": {"deviceCode": {"tokenUrl": "https://t"}}}, "needs"),
    ]
    for oauth2, said in wrong:
        with pytest.raises(ConfigError, match=said):
            tn.A2AConfig.from_config({"auth": {"oauth2": oauth2}}).check()


async def test_mcp_and_metrics_take_the_same_access_tokens():
    """/mcp (the official MCP client) and /metrics go through the same door as every A2A binding."""
    async with authorization_server() as issuer:
        tk = await tn.create_toolkit(builtins=False)
        a2a = tn.A2AConfig(name="guarded", auth=_auth(issuer))
        handle = await tk.serve(
            "127.0.0.1:0", client=tn.demo_client(), a2a=a2a, mcp=True, metrics=True
        )
        try:
            async with httpx.AsyncClient(timeout=30) as http:
                for path in ("/mcp", "/metrics"):
                    method = http.post if path == "/mcp" else http.get
                    r = await method(handle.url + path, headers={"authorization": "Bearer x"})
                    assert r.status_code == 401, path
                    assert r.headers["www-authenticate"].endswith('error="invalid_token"')
                token = {"authorization": "Bearer " + issuer.mint("ada")}
                assert (await http.get(handle.url + "/metrics", headers=token)).status_code == 200
            async with (
                httpx2.AsyncClient(headers=token, timeout=30) as http2,
                streamable_http_client(handle.mcp_url, http_client=http2) as streams,
                ClientSession(streams[0], streams[1]) as session,
            ):
                assert (await session.initialize()).server_info.name == "toolnexus"
                await session.list_tools()  # a call past the handshake, with the token
        finally:
            await handle.stop()
