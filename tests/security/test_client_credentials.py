"""The client's credentials, picked by the card and run as a user at a terminal runs them (issue 62
items 1 and 3), against the official a2a-sdk 1.3 server: each call carries what the card (or the
call's skill) asks for and nothing else; the device code flow (RFC 8628) and the authorization
code flow with PKCE (RFC 7636) against a local authorization server written for the tests
(``tests/peers/authorization_server.py``); mutual TLS with a client certificate on JSON-RPC, HTTP+JSON and
gRPC (``grpcs``), with certificates made by the test (``tests/peers/tls.py``)."""

from __future__ import annotations

import asyncio
import os
import sys

import httpx
import pytest

import toolnexus as tn

from ..helpers import cli
from ..peers.authorization_server import authorization_server
from ..peers.sdk_server import BEARER, sdk_server
from ..peers.tls import make_pki

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

from a2a.types import a2a_pb2 as pb  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

KEY, TOKEN = "k3y-for-echo", "b3arer-for-ledger"


def key_or_bearer(card: pb.AgentCard) -> None:
    """The agent asks for an API key in X-Echo-Key; its skill "ledger" for a bearer token."""
    card.security_schemes["bearer"].CopyFrom(
        pb.SecurityScheme(http_auth_security_scheme=pb.HTTPAuthSecurityScheme(scheme="Bearer"))
    )
    card.security_schemes["key"].CopyFrom(
        pb.SecurityScheme(
            api_key_security_scheme=pb.APIKeySecurityScheme(location="header", name="X-Echo-Key")
        )
    )
    card.security_requirements.add().schemes["key"].SetInParent()
    ledger = card.skills.add(id="ledger", name="Ledger", description="Books", tags=["x"])
    ledger.security_requirements.add().schemes["bearer"].SetInParent()


async def test_each_call_carries_what_the_card_asks_and_nothing_else():
    heard: list[dict[str, str]] = []
    async with sdk_server(shaped=key_or_bearer, heard=heard) as url:
        async with tn.A2AClient(url, api_key=KEY, bearer=TOKEN) as client:
            plain = await client.send("echo plain", blocking=True)
            ledger = await client.send("echo books", skill="ledger", blocking=True)
            logged = repr([(e.request_headers, e.response_body) for e in client.traffic.events])
        assert plain.reply == "echo: echo plain" and ledger.reply == "echo: echo books"
        assert heard[0].get("x-echo-key") == KEY and "authorization" not in heard[0]
        assert heard[1].get("authorization") == f"Bearer {TOKEN}" and "x-echo-key" not in heard[1]
        assert KEY not in logged and TOKEN not in logged  # masked on the wire log
        async with tn.A2AClient(url, basic=("ada", "pw")) as client:
            with pytest.raises(tn.PeerError) as refused:
                await client.send("echo")
        assert str(refused.value) == (
            "the agent asks on its card for key (apiKey in header X-Echo-Key); what you gave "
            "(HTTP basic) fills none of these"
        )
        assert len(heard) == 2  # refused before anything was sent
        async with tn.A2AClient(url, api_key=KEY) as client:
            with pytest.raises(tn.PeerError, match="the skill ledger asks on its card for bearer"):
                await client.send("echo", skill="ledger")


def device_card(auth_url: str):  # type: ignore[no-untyped-def]
    """Two oauth2 schemes at ``auth_url`` (1.0's ``OAuthFlows`` holds one flow): the device code
    flow and the authorization code flow with PKCE; every call must carry a token of either (scope
    a2a)."""

    def shape(card: pb.AgentCard) -> None:
        device = pb.OAuthFlows(
            device_code=pb.DeviceCodeOAuthFlow(
                device_authorization_url=auth_url + "/device",
                token_url=auth_url + "/token",
                scopes={"a2a": "call it"},
            )
        )
        browser = pb.OAuthFlows(
            authorization_code=pb.AuthorizationCodeOAuthFlow(
                authorization_url=auth_url + "/authorize",
                token_url=auth_url + "/token",
                scopes={"a2a": "call it"},
                pkce_required=True,
            )
        )
        for name, flows in (("device", device), ("browser", browser)):
            card.security_schemes[name].CopyFrom(
                pb.SecurityScheme(oauth2_security_scheme=pb.OAuth2SecurityScheme(flows=flows))
            )
            card.security_requirements.add().schemes[name].list.append("a2a")

    return shape


async def test_the_device_code_flow_shows_the_code_and_polls_for_the_token():
    async with authorization_server("desk", "s", BEARER, refresh="r3fresh-token") as auth:
        async with sdk_server(shaped=device_card(auth.url), enforce=True) as url:
            shown: list[str] = []

            def show(text: str) -> None:  # the user reads it, goes there, and approves
                shown.append(text)
                auth.approve()

            grant = tn.DeviceCode("terminal", scopes=["a2a"], show=show)
            async with tn.A2AClient(url, oauth=grant) as client:
                task = await client.send("echo device", blocking=True)
                logged = repr(client.traffic.events)
    assert task.reply == "echo: echo device"
    assert shown == [f"To sign in, open {auth.url}/device/enter and enter the code WDJB-MJHT"]
    kinds = [g["grant_type"] for g in auth.grants]
    assert kinds[-1] == "urn:ietf:params:oauth:grant-type:device_code"
    assert BEARER not in logged
    assert "r3fresh-token" not in logged


async def test_the_device_code_flow_waits_as_told_and_gives_up_in_time():
    async with authorization_server("desk", "s", BEARER, slow=True, pending=3) as auth:
        async with sdk_server(shaped=device_card(auth.url), enforce=True) as url:
            grant = tn.DeviceCode("terminal", show=lambda text: None)
            async with tn.A2AClient(url, oauth=grant) as client:
                assert (await client.send("echo", blocking=True)).reply == "echo: echo"
        assert auth.polls == 4  # slow_down, then pending twice (three polls pending), the token
        auth.polls, auth.pending, auth.slow = 0, 10**6, False
        async with sdk_server(shaped=device_card(auth.url), enforce=True) as url:
            grant = tn.DeviceCode("terminal", show=lambda text: None, timeout=0.5)
            async with tn.A2AClient(url, oauth=grant) as client:
                with pytest.raises(tn.PeerError, match="nobody entered the code WDJB-MJHT"):
                    await client.send("echo")


async def _browser(url: str, tamper: bool = False) -> None:
    """The user's browser: signs in at ``url``, follows the redirect back (``tamper``: with
    another state, as a forged redirect would)."""
    async with httpx.AsyncClient() as browser:
        signed = await browser.get(url)
        assert signed.status_code == 302, signed.text
        back = signed.headers["location"]
        if tamper:
            back = back.split("&state=")[0] + "&state=forged"
        page = await browser.get(back)
        assert page.status_code == 200


async def test_the_authorization_code_flow_with_pkce_and_a_loopback_redirect():
    async with authorization_server("desk", "s", BEARER) as auth:
        async with sdk_server(shaped=device_card(auth.url), enforce=True) as url:
            opened: list[str] = []

            async def open_(address: str) -> None:
                opened.append(address)
                asyncio.get_running_loop().create_task(_browser(address))

            grant = tn.AuthorizationCode("terminal", scopes=["a2a"], open=open_)
            async with tn.A2AClient(url, oauth=grant) as client:
                task = await client.send("echo pkce", blocking=True)
                logged = repr(client.traffic.events)
            assert task.reply == "echo: echo pkce"
            assert opened[0].startswith(auth.url + "/authorize?response_type=code")
            assert "code_challenge_method=S256" in opened[0]
            exchange = auth.grants[-1]
            assert exchange["grant_type"] == "authorization_code"
            assert len(exchange["code_verifier"]) >= 43 and exchange["code"] not in logged

            async def forged(address: str) -> None:
                asyncio.get_running_loop().create_task(_browser(address, tamper=True))

            grant = tn.AuthorizationCode("terminal", open=forged)
            async with tn.A2AClient(url, oauth=grant) as client:
                with pytest.raises(tn.PeerError, match="a state this client did not send"):
                    await client.send("echo")
            assert auth.grants[-1]["grant_type"] == "authorization_code"  # nothing more traded
            assert len([g for g in auth.grants if g["grant_type"] == "authorization_code"]) == 1


@pytest.fixture(scope="module")
def pki(tmp_path_factory):  # type: ignore[no-untyped-def]
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
async def test_mutual_tls_with_a_client_certificate_on_every_binding(pki, binding):
    """The SDK's server behind TLS that requires a certificate its CA signed (gRPC: grpcs)."""
    mine = tn.ClientCertificate(pki.client_cert, pki.client_key, ca=pki.ca)
    strangers = tn.ClientCertificate(pki.stranger_cert, pki.stranger_key, ca=pki.ca)
    async with sdk_server(binding=binding, tls=pki) as url:
        assert url.startswith("https://")
        async with tn.A2AClient(url, certificate=mine) as client:
            task = await client.send("echo over mtls", blocking=True)
            streamed = [t async for t in client.stream("chunked reply please")]
        assert task.reply == "echo: echo over mtls"
        assert streamed[-1].reply == "echo: chunked reply please"
        assert client.binding.value == binding
        if binding == "GRPC":
            assert client.endpoint.startswith("grpcs://")
        for refused in (
            tn.A2AClient(url, certificate=strangers),  # a certificate its CA did not sign
            tn.A2AClient(url),  # none, and the server's CA unknown
        ):
            with pytest.raises(tn.PeerError, match="cannot fetch the agent card"):
                async with refused as client:
                    await client.send("echo")


async def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *cli(*args),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_toolnexus_send_runs_each_credential(pki):
    async with authorization_server("desk", "s", BEARER, pending=2) as auth:
        async with sdk_server(shaped=device_card(auth.url), enforce=True) as url:
            code, out, err = await _cli(
                "send", url, "by device", "--oauth", "device", "--client-id", "terminal"
            )
    assert code == 0, err
    assert out.strip() == "echo: by device"
    assert "enter the code WDJB-MJHT" in err and BEARER not in out + err
    heard: list[dict[str, str]] = []
    async with sdk_server(shaped=key_or_bearer, heard=heard) as url:
        env = {"ECHO_KEY": KEY}
        code, out, err = await _cli("send", url, "by key", "--api-key-env", "ECHO_KEY", env=env)
    assert code == 0, err
    assert out.strip() == "echo: by key" and heard[0]["x-echo-key"] == KEY
    async with sdk_server(tls=pki) as url:
        certificate = ["--cert", str(pki.client_cert), "--cert-key", str(pki.client_key)]
        code, out, err = await _cli("send", url, "by cert", *certificate, "--ca", str(pki.ca))
        assert code == 0, err
        assert out.strip() == "echo: by cert"
        code, out, err = await _cli("send", url, "x", "--cert", str(pki.ca) + ".none")
    assert code == 2 and "cannot be used" in err and "Traceback" not in err
    assert sys.executable  # the command ran as the suite's Python (helpers.cli)


async def test_toolnexus_card_with_a_certificate_and_the_extended_card_by_the_cards_schemes(pki):
    async with sdk_server(tls=pki) as url:
        certificate = ["--cert", str(pki.client_cert), "--cert-key", str(pki.client_key)]
        code, out, err = await _cli("card", url, *certificate, "--ca", str(pki.ca))
        assert code == 0, err
        assert out.startswith("sdk-echo 1.0.0")
        code, out, err = await _cli("card", url)  # no certificate: refused, in words
    assert code == 1 and "cannot fetch the agent card" in err and "Traceback" not in err
    heard: list[dict[str, str]] = []
    async with sdk_server(features=True, enforce=True, heard=heard) as url:
        env = {"ECHO_TOKEN": BEARER, "ECHO_KEY": KEY}
        flags = ["--bearer-env", "ECHO_TOKEN", "--api-key-env", "ECHO_KEY"]
        code, out, err = await _cli("card", url, "--extended", *flags, env=env)
    assert code == 0, err
    assert "skill ledger" in out  # the extended card's own skill
    assert heard[-1]["authorization"] == f"Bearer {BEARER}" and "x-api-key" not in heard[-1]
    assert BEARER not in out + err and KEY not in out + err
